"""The Porter stemmer exactly as NLTK's ``PorterStemmer()`` runs it by default (mode NLTK_EXTENSIONS), without
importing NLTK, whose package import pulls in scipy and scikit-learn (1.6 s, +158 MB) for this one function.

Porter, M. "An algorithm for suffix stripping", Program 14.3 (1980): 130-137, with Martin Porter's later
changes and NLTK's own: a table of irregular forms; words of one or two characters left alone; -ies / -ied
of four-letter words to -ie; -ied always to -i; y -> i only after a consonant that is not the whole stem;
-alli -> -al tried first (then step 2 again); -bli -> -ble instead of -abli -> -able; -fulli -> -ful;
-logi -> -log measured with the l; a two-letter vowel-consonant stem counting as *o.

NLTK's rule-list semantics are kept to the letter, quirks included: within one list the first rule whose
suffix matches decides (a failed condition ends the step), and step 1b's double-consonant rule, when the
stem does not end in a double consonant, is tried as the literal suffix "*d". `stem` equals
``nltk.stem.porter.PorterStemmer().stem`` of NLTK 3.10 on every string (NLTK 3.9 looks a word up in its
irregular forms before lower-casing it, so Dying stems to dy there: never a difference for the lower-case words
METEOR stems); tests/test_porter.py checks it word by word against the installed NLTK (a test dependency only).
"""
from __future__ import annotations

__all__ = ["stem"]

_VOWELS = frozenset("aeiou")

# NLTK's table of irregular forms: word -> stem, looked up after lower-casing, before any rule.
_IRREGULAR = {
    "sky": "sky", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie", "news": "news",
    "innings": "inning", "inning": "inning", "outings": "outing", "outing": "outing",
    "cannings": "canning", "canning": "canning", "howe": "howe", "proceed": "proceed", "exceed": "exceed",
    "succeed": "succeed",
}


def _kinds(word: str) -> str:
    """One letter per character: "c" for a consonant, "v" for a vowel. a e i o u are vowels; y is a vowel after
    a consonant and a consonant at the start or after a vowel; every other character is a consonant."""
    out = []
    previous = "v"  # so that a leading y is a consonant
    for ch in word:
        if ch in _VOWELS:
            kind = "v"
        elif ch == "y":
            kind = "v" if previous == "c" else "c"
        else:
            kind = "c"
        out.append(kind)
        previous = kind
    return "".join(out)


def _measure(part: str) -> int:
    """m in [C](VC){m}[V]: the number of vowel-to-consonant changes."""
    return _kinds(part).count("vc")


def _has_vowel(part: str) -> bool:
    return "v" in _kinds(part)


def _consonant_at(word: str, i: int) -> bool:
    """Whether word[i] (i may count from the end) is a consonant; a character's kind depends only on the
    characters before it."""
    return _kinds(word[:i + 1] if i >= 0 else word[:len(word) + i + 1])[-1] == "c"


def _double_consonant(word: str) -> bool:
    """*d: the word ends in two equal consonants."""
    return len(word) >= 2 and word[-1] == word[-2] and _consonant_at(word, -1)


def _cvc(word: str) -> bool:
    """*o: the word ends consonant-vowel-consonant, the last not w, x or y; or (NLTK) is a vowel and a
    consonant."""
    if len(word) >= 3:
        kinds = _kinds(word)
        if kinds.endswith("cvc") and word[-1] not in "wxy":
            return True
    return len(word) == 2 and _kinds(word) == "vc"


def _positive(part: str) -> bool:
    return _measure(part) > 0


def _above_one(part: str) -> bool:
    return _measure(part) > 1


def _first_rule(word: str, rules) -> str:
    """The first rule (suffix, replacement, condition or None) whose suffix ends the word decides: its
    replacement when the condition holds for the rest of the word, else the word unchanged."""
    for suffix, replacement, condition in rules:
        if word.endswith(suffix):
            rest = word[:len(word) - len(suffix)] if suffix else word
            return rest + replacement if condition is None or condition(rest) else word
    return word


def _step1a(word: str) -> str:
    if len(word) == 4 and word.endswith("ies"):
        return word[:-3] + "ie"
    return _first_rule(word, (("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)))


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        rest = word[:-3]
        return rest + "ee" if _measure(rest) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[:-len(suffix)]):
            rest = word[:-len(suffix)]
            break
    else:
        return word
    for suffix, replacement in (("at", "ate"), ("bl", "ble"), ("iz", "ize")):
        if rest.endswith(suffix):
            return rest[:-len(suffix)] + replacement
    last = rest[-1]
    if _double_consonant(rest) or rest.endswith("*d"):
        # a double consonant loses one letter, except l, s and z (NLTK's rule list also matches a literal "*d")
        return rest[:-2] + last if last not in "lsz" else rest
    return rest + "e" if _measure(rest) == 1 and _cvc(rest) else rest


def _step1c(word: str) -> str:
    # y -> i after a consonant, unless that consonant is the whole stem
    if word.endswith("y"):
        rest = word[:-1]
        return rest + "i" if len(rest) > 1 and _consonant_at(rest, -1) else word
    return word


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"), ("bli", "ble"),
    ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"),
    ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("fulli", "ful"),
)


_STEP2_ENDINGS = tuple(suffix for suffix, _ in _STEP2) + ("logi",)


def _step2(word: str) -> str:
    if not word.endswith(_STEP2_ENDINGS):  # most words: no rule applies (one C-level check)
        return word
    if word.endswith("alli") and _positive(word[:-4]):
        return _step2(word[:-4] + "al")
    rules = [(suffix, replacement, _positive) for suffix, replacement in _STEP2]
    # -logi -> -log, measured on the stem with its l (so geo-, theo- count like archaeo-, philo-)
    rules.append(("logi", "log", lambda rest: _positive(word[:-3])))
    return _first_rule(word, rules)


_STEP3 = tuple((suffix, replacement, _positive) for suffix, replacement in (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", "")))

_STEP4 = tuple(
    (suffix, "", (lambda rest: _measure(rest) > 1 and rest[-1] in "st") if suffix == "ion" else _above_one)
    for suffix in ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
                   "ism", "ate", "iti", "ous", "ive", "ize"))
_STEP3_ENDINGS, _STEP4_ENDINGS = (tuple(suffix for suffix, _, _ in rules) for rules in (_STEP3, _STEP4))


def _step5a(word: str) -> str:
    if word.endswith("e"):
        rest = word[:-1]
        m = _measure(rest)
        if m > 1 or (m == 1 and not _cvc(rest)):
            return rest
    return word


def _step5b(word: str) -> str:
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        return word[:-1]
    return word


def stem(word: str) -> str:
    """The Porter stem of `word`, lower-cased first: ``PorterStemmer().stem(word)`` of NLTK."""
    lowered = word.lower()
    if lowered in _IRREGULAR:
        return _IRREGULAR[lowered]
    if len(word) <= 2:  # NLTK measures the word as given, before lower-casing
        return lowered
    out = _step1a(lowered)
    out = _step1b(out)
    out = _step1c(out)
    out = _step2(out)
    if out.endswith(_STEP3_ENDINGS):
        out = _first_rule(out, _STEP3)
    if out.endswith(_STEP4_ENDINGS):
        out = _first_rule(out, _STEP4)
    out = _step5a(out)
    return _step5b(out)
