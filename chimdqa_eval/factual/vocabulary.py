"""The rule judge's vocabulary as data: cue words, kind words, regions, transliteration classes, counters and units
live in the files of factual/data/ named in FILES, so that a second team can read and change them without reading
the rules. VERSION (a hash of every file's bytes) goes into the judge's signature (version.NORMALIZER_VERSION).

A .txt file holds named lists:

    # a comment
    [turn_words]          a list's name
    但是? 不过 然而        entries, separated by spaces; a line is a group of entries (groups(name))

An entry is a word or, where the list builds a regular expression, a fragment of one (但是?); lists keep their
file order, which a pattern built from them keeps too (patterns try their alternatives in that order).
units.tsv holds the units a number may carry: spelling, canonical unit, factor (an integer, a decimal or a/b), an
optional offset added before the factor, and `converted` for units a match through which is never sure.
"""
from __future__ import annotations

import hashlib
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
FILES = ("cues.txt", "kinds.txt", "regions.txt", "translit.txt", "counters.txt", "units.tsv")


class VocabularyError(ValueError):
    """A vocabulary file that cannot be read: the file, the line and why."""


def parse_lists(text: str, source: str = "<text>") -> dict:
    """{name: ((entry, ...), ...)}: each list's lines of entries, in file order."""
    lists, name = {}, None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("[") else line.strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1].strip()
            if not name or name in lists:
                raise VocabularyError(f"{source}:{number}: list name {name!r} empty or given twice")
            lists[name] = []
        elif name is None:
            raise VocabularyError(f"{source}:{number}: entries before any [list name]")
        else:
            lists[name].append(tuple(line.split()))
    return {k: tuple(v) for k, v in lists.items()}


@lru_cache(maxsize=None)
def _lists() -> dict:
    out = {}
    for file in FILES:
        if file.endswith(".txt"):
            for name, lines in parse_lists((DATA / file).read_text(encoding="utf-8"), file).items():
                if name in out:
                    raise VocabularyError(f"{file}: list {name!r} is also in another vocabulary file")
                out[name] = lines
    return out


def list_names() -> tuple:
    return tuple(_lists())


def groups(name: str) -> tuple:
    """The lines of a list, each a tuple of entries."""
    try:
        return _lists()[name]
    except KeyError:
        raise VocabularyError(f"no vocabulary list {name!r} in {', '.join(FILES)}") from None


def words(name: str) -> tuple:
    """The entries of a list, in order."""
    return tuple(entry for line in groups(name) for entry in line)


def pattern(name: str) -> str:
    """The entries of a list as alternatives of a regular expression, in order."""
    return "|".join(words(name))


def chars(name: str) -> str:
    """A list of single characters, joined."""
    return "".join(words(name))


def _decimal(text: str) -> Decimal:
    if "/" in text:
        numerator, denominator = text.split("/")
        return Decimal(numerator) / Decimal(denominator)
    return Decimal(text)


def parse_units(text: str, source: str = "units.tsv") -> tuple[dict, frozenset]:
    """({spelling: (canonical unit, factor[, offset])}, spellings converted)."""
    units, converted = {}, set()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (3, 4, 5) or fields[0] in units:
            raise VocabularyError(f"{source}:{number}: expected spelling, unit, factor[, offset][, converted] "
                                  f"(tab-separated), each spelling once; got {line!r}")
        spelling, unit, factor, *rest = fields
        flag = rest.pop() if rest and rest[-1] == "converted" else ""
        offset = tuple(_decimal(x) for x in rest if x)
        units[spelling] = (unit, _decimal(factor), *offset)
        if flag:
            converted.add(spelling)
    return units, frozenset(converted)


@lru_cache(maxsize=None)
def units() -> tuple[dict, frozenset]:
    return parse_units((DATA / "units.tsv").read_text(encoding="utf-8"))


def _version() -> str:
    digest = hashlib.sha256()
    for file in FILES:
        digest.update(file.encode() + b"\0" + (DATA / file).read_bytes() + b"\0")
    return f"vocab-{digest.hexdigest()[:12]}"


VERSION = _version()
