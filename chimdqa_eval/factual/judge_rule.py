"""The offline rule judge: one grade (CO, NA or IN) per answer, deterministic, no model.

A reference is read in one of three ways:
- numeric (the reference is numbers plus a few characters: 3518.17, 1919年, 15英镑, 2023年9月4日): every
  reference number must be matched at the coarser precision of the two, in the same unit when both name one
  (rules._UNITS: 50毫米 = 5厘米, 3小时 != 3分钟); an unmatched exact number in the
  answer contradicts it; a vague number (约3500, 超过3000) the reference does not contradict is NA;
- short text (names, terms, places): the answer must contain one of the reference's forms (the whole
  reference, either side of a parenthesis, a name's surname, the reference without a suffix such as 市/省,
  all items of a list), compared after normalization and, for transliterated names, after folding common
  transliteration variants;
- long text (more than LONG_REFERENCE characters): the answer must contradict none of its numbers and either
  match one of them or cover most of its character bigrams. This is a heuristic; prefer the LLM judge for
  long-form references.
A numeric or long reference with parentheses is also read one side at a time (万历41年（1613年）: 1613 is
enough); the best grade over its readings counts. Refusals without a candidate are NA; a guess at something
else, or several competing candidates, is IN. Denied text (不是北京，而是上海) is graded as absent, and an answer
that names the reference only to deny it is IN.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chimdqa_eval.factual import rules
from chimdqa_eval.factual.rules import ALTERNATIVES, DENIAL, GUESS, LIST_SEPARATORS, REFUSAL, Number

LONG_REFERENCE = 30          # characters of comparison key
LONG_COVERAGE = 0.6          # share of a long reference's bigrams an answer must contain
SHORT_ANSWER = 40            # competing candidates are only looked for in answers this short (key characters)
NUMERIC_RESIDUE = 4          # a reference with numbers and at most this many other key characters is numeric

# Suffixes a question usually implies (哪个市 -> 长崎 for 长崎市); 代/朝 name the same dynasty.
_SUFFIXES = ("自治区", "特别行政区", "省", "市", "县", "区", "州", "镇", "乡", "村")
_DYNASTY = re.compile(r"^(.+?)(代|朝)$")
_DYNASTY_NAMES = frozenset("夏商周秦汉晋隋唐宋辽金元明清")  # one character: 清 = 清代 = 清朝

# Characters interchanged when transliterating foreign names (托马斯/汤玛斯, 安娜/安纳, 莉莉/丽丽).
_TRANSLIT_CLASSES = ("马玛", "里利立丽莉俐", "娜纳那", "斯丝思", "汤托", "尔儿", "伊依", "亚娅雅", "克科",
                     "德得", "瑟塞", "琳林", "茨兹次", "菲费", "夫弗福", "姆穆", "蒂迪帝", "妮尼", "露璐卢",
                     "莎沙", "奥欧", "杰吉", "维威韦", "罗洛", "伦仑", "森逊", "格葛", "瓦娃", "布卜", "艾埃")
_TRANSLIT = str.maketrans({ch: group[0] for group in _TRANSLIT_CLASSES for ch in group[1:]})
_LATIN = re.compile(r"[a-z]")
# A Latin unit written after a number and a space (1.8 mmol/l, 120 km/h): part of a numeric reference.
_SPACED_LATIN_UNIT = re.compile(r"(?<=\d) [a-z]{1,6}(?:/[a-z]{1,4})?(?![a-z])")
_PARENS = re.compile(r"\(([^()]*)\)")


@dataclass(frozen=True)
class Reference:
    mode: str                 # numeric | text | long
    forms: tuple = ()         # comparison keys, any of which counts (text)
    items: tuple = ()         # list items that must all appear (text, a list of several things)
    foreign: bool = False     # a transliterated name: fold variants before comparing
    numbers: tuple[Number, ...] = ()   # numeric, long
    bigrams: frozenset = frozenset()
    has_alternatives: bool = False


def _forms(cleaned: str) -> set[str]:
    """Comparison keys of a short reference: whole, without the parenthesis, inside it, without suffixes."""
    outside = _PARENS.sub("", cleaned)
    forms = {rules.key(cleaned), rules.key(outside)}
    forms.update(rules.key(inner) for inner in _PARENS.findall(cleaned))
    for part in (outside, *_PARENS.findall(cleaned)):
        if "·" in part or "•" in part:  # a foreign name: its surname alone is an accepted answer
            forms.add(rules.key(re.split(r"[·•]", part)[-1]))
        words = part.split()
        if len(words) > 1 and _LATIN.search(words[-1]) and len(words[-1]) >= 4 and not re.search(r"\d", part):
            forms.add(rules.key(words[-1]))
    for form in list(forms):
        for suffix in _SUFFIXES:
            if form.endswith(suffix) and len(form) - len(suffix) >= 2:
                forms.add(form[:-len(suffix)])
        dynasty = _DYNASTY.match(form)
        name = dynasty.group(1) if dynasty else form if form in _DYNASTY_NAMES else None
        if name:
            forms.update({name + "代", name + "朝"})
            if name in _DYNASTY_NAMES:  # 清 for 清代, as a word of its own (see _stands_alone)
                forms.add(name)
    return {f for f in forms if f}


@lru_cache(maxsize=65536)
def parse_reference(reference: str) -> Reference:
    cleaned = rules.clean(reference)
    ref_key = rules.key(cleaned)
    numbers = tuple(rules.find_numbers(cleaned))
    alternatives = bool(ALTERNATIVES.search(cleaned))
    residue = re.sub(r"[\d.%]", "", rules.key(_SPACED_LATIN_UNIT.sub("", cleaned)))
    if numbers and len(residue) <= NUMERIC_RESIDUE:
        return Reference("numeric", numbers=numbers, has_alternatives=alternatives)
    if len(rules.key(_PARENS.sub("", cleaned))) > LONG_REFERENCE:
        text = re.sub(r"\d", "", ref_key)
        return Reference("long", numbers=numbers, bigrams=frozenset(_bigrams(text)),
                         has_alternatives=alternatives)
    items = [rules.key(p) for p in LIST_SEPARATORS.split(_PARENS.sub("", cleaned))]
    items = tuple(i for i in items if i) if len(items) > 1 and all(len(rules.key(p)) >= 2 for p in items) else ()
    foreign = "·" in cleaned or "•" in cleaned or bool(_LATIN.search(" ".join(_PARENS.findall(cleaned))))
    return Reference("text", forms=tuple(sorted(_forms(cleaned), key=len, reverse=True)), items=items,
                     foreign=foreign, has_alternatives=alternatives)


def _bigrams(text: str) -> set[str]:
    return {text[i:i + 2] for i in range(len(text) - 1)}


def _contains(answer_key: str, form: str) -> bool:
    return form in answer_key if len(form) >= 2 else answer_key == form


def _stands_alone(cleaned: str, form: str) -> bool:
    """A one-character answer (清, 锡, J) inside a sentence counts only as its own word: after 是/为 or
    punctuation and before punctuation or the end, never inside another word (汉 in 东汉)."""
    return re.search(rf"(^|[是为\W]){re.escape(form)}($|\W)", cleaned) is not None


def _text_match(ref: Reference, answer_key: str, cleaned: str) -> bool:
    if any(_contains(answer_key, f) or (len(f) == 1 and _stands_alone(cleaned, f)) for f in ref.forms):
        return True
    if ref.items and all(_contains(answer_key, i) for i in ref.items):
        return True
    if ref.foreign:
        folded = answer_key.translate(_TRANSLIT)
        return any(_contains(folded, f.translate(_TRANSLIT)) for f in ref.forms)
    return False


def _only_some_items(items, answer_key: str) -> bool:
    """The answer names some items of a list reference and nothing else: incomplete, not contradictory."""
    found = [i for i in items if i in answer_key]
    for item in found:
        answer_key = answer_key.replace(item, "")
    return bool(found) and not re.sub(r"以及|和|与|及|还有", "", answer_key)


def _competing(ref: Reference, cleaned: str, answer_key: str) -> bool:
    return not ref.has_alternatives and len(answer_key) <= SHORT_ANSWER and bool(ALTERNATIVES.search(cleaned))


def _unmatched(cleaned: str, answer_key: str) -> str:
    """An answer without the reference's content: a refusal is NA, a guess or any other answer is IN."""
    if not answer_key:
        return "NA"
    if GUESS.search(cleaned):
        return "IN"
    return "NA" if REFUSAL.search(cleaned) else "IN"


def _grade_numeric(ref: Reference, cleaned: str, answer_key: str, question_numbers) -> str:
    # Numbers the answer repeats from the question (根据2010年普查...) are context, not its answer.
    found = [n for n in rules.find_numbers(cleaned)
             if any(n.matches(r) for r in ref.numbers) or not any(n.matches(q) for q in question_numbers)]
    exact = [n for n in found if n.kind in ("exact", "approx")]
    matched = [any(n.matches(r) for n in exact) for r in ref.numbers]
    stray = [n for n in found if n.kind == "exact" and not any(n.matches(r) for r in ref.numbers)]
    if all(matched):
        return "IN" if _competing(ref, cleaned, answer_key) else "CO"
    if stray:
        return "IN"
    vague = [n for n in found if n.kind != "exact"]
    if any(not any(n.consistent_with(r) for r in ref.numbers) for n in vague):
        return "IN"
    if vague or any(matched):
        return "NA"
    return _unmatched(cleaned, answer_key)


def _grade_long(ref: Reference, cleaned: str, answer_key: str, question_numbers) -> str:
    found = [n for n in rules.find_numbers(cleaned) if not any(n.matches(q) for q in question_numbers)]
    if ref.numbers and any(n.kind == "exact" and not any(n.matches(r) for r in ref.numbers) for n in found):
        return "IN"
    answer_bigrams = _bigrams(re.sub(r"\d", "", answer_key))
    coverage = len(ref.bigrams & answer_bigrams) / len(ref.bigrams) if ref.bigrams else 0.0
    matched = any(n.matches(r) for n in found if n.kind in ("exact", "approx") for r in ref.numbers)
    if coverage >= LONG_COVERAGE or matched:
        return "CO"
    return _unmatched(cleaned, answer_key)


@lru_cache(maxsize=65536)
def reference_readings(reference: str) -> tuple:
    """The parsed reference, plus each side of its parentheses read alone when it is numeric or long
    (万历41年（1613年）: either year suffices); short text handles its parentheses itself."""
    whole = parse_reference(reference)
    cleaned = rules.clean(reference)
    if whole.mode == "text" or not _PARENS.search(cleaned):
        return (whole,)
    sides = [_PARENS.sub("", cleaned), *_PARENS.findall(cleaned)]
    return (whole, *(parse_reference(side) for side in sides if rules.key(side)))


def _grade(ref: Reference, cleaned: str, answer_key: str, question_numbers) -> str:
    if ref.mode == "numeric":
        return _grade_numeric(ref, cleaned, answer_key, question_numbers)
    if ref.mode == "long":
        return _grade_long(ref, cleaned, answer_key, question_numbers)
    if _text_match(ref, answer_key, cleaned):
        return "IN" if _competing(ref, cleaned, answer_key) else "CO"
    if ref.items and _only_some_items(ref.items, answer_key):
        return "NA"
    return _unmatched(cleaned, answer_key)


def _best_grade(readings, cleaned: str, question_numbers) -> str:
    answer_key = rules.key(cleaned)
    grades = {_grade(ref, cleaned, answer_key, question_numbers) for ref in readings}
    return "CO" if "CO" in grades else "NA" if "NA" in grades else "IN"


def grade_answer(prediction: str, reference: str, question: str = "") -> str:
    """'CO', 'NA' or 'IN' for one answer; see the module docstring for the rules."""
    cleaned = rules.clean(prediction)
    question_numbers = rules.find_numbers(rules.clean(question)) if question else []
    readings = reference_readings(reference)
    affirmed = DENIAL.sub(" ", cleaned)
    grade = _best_grade(readings, affirmed, question_numbers)
    if affirmed != cleaned and grade != "CO" and _best_grade(readings, cleaned, question_numbers) == "CO":
        return "IN"  # the reference's answer appears only where the answer denies it: 不是北京
    return grade


def grade_answers(predictions, references, questions=None) -> list[str]:
    questions = questions if questions is not None else [""] * len(predictions)
    return [grade_answer(p, r, q) for p, r, q in zip(predictions, references, questions)]
