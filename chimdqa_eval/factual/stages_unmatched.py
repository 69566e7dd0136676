"""The fallback rules, shared by every reference kind: an answer without the reference's content. A refusal is NA,
a guess or any other answer IN; `case.risk` names why a non-match may still name the reference in a form the
rules do not know (the text family's alias risks; "no_number" for a numeric reference, "long_no_match").
An answer with nothing readable never gets here (judge_rule: answer.empty)."""
from __future__ import annotations

import re

from chimdqa_eval.factual import reading_claims, reading_kinds, reading_places, reading_question
from chimdqa_eval.factual.decision import Verdict, rule

_NAMED_AFTER = re.compile(r"叫|名为|称为|称作")
_LATIN_WORD2 = re.compile(r"[a-z]{2,}")


@rule("unmatched.apology", "NA", "apology", "no", ('抱歉，我只能提供一般信息。', '杜甫', '《春望》的作者是谁？'))
def apology(case):
    """An apology with something else said: most likely a refusal in words not listed."""
    if case.refusal == "apology":
        return Verdict("NA", False, "apology")


@rule("unmatched.candidates_then_refusal", "IN", "candidates_then_refusal", "no",
      ("NLM和FDA二者之一，具体是哪个我记不清了", "DailyMed", ""))
def candidates_then_refusal(case):
    """Two named candidates, then a refusal: a wrong guess."""
    if case.refusal == "refusal" and reading_claims._CANDIDATE_PAIR.search(case.affirmed) and case.content:
        return Verdict("IN", False, "candidates_then_refusal")


@rule("unmatched.claim_then_refusal", "IN", "claim_then_refusal", "no", ("王晶。不过我不太确定", "杜琪峰", ""))
def claim_then_refusal(case):
    """A short claim of its own, then a disclaimer: a hedged wrong guess."""
    if case.refusal == "refusal" and reading_claims._claim_before_refusal(case.answer, case.question):
        return Verdict("IN", False, "claim_then_refusal")


@rule("unmatched.refusal", "NA", ("refusal", "clarification"), "yes", ("我不确定。", "杜甫", ""))
def refusal(case):
    """A refusal without a candidate, or a question back and nothing else."""
    if case.refusal == "refusal" or (not case.key and case.answer.asked):
        return Verdict("NA", True, "clarification" if case.answer.asked and not case.refuses else "refusal")


@rule("unmatched.refusal_then_claim", "IN", "refusal_then_claim", "no", ('我不太确定，答案是孙思邈。', '李时珍', '《本草纲目》的作者是谁？'))
def refusal_then_claim(case):
    """A refusal, then a claim of another thing."""
    if case.refusal == "refusal_then_claim":
        return Verdict("IN", False, "refusal_then_claim")


@rule("unmatched.no_candidate", "IN", "no_candidate", "no", ('乙', '患者乙（26.5，患者丙为24.8）', '患者乙和患者丙谁的BMI更高？'))
def no_candidate(case):
    """Nothing besides the question's words and filler."""
    if not case.content:
        return Verdict("IN", False, "no_candidate")


@rule("unmatched.clarification_with_text", "NA", "clarification_with_text", "no",
      ("您是问男性还是女性？两者的规定不一样。", "60岁", ""))
def clarification_with_text(case):
    """A question back to the user, with some text."""
    if case.answer.asked:
        return Verdict("NA", False, "clarification_with_text")


def _names_something(case, indefinite) -> bool:
    """Beside the indefinite description, a name: bold, a title, another Latin word, a rival of the reference's
    kind, a name before it or as its subject, a name after its kind."""
    affirmed, question = case.affirmed, case.question
    return bool("**" in affirmed or "《" in affirmed or case.answer.alternative
                or set(_LATIN_WORD2.findall(affirmed)) - set(_LATIN_WORD2.findall(question.lower()))
                or reading_kinds._named_rival(case.ref, affirmed, indefinite, question)
                or reading_kinds._apposed_name(affirmed[:indefinite.start()], question)
                or reading_kinds._described_name(affirmed, indefinite, question)
                or reading_kinds._named_after_kind(affirmed, indefinite))


@rule("unmatched.indefinite_description", "NA/IN", "indefinite_description", "no",
      ("是由一种革兰氏阴性细菌引起的", "霍乱弧菌", ""))
def indefinite_description(case):
    """Something named only by its kind (一种…): perhaps only broader (NA), unless a name stands beside it (IN)."""
    indefinite = reading_kinds._INDEFINITE.search(case.affirmed)
    if indefinite and not _NAMED_AFTER.search(case.affirmed[indefinite.end():]):
        return Verdict("IN" if _names_something(case, indefinite) else "NA", False, "indefinite_description")


@rule("unmatched.risk", "IN", ("latin_name", "translated_name", "shared_surname", "shared_characters", "reworded",
                               "person_alias", "place_level", "chinese_name", "described_with_more",
                               "attributed_alternative", "no_number", "long_no_match"), "no",
      ("骆观光", "骆宾王", ""))
def risk(case):
    """Another answer that may still name the reference in a form the tables lack (case.risk), or an
    alternative attributed to others."""
    if case.risk or case.answer.alternative:
        return Verdict("IN", False, case.risk or "attributed_alternative")


@rule("unmatched.other_class", "IN", "other_class", "no", ("属于无脊椎动物", "节肢动物门", "属于哪一类动物门？"))
def other_class(case):
    """A class question: a wrong-looking class may be a broader one that holds the reference."""
    if reading_question._CLASS_QUESTION.search(case.question) and not case.ref.items:
        return Verdict("IN", False, "other_class")


@rule("unmatched.other_region", "IN", "other_region", "no", ('起源于西班牙南部的沿海地区。', '安达卢西亚', '这种舞蹈最初起源于哪个西班牙地区？'))
def other_region(case):
    """A region question answered with a region: perhaps a broader one."""
    if reading_question._REGION_QUESTION.search(case.question) and reading_places._REGION.search(case.affirmed):
        return Verdict("IN", False, "other_region")


@rule("unmatched.no_match", "IN", ("no_match", "guess"), "yes", ("李白", "杜甫", ""))
def no_match(case):
    """Anything else: a wrong answer (a guess when it leans to it)."""
    return Verdict("IN", True, "guess" if case.refusal == "guess" else "no_match")


UNMATCHED_RULES = (apology, candidates_then_refusal, claim_then_refusal, refusal, refusal_then_claim,
                   no_candidate, clarification_with_text, indefinite_description, risk, other_class, other_region,
                   no_match)
