"""Names across scripts, for the rule judge: Chinese names in pinyin, country / territory / language / currency
names in Chinese (simplified and traditional) and English, and how alike a Chinese transliteration sounds to a
Latin name.

The tables come from maintained libraries, never from lists of our own: pypinyin's readings (each character's
heteronyms included, so 重庆 is chongqing) and the Unicode CLDR names that babel ships (Locale('zh'),
Locale('zh_Hant'), Locale('zh_Hant_HK'), Locale('en')). They are built on first use and cached (pypinyin's as
tables under cache_dir("pinyin"), built once from pypinyin's own answers); a judge that only sees Chinese answers
never reads the pinyin data. Pure functions of strings; the keys are rules.key of
rules.clean text, the forms the rule judge compares.
"""
from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache
from importlib.metadata import version

from chimdqa_eval.factual import rules, tables
from chimdqa_eval.factual.gate import gated

# A Chinese reference shorter than this (one character) has no pinyin form: one syllable (an, ma) is an
# English word as often as a name.
MIN_PINYIN_CHARACTERS = 2
MAX_PINYIN_CHARACTERS = 8
MAX_READINGS = 256           # combinations of heteronym readings tried per name
# A Latin name of at most this many letters (US, UK, SGD) counts only as the whole answer: inside a sentence it
# is as likely an English word (us, all, top).
CODE_LETTERS = 3
# How alike two names must sound (sound_similarity) to be taken for one name in two scripts, chosen on
# TRANSLITERATIONS in tests/test_judge_names.py (270 people, cities and countries): 80% of the right pairs reach
# it, 1.3% of wrong ones. Skeletons shorter than SHORT_SKELETON must line up whole; names that start unalike
# count OTHER_ONSET of their similarity.
SOUND_ALIKE = 0.75
SHORT_SKELETON = 3
OTHER_ONSET = 0.9
# A Chinese name taken for a Latin name's transliteration must say at least this share of the Latin name's
# consonant skeleton: 张伟 (S N F) lines up with Ching & S. K. Wu (S N S K F) at 0.75 but leaves two of its five
# unsaid; every right pair of the labelled answers says two thirds or more (布鲁克斯 for B.C. Brooks: 4 of 6).
LATIN_COVERED = 2 / 3

_HAN = re.compile(r"[\u4e00-\u9fff]+")
# Latin letters with their accented forms (after rules.clean: lower case, composed).
_LATIN_RUN = re.compile(r"[a-z\u00df-\u024f\u1e00-\u1eff]+")
_SEPARATOR_ONLY = re.compile(r"[\W_]*")
_FOLD = str.maketrans({"ß": "ss", "æ": "ae", "ø": "o", "œ": "oe", "ł": "l", "đ": "d", "ı": "i", "þ": "th",
                       "ð": "d"})
# English function words are never part of a name (the author is bertrand russell).
_FUNCTION_WORDS = frozenset(
    "a an the is was are were be been it its this that of in on at to by for from with and or as not no i you he "
    "she we they his her my your their what which who whom whose how answer think believe know known called named "
    "name first all them us there here some one two".split())


def fold(text: str) -> str:
    """Latin text without diacritics or tones: jürgen -> jurgen, yáng lìwěi -> yang liwei."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def latin_groups(cleaned: str) -> list[list[tuple[str, str]]]:
    """The Latin words of cleaned text as (as written, folded), in groups of words separated only by spaces or
    punctuation, so that a run of words inside a group is a substring of the text's rules.key."""
    groups, last_end = [], None
    for m in _LATIN_RUN.finditer(cleaned):
        word = (m.group(0), fold(m.group(0)))
        if groups and _SEPARATOR_ONLY.fullmatch(cleaned, last_end, m.start()):
            groups[-1].append(word)
        else:
            groups.append([word])
        last_end = m.end()
    return groups


def find_latin(cleaned: str, names: frozenset[str], codes: frozenset[str] = frozenset()) -> str | None:
    """The words of cleaned text (as written, joined) that spell one of `names` (folded keys; the longest from
    the first place where one starts: beijingshi before beijing), or the whole text when it is one of `codes`;
    None when neither."""
    groups = latin_groups(cleaned)
    if codes and len(groups) == 1 and len(groups[0]) == 1 and groups[0][0][1] in codes \
            and not rules.key(_LATIN_RUN.sub("", cleaned)):
        return groups[0][0][0]
    longest = max(map(len, names), default=0)
    for group in groups:
        for i in range(len(group)):
            written = folded = ""
            found = None
            for word, folded_word in group[i:]:
                written, folded = written + word, folded + folded_word
                if folded in names:
                    found = written
                if len(folded) >= longest:
                    break
            if found:
                return found
    return None


_HAN_NAME = re.compile(r"[\u4e00-\u9fff]+(?:[·•][\u4e00-\u9fff]+)*")


_HAN_SPANS_RE1 = re.compile(r"[·•]")


def _han_spans(cleaned: str):
    """Each run of Chinese characters in cleaned text (a foreign name's · dropped), and its beginnings and ends
    of at least two characters (作者是哈贝马斯: 哈贝马斯), up to 2 * MAX_PINYIN_CHARACTERS characters."""
    for run in _HAN_NAME.findall(cleaned):
        han = _HAN_SPANS_RE1.sub("", run)[:2 * MAX_PINYIN_CHARACTERS]
        yield from dict.fromkeys([han[:k] for k in range(2, len(han) + 1)]
                                 + [han[-k:] for k in range(2, len(han) + 1)])


def find_han(cleaned: str, latin_keys) -> str | None:
    """The Chinese name in cleaned text (see _han_spans) whose pinyin_forms include one of `latin_keys` (folded
    Latin keys: libai for 李白), or None."""
    wanted = {k for k in latin_keys if _could_be_pinyin(k)}  # (most Latin references are no Chinese name at all)
    return None if not wanted else next((span for span in _han_spans(cleaned) if _may_spell(span, wanted) and pinyin_forms(span) & wanted),
                None)


@lru_cache(maxsize=65536)
def _could_be_pinyin(key: str) -> bool:
    """Whether a folded key is a run of syllables that pinyin_forms may join (any reading of any character, ü
    spelled each way): no span's forms hold a key that is not."""
    syllables, longest = _read_as()
    ends = {0}
    for end in range(1, len(key) + 1):
        if any(start in ends and key[start:end] in syllables for start in range(max(0, end - longest), end)):
            ends.add(end)
    return len(key) in ends


@lru_cache(maxsize=1)
def _read_as() -> tuple[frozenset[str], int]:
    """(every spelling of every syllable a character's reading may give, the longest's length)."""
    spelled = frozenset(s for r in _pinyin_tables()[3][_READ_AS] for s in _spellings(r))
    return spelled, max(map(len, spelled))


def _may_spell(han: str, wanted: set) -> bool:
    """Whether a key of `wanted` is one of each character's pinyin options in a row (in the orders pinyin_forms
    joins them): true for every key among pinyin_forms(han), so a span for which it is false is passed over without
    joining its up to MAX_READINGS combinations (an answer has some thirty spans)."""
    options = _pinyin_options(han)
    if options is None:
        return False
    orders = [options] + ([options[k:] + options[:k] for k in (1, 2) if k < len(han)] if len(han) <= 4 else [])
    return any(_spelled_by(order, key) for order in orders for key in wanted)


def _spelled_by(options: tuple, key: str) -> bool:
    """`key` is one option of each of `options` joined, in order."""
    ends = {0}
    for choices in options:
        ends = {end + len(s) for end in ends for s in choices if key.startswith(s, end)}
        if not ends:
            return False
    return len(key) in ends


# --- pinyin -----------------------------------------------------------------------------------------------------

# pypinyin's readings, as tables of its own answers (_build_pinyin_tables), mapped from cache_dir("pinyin"): its
# dictionaries as Python objects take about 55 MB and a call about 0.2 ms. Text the tables do not cover (a
# character without a reading, or outside pypinyin's Chinese ranges) asks pypinyin itself.
_PINYIN_MAGIC = b"chimdqa-pinyin-tables-2\n"
_PINYIN_TABLES = 4  # segments (phrases and their prefixes), one reading per character, all readings, syllables
_READ_AS = "read_as"  # the syllables table's key for every toneless syllable a reading may give (_build_pinyin_tables)
_SYLLABLE_SEPARATOR = " "
_PREFIX = "\x00"  # the beginning of a phrase, no phrase itself


def _build_pinyin_tables() -> tuple[dict, ...]:
    """(every phrase of pypinyin's phrase dictionary -> its toneless reading as lazy_pinyin gives it, syllables
    joined by a space, and every shorter beginning of a phrase that is no phrase -> _PREFIX; each character with a
    reading that pypinyin reads as Chinese -> its lazy_pinyin reading; the same character -> all its readings
    (pinyin(heteronym=True)), in pypinyin's order; "" -> every toneless syllable of its character dictionary;
    _READ_AS -> every syllable a reading of these tables or of pypinyin's own fallbacks for a character may give
    (lazy_pinyin and pinyin(heteronym=True) of each character of its dictionary), for _could_be_pinyin)."""
    from pypinyin import Style, lazy_pinyin, pinyin
    from pypinyin.constants import PHRASES_DICT, PINYIN_DICT, RE_HANS

    segments = {}
    for phrase in PHRASES_DICT:
        for end in range(1, len(phrase)):
            segments.setdefault(phrase[:end], _PREFIX)
    for phrase in PHRASES_DICT:
        segments[phrase] = _joined(lazy_pinyin([phrase], style=Style.NORMAL))
    single, every = {}, {}
    read_as = {s for value in segments.values() if value != _PREFIX for s in _syllables(value)}
    for code in PINYIN_DICT:
        ch = chr(code)
        read_as.update(lazy_pinyin([ch], style=Style.NORMAL), pinyin(ch, style=Style.NORMAL, heteronym=True)[0])
        if RE_HANS.match(ch) and ch not in PHRASES_DICT:
            single[ch] = _joined(lazy_pinyin([ch], style=Style.NORMAL))
            readings = pinyin(ch, style=Style.NORMAL, heteronym=True)[0]
            if readings and all(readings):  # else _readings asks pypinyin
                every[ch] = "\x1f".join(readings)
    syllables = {r for value in PINYIN_DICT.values() for r in value.split(",")}
    read_as.discard("")
    return segments, single, every, {"": frozenset(syllables), _READ_AS: frozenset(read_as)}


def _joined(syllables: list) -> str:
    if any(not s or _SYLLABLE_SEPARATOR in s for s in syllables):
        raise ValueError(f"a reading the pinyin tables cannot hold: {syllables!r}")
    return _SYLLABLE_SEPARATOR.join(syllables)


@lru_cache(maxsize=1)
def _pinyin_tables():
    """The tables of _build_pinyin_tables, from cache_dir("pinyin") when built before by this very code for this
    very pypinyin (the file name holds both, and the byte order), else built (about 3 s) and saved there."""
    path = tables.cache_file("pinyin", f"pypinyin-{version('pypinyin')}", __file__, rules.__file__)
    return tables.cached_tables(path, _PINYIN_MAGIC, _PINYIN_TABLES, _build_pinyin_tables)


def _lazy_pinyin(han: str) -> list[str]:
    """pypinyin's lazy_pinyin(han, style=Style.NORMAL), from the tables: its segmentation (pypinyin.seg.mmseg:
    from each place the longest phrase among the beginnings that are in its prefix set; no phrase there, one
    character, or every character left when all of them still begin a phrase) and each segment's reading."""
    if not all(_single(ch) is not None for ch in han):
        from pypinyin import Style, lazy_pinyin
        return lazy_pinyin(han, style=Style.NORMAL)
    out, start, length = [], 0, len(han)
    while start < length:
        reading, end, stop = None, start, start
        while stop < length:
            found = _segment(han[start:stop + 1])
            if found is None:
                break
            stop += 1
            if found != _PREFIX:
                reading, end = found, stop
        if reading is not None:
            out.extend(_syllables(reading))
            start = end
        elif stop == length:  # every beginning of the rest begins a phrase, none is one: all single characters
            out.extend(s for ch in han[start:] for s in _syllables(_single(ch)))
            break
        else:
            out.extend(_syllables(_single(han[start])))
            start += 1
    return out


# The tables' answers for the characters and beginnings of phrases asked most (the same few thousand come back in
# answer after answer): a dictionary look-up instead of a hash and a probe of the mapped table.
@lru_cache(maxsize=16384)
def _segment(chars: str) -> str | None:
    """The segments table's value: the reading of a phrase, _PREFIX for a beginning of one, else None."""
    return _pinyin_tables()[0].text(chars)


@lru_cache(maxsize=8192)
def _single(ch: str) -> str | None:
    """The reading of one character as the tables hold it, or None."""
    return _pinyin_tables()[1].text(ch)


def _syllables(reading: str) -> list[str]:
    return reading.split(_SYLLABLE_SEPARATOR) if reading else []


@lru_cache(maxsize=8192)
def _readings(ch: str) -> tuple[str, ...]:
    found = _pinyin_tables()[2].text(ch)
    if found is None:
        from pypinyin import Style, pinyin
        return tuple(pinyin(ch, style=Style.NORMAL, heteronym=True)[0])
    return tuple(found.split("\x1f"))


def _spellings(syllable: str) -> tuple[str, ...]:
    """pypinyin writes ü as v (lv, nv); answers write lu, lü (folded: lu) or lyu."""
    return (syllable, syllable.replace("v", "u"), syllable.replace("v", "yu")) if "v" in syllable else (syllable,)


@lru_cache(maxsize=4096)  # a few syllables each: the spans of recent answers, the references' own
def _pinyin_options(han: str) -> tuple[tuple[str, ...], ...] | None:
    """Each character's romanizations for pinyin_forms (its phrase reading first, then its other readings, ü
    spelled each way), or None when the name has none (see pinyin_forms)."""
    if not (MIN_PINYIN_CHARACTERS <= len(han) <= MAX_PINYIN_CHARACTERS and _HAN.fullmatch(han)):
        return None
    options = tuple(map(_character_options, _lazy_pinyin(han), han))
    return None if None in options else options


@lru_cache(maxsize=16384)  # (reading, character): the same few thousand come back in span after span
def _character_options(reading: str, ch: str) -> tuple[str, ...] | None:
    """A character's romanizations: its reading in the name first, then its other readings, each ü spelled every
    way; None when one of them is not all ASCII letters."""
    options = tuple(dict.fromkeys(s for r in (reading, *_readings(ch)) for s in _spellings(r)))
    return options if all(s.isascii() and s.isalpha() for s in options) else None


@lru_cache(maxsize=1024)  # up to 768 forms each: the spans of recent answers, the references' own
def pinyin_forms(han: str) -> frozenset[str]:
    """The folded keys a Chinese name may be romanized as: its pinyin with any heteronym reading of each
    character (the phrase reading first: 重庆 chongqing), and for a name of up to four characters the given name
    first (liweiyang for 杨利伟; both splits, for two-character surnames). Empty for text that is not all Chinese
    characters or has fewer than MIN_PINYIN_CHARACTERS."""
    options = _pinyin_options(han)
    if options is None:
        return frozenset()
    forms = set()
    for combo in itertools.islice(itertools.product(*options), MAX_READINGS):
        forms.add("".join(combo))
        if len(han) <= 4:
            forms.update("".join(combo[k:] + combo[:k]) for k in (1, 2) if k < len(han))
    return frozenset(forms)


# --- CLDR names -------------------------------------------------------------------------------------------------

_CHINESE_LOCALES = ("zh", "zh_Hant", "zh_Hant_HK")
_KINDS = ("territories", "languages", "currencies")
_UNKNOWN = frozenset({"ZZ", "und", "mul", "zxx", "XXX"})  # unknown region / language / currency, no content


_NAME_KEYS_RE1 = re.compile(r"(.+?)\s*\([^()]*\)\s*")


def _name_keys(name: str) -> set[str]:
    """Comparison keys of a CLDR name: the whole, and the name before a closing parenthesis (Myanmar (Burma);
    not 科克斯 of 科克斯（基灵）群岛)."""
    cleaned = rules.clean(name)
    before = _NAME_KEYS_RE1.fullmatch(cleaned)
    keys = {fold(rules.key(cleaned)), fold(rules.key(before.group(1))) if before else ""}
    keys.discard("")
    return keys


def _current_currencies() -> set[str]:
    """Currencies some territory uses today (not the old lek or afghani that share today's names)."""
    from babel import Locale
    from babel.numbers import get_territory_currencies
    return {c for t in Locale("en").territories for c in get_territory_currencies(t)}


@lru_cache(maxsize=1)
def _cldr() -> tuple[dict, dict]:
    """(entity -> (Chinese keys, Latin keys, codes), key -> entities it names) over CLDR's territories,
    languages (not regional variants such as de_CH) and today's currencies; an entity is (kind, code)."""
    from babel import Locale
    current = _current_currencies()
    entities: dict[tuple[str, str], tuple[set, set, set]] = {}
    for kind in _KINDS:
        for locale_name in (*_CHINESE_LOCALES, "en"):
            for code, name in getattr(Locale.parse(locale_name), kind).items():
                if code in _UNKNOWN or "_" in code or (kind == "currencies" and code not in current):
                    continue
                chinese, latin, codes = entities.setdefault((kind, code), (set(), set(), set()))
                for k in _name_keys(name):
                    (chinese if _HAN.search(k) else latin).add(k)
                if kind == "currencies":
                    codes.add(code.lower())
    index: dict[str, set] = {}
    for entity, (chinese, latin, codes) in entities.items():
        for k in chinese | latin | codes:
            index.setdefault(k, set()).add(entity)
    return entities, index


@lru_cache(maxsize=1)
def _all_latin_names() -> frozenset[str]:
    """Every Latin CLDR name of more than CODE_LETTERS letters."""
    return frozenset(k for k in _cldr()[1] if len(k) > CODE_LETTERS and k.isascii())


def _entity(form: str) -> tuple[str, str] | None:
    """The one CLDR entity a reference form names (瑞士, switzerland, sgd), None when none or several."""
    named = _cldr()[1].get(fold(form), ())
    return next(iter(named)) if len(named) == 1 else None


@lru_cache(maxsize=1)
def _inside_other_names() -> dict[str, tuple]:
    """Each substring of a Chinese CLDR key -> the entities whose keys contain it."""
    inside: dict[str, set] = {}
    for entity, (chinese, _, _) in _cldr()[0].items():
        for k in chinese:
            for i in range(len(k)):
                for j in range(i + 1, len(k) + 1):
                    inside.setdefault(k[i:j], set()).add(entity)
    return {k: tuple(v) for k, v in inside.items()}  # a tuple takes a quarter of a set's memory


@lru_cache(maxsize=65536)
def chinese_names(form: str) -> frozenset[str]:
    """The Chinese keys (simplified; traditional names converted) of the CLDR entity `form` names: 瑞士 for
    switzerland, 义大利 and 意大利 for either; empty when it names none or several. A name inside another
    entity's name of its kind is left out unless it is the simplified Chinese name (尼日, Taiwan's name for
    Niger, is in 尼日利亚; 中国 stays, as a reference 中国 would), and so are the variants of numbered regions
    (中美 for 中美洲 is as often China and the US)."""
    from babel import Locale
    entity = _entity(form)
    if not entity:
        return frozenset()
    kind, code = entity
    main = rules.key(rules.clean(getattr(Locale("zh"), kind).get(code, "")))
    inside = _inside_other_names()
    return frozenset(k for k in _cldr()[0][entity][0]
                     if k == main or (not code.isdigit() and {e for e in inside[k] if e[0] == kind} == {entity}))


@lru_cache(maxsize=65536)
def latin_names(form: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names, codes): the folded Latin keys of the CLDR entity `form` names (switzerland for 瑞士; german and,
    from the language's own locale, deutsch for 德语), those of at most CODE_LETTERS letters (us, sgd) apart."""
    entity = _entity(form)
    if not entity:
        return frozenset(), frozenset()
    _, latin, codes = _cldr()[0][entity]
    latin = set(latin)
    if entity[0] == "languages":
        latin |= _autonym(entity[1])
    short = {k for k in latin | codes if len(k) <= CODE_LETTERS}
    return frozenset(latin - short), frozenset(short)


def _autonym(code: str) -> set[str]:
    """A language's name in its own locale (Deutsch, français) when babel has that locale."""
    from babel import Locale, UnknownLocaleError
    try:
        name = Locale.parse(code).languages.get(code, "")
    except (UnknownLocaleError, ValueError):
        return set()
    return {k for k in _name_keys(name) if k.isascii()}


@lru_cache(maxsize=65536)
def latin_forms(forms: tuple[str, ...], transliterated: bool) -> tuple[frozenset[str], frozenset[str]]:
    """(names, codes) in Latin letters for a reference's comparison keys: the pinyin of its Chinese forms (not
    for a transliterated foreign name, whose pinyin is not its Latin spelling) and the CLDR names of the entity
    it names."""
    names, codes = set(), set()
    for form in forms:
        if not transliterated:
            names |= pinyin_forms(form)
        found, short = latin_names(form)
        names |= found
        codes |= short
    return frozenset(names), frozenset(codes)


# --- how alike a transliteration sounds ---------------------------------------------------------------------------
# Both spellings become a skeleton of coarse consonant classes: L (l, r), B (b, p), D (d, t), K (g, k, c, q),
# S (s, z, sh, ch, j, c before e/i/y; pinyin z c s zh ch sh r), F (f, v, ph, w before a vowel; pinyin f w), M,
# N (n, ng). A sound that transliteration writes either way belongs to two classes: pinyin j q x (加 for ga,
# 基 for chi), English g before e/i/y (George, Hegel), th (Thomas, Smith), ch (Bach, Chopin), x (ks). h and y
# carry no class: transliteration drops or voices them freely, but pinyin hu before a vowel (华 hua) is a w: F.
# A name that starts with a vowel (pinyin: no initial, y, or wu) starts with V: 牛顿 does not sound like Einstein.

_PINYIN_INITIAL = re.compile(r"zh|ch|sh|[bpmfdtnlgkhjqxrzcsyw]")
_PINYIN_CLASS = {"b": "B", "p": "B", "d": "D", "t": "D", "g": "K", "k": "K", "l": "L", "m": "M", "n": "N",
                 "f": "F", "w": "F", "j": "SK", "q": "SK", "x": "SK",
                 **dict.fromkeys(("z", "c", "s", "zh", "ch", "sh", "r"), "S")}
_LATIN_CLASS = ((r"sch|tch|sh|zh|ts|tz", "S"), (r"ch", "SK"), (r"ph", "F"), (r"th", "DS"), (r"gh|kh|h|y", ""),
                (r"ck|qu|q", "K"), (r"ng(?![aeiou])", "N"), (r"x", "K S"), (r"c(?=[eiy])", "S"),
                (r"g(?=[eiy])", "SK"), (r"[cgk]", "K"), (r"[jsz]", "S"), (r"[bp]", "B"), (r"[dt]", "D"),
                (r"[fv]", "F"), (r"w(?=[aeiou])", "F"), (r"[lr]", "L"), (r"m", "M"), (r"n", "N"))
_LATIN_CLASSES = gated("|".join(f"({pattern})" for pattern, _ in _LATIN_CLASS))
_VOWELS = frozenset("aeiou")


_LATIN_SKELETON_RE1 = re.compile(r"(.)\1")


_CLASS_LETTERS = "VLBDKSFMN"


@lru_cache(maxsize=None)
def _classes(letters: str) -> int:
    """The set of a skeleton element's classes as bits of _CLASS_LETTERS (an int: two elements share a class when
    their & is not 0, without building a set as frozensets did in _alike's inner loop)."""
    return sum(1 << _CLASS_LETTERS.index(c) for c in set(letters))


@lru_cache(maxsize=65536)
def _latin_skeleton(word: str) -> tuple[int, ...]:
    """The consonant classes of a folded, lower-case Latin name, each the set of classes it may be (x: K then
    S)."""
    word = _LATIN_SKELETON_RE1.sub(r"\1", word)
    classes = (_LATIN_CLASS[m.lastindex - 1][1] for m in _LATIN_CLASSES.finditer(word))
    return tuple(map(_classes, ["V"] * (word[:1] in _VOWELS) + [c for found in classes for c in found.split()]))


_PINYIN_SKELETON_RE1 = re.compile(r"hu[aeio]")


@lru_cache(maxsize=65536)
def _pinyin_skeleton(han: str) -> tuple[int, ...]:
    """The consonant classes of a Chinese name's pinyin: each syllable's initial, and N or L for its final n / ng
    or er (尼尔: N L)."""
    syllables = _lazy_pinyin(han)
    if not syllables:  # 北京· : an empty part of a name
        return ()
    out = ["V"] * (syllables[0][:1] in _VOWELS or syllables[0][:1] == "y" or syllables[0] == "wu")
    for syllable in syllables:
        initial = _PINYIN_INITIAL.match(syllable)
        final = syllable[initial.end():] if initial else syllable
        out.append("F" if _PINYIN_SKELETON_RE1.match(syllable) else _PINYIN_CLASS.get(initial.group(0), "") if initial
                   else "")
        out.append("N" if final.endswith(("n", "ng")) else "L" if final in ("er", "r") else "")
    return tuple(_classes(c) for c in out if c)


def _alike(a, b) -> float:
    """2 * (longest common subsequence, two elements matching when they share a class) / (len a + len b); a
    skeleton of fewer than SHORT_SKELETON elements (巴黎: B L) counts only when it lines up whole."""
    if not a or not b:
        return 0.0
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = left = 0  # row[j - 1] and row[j] of the previous x; left: row[j - 1] of this one
        for j, y in enumerate(b, 1):
            above = row[j]
            left = row[j] = diagonal + 1 if x & y else above if above > left else left
            diagonal = above
    ratio = 2 * row[-1] / (len(a) + len(b))
    return ratio if ratio == 1 or min(len(a), len(b)) >= SHORT_SKELETON else 0.0


def sound_similarity(han: str, latin: str) -> float:
    """How alike a Chinese transliteration (阿姆斯特朗) and a Latin name (armstrong) sound, 0..1: how much of
    their consonant skeletons line up, times OTHER_ONSET when they do not start alike (牛顿, einstein)."""
    a, b = _pinyin_skeleton(han), _latin_word_skeleton(latin)
    alike = _alike(a, b)
    return alike if alike == 0 or a[0] & b[0] else alike * OTHER_ONSET


@lru_cache(maxsize=65536)
def _latin_word_skeleton(latin: str) -> tuple[int, ...]:
    """_latin_skeleton of a Latin name as written (a reference's key is compared with every span of an answer)."""
    return _latin_skeleton(fold(latin.lower()))


def _most_alike(han_length: int, latin_length: int) -> float:
    """An upper bound of sound_similarity between skeletons of these lengths (a name's and a Latin word's):
    _alike's longest common subsequence is at most the shorter skeleton (and a short skeleton counts only whole)."""
    short, total = min(han_length, latin_length), han_length + latin_length
    if not short:
        return 0.0
    return 2 * short / total if short >= SHORT_SKELETON or 2 * short == total else 0.0


_SOUND_ALIKE_RE1 = re.compile(r"[a-z]")


def sound_alike(a: str, b: str, enough: float = 0.5) -> bool:
    """Two keys of names that sound alike, in either script (于尔根 and 尤尔根, 于尔根 and jürgen): their consonant
    skeletons line up at least `enough` (a little less across scripts, where sound_similarity is stricter)."""
    latin_a, latin_b = bool(_SOUND_ALIKE_RE1.search(a)), bool(_SOUND_ALIKE_RE1.search(b))
    if latin_a and latin_b:
        return _alike(_latin_skeleton(fold(a)), _latin_skeleton(fold(b))) >= enough
    if not latin_a and not latin_b:
        return _alike(_pinyin_skeleton(a), _pinyin_skeleton(b)) >= enough
    han, latin = (b, a) if latin_a else (a, b)
    return sound_similarity(han, latin) >= enough - 0.1


def is_latin_name(key: str) -> bool:
    """A comparison key of Latin letters only (habermas, jürgenhabermas): a name, not a code with digits."""
    return _LATIN_RUN.fullmatch(key) is not None


def latin_sound_match(han_names, cleaned: str, transliterated: bool) -> float:
    """The best sound_similarity between any of `han_names` (Chinese transliterations) and a run of up to
    three adjacent Latin words of cleaned text, English function words and CLDR names (another country or
    language: it was in the united states) left out (the author is bertrand russell: bertrand, russell,
    bertrandrussell). Unless the reference is `transliterated` (a foreign name with ·), a run spelled wholly in
    pinyin syllables (zhang wei) is another Chinese name, not a sound-alike."""
    best, lengths = 0.0, None
    for group in latin_groups(cleaned):
        lengths = lengths or [(h, len(_pinyin_skeleton(h))) for h in han_names]
        words = [folded for _, folded in group]
        skipped = _cldr_words(tuple(words)) | {i for i, w in enumerate(words) if w in _FUNCTION_WORDS}
        for i in range(len(words)):
            run = ""
            for j in range(i, min(i + 3, len(words))):
                if j in skipped:
                    break
                run += words[j]
                if transliterated or not is_pinyin(run):  # (a name that cannot beat the best is not compared)
                    length = len(_latin_word_skeleton(run))
                    best = max([best, *(sound_similarity(h, run) for h, n in lengths if _most_alike(n, length) > best)])
    return best


def _cldr_words(words: tuple[str, ...]) -> set[int]:
    """The positions of words that spell a Latin CLDR name of more than CODE_LETTERS letters (united states)."""
    known, beginnings, out = _all_latin_names(), _latin_name_beginnings(), set()
    for i in range(len(words)):
        run = ""
        for j in range(i, len(words)):
            run += words[j]
            if run not in beginnings:  # no name goes on from here
                break
            if run in known:
                out.update(range(i, j + 1))
    return out


@lru_cache(maxsize=1)
def _latin_name_beginnings() -> frozenset[str]:
    """Every beginning of a Latin CLDR name of _all_latin_names, "" too (some six thousand)."""
    return frozenset(name[:end] for name in _all_latin_names() for end in range(len(name) + 1))


@lru_cache(maxsize=1)
def _pinyin_syllables() -> frozenset[str]:
    """Every toneless pinyin syllable pypinyin knows (ü as u and v)."""
    readings = {fold(r) for r in _pinyin_tables()[3][""]}
    return frozenset(readings | {r.replace("u", "v") for r in readings})


@lru_cache(maxsize=65536)
def is_pinyin(word: str) -> bool:
    """A folded Latin word that splits wholly into pinyin syllables (zhangwei, beijing; not london)."""
    syllables = _pinyin_syllables()
    ends = {0}
    for end in range(1, len(word) + 1):
        if any(start in ends and word[start:end] in syllables for start in range(max(0, end - 6), end)):
            ends.add(end)
    return len(word) in ends




def _covers(han: str, latin: str) -> bool:
    """The Chinese name's skeleton lines up with at least LATIN_COVERED of the Latin name's."""
    a, b = _pinyin_skeleton(han), _latin_word_skeleton(latin)
    return bool(b) and _alike(a, b) * (len(a) + len(b)) / 2 >= LATIN_COVERED * len(b)


def chinese_sound_match(latin_keys, cleaned: str) -> float:
    """The best sound_similarity between any of `latin_keys` (folded) and a Chinese name in cleaned text (see
    _han_spans) that says most of it (LATIN_COVERED)."""
    return max((s for h in _han_spans(cleaned) for latin in latin_keys
                if _most_alike(len(_pinyin_skeleton(h)), len(_latin_word_skeleton(latin))) >= SOUND_ALIKE
                for s in (sound_similarity(h, latin),) if s >= SOUND_ALIKE and _covers(h, latin)), default=0.0)
