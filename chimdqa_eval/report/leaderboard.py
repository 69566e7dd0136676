"""`chimdqa leaderboard RESULTS_DIR... --out board/`: one table over many results, ranked by factual F1 within
each dataset and config, with Table 4's per-domain columns, written as CSV, Markdown and a static HTML page (with the report's plots) that a
Hub static Space can serve as is.

With --with-paper-rows the papers' own numbers join as rows marked "reported in the paper" — ChiMDQA's
Tables 4-6 (full release) and/or Chinese SimpleQA's overall table, for the datasets the results are on; they
are never mixed up with scored rows (their dataset column says so).
"""
from __future__ import annotations

import csv
import io
import json
from importlib import resources
from pathlib import Path

from chimdqa_eval.hub.spaces import static_space_card
from chimdqa_eval.report import html as H
from chimdqa_eval.report.results import METRIC_LABELS, metric_value, read_results
from chimdqa_eval.report.safe import check_results_values, csv_cell, md_cell
from chimdqa_eval.schema import DOMAINS, InputError
from chimdqa_eval.signature import parse_signature

PAPER_FILE = "paper_results.json"
OPEN_COLUMNS = ("meteor", "rouge_l", "cider", "perplexity", "bertscore_f1")
RAG_COLUMNS = ("precision", "recall", "f1")


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
    results = [check_results_values(read_results(p)) for p in args.results]
    if args.with_paper_rows:
        results += paper_rows({r["dataset"]["name"] for r in results})
    paths = write_leaderboard(args.out, results, title=args.title)
    print(to_markdown(leaderboard_rows(results)))
    print("\nwrote " + ", ".join(map(str, paths)))
    return 0


def _paper_doc(model: str, rag: bool, dataset: str, config: str) -> dict:
    return {"model": {"model": model, "rag": rag}, "reported": "paper", "skipped": [], "metrics": {},
            "dataset": {"name": dataset, "config": config, "split": "test", "revision": "paper"},
            "submission": {"n_scored": None, "coverage": None}}


def paper_rows(datasets=("ChiMDQA",)) -> list[dict]:
    """The papers' reported results for the named datasets ("ChiMDQA": Tables 4-6, "Chinese SimpleQA": its
    overall table) as minimal results documents, marked ``reported: paper``."""
    data = json.loads(resources.files("chimdqa_eval.report").joinpath(PAPER_FILE).read_text(encoding="utf-8"))
    docs: dict = {}
    if "ChiMDQA" in datasets:
        for family in ("factual", "open_ended", "rag"):
            block = data[family]
            per_domain = {"factual": "F1", "open_ended": "bertscore_f1"}.get(family)
            for model, values in block["rows"].items():
                rag = family == "rag"
                doc = docs.setdefault((model, rag), _paper_doc(model, rag, "ChiMDQA", "all"))
                metrics = doc["metrics"].setdefault(family, {})
                for name, value in zip(block["columns"], values[0]):
                    metrics[name] = {"value": value, "ci95": [None, None], "by": {}, "signature": data["source"]}
                if per_domain:
                    metrics[per_domain]["by"]["domain"] = {d: {"value": v, "ci95": [None, None]}
                                                          for d, v in zip(data["domains"], values[1])}
    if "Chinese SimpleQA" in datasets:
        block = data["chinese_simpleqa"]
        for model, values in block["rows"].items():
            doc = docs.setdefault(("csqa", model), _paper_doc(model, False, "Chinese SimpleQA", "chinese_simpleqa"))
            doc["metrics"]["factual"] = {name: {"value": value, "ci95": [None, None], "by": {},
                                                "signature": block["source"]}
                                         for name, value in zip(block["columns"], values)}
    return list(docs.values())


def _group(results: dict) -> tuple:
    """Rows are ranked within their dataset and config: a Chinese SimpleQA F1 and a ChiMDQA one do not compete."""
    return results["dataset"]["name"], results["dataset"]["config"]


def _sort_key(results: dict):
    f1 = metric_value(results, "factual", "F1")
    coverage = results.get("submission", {}).get("coverage")
    partial = coverage is not None and coverage < 1  # leaving hard questions out must not buy a better rank
    return (*_group(results), partial, f1 is None, -(f1 or 0.0), H.is_paper_row(results))


def factual_judge(results: dict) -> str:
    """Who graded the factual answers ("rule", "llm:<model>"): rows graded differently are not comparable."""
    if H.is_paper_row(results):
        return "paper"
    entry = results["metrics"].get("factual", {}).get("F1")
    if entry is None:
        return ""
    fields = parse_signature(entry["signature"])
    return ":".join(v for v in (fields.get("judge", "?"), fields.get("judge_model")) if v)


def leaderboard_rows(results_list) -> list[dict]:
    """One flat row per result, grouped by dataset and config, ranked by factual F1 within each (rows without
    it last)."""
    rows, previous, rank = [], None, 0
    for r in sorted(results_list, key=_sort_key):
        rank = rank + 1 if _group(r) == previous else 1
        previous = _group(r)
        ds, sub = r["dataset"], r.get("submission", {})
        row = {"rank": rank, "model": r["model"]["model"], "rag": "yes" if r["model"].get("rag") else "no",
               "source": "reported in the paper" if H.is_paper_row(r) else "scored",
               "dataset": f"{ds['config']}@{ds['revision']}", "judge": factual_judge(r),
               "n_scored": sub.get("n_scored"),
               "coverage_%": None if sub.get("coverage") is None else round(100 * sub["coverage"], 2)}
        for m in METRIC_LABELS["factual"]:
            row[m] = metric_value(r, "factual", m)
        for d in DOMAINS:
            row[f"F1_{d}"] = metric_value(r, "factual", "F1", "domain", d)
        for m in OPEN_COLUMNS:
            row[METRIC_LABELS["open_ended"][m]] = metric_value(r, "open_ended", m)
        for m in RAG_COLUMNS:
            row[f"RAG {METRIC_LABELS['rag'][m]}"] = metric_value(r, "rag", m)
        rows.append(row)
    return rows


def _fmt(value) -> str:
    if value is None:
        return ""
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def to_csv(rows) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if v is None else csv_cell(v)) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def to_markdown(rows) -> str:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(md_cell(_fmt(row[c])) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def to_html(rows, results_list, title: str, settings_note: str | None = None) -> str:
    ordered = sorted(results_list, key=_sort_key)
    columns = list(rows[0])
    head = "".join(f"<th>{H.esc(c)}</th>" for c in columns)
    body_rows = []
    for row, r in zip(rows, ordered):
        css = ' class="paper"' if H.is_paper_row(r) else ""
        body_rows.append(f"<tr{css}>" + "".join(
            f'<td{" class=name" if c in ("model", "source", "dataset", "judge") else ""}>{H.esc(_fmt(row[c]))}</td>'
            for c in columns) + "</tr>")
    scored = [r for r in ordered if not H.is_paper_row(r)]
    revisions = sorted({r["dataset"]["revision"] for r in scored})
    note = ("" if len(revisions) <= 1 else
            f'<p class="skip">These results come from {len(revisions)} different dataset revisions '
            f"({', '.join(map(H.esc, revisions))}): compare only rows with the same dataset column.</p>")
    body = ((f'<p class="muted">{H.esc(settings_note)}</p>' if settings_note else "") +
            f'<p class="muted">{len(rows)} results, ranked by factual F1 within each dataset and config; partial '
            f"submissions (coverage below 100%) rank after complete ones. Rows in italics are {H.PAPER_TAG} "
            f"(full release, no confidence intervals).</p>{note}"
            f'<div class="wide"><table id="leaderboard"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body_rows)}</tbody></table></div>'
            + H.tables_html(ordered, with_ci=False) + H.figures_html(ordered))
    return H.page(title, body)


def write_leaderboard(out_dir, results_list, *, title: str = "ChiMDQA leaderboard",
                      note: str | None = None) -> list[Path]:
    """leaderboard.csv, leaderboard.md, index.html and the static Space's README.md in `out_dir`; `note` (e.g. the
    pinned settings every row was scored with) is shown above the table."""
    if not results_list:
        raise InputError("no results to put on a leaderboard")
    for results in results_list:
        check_results_values(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = leaderboard_rows(results_list)
    contents = {"leaderboard.csv": to_csv(rows), "leaderboard.md": to_markdown(rows) + "\n",
                "index.html": to_html(rows, results_list, title, note), "README.md": static_space_card(title)}
    for name, text in contents.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / name for name in contents]
