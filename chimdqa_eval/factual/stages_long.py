"""The decision list of a long reference (more than LONG_REFERENCE characters of key): a heuristic, never sure
unless a refusal. LONG_RULES, then the fallback rules of stages_unmatched.py, whose IN this family calls
long_no_match."""
from __future__ import annotations

import re

from chimdqa_eval.factual import reading_reference, reading_text
from chimdqa_eval.factual.decision import Family, Verdict, rule, step
from chimdqa_eval.factual.stages_unmatched import UNMATCHED_RULES

_DIGIT = re.compile(r"\d")


@rule("long.number_mismatch", "IN", "long_number_mismatch", "no", ('4000万元', '2019年公司实现营业收入3518.17万元，较上年同期增长12.5%，主要来自海外市场的扩张。', '2019年公司的营业收入是多少？'))
def number_mismatch(case):
    """An exact number that none of the reference's numbers matches."""
    ref_numbers = case.ref.numbers
    if ref_numbers and any(n.kind == "exact" and not any(n.matches(r) for r in ref_numbers) for n in case.numbers):
        return Verdict("IN", False, "long_number_mismatch")


@rule("long.match", "CO", "long_match", "no", ('约3518万元', '2019年公司实现营业收入3518.17万元，较上年同期增长12.5%，主要来自海外市场的扩张。', '2019年公司的营业收入是多少？'))
def match(case):
    """Most of the reference's character bigrams (LONG_COVERAGE), or one of its numbers."""
    ref = case.ref
    answer_bigrams = reading_text._bigrams(_DIGIT.sub("", case.key))
    coverage = len(ref.bigrams & answer_bigrams) / len(ref.bigrams) if ref.bigrams else 0.0
    matched = any(n.matches(r) for n in case.numbers if n.kind in ("exact", "approx") for r in ref.numbers)
    if coverage >= reading_reference.LONG_COVERAGE or matched:
        return Verdict("CO", False, "long_match")


LONG_RULES = (number_mismatch, match)
NO_MATCH = step("long.no_match", "IN", "long_no_match", "no", "any fallback verdict but NA: IN, unsure",
             examples=(('美网、温网、法网、澳网。', '澳大利亚网球公开赛、法国网球公开赛、温布尔登网球锦标赛、美国网球公开赛', '网球四大满贯赛事分别是哪四项？'),))


def _settle(case, decision):
    if not decision.rule.startswith("unmatched.") or decision.grade == "NA":
        return decision
    return decision._replace(grade="IN", certain=False, reason="long_no_match", rule=NO_MATCH.name)


LONG = Family("long", LONG_RULES + UNMATCHED_RULES, _settle, (NO_MATCH,))
