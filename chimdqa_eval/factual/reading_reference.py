"""Reading the reference: parse_reference gives a Reference (numeric, text or long; a short text's comparison forms,
list items, other names, a foreign name's parts), reference_readings each way a reference may be read (either
side of its parentheses, a bare number in the question's unit, a date's century), _unreadable one with nothing to
compare. Read once per reference and kept (lru_cache): a leaderboard grades every submission against the same ones."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from chimdqa_eval.factual import aliases, names, places, rules
from chimdqa_eval.factual import vocabulary as vocab
from chimdqa_eval.factual.reading_text import _bigrams, _compiled, _LATIN, _PARENS
from chimdqa_eval.factual.rules import ALTERNATIVES, LIST_SEPARATORS, Number


LONG_REFERENCE = 30          # characters of comparison key
LONG_COVERAGE = 0.6          # share of a long reference's bigrams an answer must contain
NUMERIC_RESIDUE = 4          # a reference with numbers and at most this many other key characters is numeric

# 代/朝 name the same dynasty; a country's formal name (肯尼亚共和国) names it too.
_DYNASTY = re.compile(r"^(.+?)(代|朝)$")
_STATE = re.compile(rf"^(.{{2,}}?)(?:{vocab.pattern('state_forms')})$")
_DYNASTY_NAMES = frozenset(vocab.words("dynasties"))  # one character: 清 = 清代 = 清朝

# A Latin unit written after a number and a space (1.8 mmol/l, 120 km/h): part of a numeric reference.
_SPACED_LATIN_UNIT = re.compile(r"(?<=\d) [a-z]{1,6}(?:/[a-z]{1,4})?(?![a-z])")


@dataclass(frozen=True)
class Reference:
    mode: str                 # numeric | text | long
    forms: tuple = ()         # comparison keys, any of which counts (text)
    items: tuple = ()         # list items that must all appear, each as its forms (北山县: 北山县, 北山)
    foreign: bool = False     # a transliterated name: fold variants before comparing
    numbers: tuple[Number, ...] = ()   # numeric, long
    bigrams: frozenset = frozenset()
    has_alternatives: bool = False
    main: str = ""            # the key of the reference outside its parentheses
    weak: frozenset = frozenset()   # forms that identify it only in part (a foreign name's surname)
    bare: tuple[Number, ...] = ()   # numeric: its numbers as written, when the question gave them a unit
    listed: int = 1           # text: how many things it lists (魏、蜀、吴: 3)
    words: str = ""           # numeric: its characters besides numbers and units (阿卡汗 in 阿卡汗四世)
    aliases: frozenset = frozenset()  # text: forms that are other names (关云长 for 关羽, 新疆 for 新疆维吾尔自治区)
    level: str = ""           # text: the level word the reference ends with (自治州), which may follow its short name
    given: frozenset = frozenset()  # text: the keys of a foreign name's parts before its surname (约翰, john, w)
    book: str = ""            # text: the book of a reference that is its chapter (礼记 for 《礼记·学记》)


_FORMULA = re.compile(r"^(?:[a-z0-9()·]*[a-z0-9])?\([a-z0-9]+\)\d[a-z0-9()·]*$")  # Co(C3H5O3)2, (NH4)2SO4


_FORMS_RE1 = re.compile(r"([\u4e00-\u9fff]{2,})(?:式|风格)")
_FORMS_RE2 = re.compile(r"[·•]")


def _forms(cleaned: str, notes: bool = True) -> tuple[set[str], set[str], set[str], set[str]]:
    """Comparison keys of a short reference (whole, without the parenthesis, inside it, a division's short names,
    a person's other names), those among them that name it only in part (a foreign name's surname), those
    that are other names (aliases.py), and the keys of the name parts before a surname (约翰, john, w)."""
    if _FORMULA.search(cleaned):  # Co(C3H5O3)2: the parentheses are part of the formula, not a note
        return {rules.key(cleaned)}, set(), set(), set()
    outside = _PARENS.sub("", cleaned)
    forms = {rules.key(cleaned), rules.key(outside)}
    if notes:  # a list's notes name its items (火卫一（福波斯）、火卫二（得摩斯）), not the whole
        forms.update(rules.key(inner) for inner in _PARENS.findall(cleaned))
    weak, given = set(), set()
    for part in (outside, *_PARENS.findall(cleaned)):
        if "·" in part or "•" in part:  # a foreign name: its surname alone is an accepted answer
            *first, last = _FORMS_RE2.split(part)
            weak.add(rules.key(last))
            if len(first) >= 2 and "《" not in part:  # 雷蒙德·卡特尔 for 雷蒙德·伯纳德·卡特尔: no middle names
                forms.add(rules.key(first[0] + last))
            if "《" not in part:  # 《尚书·洪范》 is a book and its chapter, not a person
                given.update(rules.key(x) for x in first)
        words = part.split()
        if len(words) > 1 and _LATIN.search(words[-1]) and len(words[-1]) >= 4 and not _PARSE_REFERENCE_RE4.search(part):
            weak.add(rules.key(words[-1]))
            given.update(rules.key(x) for x in words[:-1])
    forms |= weak
    for form in list(forms - weak):  # the same country, language or currency by its other CLDR names
        forms |= names.chinese_names(form)
        state = _STATE.match(form)  # 肯尼亚共和国: the country, by its short name
        forms |= names.chinese_names(state.group(1)) if state else frozenset()
    other_names = set()
    for form in list(forms):
        other_names |= aliases.division_short_names(form) | aliases.person_aliases(form)
        dynasty = _DYNASTY.match(form)
        name = dynasty.group(1) if dynasty else form if form in _DYNASTY_NAMES else None
        if name:
            forms.update({name + "代", name + "朝"})
            if name in _DYNASTY_NAMES:  # 清 for 清代, as a word of its own (see _stands_alone)
                forms.add(name)
    other_names -= forms
    forms |= other_names
    for form in list(forms):  # 锡伯族 = 锡伯人: a people by either word
        if len(form) >= 3 and form.endswith("族") and not form.endswith(("家族", "民族", "贵族", "王族")):
            forms.add(form[:-1] + "人")
        style = _FORMS_RE1.fullmatch(form)  # 巴洛克式 = 巴洛克风格: a style by either word
        if style:
            forms.update({style.group(1) + "式", style.group(1) + "风格"})
    forms.discard("")
    return forms, weak - {rules.key(cleaned), rules.key(outside)}, other_names, given - {""}


_PARSE_REFERENCE_RE1 = re.compile(r"[\d.%]")
_PARSE_REFERENCE_RE2 = re.compile(r"\s*《([^》·•]+)[·•][^》]+》")
_PARSE_REFERENCE_RE3 = re.compile(r"^\s*([\d.,]+)([a-zA-Z])\s*$")
_PARSE_REFERENCE_RE4 = re.compile(r"\d")


@lru_cache(maxsize=65536)
def parse_reference(reference: str) -> Reference:
    # a reference that is a number and one letter is a quantity (4g, 100W), which in running text would be a code
    cleaned = rules.clean(_PARSE_REFERENCE_RE3.sub(r"\1 \2", reference))
    ref_key = rules.key(cleaned)
    numbers = tuple(rules.find_numbers(cleaned, periods=False))
    alternatives = bool(ALTERNATIVES.search(cleaned))
    main = rules.key(_PARENS.sub("", cleaned))
    residue = _PARSE_REFERENCE_RE1.sub("", rules.key(_SPACED_LATIN_UNIT.sub("", cleaned)))
    quantity = _compiled(rf"{rules._UNIT_WORDS}|[万亿千百约多余]|左右|以上").sub("", residue)  # 约9.46万亿公里 is a number
    if numbers and (len(residue) <= NUMERIC_RESIDUE or not quantity) and not aliases.person_aliases(ref_key):
        words = _compiled(rf"{rules._UNIT_WORDS}|[a-z]|[第约年月日号世纪代前后初末万亿千百分点]|[{rules.MEASURE_CHARS}]").sub("",
                       residue)
        words = words if len(words) >= 2 else ""  # 阿卡汗 in 阿卡汗四世; not 倍 or 个百分点
        return Reference("numeric", numbers=numbers, has_alternatives=alternatives, main=main, words=words)
    if len(main) > LONG_REFERENCE:
        text = _PARSE_REFERENCE_RE4.sub("", ref_key)
        return Reference("long", numbers=numbers, bigrams=frozenset(_bigrams(text)),
                         has_alternatives=alternatives, main=main)
    items = [rules.key(p) for p in LIST_SEPARATORS.split(_PARENS.sub("", cleaned))]
    items = (tuple(_item_forms(i) for i in items if i)
             if len(items) > 1 and (all(len(i) >= 2 for i in items) or "、" in cleaned) and "《" not in cleaned
             else ())
    if items and "、" not in cleaned and (names.chinese_names(main) or places.place(main)):
        items = ()  # 阿尔及利亚, 和田市: one known name with 及 or 和 in it, not a list
    noted = LIST_SEPARATORS.split(cleaned)  # each item with the note in its brackets: 火卫一（福波斯）
    if items and len(noted) == len(items) and all(p.count("(") == p.count(")") for p in noted):
        items = tuple((*forms, *(rules.key(n) for n in _PARENS.findall(part) if rules.key(n)))
                      for forms, part in zip(items, noted))
    foreign = "·" in cleaned or "•" in cleaned or bool(_LATIN.search(" ".join(_PARENS.findall(cleaned))))
    forms, weak, other_names, given = _forms(cleaned, notes=not items)
    listed = len([p for p in LIST_SEPARATORS.split(_PARENS.sub("", cleaned)) if rules.key(p)])
    chapter = _PARSE_REFERENCE_RE2.match(cleaned)
    # its own forms before its other names (刘禹锡 before 刘梦得: the one the answer may set in bold), longest first
    return Reference("text", forms=tuple(sorted(forms, key=lambda f: (f in weak, f in other_names, -len(f), f))),
                     items=items,
                     foreign=foreign, listed=listed, book=rules.key(chapter.group(1)) if chapter else "",
                     has_alternatives=alternatives, main=main, weak=frozenset(weak), given=frozenset(given),
                     aliases=frozenset(other_names), level=aliases.level_of(main))


def _item_forms(item: str) -> tuple[str, ...]:
    """A list item and its other names: without a suffix its kind implies (北山县 -> 北山), a person's (韩退之)."""
    return (item, *aliases.division_short_names(item), *aliases.person_aliases(item))


_SHORT_YEAR = re.compile(r"(?<!\d)\d{2}年\d{1,2}月")


_REFERENCE_READINGS_RE1 = re.compile(r"[-−]?[\d.,\s]+")


@lru_cache(maxsize=65536)
def reference_readings(reference: str, question_unit: str = "") -> tuple:
    """The parsed reference, plus each side of its parentheses read alone when it is numeric or long
    (万历41年（1613年）: either year suffices); short text handles its parentheses itself. A reference that is
    one bare number takes the unit the question asks in (41 for 多少摄氏度 is 41°C)."""
    whole = parse_reference(reference)
    if (question_unit and whole.mode == "numeric" and len(whole.numbers) == 1 and whole.numbers[0].unit is None
            and not whole.numbers[0].counter and _REFERENCE_READINGS_RE1.fullmatch(rules.clean(reference).strip())):
        whole = replace(parse_reference(reference.strip() + question_unit), bare=whole.numbers)  # 6.6×10⁻³⁴ too
    cleaned = rules.clean(reference)
    in_years = rules.whole_years(cleaned)
    if in_years != cleaned:  # 12个月: as written (12 for 几个月) and in years (1年, as answers are read)
        return (whole, parse_reference(in_years))
    short_year = _SHORT_YEAR.match(cleaned)
    if short_year:  # 22年11月30日: a date with its century left out, either century
        return (whole, *(parse_reference(century + cleaned) for century in ("20", "19")))
    if whole.mode == "text" or not _PARENS.search(cleaned):
        return (whole,)
    sides = [_PARENS.sub("", cleaned), *_PARENS.findall(cleaned)]
    return (whole, *(parse_reference(side) for side in sides if rules.key(side)))


@lru_cache(maxsize=65536)
def _unreadable(reference: str) -> bool:
    """A reference with no letter, digit or character once cleaned (😀, %, 。)."""
    return not rules.key(rules.clean(reference))
