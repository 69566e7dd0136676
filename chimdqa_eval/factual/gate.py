"""Regular expressions with a gate: a long list of cue words (REFUSAL, GUESS, _CORRECTION…) is tried by Python's
`re` word by word at every character of the text, unless every word begins with a plain character (then `re`
first skips to a character that can begin one). gated(pattern) puts that gate in front of any such pattern:
(?=[first characters])(?:pattern), where the first characters are every character a match can begin with, worked
out from the parsed pattern. The gate only says what every match already does, so what the pattern matches
(and where, and its groups) is unchanged; a pattern whose first characters cannot be listed (one that may begin
with any character, or match nothing) is compiled as it is.
"""
from __future__ import annotations

import re
from functools import lru_cache

try:  # the parser of Python's own re (3.11+); without it, patterns are compiled ungated
    from re import _constants as _c
    from re import _parser
except ImportError:  # pragma: no cover
    _parser = None

_WIDEST_RANGE = 400  # a class range wider than this ([\u4e00-\u9fff]) is no gate worth checking


@lru_cache(maxsize=None)
def gated(pattern: str, flags: int = 0) -> re.Pattern:
    """pattern compiled behind a gate of its first characters (see the module docstring)."""
    first = first_characters(pattern, flags)
    if not first:
        return re.compile(pattern, flags)
    end = "\n)" if flags & re.VERBOSE else ")"  # a verbose pattern may end in a comment
    return re.compile(f"(?=[{''.join(re.escape(ch) for ch in sorted(first))}])(?:{pattern}{end}", flags)


@lru_cache(maxsize=None)
def first_characters(pattern: str, flags: int = 0) -> frozenset | None:
    """Every character a match of pattern can begin with; None when that cannot be listed (or the pattern may
    match the empty string)."""
    if _parser is None or pattern.startswith("(?") and not pattern.startswith(("(?:", "(?=", "(?!", "(?<", "(?P")):
        return None  # global inline flags must stay first
    first, empty = _first(list(_parser.parse(pattern, flags)))
    return None if first is None or empty else frozenset(first)


def _first(items) -> tuple[set | None, bool]:
    """(the characters the sequence of parsed items can begin with, whether it can match the empty string)."""
    out = set()
    for op, av in items:
        if op in (_c.AT, _c.ASSERT_NOT) or op is _c.ASSERT and av[0] < 0:
            continue  # zero-width: ^, \b, (?!…), (?<=…)
        if op is _c.LITERAL:
            return out | {chr(av)}, False
        if op is _c.IN:
            chars = _class(av)
            return (None if chars is None else out | chars), False
        if op is _c.ASSERT:  # (?=…): the match begins as the lookahead does
            chars, empty = _first(list(av[1]))
            if chars is None or empty:
                return None, False
            return out | chars, False
        parts = _parts(op, av)
        if parts is None:
            return None, False
        chars, empty = parts
        out |= chars
        if not empty:
            return out, False
    return out, True


def _parts(op, av) -> tuple[set, bool] | None:
    """For an alternation, a group or a repeat: (its first characters, whether it can be empty); None otherwise."""
    if op is _c.BRANCH:
        branches = [_first(list(alternative)) for alternative in av[1]]
        if any(chars is None for chars, _ in branches):
            return None
        return set().union(*(chars for chars, _ in branches)), any(empty for _, empty in branches)
    if op is _c.SUBPATTERN:
        if av[1] or av[2]:  # (?i:…) and the like: flags the gate, compiled without them, would not have
            return None
        chars, empty = _first(list(av[3]))
        return None if chars is None else (chars, empty)
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        chars, empty = _first(list(av[2]))
        return None if chars is None else (chars, empty or av[0] == 0)
    return None


def _class(items) -> set | None:
    """The characters of a character class; None for a negated class, a category (\\w) or a wide range."""
    chars = set()
    for op, av in items:
        if op is _c.LITERAL:
            chars.add(chr(av))
        elif op is _c.RANGE and av[1] - av[0] <= _WIDEST_RANGE:
            chars.update(chr(code) for code in range(av[0], av[1] + 1))
        else:
            return None
    return chars


def alternatives(pattern: str) -> list[str] | None:
    """The top-level alternatives of a pattern, as written (a|b(c|d) -> [a, b(c|d)]); None for a pattern with
    inline flags, whose pieces would not mean alone what they mean together."""
    if "(?" in pattern.replace("(?:", "").replace("(?=", "").replace("(?!", "").replace("(?<", ""):
        return None  # (?i), (?P…): kept whole
    pieces, start, depth, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 2 if pattern[i + 1:i + 2] == "^" else 1  # a ] right after [ or [^ is a member, not the end
            i += 1 if pattern[i:i + 1] == "]" else 0
            continue
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "|" and depth == 0:
            pieces.append(pattern[start:i])
            start = i + 1
        i += 1
    return pieces + [pattern[start:]]


class FromStarts:
    """A pattern searched only from the places whose character can begin a match: a plain class (`starts`, else
    the pattern's first characters), which re scans for fast, finds each such place, and the pattern is tried there
    alone. A pattern that opens with a lookbehind (_ARABIC, _DECADE) gives re no first character to skip ahead
    to, so re tries it at every place of a text. Only for a pattern whose every match begins with a character of
    `starts` (so none is empty): then the match at the first such place that matches is the one search finds, the
    same span and groups, and finditer goes on from each match's end, as re's does. The other methods (sub, match,
    fullmatch, findall) are the pattern's own."""

    def __init__(self, pattern: re.Pattern, starts: str | None = None):
        if starts is None:
            first = first_characters(pattern.pattern, pattern.flags)
            if not first:
                raise ValueError("no first characters to start from")
            starts = "[" + "".join(re.escape(ch) for ch in sorted(first)) + "]"
        self.whole, self._starts = pattern, re.compile(starts)
        self.pattern, self.flags = pattern.pattern, pattern.flags

    def search(self, text: str, pos: int = 0):
        find, match = self._starts.search, self.whole.match
        at = find(text, pos)
        while at is not None:
            m = match(text, at.start())
            if m is not None:
                return m
            at = find(text, at.start() + 1)
        return None

    def finditer(self, text: str, pos: int = 0):
        m = self.search(text, pos)
        while m is not None:
            yield m
            m = self.search(text, m.end())

    def __getattr__(self, name):  # sub, match, fullmatch, findall, split: the whole pattern's
        return getattr(self.whole, name)


class Hinted:
    """A pattern tried only in a text where `hint` finds one of the words every match of it holds (a plain list of
    words, which re skips ahead to; a lookaround's characters count, as they are in the text too). A gated cue list
    opens with a lookahead, which gives re no first character to skip ahead to: re tried it at every place of every
    text, and most texts hold no cue. In a text without a hint word the pattern finds nothing from any position, so
    search gives None, finditer and findall nothing and sub the text as it is; the other methods are the
    pattern's own."""

    def __init__(self, pattern: re.Pattern, hint: str):
        self.whole, self.hint = pattern, re.compile(hint)
        self.pattern, self.flags = pattern.pattern, pattern.flags

    def search(self, text: str, *where):
        return self.whole.search(text, *where) if self.hint.search(text) else None

    def finditer(self, text: str, *where):
        return self.whole.finditer(text, *where) if self.hint.search(text) else iter(())

    def sub(self, repl, text: str, count: int = 0) -> str:
        return self.whole.sub(repl, text, count) if self.hint.search(text) else text

    def findall(self, text: str, *where) -> list:
        return self.whole.findall(text, *where) if self.hint.search(text) else []

    def __getattr__(self, name):  # match, fullmatch, split: the whole pattern's
        return getattr(self.whole, name)


class Scanned(FromStarts):
    """A gated cue list (REFUSAL: some 150 alternatives) searched only from the places where one of its
    alternatives can begin (FromStarts), each place tried first with just the alternatives that can begin with its
    character: `re` tries every alternative at every place whose character passes the gate (about one in six of an
    answer's). A place matches the whole pattern exactly when it matches one of those alternatives (the others
    cannot begin there), and the match returned is the whole pattern's own at that place: the same span and groups
    as search / finditer give."""

    def __init__(self, pattern: str, flags: int = 0):
        pieces = alternatives(pattern) if not flags else None
        firsts = [first_characters(p) for p in pieces] if pieces else None
        if firsts is None or None in firsts:
            raise ValueError("not a list of alternatives with first characters")
        super().__init__(gated(pattern, flags))
        self._pieces = tuple(zip(pieces, firsts))
        self._tests: dict[str, re.Pattern] = {}

    def _test(self, ch: str) -> re.Pattern:
        """The alternatives that can begin with ch, in their order (compiled on first need)."""
        test = self._tests.get(ch)
        if test is None:
            test = self._tests[ch] = re.compile("|".join(p for p, first in self._pieces if ch in first))
        return test

    def search(self, text: str, pos: int = 0):  # FromStarts.search, each place tested first (inline: per place)
        find, tests = self._starts.search, self._tests
        at = find(text, pos)
        while at is not None:
            start = at.start()
            test = tests.get(text[start]) or self._test(text[start])
            if test.match(text, start) is not None:
                return self.whole.match(text, start)
            at = find(text, start + 1)
        return None
