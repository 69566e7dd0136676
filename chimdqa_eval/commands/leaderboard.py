"""`chimdqa leaderboard RESULTS... --out DIR`: one table and a static page over many results."""
from __future__ import annotations

from chimdqa_eval.report.leaderboard import (
    SIMPLEQA_QUESTIONS,
    leaderboard_rows,
    matching_paper_rows,
    to_markdown,
    write_leaderboard,
)
from chimdqa_eval.report.results import read_results


def add_arguments(parser) -> None:
    parser.add_argument("results", nargs="+", metavar="RESULTS",
                        help="results.json files or the folders holding them (chimdqa evaluate --out)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder for leaderboard.csv, leaderboard.md and index.html")
    parser.add_argument("--with-paper-rows", action="store_true",
                        help="add the papers' reported models (ChiMDQA Tables 4-6, Chinese SimpleQA) for the "
                             "datasets of the results, marked as such")
    parser.add_argument("--title", default="ChiMDQA leaderboard")


def run(args) -> int:
    results = [read_results(p) for p in args.results]  # each checked against results.schema.json
    if args.with_paper_rows:
        paper = matching_paper_rows(results)
        if not paper:
            print("--with-paper-rows: no results on the papers' config and split (ChiMDQA: all / test, Chinese "
                  f"SimpleQA: its full set of {SIMPLEQA_QUESTIONS}), so no paper rows are shown")
        results += paper
    paths = write_leaderboard(args.out, results, title=args.title)
    print(to_markdown(leaderboard_rows(results)))
    print("\nwrote " + ", ".join(map(str, paths)))
    return 0
