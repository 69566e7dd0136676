"""The decision list of a numeric reference: NUMERIC_RULES, in order, then the fallback rules of
stages_unmatched.py, whose wrong-looking verdicts this family settles its own way (era_for_year, other_unit,
no_number). NumericCase reads the answer's candidates, hits, stray and vague values."""
from __future__ import annotations

import re

from chimdqa_eval.factual import reading_answer, reading_claims, reading_kinds, reading_numbers, reading_text, rules
from chimdqa_eval.factual.decision import Family, Verdict, rule, step
from chimdqa_eval.factual.stages_unmatched import UNMATCHED_RULES

_CODE = re.compile(r"\d+[a-z]")


@rule("numeric.scoped_refusal", "NA", "refusal_with_numbers", "no", ("截至2023年的资料中没有记载", "1985年", ""))
def scoped_refusal(case):
    """A refusal whose every number dates or sources what it cannot say."""
    if case.candidates and case.refusal == "refusal" \
            and all(reading_answer._SCOPE.search(reading_text._clause_at(case.affirmed, n.start))
                    for n in case.candidates):
        return Verdict("NA", False, "refusal_with_numbers")


# ---- every reference number matched ----

@rule("numeric.alternatives", "IN/CO", "alternatives", "when short and every hit's clause offers alternatives",
      ("1995年或1996年", "1995年", ""))
def alternatives(case):
    """Other values offered beside the match (A或B)."""
    if not case.all_matched or not reading_claims._competing(case.ref, case.clauses):
        return None
    text = case.affirmed

    def offers_alternatives(h) -> bool:  # its clause, with the next when that opens with 还是…
        own = reading_text._clause_at(text, h.start)
        return any(rules.ALTERNATIVES.search(c) for c in reading_claims._clauses_with(text, lambda c: c == own))

    alone = not all(offers_alternatives(h) for h in case.hits)
    return Verdict("IN" if case.short else "CO", case.short and not alone, "alternatives")


def _half_step_off(n, target) -> bool:
    """n written finer than the reference and exactly half the reference's last written unit away from it (7.5
    for 7, 1.5 for 2): as near the next value as the reference's, so it says another value, not this one."""
    return n.kind == "exact" and not n.converted and n.step < target.step and n.value != target.value \
        and 2 * abs(n.value - target.value) == target.step


@rule("numeric.half_step_off", "IN", "half_step_off", "no", ("它的长度是12.5米。", "12", "这艘船长多少米？"))
def half_step_off(case):
    """Every match only half a step off the reference, written finer (7.5 for 7): another value."""
    if case.all_matched and case.hits \
            and all(any(_half_step_off(h, case.target(h, p)) for p in case.pairs) for h in case.hits):
        return Verdict("IN", False, "half_step_off")


@rule("numeric.several_numbers", "CO/IN", "several_numbers", "no", ("1946年公布，1947年施行", "1947年", "哪一年施行？"))
def several_numbers(case):
    """Several values for the slot: the concluded one, the bold one or the one whose clause is most like the
    question is the answer."""
    if case.all_matched and (case.stray or case.vague):
        return Verdict("CO" if case.likeliest(case.candidates, case.hits) in case.hits else "IN", False,
                       "several_numbers")


@rule("numeric.attributed_alternative", "IN", "attributed_alternative", "no", ("是1421年，也有人说是1420年", "1421年", ""))
def attributed_alternative(case):
    """Another value attributed to others beside the match."""
    alternative = case.answer.alternative
    if case.all_matched and alternative and any(reading_numbers._comparable(n, p[0]) and not n.matches(case.target(n, p))
                                                for p in case.pairs for n in rules.find_numbers(alternative)):
        return Verdict("IN", False, "attributed_alternative")


@rule("numeric.other_counter", "IN", "other_counter", "no", ("9353卷", "9353", "收录多少个字？"))
def other_counter(case):
    """The same number of other things than the question counts."""
    if case.all_matched and reading_numbers._other_counter(case.hits, case.question):
        return Verdict("IN", False, "other_counter")


@rule("numeric.unknown_unit", "CO", "unknown_unit", "no", ('六阶。', '6', '这种魔方最大可以做到几阶？'))
def unknown_unit(case):
    """A match in a unit or rate the rules do not read."""
    if case.all_matched and case.unsure_unit:
        return Verdict("CO", False, "unknown_unit")


@rule("numeric.converted_unit", "CO", "converted_unit", "no", ('212°F', '100℃', '标准大气压下水的沸点是多少摄氏度？'))
def converted_unit(case):
    """A match only once converted (another unit, pairs counted singly, a percentage as a multiple)."""
    if case.all_matched and any(n.converted for n in case.hits):
        return Verdict("CO", False, "converted_unit")


@rule("numeric.hedged_match", "CO", "hedged_match", "unless it also refuses", ("应该是1919年", "1919年", ""))
def hedged_match(case):
    """A hedged match."""
    if case.all_matched and case.hedge:
        return Verdict("CO", not case.refuses, "hedged_match")


@rule("numeric.number_without_words", "CO", "number_without_words", "no", ("四世", "阿卡汗四世", ""))
def number_without_words(case):
    """The number, without the reference's words (阿卡汗 in 阿卡汗四世)."""
    words = case.ref.words
    if case.all_matched and words and not all(ch in case.key for ch in words):
        return Verdict("CO", False, "number_without_words")


def _doubt(case) -> str:
    pairs, question = case.pairs, case.question
    return reading_claims._doubt(case.affirmed, "", lambda part: any(h.matches(case.target(h, p)) for p in pairs
                                                         for h in rules.find_numbers(part, question)),
                     question, years=False) or reading_numbers._opposite_direction(case.hits, case.affirmed, question)


@rule("numeric.number_match", "CO/IN", ("number_match", "several_numbers", "negated_clause", "compared_to",
                                        "negated_sentence", "opposite_direction"),
      "when nothing doubts it", ("3518", "3518.17", ""))
def number_match(case):
    """Every reference number matched: CO, unless its clause negates it or it says the other direction (IN);
    two approximate values of which only one is the reference: unsure."""
    if not case.all_matched:
        return None
    doubt = _doubt(case)
    hits = case.hits
    if not doubt and len({h.value for h in hits}) > 1 and any(
            h.kind == "approx" and all(h.value != case.target(h, p).value for p in case.pairs) for h in hits):
        return Verdict("CO", False, "several_numbers")  # 接近2倍，但…只能达到约1.8倍
    return Verdict("IN" if doubt else "CO", not doubt, doubt or "number_match")


# ---- a number that differs ----

def _refuses_without_guess(case) -> bool:
    return bool(case.stray) and case.refuses is not None and not case.guesses


@rule("numeric.claim_then_refusal", "IN", "claim_then_refusal", "no", ("1963年。不过我不太确定", "1962年", ""))
def claim_then_refusal(case):
    """A wrong value, then a disclaimer: a hedged wrong guess."""
    if _refuses_without_guess(case) and reading_claims._claim_before_refusal(case.answer, case.question):
        return Verdict("IN", False, "claim_then_refusal")


@rule("numeric.guess_then_refusal", "IN", "guess_then_refusal", "no", ("1995年或1996年，记不准", "1994年", ""))
def guess_then_refusal(case):
    """Wrong values offered as a pair or leaned to, then a refusal."""
    if not _refuses_without_guess(case):
        return None
    clauses = [reading_text._clause_at(case.affirmed, n.start) for n in case.stray]
    if any(reading_numbers._VALUE_PAIR.search(c) for c in clauses) \
            or any(reading_answer._LEANS.search(c) for c in clauses):
        return Verdict("IN", False, "guess_then_refusal")


@rule("numeric.refusal_with_numbers", "NA", "refusal_with_numbers", "no", ("只给出了2023年的52.3%，我无法确定", "48.5%", ""))
def refusal_with_numbers(case):
    """A refusal that mentions other values."""
    if _refuses_without_guess(case):
        return Verdict("NA", False, "refusal_with_numbers")


@rule("numeric.partial_number_beside_other", "NA/IN", "partial_number_beside_other", "no",
      ("1946年公布，1947年施行", "1947年5月3日", ""))
def partial_number_beside_other(case):
    """The year of a date reference beside another year, and no wrong day said."""
    if case.stray and any(case.matched) and case.hits and all(n.unit == "年" for n in case.stray) \
            and any(r.unit in ("月", "日") for r in case.ref.numbers) \
            and not any(n.unit in ("月", "日") for n in case.candidates):
        return Verdict("NA" if case.likeliest(case.candidates, case.hits) in case.hits else "IN", False,
                       "partial_number_beside_other")


@rule("numeric.vague_beside_other", "IN", "vague_beside_other", "no",
      ("大概是2010年代末成立的，真正出名是在2022年", "2018年", ""))
def vague_beside_other(case):
    """A vague value that agrees, beside an exact one that does not."""
    if case.stray and any(case.consistent(n) for n in case.vague):
        return Verdict("IN", False, "vague_beside_other")


@rule("numeric.number_mismatch", "IN", "number_mismatch", "unless a unit is unsure, alternatives, an attributed "
      "claim or a converted value", ("3520", "3518.17", ""))
def number_mismatch(case):
    """A value that contradicts the reference."""
    if case.stray:
        sure = not case.unsure_unit and not reading_claims._competing(case.ref, case.clauses) \
            and not case.answer.alternative \
            and not any(n.converted for n in case.stray)
        return Verdict("IN", sure, "number_mismatch")


# ---- vague values only ----

@rule("numeric.bound_at_reference", "CO", "bound_at_reference", "no", ("至少16周岁", "16周岁", ""))
def bound_at_reference(case):
    """A bound at the reference's value."""
    bounds = set(case.bounds)
    if bounds and all(n in bounds or case.consistent(n) for n in case.vague):
        return Verdict("CO", False, "bound_at_reference")


@rule("numeric.vague_mixed", "NA/IN", "vague_mixed", "no", ("唐代文物，1970年代出土", "1972年", ""))
def vague_mixed(case):
    """Vague values of which some agree: the likeliest decides."""
    vague = case.vague
    consistent = [n for n in vague if case.consistent(n)]
    if consistent and len(consistent) < len(vague):
        written = [n for n in vague if case.affirmed[n.start:n.start + 1].isdigit()] or vague
        return Verdict("NA" if case.likeliest(written, consistent) in consistent else "IN", False, "vague_mixed")


@rule("numeric.vague_wrong", "IN", "vague_wrong", "unless a unit is unsure, converted or refused",
      ("1980年前后", "1985年", ""))
def vague_wrong(case):
    """Vague values that do not hold the reference. An approximate year that rounds to the reference (1990年左右
    for 1994) is a guess at that one year, as people grade it: sure (164 of 164 right on the dev answers)."""
    vague, ref = case.vague, case.ref
    if not vague or any(case.consistent(n) for n in vague):
        return None
    odd_unit = any(n.unknown_unit and not any(n.unknown_unit == r.unknown_unit for r in ref.numbers) for n in vague)
    return Verdict("IN", not case.unsure_unit and not odd_unit and not any(n.converted for n in vague)
                   and case.refusal != "refusal", "vague_wrong")


@rule("numeric.vague_consistent", "NA", ("vague_consistent", "approx_consistent"),
      "a bound or range, unless a unit is unsure", ("超过3000", "3518", ""))
def vague_consistent(case):
    """Vague values that hold the reference: less specific."""
    vague = case.vague
    if vague:
        return Verdict("NA", not case.unsure_unit and all(n.kind != "approx" and not n.converted for n in vague),
                       "vague_consistent" if all(n.kind != "approx" for n in vague) else "approx_consistent")


@rule("numeric.partial_number", "NA", "partial_number", "yes", ("2023年9月", "2023年9月4日", ""))
def partial_number(case):
    """Some of the reference's numbers, nothing contradicting."""
    if any(case.matched):
        return Verdict("NA", True, "partial_number")


@rule("numeric.attributed_match", "IN/CO", "attributed_match", "no", ("有人说是1919年", "1919年", ""))
def attributed_match(case):
    """The reference's value only in a claim attributed to others."""
    text = case.answer.alternative
    if text and any(case.hit(n) for n in rules.find_numbers(text)):
        return Verdict("IN" if case.content else "CO", False, "attributed_match")


@rule("numeric.reference_rejected", "IN", "reference_rejected", "no", ('不是第三届', '第三届', ''))
def reference_rejected(case):
    """The reference's value only where the answer takes it back."""
    text = case.answer.rejected
    if text and any(case.hit(n) for n in rules.find_numbers(text)):
        return Verdict("IN", False, "reference_rejected")


@rule("numeric.code_match", "CO", "code_match", "no", ("2B", "2B", ""), unless="refusal", alone=True)
def code_match(case):
    """A number and a letter, read as a code in the answer."""
    main = case.ref.main
    if _CODE.fullmatch(main) and reading_numbers._code_pattern(main).search(case.affirmed):
        return Verdict("CO", False, "code_match")


NUMERIC_RULES = (scoped_refusal, alternatives, half_step_off, several_numbers, attributed_alternative, other_counter, unknown_unit,
                 converted_unit, hedged_match, number_without_words, number_match, claim_then_refusal,
                 guess_then_refusal, refusal_with_numbers, partial_number_beside_other, vague_beside_other,
                 number_mismatch, bound_at_reference, vague_mixed, vague_wrong, vague_consistent, partial_number,
                 attributed_match, reference_rejected, code_match)

ERA_FOR_YEAR = step("numeric.era_for_year", "NA", "era_for_year", "no",
                    "a fallback IN for a year reference whose answer names an era (永乐年间): less specific",
             examples=(('近代。', '1895年', '这是哪一年的事？'),))
OTHER_UNIT = step("numeric.other_unit", "IN", "other_unit", "no",
                  "a fallback IN whose answer has a number in another unit than the reference's",
             examples=(('3年', '3个月', ''),))
NO_NUMBER = step("numeric.no_number", "IN", "no_number", "no", "any other fallback IN: no number of the asked kind",
             examples=(('八大行星。', '8颗', '太阳系目前有几颗行星？'),))


def _settle(case, decision):
    """A fallback IN for a numeric reference: era_for_year, other_unit or no_number, never sure."""
    if not decision.rule.startswith("unmatched.") or decision.grade != "IN":
        return decision
    if any(r.unit == "年" for r in case.ref.numbers) and reading_kinds._ERA.search(case.affirmed):
        return decision._replace(grade="NA", certain=False, reason="era_for_year", rule=ERA_FOR_YEAR.name)
    if any(n.unit and not reading_numbers._comparable(n, r) for n in case.numbers for r in case.ref.numbers):
        return decision._replace(certain=False, reason="other_unit", rule=OTHER_UNIT.name)
    return decision._replace(certain=False, reason="no_number", rule=NO_NUMBER.name)


NUMERIC = Family("numeric", NUMERIC_RULES + UNMATCHED_RULES, _settle, (ERA_FOR_YEAR, OTHER_UNIT, NO_NUMBER))
