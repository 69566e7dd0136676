"""What every reader of the rule judge shares: a text's clauses, sentences and character bigrams, where a substring
starts, its scripts (Latin, CJK), filler, negation and the words that turn to another claim, and patterns built from
the text at hand, compiled once (_compiled). The other reading_*.py modules build on it (the reference:
reading_reference, the question: reading_question, the answer: reading_answer; what the rules ask of them:
reading_match, reading_places, reading_kinds, reading_claims, reading_numbers); it reads no reference nor answer.
judge_rule.py's docstring explains the rules; decision.py the engine that orders them."""
from __future__ import annotations

import re
import zlib
from functools import lru_cache

from chimdqa_eval.factual import vocabulary as vocab


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern:
    """A pattern built from the reference or answer at hand (a form, a dynasty, a code), compiled once."""
    return re.compile(pattern)


_LATIN = re.compile(r"[a-z]")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_TOKEN = re.compile(r"[a-z0-9.]+")
_LATIN_WORDS = re.compile(r"[a-z0-9]+")
_PARENS = re.compile(r"\(([^()]*)\)")
_TRUTH = vocab.pattern("truth_words")  # 其实|实际上|事实上
_CLAUSE_END = re.compile(r"[,;。!?\n:]")


@lru_cache(maxsize=1024)  # the rules split one answer's texts into clauses many times (6,273 splits of 2,458 texts)
def _split_clauses(text: str) -> tuple[str, ...]:
    """_CLAUSE_END.split(text), kept per text (emptied with the answer caches); a tuple, which no caller changes."""
    return tuple(_CLAUSE_END.split(text))
# Words that turn from what came before to another claim (not 而: a contrast, no correction); at a clause's start
# they mark the value after them (_likeliest) or a claim that may supersede the reference (_frame).
_TURN_WORDS = vocab.pattern("turn_words")
_TURN_CLAUSE = re.compile(rf"(?:^|[,;:])\s*(?:{_TURN_WORDS})")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")  # Markdown bold, which clean() keeps
_TITLE = re.compile(r"《[^》]*》")
# Characters that carry no candidate of their own (for "does the answer assert anything besides this").
_FILLER = frozenset(vocab.words("filler_chars"))
# A clause that negates (沈括并没有写过…), leaving out 不 in words that do not (不仅, 不断, 不过, 不得早于) and the
# refusals and hedges that other rules read; a sentence saying something has not happened.
_NEGATION = re.compile(r"(?<!是)不(?!仅|久|断|少|同|过|但|管|论|如|得|只|光|单|能|确定|清楚|太|知道|超过|低于|高于|多于|大于|小于|止)|没(?!有?记?错)有?|尚未|并未|从未"
                       r"|未曾|并非|绝非")


@lru_cache(maxsize=1024)  # the question's and the clauses' bigrams are asked for by several rules of an answer
def _word_bigrams(text: str) -> frozenset[str]:
    """Character bigrams with each Latin word or number as one token (consolas counts once, not as 7 bigrams),
    plus each Latin word of two letters or more twice over (a shared name such as HD 19789 weighs 2)."""
    words = {w for w in _LATIN_TOKEN.findall(text) if sum(ch.isalpha() for ch in w) >= 2}
    return frozenset(_bigrams(_LATIN_TOKEN.sub(lambda m: chr(0xE000 + zlib.crc32(m.group(0).encode()) % 6000), text))
                     | {f"<{w}>" for w in words} | {f"<<{w}>>" for w in words})


def _bigrams(text: str) -> set[str]:
    return {text[i:i + 2] for i in range(len(text) - 1)}


def _has_content(answer_key: str, question: str) -> bool:
    """The answer asserts something besides the question's words and filler."""
    return bool(answer_key) and sum(ch not in question and ch not in _FILLER for ch in answer_key) >= min(2, len(answer_key))


def _starts(text: str, sub: str) -> list[int]:
    """Where sub starts in text, without overlaps (str.find: no regex compiled per reference)."""
    out, i = [], text.find(sub) if sub else -1
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + len(sub))
    return out


def _positions(text: str, ch: str) -> list[int]:
    return [i for i, c in enumerate(text) if c == ch]


_SENTENCE_END = re.compile(r"[;。!?\n]")
_TITLE_IN = re.compile(r"《[^》]*》")


def _clause_at(text: str, position: int) -> str:
    """The clause of text (between , ; 。 ! ? : and newlines) around a character position."""
    start = max((m.end() for m in _CLAUSE_END.finditer(text, 0, position)), default=0)
    end = _CLAUSE_END.search(text, position)
    return text[start:end.start() if end else len(text)]
