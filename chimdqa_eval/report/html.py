"""Self-contained HTML pages (the per-run report and the leaderboard page): tables in the paper's layout
(Tables 4-6) and plots embedded as SVG images (svg.py), so one file can be mailed or served by a static Space.

Every function here reads results documents (see results.py) and never re-scores. The markup is in Jinja2
templates (templates/), rendered with autoescape on: a value from a file (a model name, a label, a metadata
field, a number that turned out to be a string) is always escaped where a template writes it, in text and in
attributes alike; Python builds plain values and text only, never markup.
"""
from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

from jinja2 import BytecodeCache, Environment, PackageLoader, StrictUndefined
from jinja2.ext import Extension
from jinja2.lexer import Token
from markupsafe import Markup

from chimdqa_eval.aggregate import NO_VARIATION
from chimdqa_eval.cache import cache_dir
from chimdqa_eval.families import FAMILIES, FAMILY_TITLES, METRIC_LABELS
from chimdqa_eval.jsonio import write_atomic
from chimdqa_eval.longdoc import COLUMNS as DOCUMENT_COLUMNS, SPREAD
from chimdqa_eval.report import svg
from chimdqa_eval.report.results import CONDITIONS, comparison_group, condition, metric_value, skip_reason
from chimdqa_eval.report.safe import fixed, html_value, link_target, percent
from chimdqa_eval.schema import DOMAINS, FACTUAL_TYPES, LABEL_ORDER, OPEN_TYPES, QUESTION_TYPES

_THIS_MODULE = Path(__file__).read_bytes()
PAPER_TAG = "reported in the paper"
# how each condition is named in plots, tables and the board: the paper's "without RAG" (the long mode) and "with RAG",
# and the closed-book baseline
CONDITION_NAMES = {"closed-book": "without document", "long": "without RAG", "rag": "with RAG"}


class JoinLines(Extension):
    """Line breaks, and the indentation after them, in a template's own text are layout for its reader, not
    output: a table comes out on one line (whitespace between cells would be text nodes in the page), and a
    space wanted between two words is written on their line."""
    _BREAK = re.compile(r"\n[ \t]*")

    def filter_stream(self, stream):
        for token in stream:
            yield Token(token.lineno, "data", self._BREAK.sub("", token.value)) if token.type == "data" else token


class CompiledTemplates(BytecodeCache):
    """The templates' compiled code, kept under $CHIMDQA_CACHE/templates: compiling them was ~0.1 s of every
    report. jinja2 stores each with its source's checksum and its own and Python's versions, and compiles
    again whenever one differs; the file's name covers this module's text too (the Environment's settings and
    the JoinLines extension shape the compiled code). A file that cannot be read or written is no cache, never
    an error."""

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return hashlib.sha256(_THIS_MODULE + name.encode("utf-8")).hexdigest()

    def load_bytecode(self, bucket) -> None:
        try:
            with open(cache_dir("templates") / f"{bucket.key}.cache", "rb") as f:
                bucket.load_bytecode(f)
        except Exception:  # missing, unreadable or torn: compiled from the template instead
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        try:
            out = io.BytesIO()
            bucket.write_bytecode(out)
            write_atomic(cache_dir("templates") / f"{bucket.key}.cache", out.getvalue())
        except OSError:
            pass


# finalize: every {{ value }} is escaped by safe.html_value (quotes too), unless it is a piece one of these
# templates made; autoescape stays on for whatever reaches the page another way (filters, concatenation).
def environment() -> Environment:
    """The templates' Environment (one per process: TEMPLATES)."""
    env = Environment(loader=PackageLoader("chimdqa_eval.report"), autoescape=True, finalize=html_value,
                      undefined=StrictUndefined, extensions=[JoinLines], bytecode_cache=CompiledTemplates())
    env.filters["fixed"] = fixed
    env.globals["PAPER_TAG"] = PAPER_TAG
    return env


TEMPLATES = environment()


def render(template: str, **values) -> str:
    """A whole page from one of the templates, ending in a line break as a text file does."""
    return TEMPLATES.get_template(template).render(**values) + "\n"


def part(macro: str, *args) -> Markup:
    """A piece of a page, made by a macro of parts.html from plain values."""
    return getattr(TEMPLATES.get_template("parts.html").module, macro)(*args)


def model_name(results: dict) -> str:
    """The model's name, told apart from others of the same name on one page (see distinct_names)."""
    return results.get("_name") or results["model"]["model"]


def model_label(results: dict) -> str:
    name = model_name(results)
    return {"rag": f"{name} (RAG)", "closed-book": f"{name} (without document)"}.get(condition(results), name)


def distinct_names(results_list) -> list[dict]:
    """Shallow copies of the results in which those sharing a model name and condition carry a ``_name``
    with what tells them apart: the run's date, then the predictions' sha256 prefix, then the run id."""
    def marks(r):
        created, sha = r.get("created", ""), r.get("submission", {}).get("sha256") or ""
        run_id = r.get("run_id")
        return [created[:16].replace("T", " "), sha and f"preds {sha[:7]}", run_id and f"run {run_id[:8]}"]

    out = [dict(r) for r in results_list]
    alike: dict = {}
    for r in out:
        alike.setdefault((r["model"]["model"], condition(r)), []).append(r)
    for (name, _), same in alike.items():
        for depth in range(1, 4):
            names = [f"{name} · " + " · ".join(m for m in marks(r)[:depth] if m) for r in same]
            if len(set(names)) == len(same):
                break
        if len(same) > 1:
            for r, distinct in zip(same, names):
                r["_name"] = distinct
    return out


def is_paper_row(results: dict) -> bool:
    return results.get("reported") == "paper"


def open_headline(results_list) -> str | None:
    """The open-ended metric shown per domain: BERTScore-F1 as in the paper, else the best one available."""
    for metric in FAMILIES["open_ended"].per_domain:
        if any(metric_value(r, "open_ended", metric) is not None for r in results_list):
            return metric
    return None


def _cell(results, family, metric, column=None, label=None, with_ci=False) -> dict:
    """One metric's cell for parts.html's `cell`: its value, why it has none (overall values only), and with_ci
    its 95% CI or the note said instead of one (e.g. "no variation")."""
    value = metric_value(results, family, metric, column, label)
    cell = {"value": value, "skip": None, "ci": None, "note": None}
    if value is None:
        cell["skip"] = skip_reason(results, family, metric) if column is None else None
    elif with_ci:
        entry = results["metrics"][family][metric]
        if column is not None:
            entry = entry["by"][column][label]
        ci = entry.get("ci95", [None, None])
        cell.update(ci=ci if ci[0] is not None else None, note=entry.get("note"))
        if cell["note"] == NO_VARIATION and column is None and abs(value) < 0.005:  # an overall 0.0: say why
            cell["note"] = NO_VARIATION + ": every item scores about 0" + (
                " (CIDEr-D on paragraph answers)" if metric == "cider_d" else "")
    return cell


def paper_table(results_list, family: str, *, per_domain_metric: str | None, with_ci: bool = False) -> Markup:
    """The paper's layout: the family's metrics, then one metric per domain (Table 4: F1, Table 5: B-F1)."""
    metrics = [m for m in METRIC_LABELS[family]
               if any(metric_value(r, family, m) is not None or skip_reason(r, family, m) for r in results_list)]
    if family == "factual":
        metrics = list(METRIC_LABELS["factual"])
    domains = domains_with_values(results_list, family, per_domain_metric) if per_domain_metric else []
    rows = []
    for r in results_list:
        if family not in r["metrics"] and not any(s["family"] == family for s in r.get("skipped", [])):
            continue
        if family == "rag" and not r["model"].get("rag"):  # a run without retrieval has no Table 6 row to show
            continue
        cells = [_cell(r, family, m, with_ci=with_ci) for m in metrics]
        cells += [_cell(r, family, per_domain_metric, "domain", d) for d in domains]
        rows.append({"label": model_label(r), "paper": is_paper_row(r), "cells": cells})
    head = [METRIC_LABELS[family][m] for m in metrics]
    domain_head = [(d, METRIC_LABELS[family][per_domain_metric]) for d in domains]
    return part("paper_table", {"head": head, "domains": domain_head, "rows": rows})


def breakdown_table(results: dict, family: str, column: str) -> Markup:
    """One result's family metrics per label of a breakdown column, with CIs and item counts."""
    metrics = results["metrics"].get(family, {})
    labels = []
    for entry in metrics.values():
        for label in entry.get("by", {}).get(column, {}):
            if label not in labels:
                labels.append(label)
    order = LABEL_ORDER.get(column, ())
    labels.sort(key=lambda x: order.index(x) if x in order else len(order))
    if not labels:
        return Markup()
    rows = [{"label": label,
             "n": max((e["by"].get(column, {}).get(label, {}).get("n", 0) for e in metrics.values()), default=0),
             "cells": [_cell(results, family, m, column, label, with_ci=True) for m in metrics]}
            for label in labels]
    head = [METRIC_LABELS[family].get(m, m) for m in metrics]
    return part("breakdown_table", {"column": column, "head": head, "rows": rows})


# ---- plots -------------------------------------------------------------------------------------------------
# Each plot is a svg.Chart (plain values: titles, labels, one value or None per category), drawn as SVG text.

def image_data_uri(chart: svg.Chart) -> str:
    """The chart as an image for an <img src>: a data: URI of its SVG."""
    return svg.data_uri(chart)


def run_styles(results_list) -> dict[str, int]:
    """Each result's place in the page's palette (svg.Series.style), by its legend label, in the order the page
    shows the results: a result keeps its colour in every plot of the page, also in one that leaves others out
    (no value there) — readers follow a colour from plot to plot. A label is one model in one condition (names
    shared within a group are told apart, distinct_names), so on the board a model in several groups keeps one
    colour too."""
    styles: dict = {}
    for r in results_list:
        styles.setdefault(model_label(r), len(styles))
    return styles


def run_series(r: dict, values: list, styles: dict, **options) -> svg.Series:
    """The series of result `r` in a plot, in its colour of the page (`styles`, see run_styles)."""
    label = model_label(r)
    return svg.Series(label, values, style=styles.get(label), **options)


def domain_bars(results_list, family: str, metric: str, styles: dict | None = None) -> svg.Chart:
    """Grouped bars: one group per domain, one bar per result (the paper's figures hatched)."""
    styles = styles or run_styles(results_list)
    domains = domains_with_values(results_list, family, metric)
    shown = [r for r in results_list if any(metric_value(r, family, metric, "domain", d) is not None for d in domains)]
    series = [run_series(r, [metric_value(r, family, metric, "domain", d) for d in domains], styles,
                         hatch=is_paper_row(r)) for r in shown]
    label = METRIC_LABELS[family][metric]
    panel = svg.Panel("bars", f"{label} per domain ({FAMILY_TITLES[family].lower()})", list(domains), series,
                      y_label=label, legend="right" if len(shown) > 1 else None)
    return svg.Chart([panel], width=max(600.0, 120 * len(domains) + 25 * len(shown)), height=340)


def type_values(results: dict, open_metric: str | None) -> list:
    """One value per question type: factual F1 for the factual types, `open_metric` for the open-ended ones."""
    values = [metric_value(results, "factual", "F1", "question_type", t) for t in FACTUAL_TYPES]
    values += [metric_value(results, "open_ended", open_metric, "question_type", t) if open_metric else None
               for t in OPEN_TYPES]
    return values


def type_radar(results_list, open_metric: str | None, styles: dict | None = None) -> svg.Chart:
    """A radar over the ten question types (factual F1 on the factual five, the open metric on the rest); a
    missing value is a gap in the line (a marker still shows a point between two gaps), never 0."""
    styles = styles or run_styles(results_list)
    series = [run_series(r, type_values(r, open_metric), styles, fill=True)
              for r in results_list if any(v is not None for v in type_values(r, open_metric))]
    open_name = METRIC_LABELS["open_ended"][open_metric] if open_metric else "n/a"
    panel = svg.Panel("radar", f"Per question type: factual F1 / open-ended {open_name}", list(QUESTION_TYPES),
                      series, legend="below", title_size=10, tick_size=9)
    return svg.Chart([panel], width=520, height=500)


def paired_runs(results_list) -> list[dict]:
    """{condition: results} of each model seen in more than one condition (closed-book, long, rag) on the same
    benchmark, config, split and dataset revision, in first-seen order; only results with factual F1 count (the
    paper's Table 6 rows have none to set beside the others)."""
    by_name: dict = {}
    for r in results_list:
        if metric_value(r, "factual", "F1") is not None:
            by_name.setdefault((comparison_group(r), model_name(r)), {})[condition(r)] = r
    return [{c: runs[c] for c in CONDITIONS if c in runs} for runs in by_name.values() if len(runs) > 1]


def paired_caption(sets) -> str:
    """The paired plot's caption: the paper's Figures 3-4 (without vs with RAG), with the closed-book baseline
    where there is one."""
    shown = {c for runs in sets for c in runs}
    if "closed-book" not in shown:
        return "Without vs with RAG (Figures 3-4)"
    others = " and ".join(CONDITION_NAMES[c] for c in CONDITIONS[1:] if c in shown)
    return f"Without document (closed-book baseline) vs {others}"


def paired_plot(sets, open_metric: str | None, styles: dict | None = None) -> svg.Chart:
    """Each model in each of its conditions side by side (paired_runs), on factual F1 and the open-ended metric:
    the paper's Figures 3-4 (without vs with RAG), with the no-document baseline beside them. With one model
    (a report) each condition's bars are one result, drawn in its colour of the page (`styles`); with several
    a condition's bars are several results, drawn in the condition's own colour (its place in CONDITIONS)."""
    styles = styles or run_styles([r for runs in sets for r in runs.values()])
    panels = [("factual", "F1")] + ([("open_ended", open_metric)] if open_metric else [])
    panels = [(family, metric) for family, metric in panels  # a panel with no value in it is not drawn
              if any(metric_value(r, family, metric) is not None for runs in sets for r in runs.values())]
    conditions = [c for c in CONDITIONS if any(c in runs for runs in sets)]
    models = [model_name(next(iter(runs.values()))) for runs in sets]
    colour = {c: styles.get(model_label(sets[0][c])) if len(sets) == 1 else CONDITIONS.index(c) for c in conditions}
    drawn = []
    for family, metric in panels:
        series = [svg.Series(CONDITION_NAMES[c], [metric_value(runs[c], family, metric) if c in runs else None
                                                  for runs in sets], style=colour[c]) for c in conditions]
        drawn.append(svg.Panel("bars", f"{METRIC_LABELS[family][metric]} ({FAMILY_TITLES[family].lower()})",
                               models, series, legend="inside", rotate=True, headroom=.3, title_size=10,
                               tick_size=9))
    return svg.Chart(drawn, columns=max(1, len(drawn)), width=500, height=340)


def document_breakdown_labels(results_list, column: str) -> list[str]:
    """Every label of a document breakdown column (doc_length, evidence_position) in the results'
    document_breakdowns, in order, those without questions too (a gap on the axis); SPREAD is left out, no place in
    the document (its scores are in the tables)."""
    labels: list = []
    for r in results_list:
        counts = r.get("document_breakdowns", {}).get("n_questions", {}).get(column, {})
        labels += [x for x in counts if x not in labels and x != SPREAD]
    return labels


def document_plot_metrics(results_list, open_metric: str | None) -> list[tuple[str, str]]:
    """(family, metric) of the length and position plot's rows: factual F1 and the open-ended headline metric,
    those some result has a length bucket's value of (none for a run of RAG metrics only)."""
    rows = [("factual", "F1")] + ([("open_ended", open_metric)] if open_metric else [])
    return [(f, m) for f, m in rows if any(metric_value(r, f, m, "doc_length", label) is not None
                                           for r in results_list
                                           for label in document_breakdown_labels([r], "doc_length"))]


def document_plot(results_list, open_metric: str | None, styles: dict | None = None) -> svg.Chart:
    """Scores against the document's length bucket and against the evidence's position, one line per result (so
    a model's runs with and without the document or retrieval lie side by side): factual F1, and the open-ended
    headline metric below it. Every label has its place on the axis, those without a value too."""
    styles = styles or run_styles(results_list)
    rows = document_plot_metrics(results_list, open_metric)
    columns = [(c, document_breakdown_labels(results_list, c)) for c in DOCUMENT_COLUMNS]
    panels = []
    for family, metric in rows:
        for k, (column, labels) in enumerate(columns):
            series = []
            for r in results_list:
                values = [metric_value(r, family, metric, column, label) for label in labels]
                if any(v is not None for v in values):
                    series.append(run_series(r, values, styles))
            panels.append(svg.Panel(
                "lines", f"{METRIC_LABELS[family][metric]} ({FAMILY_TITLES[family].lower()})", list(labels), series,
                x_label="document length (tokens)" if column == "doc_length" else
                "evidence position (share of the document)", legend="inside" if k == 0 else None, title_size=10,
                tick_size=9))
    return svg.Chart(panels, columns=2, width=500, height=320)


def document_caption(results_list) -> str:
    """What the length and position plot shows and leaves out, from the first result's document_breakdowns."""
    block = next(r["document_breakdowns"] for r in results_list if "document_breakdowns" in r)
    spread = block["n_questions"]["evidence_position"].get(SPREAD, 0)
    return (f"Scores by document length (tokens by {block['tokenizer']}) and by evidence position "
            f"({block['position_bins']} equal parts of the document): {spread} questions with evidence in several "
            f"parts are in the tables only (\"{SPREAD}\"), {block['n_without_evidence']} without evidence pages have "
            "no position; each result's markers sit a little apart around their label, so that equal scores do not "
            "hide one another")


def domains_with_values(results_list, family: str, metric: str) -> list[str]:
    """The domains any of the results has a value of `metric` for (one, for a domain config)."""
    return [d for d in DOMAINS if any(metric_value(r, family, metric, "domain", d) is not None for r in results_list)]


def _has_domains(results_list, family, metric) -> bool:
    return bool(domains_with_values(results_list, family, metric))


def plots(results_list, styles: dict | None = None) -> list[tuple[str, str]]:
    """(caption, data URI) for every plot the results support; `styles` (see run_styles) gives each result its
    colour, the page's whole list of results when the page has other plots too (the board's groups)."""
    out = []
    styles = styles or run_styles(results_list)
    open_metric = open_headline(results_list)
    if _has_domains(results_list, "factual", "F1"):
        out.append(("Factual F1 per domain (Table 4)",
                    image_data_uri(domain_bars(results_list, "factual", "F1", styles))))
    if open_metric and _has_domains(results_list, "open_ended", open_metric):
        label = METRIC_LABELS["open_ended"][open_metric]
        out.append((f"Open-ended {label} per domain (Table 5)",
                    image_data_uri(domain_bars(results_list, "open_ended", open_metric, styles))))
    if any(any(v is not None for v in type_values(r, open_metric)) for r in results_list):
        out.append(("The ten question types", image_data_uri(type_radar(results_list, open_metric, styles))))
    sets = paired_runs(results_list)
    if sets:
        out.append((paired_caption(sets), image_data_uri(paired_plot(sets, open_metric, styles))))
    if document_plot_metrics(results_list, open_metric):
        out.append((document_caption(results_list),
                    image_data_uri(document_plot(results_list, open_metric, styles))))
    return out


# ---- pages -------------------------------------------------------------------------------------------------

def figures_html(figures: list[tuple[str, str]], heading: str = "h2") -> Markup:
    """The Plots section of `figures` (see plots); empty when there are none (e.g. Chinese SimpleQA: no domains,
    no types)."""
    return part("figures", figures, heading)


def tables_html(results_list, *, with_ci: bool) -> Markup:
    sections = []
    open_metric = open_headline(results_list)
    if any("factual" in r.get("metrics", {}) for r in results_list):
        per_domain = "F1" if _has_domains(results_list, "factual", "F1") else None  # none for Chinese SimpleQA
        sections.append(("Factual questions (Table 4)",
                         paper_table(results_list, "factual", per_domain_metric=per_domain, with_ci=with_ci)))
    if any("open_ended" in r.get("metrics", {}) for r in results_list):
        sections.append(("Open-ended questions (Table 5)",
                         paper_table(results_list, "open_ended", per_domain_metric=open_metric, with_ci=with_ci)))
    if any("rag" in r.get("metrics", {}) for r in results_list):
        sections.append(("RAG (Table 6)", paper_table(results_list, "rag", per_domain_metric=None, with_ci=with_ci)))
    return part("tables", sections)


def _facts(results: dict) -> list[tuple[str, object, str | None]]:
    """(name, value, link) rows of the report's first table; only an http(s) address is a link."""
    ds, sub, model = results["dataset"], results["submission"], results["model"]
    facts = [("model", model["model"]), ("RAG", "yes" if model.get("rag") else "no"),
             *([("document", "none: closed-book, the no-document baseline")]
               if condition(results) == "closed-book" else []),
             ("dataset", f"{ds['name']} / {ds['config']} / {ds['split']}"), ("revision", ds["revision"]),
             ("questions scored", f"{sub['n_scored']} of {ds['n_questions']} "
                                  f"(coverage {percent(sub['coverage'])}%)"),
             ("predictions", f"{sub['file']} (sha256 {sub['sha256'][:12]})"),
             ("toolkit", f"{results['toolkit']['name']} {results['toolkit']['version']}"),
             ("created", results["created"]), ("run id", results.get("run_id", ""))]
    facts += [(k, model[k]) for k in ("date", "notes", "url") if model.get(k)]
    if "rag_pair" in results:
        pair = results["rag_pair"]
        facts.append(("paired with", f"{pair['model']} {'with' if pair['rag'] else 'without'} RAG "
                                     f"(run {pair['run_id']})"))
    if "document_pair" in results:
        pair = results["document_pair"]
        facts.append(("paired with", f"{pair['model']} {CONDITION_NAMES[pair['condition']]} (run {pair['run_id']})"))
    if "cascade" in results:
        cascade = results["cascade"]
        facts.append(("factual judge", f"cascade: the rules decided {cascade['rule']} grades, the LLM judge "
                                       f"{cascade['llm']} ({cascade['llm_calls_saved']} LLM calls saved)"))
    return [(name, value, link_target(value) if name == "url" else None) for name, value in facts]


def _breakdowns(results: dict) -> list[tuple[str, list[tuple[str, Markup]]]]:
    """(family title, [(column, its breakdown table)]) per family of the results."""
    out = []
    for family in results["metrics"]:
        columns = []
        for entry in results["metrics"][family].values():
            columns += [c for c in entry.get("by", {}) if c not in columns]
        out.append((FAMILY_TITLES[family], [(c, breakdown_table(results, family, c)) for c in columns]))
    return out


def report_html(results: dict, others=()) -> str:
    """The report of one evaluation; `others` (e.g. the same model in the other RAG condition) join the
    overview tables and plots."""
    everything = [results, *others]
    figures = plots(everything)
    signatures = [(f, METRIC_LABELS.get(f, {}).get(m, m), e.get("signature", ""))
                  for f, metrics in results["metrics"].items() for m, e in metrics.items()]
    return render("report.html", title=f"{results['dataset']['name']} report: {model_label(results)}",
                  images=bool(figures or results.get("calibration")), facts=_facts(results),
                  tables=tables_html(everything, with_ci=True), figures=figures_html(figures),
                  breakdowns=_breakdowns(results), generation=generation_html(results),
                  calibration=calibration_html(results),
                  skipped=[(s["family"], s["metric"], s["reason"]) for s in results["skipped"]],
                  signatures=signatures)


# ---- how the predictions were made (results["generation"], from `chimdqa generate`) --------------------------

def generation_html(results: dict) -> Markup:
    """The Generation section: mode, backend, template, retrieval settings, and the retrieval's hit@k / recall@k
    of the evidence pages per question type; empty for predictions made elsewhere."""
    gen = results.get("generation")
    if not gen:
        return Markup()
    template = gen.get("template") or {}
    facts = [("mode", gen.get("mode")), ("backend", gen.get("backend")), ("model", gen.get("model")),
             ("API", gen.get("api")), ("template", f"{template.get('version')} (sha256 "
                                                          f"{str(template.get('sha256'))[:12]})"),
             ("temperature / max tokens", f"{gen.get('temperature')} / {gen.get('max_tokens')}")]
    context, retrieval = gen.get("context"), gen.get("retrieval")
    if context:
        facts.append(("context", f"{context.get('max_context_tokens')} tokens ({context.get('token_counter')}); "
                                 f"{context.get('questions_truncated')} questions' documents truncated"))
        if context.get("truncation"):
            facts.append(("truncation", f"{context['truncation']}: {context.get('truncation_rule')}"))
        pages = context.get("evidence_pages")
        if isinstance(pages, dict):
            facts.append(("evidence pages in the prompt", ", ".join(f"{pages.get(state, 0)} {state}"
                                                                  for state in ("kept", "partly", "cut"))))
    if retrieval:
        facts.append(("retrieval", f"{retrieval.get('method')}, top {retrieval.get('top_k')}, chunks of "
                                   f"{retrieval.get('chunk_size')} characters, overlap {retrieval.get('chunk_overlap')}"
                                   + (f", re-ranked by {retrieval['reranker']}" if retrieval.get("reranker") else "")))
    quality = gen.get("retrieval_quality")
    if not quality:
        return part("generation", facts, None, None)
    rows = [("all", quality)] + list(quality.get("by", {}).get("question_type", {}).items())
    return part("generation", facts, quality["k"], rows)


# ---- calibration (results["calibration"], from submitted confidences) ---------------------------------------

def reliability_diagram(calibration: dict) -> svg.Chart:
    """Accuracy per confidence bin against the diagonal of perfect calibration, each bar labelled with its size."""
    bins = [(b["low"], b["high"], b["accuracy"], b["n"]) for b in calibration["bins"]]
    panel = svg.Panel("reliability", f"Reliability diagram, ECE {fixed(calibration['ece'])}", bins=bins,
                      x_label="stated confidence", y_label="accuracy (% correct)", title_size=10)
    return svg.Chart([panel], width=460, height=400)


def calibration_html(results: dict) -> Markup:
    """The Calibration section: ECE overall and per label, the bins, and the reliability diagram; empty without
    confidences."""
    cal = results.get("calibration")
    if not cal:
        return Markup()
    return part("calibration", cal, image_data_uri(reliability_diagram(cal)))
