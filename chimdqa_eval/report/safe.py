"""Values from results files on their way into pages and tables: escaped for where they go, and checked first.

A results.json is input like any other: a model name, a revision or a metric name in it can hold HTML, Markdown,
line breaks or a spreadsheet formula, and a number can be a string. These rules are applied where each
output is written (html_value for every value the pages' templates write, md_cell, csv_cell) and when a results
document is read for a page (check_results_values), so nothing a results file holds runs in a browser or a
spreadsheet, and a wrong type is an InputError naming the file and the field instead of a TypeError halfway
through a page.
"""
from __future__ import annotations

import html
import math
import re

from markupsafe import Markup

from chimdqa_eval.families import METRIC_LABELS
from chimdqa_eval.schema import (ID_LIMIT, METADATA_LIMITS, raise_problems, shown, surrogate_problem, too_long,
                                 url_problem)
from chimdqa_eval.schema import date_problem

# Characters a spreadsheet reads as the start of a formula (OWASP's CSV-injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_LINE_BREAKS = re.compile(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def html_text(value) -> str:
    """`value` as HTML text or a double-quoted attribute value: & < > " ' escaped."""
    return html.escape(str(value), quote=True)


def html_value(value) -> Markup:
    """How the pages' templates write every value (their Jinja environment's finalize): a piece of page that
    one of those templates made (Markup) as it is, anything else escaped by html_text."""
    return value if isinstance(value, Markup) else Markup(html_text(value))


def link_target(url) -> str | None:
    """`url` where a page may make it a link: an http(s) address (schema.url_problem's rule). None for anything
    else (javascript:, data:, a relative or protocol-relative address): that is shown as text only."""
    return url if isinstance(url, str) and url_problem("url", url) is None else None


def fixed(value, digits: int = 1):
    """A number with `digits` decimals, for a page; anything else as it is (a string where a number belongs,
    in a hand-made file), so that it is shown as text where it is written instead of breaking the page."""
    return f"{value:.{digits}f}" if _is_number(value) else value


def percent(fraction):
    """A fraction (0-1) as a percentage with one decimal (see fixed)."""
    return fixed(100 * fraction) if _is_number(fraction) else fraction


def one_line(text: str) -> str:
    """Line breaks (and the separators some readers treat as such) as single spaces; other control characters
    dropped."""
    text = _LINE_BREAKS.sub(" ", text)
    return "".join(c for c in text if c.isprintable() or c == "\t").replace("\t", " ")


def md_cell(value) -> str:
    """`value` as the text of one Markdown table cell: one line, HTML tags shown as text, and the characters
    that would end the cell or start emphasis, code or a link (| * _ ` [ ] \\) escaped."""
    text = one_line("" if value is None else str(value))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def csv_cell(value):
    """`value` for a CSV cell: numbers as they are; text on one line, and text that a spreadsheet would run as a
    formula (starting with = + - @, a tab or a carriage return) prefixed with an apostrophe. The test is made on
    the text as written too (after control characters are dropped and line breaks become spaces), so "\\x01=..."
    or "\\n=..." cannot uncover a formula."""
    if not isinstance(value, str):
        return value
    text = one_line(value)
    if value.startswith(FORMULA_STARTS) or text.lstrip(" ").startswith(FORMULA_STARTS):
        return "'" + text
    return text


# ---- results documents -----------------------------------------------------------------------------------

def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _type(value) -> str:
    return f"{type(value).__name__} {shown(value, 40)}"


def _number(problems, field: str, value, *, optional=True, integer=False, low=None, high=None) -> None:
    if value is None and optional:
        return
    ok = (isinstance(value, int) and not isinstance(value, bool)) if integer else _is_number(value)
    if not ok:
        kind = "an integer" if integer else "a finite number"
        problems.append(f"{field} must be {kind}{' or null' if optional else ''}, got {_type(value)}")
    elif (low is not None and value < low) or (high is not None and value > high):
        problems.append(f"{field} must be between {low} and {high}, got {value}")


def _text(problems, field: str, value, limit: int, *, optional=False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        problems.append(f"{field} must be a non-empty string, got {_type(value)}")
    elif long := too_long(field, value, limit):
        problems.append(long)


def _score(problems, field: str, entry) -> None:
    """value, ci95 and n of one overall or breakdown entry."""
    if not isinstance(entry, dict):
        problems.append(f"{field} must be an object, got {_type(entry)}")
        return
    _number(problems, f"{field}.value", entry.get("value"))
    ci = entry.get("ci95", [None, None])
    if not isinstance(ci, list) or len(ci) != 2:
        problems.append(f"{field}.ci95 must be a list [low, high], got {_type(ci)}")
    else:
        for i, bound in enumerate(ci):
            _number(problems, f"{field}.ci95[{i}]", bound)
    _number(problems, f"{field}.n", entry.get("n"), integer=True, low=0)


def _object(problems, field: str, value) -> dict:
    if isinstance(value, dict):
        return value
    problems.append(f"{field} must be an object, got {_type(value)}")
    return {}


def results_value_problems(doc: dict) -> list[str]:
    """Every field of a results document that a page or table shows, checked for its type and length."""
    surrogate = surrogate_problem({k: v for k, v in doc.items() if k != "_path"})
    if surrogate:
        return [surrogate]
    problems: list[str] = []
    model = _object(problems, "model", doc.get("model"))
    _text(problems, "model.model", model.get("model"), METADATA_LIMITS["model"])
    for name, limit in METADATA_LIMITS.items():
        if name != "model":
            _text(problems, f"model.{name}", model.get(name), limit, optional=True)
    if isinstance(model.get("url"), str) and (bad_url := url_problem("model.url", model["url"])):
        problems.append(bad_url)
    if (isinstance(model.get("date"), str) and len(model["date"]) <= METADATA_LIMITS["date"]
            and (bad_date := date_problem("model.date", model["date"]))):
        problems.append(bad_date)
    if not isinstance(model.get("rag", False), bool):
        problems.append(f"model.rag must be true or false, got {_type(model['rag'])}")
    dataset = _object(problems, "dataset", doc.get("dataset"))
    for name in ("name", "config", "split", "revision"):
        _text(problems, f"dataset.{name}", dataset.get(name), ID_LIMIT, optional=name == "split")
    _number(problems, "dataset.n_questions", dataset.get("n_questions"), integer=True, low=0)
    submission = _object(problems, "submission", doc.get("submission", {}))
    _number(problems, "submission.n_scored", submission.get("n_scored"), integer=True, low=0)
    _number(problems, "submission.coverage", submission.get("coverage"), low=0, high=1)
    for family, metrics in _object(problems, "metrics", doc.get("metrics")).items():
        if family not in METRIC_LABELS:
            problems.append(f"metrics: unknown family {shown(family)}; expected one of {', '.join(METRIC_LABELS)}")
            continue
        for metric, entry in _object(problems, f"metrics.{family}", metrics).items():
            field = f"metrics.{family}.{shown(metric, ID_LIMIT, quoted=False)}"
            if long := too_long(f"metrics.{family}: a metric name", metric, ID_LIMIT):
                problems.append(long)
                continue
            _score(problems, field, entry)
            if isinstance(entry, dict):
                _text(problems, f"{field}.signature", entry.get("signature"), 10_000, optional=True)
                for column, labels in _object(problems, f"{field}.by", entry.get("by", {})).items():
                    for label, sub in _object(problems, f"{field}.by.{shown(column, quoted=False)}", labels).items():
                        _score(problems, f"{field}.by.{shown(column, quoted=False)}.{shown(label, quoted=False)}", sub)
    if "rag_pair" in doc:  # shown in the report's facts
        pair = _object(problems, "rag_pair", doc["rag_pair"])
        _text(problems, "rag_pair.model", pair.get("model"), METADATA_LIMITS["model"])
        _text(problems, "rag_pair.run_id", pair.get("run_id"), ID_LIMIT, optional=True)
        if not isinstance(pair.get("rag"), bool):
            problems.append(f"rag_pair.rag must be true or false, got {_type(pair.get('rag'))}")
    if "cascade" in doc:  # shown in the report's facts
        cascade = _object(problems, "cascade", doc["cascade"])
        for name in ("rule", "llm", "llm_calls_saved"):
            _number(problems, f"cascade.{name}", cascade.get(name), optional=False, integer=True, low=0)
    skipped = doc.get("skipped", [])
    if not isinstance(skipped, list):
        problems.append(f"skipped must be a list, got {_type(skipped)}")
        skipped = []
    for i, entry in enumerate(skipped):
        entry = _object(problems, f"skipped[{i}]", entry)
        _text(problems, f"skipped[{i}].family", entry.get("family"), ID_LIMIT)
        _text(problems, f"skipped[{i}].metric", entry.get("metric"), ID_LIMIT, optional=True)
        _text(problems, f"skipped[{i}].reason", entry.get("reason"), 10_000)
    return problems


def check_results_values(doc: dict, path=None) -> dict:
    """The document itself when every value a page shows has its type (numbers are numbers, names are
    strings of bounded length, no lone surrogate); else InputError naming the file and each bad field."""
    problems = results_value_problems(doc)
    if problems:
        raise_problems(problems, f"{path or doc.get('_path', 'results')}: invalid results file")
    return doc
