"""factual/gate.py: a gate of first characters in front of a pattern changes nothing it matches."""
import re

import pytest

from chimdqa_eval.factual import (names, reading_answer, reading_claims, reading_kinds, reading_numbers, reading_places,
                                  reading_question, rules)
from chimdqa_eval.factual.gate import first_characters, gated

TEXTS = ["抱歉，我无法确定这个问题的答案。", "根据资料，答案是陶渊明。", "可能是1919年，也有人说是1920年，不对，是1921年。",
         "I don't know, maybe Newton or Leibniz.", "他并不是北京人，而是上海人", "不是", "", "第iv届", "东汉末年（约公元200年）",
         "一位英国剧作家", "您是问主桥还是全长？主桥约800米", "n/a", "也就是说答案=42", "这个问题我不太确定。据我所知是张伟"]


@pytest.mark.parametrize("pattern, first", [
    (r"abc|d(e|f)", {"a", "d"}),
    (r"(?<!x)\b(?:也|还)?(?:有人|民间)说", {"也", "还", "有", "民"}),
    (r"^n/?a|[0-3]x", {"n", "0", "1", "2", "3"}),
    (r"(?=[ab])(?:a|b)c", {"a", "b"}),
    (r"[^a]b", None),             # may begin with any character but a
    (r"x?", None),                # may match nothing
    (r"(?i)abc", None),           # global flags stay first: compiled ungated
    (r"(?:(?i:abc)|d)", None),    # a group's own flags: a gate compiled without them would refuse "ABC"
    (r"x|(?i:k)", None),          # ... and the Kelvin sign
    (r"\w+", None),
])
def test_first_characters(pattern, first):
    assert first_characters(pattern) == (frozenset(first) if first is not None else None)


def test_a_pattern_without_first_characters_is_compiled_as_it_is():
    assert gated(r"[^a]b").pattern == r"[^a]b"
    assert gated(r"abc|d").pattern.startswith("(?=[")
    assert gated(r"(?:(?i:abc)|d)").search("ABC") and gated(r"x|(?i:k)").search("\u212a")


def test_a_verbose_pattern_ending_in_a_comment_is_gated_whole():
    pattern = gated("a  b  # the letters a and b", re.VERBOSE)
    assert pattern.pattern.startswith("(?=[") and pattern.search("xab").span() == (1, 3)


GATED = [getattr(module, name) for module, names_ in (
    (rules, "REFUSAL GUESS HEDGE ALTERNATIVES DENIAL _DYNASTY_PERIOD _ROMAN _CN_NUMERAL"),
    (reading_answer, "_CORRECTION _ATTRIBUTED _TURN _LEANS _TO_USER _ALTERNATIVE_START _ASKS"),
    (reading_question, "_CLASS_QUESTION"),
    (reading_places, "_REGION"),
    (reading_kinds, "_DESCRIPTION"),
    (reading_claims, "_CANDIDATE_PAIR _NAMED_AS _RESTATES"),
    (reading_numbers, "_CONCLUSION"),
    (names, "_LATIN_CLASSES")) for name in names_.split()]


@pytest.mark.parametrize("pattern", GATED, ids=lambda p: p.pattern[14:40])
def test_a_gated_cue_list_matches_as_the_plain_pattern(pattern):
    """Every gated pattern of the judge: gated, and the same matches, spans and groups as without its gate on
    answers of every kind (cleaned as the judge reads them)."""
    assert pattern.pattern.startswith("(?=[")
    plain = re.compile(pattern.pattern[pattern.pattern.index("])(?:") + 5:-1], pattern.flags)
    for text in TEXTS + [rules.clean(t) for t in TEXTS]:
        assert [(m.span(), m.groups()) for m in pattern.finditer(text)] == \
            [(m.span(), m.groups()) for m in plain.finditer(text)], text
        assert pattern.sub("#", text) == plain.sub("#", text)
