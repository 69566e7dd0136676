"""The rule judge on every real Chinese SimpleQA reference (its own answer, refusals in many phrasings, answers in
sentences, other rows' answers), on odd and very long input, and through compute_factual."""
import json

import pytest

from chimdqa_eval.factual.judge_rule import grade_answer, judge_answer
from chimdqa_eval.factual.rules import clean, find_numbers, key
from shared_data import CHINESE_SIMPLEQA as SIMPLEQA


@pytest.mark.slow  # every real Chinese SimpleQA reference: thousands of gradings
@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
def test_chinese_simpleqa_answers_against_themselves_refusals_and_each_other():
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 1000
    for r in rows:
        assert grade_answer(r["answer"], r["answer"], r["question"]) == "CO", r["answer"]
        assert grade_answer(f"根据资料，答案是{r['answer']}。", r["answer"], r["question"]) == "CO", r["answer"]
        assert grade_answer("抱歉，我无法确定这个问题的答案。", r["answer"], r["question"]) == "NA", r["answer"]
    # Each answer graded against the next row's reference: wrong unless the two answers coincide.
    shifted = rows[1:] + rows[:1]
    pairs = [(o["answer"], r) for o, r in zip(shifted, rows)
             if key(clean(o["answer"])) != key(clean(r["answer"]))]
    wrong = sum(grade_answer(p, r["answer"], r["question"]) == "IN" for p, r in pairs)
    assert wrong / len(pairs) > 0.98


def test_compute_factual_reports_certainty_and_the_deciding_rule():
    from chimdqa_eval.factual import compute_factual
    question = "五四运动爆发于哪一年？"
    result = compute_factual(["1919年", "我不太确定，但我记得是1919年", "不知道", "1919年或1920年"], ["1919"] * 4,
                             [question] * 4)
    assert result["grades"] == ["CO", "CO", "NA", "IN"]
    assert result["certain"] == [True, False, True, True]
    assert result["reasons"] == ["number_match", "hedged_match", "refusal", "alternatives"]
    assert result["rules"] == ["numeric.number_match", "numeric.hedged_match", "unmatched.refusal",
                               "numeric.alternatives"]
    assert result["signature"] == compute_factual(["1919年"], ["1919"])["signature"]  # same rules, same signature


REFUSALS = ["我不确定。", "不太清楚。", "I'm not sure.", "这个我真不知道。", "不好说。", "很难说。", "记不清了。",
            "I don't know.", "Sorry, I can't answer that.", "这超出了我的知识范围。", "我对此没有把握。",
            "我查不到相关资料。", "暂时无法回答。", "我没有足够的信息来回答这个问题。", "我需要更多信息才能回答。",
            "无可奉告。", "没听说过。", "我没有这方面的知识。", "作为一个AI，我无法核实这一点。", "您指的是哪一个？",
            "恕我无法作答。", "对此我一无所知。", "不晓得。", "具体是谁我说不上来。", "这题超纲了，我不会。",
            "我印象里没有相关内容。", "这方面的信息我并不掌握。", "I have no idea.", "I don't recall."]


@pytest.mark.slow  # every real Chinese SimpleQA reference: thousands of gradings
@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
def test_refusals_in_many_phrasings_are_certain_na_for_every_real_reference():
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    for phrase in REFUSALS:
        verdicts = [judge_answer(phrase, r["answer"], r["question"]) for r in rows]
        assert all(v.grade == "NA" and v.certain for v in verdicts), (phrase, next(
            (r["answer"], v) for r, v in zip(rows, verdicts) if v.grade != "NA" or not v.certain))


# Refusals built from the grammar of not knowing rather than listed phrases: a verb with a negated result
# (查不出来), knowledge said to be thin (了解得很有限), confidence or grounds lacking (没有十足把握), beyond what one
# knows, English forms. Written for this test, none taken from a validation set.
REFUSALS_BY_GRAMMAR = [
    "各家说法不一，我不好给出确定的答案。", "这串编码我没法逐位背出来。", "为了不误导你，建议到官网核对一下。",
    "你能多给我一点背景信息吗？", "我记不清了，不想瞎猜，你可以到官网查一下原文。",
    "这个我真答不好，怕误导你。",
    "说实话，这题把我难倒了。",
    "这一点我没有十足把握，就不随便回答了。",
    "这个问题我没法给出确切的回答，建议去查官方网站。",
    "这方面的信息我了解得很有限，没办法告诉你具体是谁。",
    "我不记得了，抱歉。",
    "恕我无法提供这个信息。",
    "我没能找到相关的记录。",
    "我对此没有印象。",
    "这个得查一下资料才能确定，我现在答不出。",
    "我对这家公司的历史不是很了解。",
    "我印象里没有相关内容。",
    "这超出了我目前的知识。",
    "老实讲，我不太了解这个奖项的来历。",
    "这个我没办法准确回答。",
    "我想不起来他具体是在哪一年去世的。",
    "我所知道的资料里没有提到这一点。",
    "这个我说不清楚。",
    "你问的这个我没有准确信息，可能需要查阅专业文献。",
    "I'm not able to answer that reliably.",
    "I'm afraid I don't know.",
    "I have no reliable data on this.",
    "Unfortunately I can't help with this one.",
    "I don't remember the exact year.",
    "No clue, sorry.",
    "Hmm, I genuinely don't know.",
    "这个我不太敢下结论。",
    "这个问题我回答不上。",
    "这个我无从得知。",
    "我也说不准是哪个。",
    "我对他的生平知之甚少。",
    "我没查到确切的说法。",
    "我一时想不出来。",
    "这个问题有点冷门，我不敢乱讲。",
    "我脑子里没有这个信息。",
    "这事儿我真不太清楚，你可以去维基百科看看。",
    "这个问题我无法准确作答，因为不同来源说法不一。",
    "这一问题目前学界尚无定论。",
    "这个人名我完全陌生。",
    "我并不掌握这方面的统计。",
    "这个我答不上来，不好意思。",
    "我不太能确定是哪一年。",
    "目前没有公开的可靠数据。",
    "很抱歉，这个超出我的能力范围了。",
    "I'm unsure about this one.",
    "I don't have enough knowledge to answer accurately.",
    "Can't recall, unfortunately.",
    "我不是很确定，可能需要你自己查一下。",
    "我连这个人是谁都不知道。",
    "这个问题对我来说太难了。",
]


@pytest.mark.slow  # every real Chinese SimpleQA reference: thousands of gradings
@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
def test_refusals_by_the_grammar_of_not_knowing_are_certain_na_for_every_real_reference():
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    for phrase in REFUSALS_BY_GRAMMAR:
        verdicts = [judge_answer(phrase, r["answer"], r["question"]) for r in rows]
        assert all(v.grade == "NA" and v.certain for v in verdicts), (phrase, next(
            (r["answer"], v) for r, v in zip(rows, verdicts) if v.grade != "NA" or not v.certain))


@pytest.mark.slow  # every real Chinese SimpleQA reference: thousands of gradings
@pytest.mark.skipif(not SIMPLEQA.exists(), reason="Chinese SimpleQA file not available")
@pytest.mark.parametrize("template", ["应该是{}吧。", "The answer is {}.", "关于这个问题，答案是：{}。希望对你有帮助！",
                                      "{}（据公开资料）", "我记得是{}，不过不太确定。"])
def test_real_references_in_sentences_are_correct(template):
    rows = [json.loads(line) for line in SIMPLEQA.read_text(encoding="utf-8").splitlines() if line.strip()]
    verdicts = [judge_answer(template.format(r["answer"]), r["answer"], r["question"]) for r in rows]
    assert [r["answer"] for r, v in zip(rows, verdicts) if v.grade != "CO"] == []
    certain = sum(v.certain for v in verdicts) / len(rows)
    assert certain == 0 if "不太确定" in template else certain > 0.99  # a refusing hedge is never sure


@pytest.mark.parametrize("prediction, reference, grade", [
    ("", "5", "NA"), ("。？！……", "5", "NA"), ("😀", "沈括", "NA"), ("沈括😀", "沈括", "CO"),
    ("−5", "-5", "CO"), ("-5", "−5", "CO"), ("−5", "5", "IN"), ("５", "5", "CO"), ("１２３４年", "1234年", "CO"),
    ("1e309", "1e309", "CO"),
    # a run of numerals longer than Python's int() reads (4,300 digits) must not raise
    ("一" * 20000, "5", "IN"), ("一" * 5000 + "年", "1912年", "IN"), ("一亿" * 700, "5", "IN"),
    # a 20,000-character answer (the scientific-notation rewrite was quadratic in a run of digits: 7 s here)
    ("1" * 20000, "5", "IN"), ("1" * 20000, "沈括", "IN"), ("1912年，" * 4000, "1912年", "CO"),
    # thousands of numbers (the stray-number and restatement checks compared every pair: 2 min for the first)
    ("5个6个" * 3000, "5个", "CO"), ("5（6）" * 4000, "5个", "CO"), ("1912年1913年" * 1500, "1912年", "CO"),
    ("至少5个" * 4000, "5个", "CO"), ("永乐18年(1420年)，" * 1500, "1420年", "CO"),
])
def test_odd_input_gets_a_grade_and_no_exception(prediction, reference, grade):
    assert judge_answer(prediction, reference, "哪一年？").grade == grade


def test_odd_inputs_do_not_crash_and_long_ones_stay_bounded():
    from chimdqa_eval.factual import dictionary
    assert judge_answer("Paris", "北京·", "哪个城市？").grade == "IN"  # an empty part of a name
    assert dictionary.composed_names("丞乙" * 600) == frozenset()  # too long to compose: no recursion
    assert judge_answer("It is Something Else", "甲（" + "丞乙" * 600 + "）", "是什么？").grade == "IN"
    assert clean("12 345 6") == "12 345 6" and clean("固定值149 597 870 700米") == "固定值149597870700米"
    assert clean("123 " * 2000 + "1").count(" ") == 2000  # a list of numbers, left as it is
    assert [n.value for n in find_numbers(clean("14亿1177万8千人"))] == [1411778000]
