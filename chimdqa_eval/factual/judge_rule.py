"""The offline rule judge: one grade (CO, NA or IN) per answer, deterministic, no model, and whether the rules
are sure of it.

First the answer is read for what it asserts. Text it takes back does not count as its answer: what comes
before a self-correction (1420年，不对，是1421年: the final answer wins) or an explicit final or true answer
(所以答案是…, 但最终当选的是…, 真正的导演是…), a claim it attributes to others and then rejects (常有人说是沈括，其实是
苏轼; 很多资料说…), a denial (不是北京，而是上海), a question back to the user. A claim attributed to others and left
standing (也有人说…, 据说…, 另有…给的是) is an alternative candidate; 不是A就是B and A和B二者之一 name two. A short claim
before a disclaimer (王晶。不过我不太确定) is a hedged guess, not a refusal; a year inside a refusal's scope
(截至2023年的资料中没有记载) is no answer.

A reference is read in one of three ways:
- numeric (the reference is numbers plus a few characters: 3518.17, 1919年, 15英镑, 2023年9月4日): a bare
  reference takes its unit from the question (多少公里, 哪一年). The answer's numbers of that kind (the same
  unit; not ordinals such as 第3条, counted things such as 一个, or numbers it repeats from the question) are its
  candidates. Every reference number must be matched at the coarser precision of the two (data/units.tsv: 50毫米
  = 5厘米, 3小时 != 3分钟); a candidate that differs contradicts it. A vague candidate is NA when the reference
  agrees with it and IN when not: a bound (超过3000), a range (1850到1860年, 19世纪90年代) containing the
  reference (明朝 for 1420, 500多米 = 500 to 600 m), or an approximate value (约3500) that rounds to the
  reference at its own written precision (约3.6万 is not 39000, 1850年左右 is not 1856). Among several values for
  the slot, the one set in **bold**, a concluded one (所以…, =), a bare first sentence, or the one whose clause
  is most like the question (the question's own year, event words and a turn such as 但/其实 weigh in) is the
  answer (never certain). Years of reign eras (洪武8年 = 1375, 民国35年), centuries and their parts (21世纪头十年),
  vague counts (几千, 十几, 上万, 多次), 2000年前 (before a year) and 两千多年前 (years ago, no year) are read as
  such, and so are numbers written otherwise (rules.clean: 十分之一 = 0.1 and 5‰ = 0.005, read as percentages
  for a percentage reference, 七成 = 70%, 1.5 million, November 30, 2022, two; 新加坡元 = 新元; 24个月 = 2年 in
  answers, a reference in months read both ways; 400% for a multiple asked, converted).
- short text (names, terms, places): the answer must contain one of the reference's forms (the whole
  reference, either side of a parenthesis, a name's surname, the reference without a suffix such as 市/省,
  all items of a list, a division's short name or a person's other name from aliases.py: 新疆 for 新疆维吾尔自治区,
  关云长 for 关羽, each only as a word of its own), compared after normalization and, for transliterated names,
  after folding common transliteration variants. A dynasty without the reference's 东/西/南/北 (汉代 for 西汉),
  a period without its part (新石器时代 for 新石器时代晚期), a description or a kind without a name (一位英国剧作家,
  是英国作家, 属于锥体的一种, 被子植物门 for 木兰纲, 一个士官级别的军衔 for 什么军衔, F型 for F4IV), the head of
  the reference's compound (佛教 for 藏传佛教) or its opening words (凤凰卫视 for 凤凰卫视资讯台) or a region
  (中国西北地区, 北非) instead of a name is less specific: NA; one half of a dynasty (西汉 for 汉代) or the
  reference without its outer place (朝阳市 for 辽宁省朝阳市) is CO, not sure. A match is not sure when the reference only names someone's relative (X的儿子), when a later
  clause turns to another claim (…，但最初是由FDA运营的), or when another clause is as close to the question; a
  clause much closer to the question than the reference's own holds the answer (IN, not sure). For a place in data/places.tsv, an
  answer naming only places that contain it is NA, one naming another place of its size or broader IN.
  In the other script by pinyin and CLDR names (factual/names.py: Yang Liwei for 杨利伟, Switzerland for
  瑞士); a sound-alike transliteration (Newton for 牛顿) is CO, never certain.
- long text (more than LONG_REFERENCE characters): the answer must contradict none of its numbers and either
  match one of them or cover most of its character bigrams. A heuristic: never certain unless a refusal.
A numeric or long reference with parentheses is also read one side at a time (万历41年（1613年）: 1613 is
enough); the best grade over its readings counts. Refusals without a candidate are NA; a guess at something
else, or several competing candidates, is IN.

Certain means the rules found an unambiguous match, refusal or contradiction. They are not sure (the reason
says why) of a hedged match, several candidates for the asked slot, the reference among other things of its
kind, a unit they do not know, a name that shares characters with the reference (骆观光 for 骆宾王, which no
table lists), another name where the question names the person or asks for a kind of name (杜子美 for
被称为诗圣的是谁, 欧阳修 for 自号什么), Latin names for a Chinese reference, or a refusal followed by a claim.

How the rules are kept: each reading of the reference is a Case (case.py: the answer read once, with what the rules
ask of it worked out on first asking, by the readers of reading_*.py: reading_reference, reading_question and
reading_answer read the three texts; reading_match, reading_places, reading_kinds, reading_claims and
reading_numbers answer what the rules ask of them) that its kind's decision list decides: stages_numeric.py, stages_text.py and
stages_long.py each hold one ordered list of named rules (decision.py), ending with the fallback rules of
stages_unmatched.py; the engine applies the shared guards (refusal kinds, alternatives) and, over the best reading,
GUARDS below. Every verdict names its rule (trace_answer; items.jsonl's `rule`). The word lists the rules read
(cue words, kinds, regions, transliteration classes, counters, units) are data files (vocabulary.py, data/*.txt,
data/units.tsv) whose digest is in the signature. `chimdqa judge-rules [--labels FILE]` prints the lists in order,
with how often each rule fires and is right on labelled answers.
"""
from __future__ import annotations

from functools import lru_cache

from chimdqa_eval.factual import names, processes, rules
from chimdqa_eval.factual.case import CASES
from chimdqa_eval.factual.decision import GRADE_ORDER, Decision, Verdict, step
from chimdqa_eval.factual.reading_answer import _read_answer, _refusal
from chimdqa_eval.factual.reading_match import _same_formula
from chimdqa_eval.factual.reading_question import _question_unit
from chimdqa_eval.factual.reading_reference import (LONG_REFERENCE, Reference, _SHORT_YEAR, _unreadable,
                                                    parse_reference, reference_readings)
from chimdqa_eval.factual.reading_text import _word_bigrams
from chimdqa_eval.factual import reading_claims, reading_numbers, reading_text  # (their memos, emptied below)
from chimdqa_eval.factual.stages_long import LONG
from chimdqa_eval.factual.stages_numeric import NUMERIC
from chimdqa_eval.factual.stages_text import TEXT
from chimdqa_eval.schema import InputError

__all__ = ["Verdict", "Decision", "judge_answer", "judge_answers", "grade_answer", "grade_answers", "trace_answer",
           "trace_answers", "parse_reference", "reference_readings", "Reference", "FAMILIES", "GUARDS",
           "LONG_REFERENCE", "clear_caches", "clear_answer_caches"]

FAMILIES = {"numeric": NUMERIC, "text": TEXT, "long": LONG}  # a reference kind -> its decision list

# What the engine checks once every reading of the reference has its verdict, in this order.
EMPTY = step("answer.empty", "NA/CO", ("empty", "same_text"), "yes",
             "nothing readable in the answer: NA (CO when it is the reference's own symbols, verbatim)",
             examples=(('……', '1876', ''),))
READINGS_DISAGREE = step("guard.readings_disagree", "CO", "(the rule's)", "no",
                         "the reference's name matches, its figure is contradicted (储能电池（28.07%） for "
                         "储能电池（18.3%）: the name is right, the bracketed figure is not)",
             examples=(('储能电池（28.07%）', '储能电池（18.3%）', '哪个业务收入占比最高？'),))
ONE_READING_UNSURE = step("guard.one_reading_unsure", "NA/IN", "(the rule's)", "no",
                          "the best reading's NA or IN is sure but another reading of the reference is not",
             examples=(('应该是查拳或者华拳。', '八门拳(炮拳)', '这是哪个拳法的拳谱？'),))
UNREADABLE_REFERENCE = step("guard.unreadable_reference", "CO/IN", "(the rule's)", "no",
                            "a reference of symbols only (😀, %): the rules had nothing to compare",
             examples=(('5', '。', ''),))
ASKED_BACK = step("guard.asked_back", "IN", "(the rule's)", "no",
                  "the answer asks the user something back: what it answers depends on the reply",
             examples=(('你说的单点定位是只用GPS单系统，还是GPS加北斗这种多系统组合？两种情况需要的卫星数不一样。', '4', '单点定位模式中为了求解接收器位置至少需要同时观测多少颗卫星？'),))
SAME_FORMULA = step("guard.same_formula", "CO", "same_formula", "no",
                    "an IN whose every formula has the reference formula's atoms (C6H5COONa for C7H5NaO2)",
             examples=(('C6H5COONa。', 'C7H5NaO2', '苯甲酸钠的分子式是什么？'),))
GUARDS = (EMPTY, READINGS_DISAGREE, ONE_READING_UNSURE, UNREADABLE_REFERENCE, ASKED_BACK, SAME_FORMULA)


def _readings(reference: str, cleaned: str, cleaned_question: str) -> tuple:
    readings = reference_readings(reference, _question_unit(cleaned_question))
    if len(readings) == 3 and _SHORT_YEAR.match(rules.clean(reference)) and not _SHORT_YEAR.search(cleaned):
        return readings[1:]  # 2008年1月9日 for 07年1月9日: the reference in its centuries, not as the year 7
    return readings


def _guarded(best: Decision, decisions: list, reference: str, prediction: str, answer) -> Decision:
    """The engine's guards over the best reading's decision (GUARDS)."""
    if best.certain and best.grade == "CO" and best.rule.startswith("text.") \
            and any(d.certain and d.grade == "IN" and d.rule.startswith("numeric.") for d in decisions):
        return best._replace(certain=False, rule=READINGS_DISAGREE.name)  # 储能电池（28.07%） for 储能电池（18.3%）
    if best.certain and best.grade != "CO" and not all(d.certain for d in decisions):
        return best._replace(certain=False, rule=ONE_READING_UNSURE.name)
    if best.certain and best.grade != "NA" and _unreadable(reference):
        return best._replace(certain=False, rule=UNREADABLE_REFERENCE.name)
    if best.certain and best.grade == "IN" and answer.asked:
        return best._replace(certain=False, rule=ASKED_BACK.name)  # 你说的是主桥还是全长？主桥约800米
    if best.grade == "IN" and best.reason not in ("reference_rejected", "refusal_then_claim") \
            and _same_formula(reference, prediction, answer.affirmed):
        return Decision("CO", False, "same_formula", SAME_FORMULA.name)
    return best


@lru_cache(maxsize=8192)  # a leaderboard grades many answers to the same question
def _read_question(question: str) -> tuple[str, tuple]:
    """The cleaned question and its numbers."""
    if not question:
        return "", ()
    cleaned = rules.clean(question)
    return cleaned, tuple(rules.find_numbers(cleaned))


def trace_answer(prediction: str, reference: str, question: str = "") -> Decision:
    """The grade of one answer, whether the rules are sure of it, the reason code and the registered rule that
    decided; see the module docstring."""
    cleaned = rules.whole_years(rules.clean(prediction))
    if not rules.key(cleaned):
        if prediction.strip() and prediction.strip() == reference.strip():
            return Decision("CO", True, "same_text", EMPTY.name)  # 😀 for 😀: given verbatim
        return Decision("NA", True, "empty", EMPTY.name)
    cleaned_question, question_numbers = _read_question(question)
    answer = _read_answer(cleaned, cleaned_question)
    decisions = [FAMILIES[ref.mode].decide(CASES[ref.mode](ref, answer, cleaned_question, question_numbers))
                 for ref in _readings(reference, cleaned, cleaned_question)]
    best = min(decisions, key=lambda d: (GRADE_ORDER[d.grade], not d.certain))
    return _guarded(best, decisions, reference, prediction, answer)


def judge_answer(prediction: str, reference: str, question: str = "") -> Verdict:
    """(grade, certain, reason) of one answer; trace_answer adds the rule that decided."""
    return trace_answer(prediction, reference, question).verdict


def grade_answer(prediction: str, reference: str, question: str = "") -> str:
    """'CO', 'NA' or 'IN' for one answer; see the module docstring for the rules."""
    return trace_answer(prediction, reference, question).grade


def _trace_here(predictions, references, questions) -> list[Decision]:
    return [trace_answer(p, r, q) for p, r, q in zip(predictions, references, questions, strict=True)]


def _same_lengths(predictions, references, questions) -> None:
    """Lists of different lengths are an error, not a grading of the shortest (iterables without a length: zip's
    strict check, as they are read)."""
    lengths = [len(x) for x in (predictions, references, questions) if hasattr(x, "__len__")]
    if len(set(lengths)) > 1:
        raise InputError(f"answers, references and questions differ in number: {lengths} (one of each an answer)")


def trace_answers(predictions, references, questions=None, *, workers=1) -> list[Decision]:
    """trace_answer over every answer, in order. workers: processes to grade in (1, the default: this one, the
    inputs any iterables; 0 (one a CPU) or a number: forked processes where that is safe and there are enough
    answers, see processes.py; None: as $CHIMDQA_JUDGE_WORKERS says). The decisions are the same whatever the
    number."""
    _same_lengths(predictions, references, questions if questions is not None else predictions)
    if processes.requested_workers(workers) == 1:  # any iterables, as zip takes them
        if questions is None:
            return [trace_answer(p, r, "") for p, r in zip(predictions, references, strict=True)]
        return _trace_here(predictions, references, questions)
    predictions, references = list(predictions), list(references)
    questions = list(questions) if questions is not None else [""] * len(predictions)
    count = processes.plan(len(predictions), workers)
    if count > 1:
        return processes.graded_in_processes(_trace_here, predictions, references, questions, count)
    return _trace_here(predictions, references, questions)


def judge_answers(predictions, references, questions=None, *, workers=1) -> list[Verdict]:
    return [d.verdict for d in trace_answers(predictions, references, questions, workers=workers)]


def grade_answers(predictions, references, questions=None, *, workers=1) -> list[str]:
    return [d.grade for d in trace_answers(predictions, references, questions, workers=workers)]


def clear_answer_caches() -> None:
    """Forget what was worked out for earlier answers only; what the references and questions say stays known (a
    leaderboard grades every submission against the same references and questions)."""
    for cached in (_refusal, rules._find_numbers, _word_bigrams, rules.clean, rules.key, names._pinyin_options,
                   names._latin_word_skeleton, reading_numbers._events, reading_text._split_clauses):
        cached.cache_clear()


def clear_caches() -> None:
    """Forget what was worked out for earlier answers and references (a benchmark measures a cold run)."""
    clear_answer_caches()
    for cached in (parse_reference, reference_readings, _unreadable, _read_question, _question_unit,
                   names._could_be_pinyin, reading_claims._asked_besides, rules._framing):
        cached.cache_clear()
