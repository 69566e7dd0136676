"""`chimdqa compare A B`: per-metric differences between two results with paired-bootstrap p-values."""
from __future__ import annotations

from chimdqa_eval import jsonio
from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED
from chimdqa_eval.report.compare import compare, format_table
from chimdqa_eval.report.results import read_results
from chimdqa_eval.schema import InputError


def add_arguments(parser) -> None:
    parser.add_argument("a", metavar="A", help="baseline results.json (or its folder)")
    parser.add_argument("b", metavar="B", help="results.json (or its folder) compared against A")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                        help=f"paired-bootstrap resamples for the p-values (default {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")
    parser.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")


def run(args) -> int:
    if args.resamples < 2:  # with no resamples every p-value would read 1.0, as if nothing differed
        raise InputError(f"--resamples: a p-value needs at least 2 resamples, got {args.resamples}")
    a, b = (read_results(path) for path in (args.a, args.b))  # each checked against results.schema.json
    rows = compare(a, b, n_resamples=args.resamples, seed=args.seed)
    print(format_table(a, b, rows))
    if args.json:
        jsonio.write_json_atomic(args.json, {"a": a["_path"], "b": b["_path"], "rows": rows}, indent=1)
    return 0
