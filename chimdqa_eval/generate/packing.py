"""Long-context mode: a question's document packed into the prompt up to a token budget.

The truncation rule (recorded in the metadata as TRUNCATION_RULE): pages are taken in document order, each
headed by its page marker ``[第N页]``; whole pages go in while the running total stays within the budget; the
first page that does not fit is cut at the budget (the longest prefix that fits), and later pages are left out.
Only the document text counts against `--max-context-tokens`; the template's instructions and the question come
on top (about a hundred tokens).

Tokens are counted by the model's own tokenizer when one is given (`--context-tokenizer`, and always with the
transformers backend), else by APPROX_COUNTER: one token per CJK character (or full-width symbol) and one per
four other non-space characters, rounded up per run, which over-counts for every common Chinese tokenizer
(Qwen, GLM, DeepSeek, Llama 3 spend 0.6 to 1 token per Chinese character), so the packed text fits.
"""
from __future__ import annotations

import math
import re
from typing import Callable

from chimdqa_eval.text import is_wide

TRUNCATION_RULE = "pages-in-order, whole pages within the budget, the first page over it cut at the budget"
APPROX_COUNTER = "approx: 1 per CJK character, 1 per 4 other non-space characters"
DEFAULT_MAX_CONTEXT_TOKENS = 32000
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


def page_block(page: int, text: str) -> str:
    return f"[第{page}页]\n{text}"


def _longest_prefix(text: str, budget: int, count) -> str:
    """The longest prefix of `text` whose count is within `budget` (counts grow with the prefix)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def pack_pages(pages, budget: int, count: Callable[[str], int] = approx_tokens) -> tuple[str, dict]:
    """(packed text, {"pages_kept", "pages_total", "truncated", "tokens"}) for (page number, text) pairs."""
    if budget < 1:
        raise ValueError(f"the context budget must be at least 1 token, got {budget}")
    blocks, used, kept = [], 0, 0
    pages = list(pages)
    for page, text in pages:
        block = ("\n\n" if blocks else "") + page_block(page, text)
        size = count(block)
        if used + size <= budget:
            blocks.append(block)
            used += size
            kept += 1
            continue
        prefix = _longest_prefix(block, budget - used, count)
        if prefix.strip():
            blocks.append(prefix)
            used += count(prefix)
        break
    truncated = kept < len(pages)
    return "".join(blocks), {"pages_kept": kept, "pages_total": len(pages), "truncated": truncated, "tokens": used}
