"""Values from results files on their way into pages and tables: escaped for where they go, and checked first.

A results.json is input like any other: a model name, a revision or a metric name in it can hold HTML, Markdown,
line breaks or a spreadsheet formula, and a number can be a string. These rules are applied where each
output is written (html_value for every value the pages' templates write, md_cell, csv_cell) and when a results
document is read (report.results.check_results, against results.schema.json) or handed to a page writer
(check_results_values, against the part of that schema the pages show), so nothing a results file holds runs in
a browser or a spreadsheet, and a wrong type is an InputError naming the file and the field instead of a
TypeError halfway through a page.
"""
from __future__ import annotations

import html
import math
import re

from markupsafe import Markup

from chimdqa_eval.report.results import check_results
from chimdqa_eval.schema import url_problem

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


def check_results_values(doc: dict, path=None) -> dict:
    """The document itself when every value a page shows has its type (results.schema.json's $defs/shown part:
    numbers are numbers, names are strings of bounded length; and no lone surrogate): the check of the page
    writers, for documents that need not be results files (the papers' rows, one built in Python). A results.json
    read by read_results is checked against the whole schema already. Else InputError naming the file and each
    bad field."""
    return check_results(doc, path, whole=False)
