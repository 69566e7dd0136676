"""Long-context mode: a question's document packed into the prompt up to a token budget, cut by one of three
truncation policies when it does not fit.

The document is its pages in order, each headed by its page marker ``[第N页]``, joined by blank lines. A document
within the budget goes in whole, the same under every policy. A longer one is cut:

- ``head``: pages from the start while they fit; the first page over the budget is cut at it (the longest
  prefix that fits), later pages are left out.
- ``tail``: pages from the end while they fit; the first page (going backwards) over the budget keeps its
  longest ending that fits, under its own page marker; earlier pages are left out.
- ``middle`` (the default): the first half of the budget from the start, as ``head`` does, and the rest from
  the end, as ``tail`` does; the middle is left out. LongBench (and InfiniteBench, CLongEval after it) cuts
  over-long inputs this way, keeping the first and last halves, so long-mode scores compare with theirs.

A page marker is never cut in two: a cut page keeps its whole marker and at least one character, or nothing.
Only the document text counts against `--max-context-tokens`; the template's instructions and the question come
on top (about a hundred tokens).

Tokens are counted by the model's own tokenizer when one is given (`--context-tokenizer`, and always with the
transformers backend), else by APPROX_COUNTER: one token per CJK character (or full-width symbol) and one per
four other non-space characters, rounded up per run, which over-counts for every common Chinese tokenizer
(Qwen, GLM, DeepSeek, Llama 3 spend 0.6 to 1 token per Chinese character), so the packed text fits. Pages are
counted one at a time and their counts added; the packed text is counted once more at the end, and where a
tokenizer counts the joined text higher than its parts, it is packed again with the budget lowered by the excess.
"""
from __future__ import annotations

import math
import re
from typing import Callable

from chimdqa_eval.text import is_wide

TRUNCATIONS = ("middle", "head", "tail")
DEFAULT_TRUNCATION = "middle"
TRUNCATION_RULES = {
    "middle": "the first half of the budget from the start and the second half from the end, the middle left out "
              "(LongBench's rule); a cut page keeps its page marker",
    "head": "pages in order, whole pages within the budget, the first page over it cut at the budget",
    "tail": "pages from the end, whole pages within the budget, the first page over it (going backwards) keeps "
            "its end under its page marker",
}
APPROX_COUNTER = "approx: 1 per CJK character, 1 per 4 other non-space characters"
DEFAULT_MAX_CONTEXT_TOKENS = 32000
SEPARATOR = "\n\n"
_RUN = re.compile(r"\S+")


def approx_tokens(text: str) -> int:
    """The documented over-estimate of a text's token count (see the module docstring)."""
    total = 0
    for run in _RUN.findall(text):
        wide = sum(map(is_wide, run))
        total += wide + math.ceil((len(run) - wide) / 4)
    return total


def tokenizer_counter(tokenizer) -> Callable[[str], int]:
    """A counter from a Hugging Face tokenizer (no special tokens: they belong to the whole prompt)."""
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def page_marker(page: int) -> str:
    return f"[第{page}页]\n"


def page_block(page: int, text: str) -> str:
    return page_marker(page) + text


def survival(share: float) -> str:
    """How much of a page the prompt kept: "kept" (all of it), "partly" or "cut" (none)."""
    return "kept" if share >= 1 else "partly" if share > 0 else "cut"


def _longest(text: str, fits: Callable[[str], bool], from_end: bool) -> str:
    """The longest prefix (or suffix) of `text` that `fits` (which holds for every shorter one too)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[len(text) - middle:] if from_end else text[:middle]):
            low = middle
        else:
            high = middle - 1
    return text[len(text) - low:] if from_end else text[:low]


def _take(pages, costs, budget: int, count, from_end: bool, lead: str = "", stop: int = 0) -> list:
    """[(page, kept text, whole page?)] taken from the start (or from the end, down to index `stop`) within
    `budget`: whole pages, then the longest cut of the next page that keeps its marker and one character.
    `lead` goes before a page that is not the first of the document (from the start: the separator)."""
    taken, used = [], 0
    order = range(len(pages) - 1, stop - 1, -1) if from_end else range(len(pages))
    for i in order:
        page, text = pages[i]
        if used + costs[i] <= budget:
            taken.append((page, text, True))
            used += costs[i]
            continue
        before = lead if i and not from_end else ""
        head = before + page_marker(page)
        after = SEPARATOR if from_end and i < len(pages) - 1 else ""
        part = _longest(text, lambda cut: count(head + cut + after) <= budget - used, from_end)
        if part:
            taken.append((page, part, False))
            used += count(head + part + after)
        break
    return taken[::-1] if from_end else taken


def _join(taken) -> str:
    return SEPARATOR.join(page_block(page, text) for page, text, _ in taken)


def _pack(pages, costs, budget: int, count, truncation: str) -> tuple[str, list]:
    """(packed text, [(page, kept text, whole?)] of the head part, then of the tail part)."""
    if truncation == "head":
        taken = _take(pages, costs, budget, count, from_end=False, lead=SEPARATOR)
        return _join(taken), taken
    if truncation == "tail":
        taken = _take(pages, costs, budget, count, from_end=True)
        return _join(taken), taken
    head = _take(pages, costs, budget - budget // 2, count, from_end=False, lead=SEPARATOR)
    head_text = _join(head)
    rest = budget - (count(head_text + SEPARATOR) if head else 0)
    # the tail never takes again what the head took; a page the head cut may give its end to the tail
    stop = len(head) - (0 if not head or head[-1][2] else 1)
    tail = _take(pages, costs, rest, count, from_end=True, stop=stop)
    return SEPARATOR.join(filter(None, (head_text, _join(tail)))), head + tail


def pack_pages(pages, budget: int, count: Callable[[str], int] = approx_tokens,
               truncation: str = DEFAULT_TRUNCATION) -> tuple[str, dict]:
    """(packed text, info) for (page number, text) pairs. info: "pages_kept" (whole pages), "pages_total",
    "truncated", "tokens" (of the packed text), "tokens_total" (of the whole document, page counts added) and
    "page_shares" ({page: share of its characters kept, 0 to 1})."""
    if budget < 1:
        raise ValueError(f"the context budget must be at least 1 token, got {budget}")
    if truncation not in TRUNCATIONS:
        raise ValueError(f"unknown truncation {truncation!r}; expected one of {', '.join(TRUNCATIONS)}")
    pages = list(pages)
    costs = [count((SEPARATOR if i else "") + page_block(page, text)) for i, (page, text) in enumerate(pages)]
    total = sum(costs)
    if total <= budget:
        taken = [(page, t, True) for page, t in pages]
        text = _join(taken)
    else:
        target = budget
        while True:
            text, taken = _pack(pages, costs, target, count, truncation)
            excess = count(text) - budget
            if excess <= 0 or target <= 1:
                break
            target = max(1, target - excess)
    kept = {page: 0 for page, _ in pages}
    for page, part, _ in taken:
        kept[page] += len(part)
    lengths = dict(pages)
    # rounded down: a page short of a single character is not whole
    shares = {page: min(1.0, math.floor(10_000 * kept[page] / max(1, len(lengths[page]))) / 10_000) for page in kept}
    whole = sum(share == 1.0 for share in shares.values())
    return text, {"pages_kept": whole, "pages_total": len(pages), "truncated": whole < len(pages),
                  "tokens": count(text), "tokens_total": total, "page_shares": shares}
