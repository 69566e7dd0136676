"""`chimdqa leaderboard RESULTS_DIR... --out board/`: one table per comparison group — benchmark, config,
split and dataset revision; only results in one group were scored on the same questions — ranked by factual
F1 within it, written as CSV, Markdown and a static HTML page (with the report's plots per group) that a Hub
static Space can serve as is.

With --with-paper-rows the papers' own numbers (ChiMDQA's Tables 4-6, Chinese SimpleQA's overall table) are
shown as a group of their own, "reported in the paper", right after the measured group on the paper's config
and split, and only when there is one; they are never ranked against measured rows.
"""
from __future__ import annotations

import csv
import io
import json
from importlib import resources
from pathlib import Path

from markupsafe import Markup

from chimdqa_eval.hub.spaces import static_space_card
from chimdqa_eval.report import html as H
from chimdqa_eval.families import FAMILIES, METRIC_LABELS
from chimdqa_eval.jsonio import write_atomic
from chimdqa_eval.report.results import PAPER_REVISION, comparison_group, condition, metric_value
from chimdqa_eval.report.safe import check_results_values, csv_cell, md_cell
from chimdqa_eval.schema import DOMAINS, InputError
from chimdqa_eval.signature import parse_signature

PAPER_FILE = "paper_results.json"
OPEN_COLUMNS = FAMILIES["open_ended"].board_columns
RAG_COLUMNS = FAMILIES["rag"].board_columns
GROUP_COLUMNS = ("benchmark", "config", "split", "revision")
SIMPLEQA_QUESTIONS = 3000  # Chinese SimpleQA's full set (arXiv:2411.07140), the one its paper reports on


def _paper_doc(model: str, rag: bool, dataset: str, config: str, source: str) -> dict:
    return {"model": {"model": model, "rag": rag}, "reported": "paper", "skipped": [], "metrics": {},
            "dataset": {"name": dataset, "config": config, "split": "test", "revision": PAPER_REVISION,
                        "source": source},
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
                doc = docs.setdefault((model, rag), _paper_doc(model, rag, "ChiMDQA", "all", data["source"]))
                metrics = doc["metrics"].setdefault(family, {})
                for name, value in zip(block["columns"], values[0]):
                    metrics[name] = {"value": value, "ci95": [None, None], "by": {}, "signature": data["source"]}
                if per_domain:
                    metrics[per_domain]["by"]["domain"] = {d: {"value": v, "ci95": [None, None]}
                                                          for d, v in zip(data["domains"], values[1])}
    if "Chinese SimpleQA" in datasets:
        block = data["chinese_simpleqa"]
        for model, values in block["rows"].items():
            doc = docs.setdefault(("csqa", model),
                                  _paper_doc(model, False, "Chinese SimpleQA", "chinese_simpleqa", block["source"]))
            doc["metrics"]["factual"] = {name: {"value": value, "ci95": [None, None], "by": {},
                                                "signature": block["source"]}
                                         for name, value in zip(block["columns"], values)}
    return list(docs.values())


def matching_paper_rows(results_list) -> list[dict]:
    """The papers' rows for the benchmarks, configs and splits of the results that are the papers' own:
    ChiMDQA config all, split test; Chinese SimpleQA's full set. None for a domain config, a single split or a
    Chinese SimpleQA subset."""
    measured = {comparison_group(r)[:3] for r in results_list
                if r["dataset"]["name"] != "Chinese SimpleQA" or r["dataset"].get("n_questions") == SIMPLEQA_QUESTIONS}
    return [p for p in paper_rows({m[0] for m in measured}) if comparison_group(p)[:3] in measured]


def _group_order(key: tuple):
    """Groups sorted by benchmark, config and split; a paper group right after the measured ones it matches."""
    name, config, split, revision = key
    return name, config, split, revision == PAPER_REVISION, revision


def _sort_key(results: dict):
    f1 = metric_value(results, "factual", "F1")
    coverage = results.get("submission", {}).get("coverage")
    partial = coverage is not None and coverage < 1  # leaving hard questions out must not buy a better rank
    return partial, f1 is None, -(f1 or 0.0)


def leaderboard_groups(results_list) -> list[tuple[tuple, list[dict]]]:
    """[(benchmark, config, split, revision), its results best first]: results are only ranked, plotted and
    paired within their group. Names shared within a group are told apart; one run given twice is an error."""
    seen: dict = {}
    for r in results_list:
        if r.get("run_id") in seen:
            raise InputError(f"{r.get('_path')}: the same run as {seen[r['run_id']]} (run id {r['run_id']}); "
                             "give each results folder once")
        if r.get("run_id"):
            seen[r["run_id"]] = r.get("_path")
    groups: dict = {}
    for r in results_list:
        groups.setdefault(comparison_group(r), []).append(r)
    measured = {key[:3] for key in groups if not is_paper_group(key)}
    for key in groups:
        if is_paper_group(key) and key[:3] not in measured:  # see matching_paper_rows
            raise InputError(f"the paper's rows for {' / '.join(key[:3])} are shown only beside results on that "
                             "benchmark, config and split, and there are none")
    return [(key, H.distinct_names(sorted(groups[key], key=_sort_key))) for key in sorted(groups, key=_group_order)]


def is_paper_group(key: tuple) -> bool:
    return key[3] == PAPER_REVISION


def group_heading(key: tuple) -> str:
    name, config, split, revision = key
    where = f"{name} · config {config} · split {split}"
    return f"{where} · {H.PAPER_TAG}" if is_paper_group(key) else f"{where} · revision {revision}"


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
    """One flat row per result, group by group (see leaderboard_groups), ranked by factual F1 within each
    group (rows without it last); paper rows are not ranked."""
    rows = []
    for key, group in leaderboard_groups(results_list):
        for rank, r in enumerate(group, 1):
            sub = r.get("submission", {})
            row = {"rank": None if is_paper_group(key) else rank, "model": H.model_name(r),
                   "rag": "yes" if r["model"].get("rag") else "no", "condition": H.CONDITION_NAMES[condition(r)],
                   "source": H.PAPER_TAG if H.is_paper_row(r) else "scored",
                   **dict(zip(GROUP_COLUMNS, key)), "judge": factual_judge(r), "n_scored": sub.get("n_scored"),
                   "coverage_%": _coverage(r)}
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


def _coverage(results: dict):
    coverage = results.get("submission", {}).get("coverage")
    return None if coverage is None else round(100 * coverage, 2)


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


def _by_group(rows) -> list[tuple[tuple, list[dict]]]:
    groups: dict = {}
    for row in rows:
        groups.setdefault(tuple(row[c] for c in GROUP_COLUMNS), []).append(row)
    return list(groups.items())


def to_markdown(rows) -> str:
    """One table per group under a heading naming it."""
    parts = []
    for key, group in _by_group(rows):
        columns = [c for c in group[0] if c not in GROUP_COLUMNS]
        lines = [f"### {md_cell(group_heading(key))}", "", "| " + " | ".join(columns) + " |",
                 "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(md_cell(_fmt(row[c])) for c in columns) + " |" for row in group]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _domain_metrics(results: dict, open_metric: str | None) -> list[tuple[str, str]]:
    """(family, metric) shown per domain: F1 (Table 4) and the open-ended headline metric (Table 5), those
    the result has per-domain values of."""
    metrics = [("factual", "F1")] + ([("open_ended", open_metric)] if open_metric else [])
    return [(f, m) for f, m in metrics if H.domains_with_values([results], f, m)]


def _domain_cell(results: dict, open_metric: str | None) -> dict | None:
    """The per-domain values of one row (parts.html's domain_cell, folded behind a <details> so the table fits
    the page); None when it has none."""
    metrics = _domain_metrics(results, open_metric)
    domains = [d for d in DOMAINS if any(d in H.domains_with_values([results], f, m) for f, m in metrics)]
    if not domains:
        return None
    return {"summary": f"{len(domains)} domains" if len(domains) > 1 else domains[0],
            "metrics": [METRIC_LABELS[f][m] for f, m in metrics],
            "domains": [(d, [_fmt(metric_value(results, f, m, "domain", d)) for f, m in metrics]) for d in domains]}


def _board_table(key: tuple, group: list[dict], table_id: str) -> Markup:
    """A group's ranked table: headline columns (those with a value in the group) and the per-domain ones
    folded per row."""
    rank = not is_paper_group(key)
    columns = [("factual", m, m) for m in METRIC_LABELS["factual"]]
    columns += [("open_ended", m, METRIC_LABELS["open_ended"][m]) for m in OPEN_COLUMNS]
    columns += [("rag", m, f"RAG {METRIC_LABELS['rag'][m]}") for m in RAG_COLUMNS]
    columns = [c for c in columns if any(metric_value(r, c[0], c[1]) is not None for r in group)]
    open_metric = H.open_headline(group)
    # the model with its condition, as the report's tables name it: "m", "m (RAG)", "m (without document)"
    facts = {"rank": lambda k, r: str(k), "model": lambda k, r: H.model_label(r),
             "judge": lambda k, r: factual_judge(r),
             "n": lambda k, r: _fmt(r.get("submission", {}).get("n_scored")),
             "coverage %": lambda k, r: _fmt(_coverage(r))}
    if not rank:  # the papers' rows: not ranked, no judge of ours, no item counts
        facts = {f: cell for f, cell in facts.items() if f == "model"}
    named = ("model", "judge")  # left-aligned, as names are
    rows = [{"paper": H.is_paper_row(r), "facts": [(cell(k, r), f in named) for f, cell in facts.items()],
             "scores": [_fmt(metric_value(r, family, m)) for family, m, _ in columns],
             "domain": _domain_cell(r, open_metric)}
            for k, r in enumerate(group, 1)]
    return H.part("board_table", {"id": table_id, "head": [(f, f in named) for f in facts],
                                  "columns": [label for _, _, label in columns],
                                  "domains": any(_domain_metrics(r, open_metric) for r in group),  # not for SimpleQA
                                  "rows": rows})


def _group_note(key: tuple, group: list[dict]) -> str:
    if is_paper_group(key):
        source = group[0]["dataset"].get("source", "")
        return (f"As {H.PAPER_TAG} ({source}): the full release, not the revision of any measured group on this "
                "page, and without confidence intervals. Shown for orientation, not ranked against measured rows.")
    return (f"{len(group)} result{'s' * (len(group) != 1)} on the same questions, ranked by factual F1; partial "
            "submissions (coverage below 100%) rank after complete ones.")


def _count(results_list) -> str:
    """"3 results", with the papers' rows counted apart: they are not results of any run on the page."""
    paper = sum(H.is_paper_row(r) for r in results_list)
    measured = len(results_list) - paper
    text = f"{measured} result{'s' * (measured != 1)}"
    return text + (f" (and {paper} row{'s' * (paper != 1)} reported in the papers)" if paper else "")


def to_html(results_list, title: str, settings_note: str | None = None) -> str:
    groups = leaderboard_groups(results_list)
    # A model's colour is the page's, not a group's; the measured results are numbered before the papers' rows
    # (16 a dataset), which would push a result measured after them into the palette's second or third cycle
    # (dashed lines, patterned bars) even where it is alone in its plot.
    measured_first = sorted(groups, key=lambda item: is_paper_group(item[0]))
    styles = H.run_styles([r for _, group in measured_first for r in group])
    figures = [H.plots(group, styles) for _, group in groups]
    sections = [{"paper": is_paper_group(key), "heading": group_heading(key), "note": _group_note(key, group),
                 "table": _board_table(key, group, "leaderboard" if k == 1 else f"leaderboard-{k}"),
                 "tables": H.tables_html(group, with_ci=False), "figures": H.figures_html(group_figures, "h3")}
                for k, ((key, group), group_figures) in enumerate(zip(groups, figures), 1)]
    return H.render("board.html", title=title, note=settings_note, count=_count(results_list), groups=sections,
                    images=any(figures))


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
                "index.html": to_html(results_list, title, note), "README.md": static_space_card(title)}
    for name, text in contents.items():
        write_atomic(out / name, text)
    return [out / name for name in contents]
