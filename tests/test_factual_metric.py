"""compute_factual and the chimdqa_factual evaluate module: formulas, breakdowns, bad input, the LLM judge
against a real local chat-completions server, and the module's own docstring examples."""
import doctest
import re
from pathlib import Path

import evaluate
import pytest

from chimdqa_eval.factual import compute_factual, scores_from_grades
from chimdqa_eval.factual.judge_llm import load_template
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import parse_signature
from chat_server import ChatServer

REPO = Path(__file__).resolve().parents[1]
METRIC_DIR = REPO / "metrics" / "chimdqa_factual"


def test_scores_reproduce_a_published_row():
    # Chinese SimpleQA reports o1-preview at CO 63.8, NA 12.2, IN 24.0 -> CGA 72.7, F 67.9.
    scores = scores_from_grades(["CO"] * 638 + ["NA"] * 122 + ["IN"] * 240)
    assert (scores["CO"], scores["NA"], scores["IN"]) == pytest.approx((63.8, 12.2, 24.0))
    assert round(scores["CGA"], 1) == 72.7 and round(scores["F1"], 1) == 67.9


@pytest.mark.parametrize("grades, expected", [
    (["NA", "NA"], {"CO": 0, "NA": 100, "IN": 0, "CGA": 0, "F1": 0}),          # nothing attempted
    (["CO", "CO", "CO"], {"CO": 100, "NA": 0, "IN": 0, "CGA": 100, "F1": 100}),  # all correct
    (["IN", "NA"], {"CO": 0, "NA": 50, "IN": 50, "CGA": 0, "F1": 0}),           # attempted, all wrong
    (["CO", "NA", "NA", "NA"], {"CO": 25, "NA": 75, "IN": 0, "CGA": 100, "F1": 40}),  # 2*25*100/125
])
def test_formula_edge_cases(grades, expected):
    assert scores_from_grades(grades) == pytest.approx(expected)


def test_ungraded_items_stay_in_the_denominator_and_in_no_share():
    scores = scores_from_grades(["CO", "IN", "UNGRADED", "UNGRADED"])
    assert (scores["CO"], scores["NA"], scores["IN"], scores["CGA"]) == (25.0, 0.0, 25.0, 50.0)


def test_empty_input_is_a_clear_error():
    with pytest.raises(InputError, match="empty input"):
        compute_factual([], [])
    with pytest.raises(ValueError, match="empty"):
        scores_from_grades([])


@pytest.mark.parametrize("kwargs, message", [
    (dict(predictions=["a", "b"], references=["a"]), r"differ in length: predictions=2, references=1"),
    (dict(predictions=["a", None], references=["a", "b"]), r"predictions\[1\]: expected a string, got NoneType"),
    (dict(predictions=["a", 3], references=["a", "b"]), r"predictions\[1\]: expected a string, got int"),
    (dict(predictions=["a", "b"], references=["a", " "]), r"references\[1\]: empty string"),
    (dict(predictions=["a", "b"], references=["a", "b"], domains=["law", "sports"]),
     r"domains\[1\]: unknown domain 'sports'"),
    (dict(predictions=["a", "b"], references=["a", "b"], question_types=["检索", None]),
     r"question_types\[1\]: unknown question type None"),
    (dict(predictions=["a", "b"], references=["a", "b"], levels=["L1", "L3"]), r"levels\[1\]: unknown value 'L3'"),
    (dict(predictions=["a", "b"], references=["a", "b"], groups={"primary_category": ["中华文化"]}),
     r"groups\['primary_category'\] has 1 labels for 2 items"),
    (dict(predictions=["a"], references=["a"], judge="gpt"), r"unknown judge 'gpt'"),
    (dict(predictions=["a"], references=["a"], judge="llm"), r"needs judge_model= and api_base="),
    # JSON's "\ud800" escape: not text (the rule judge's OpenCC raised UnicodeEncodeError on it)
    (dict(predictions=["a", "x\ud800"], references=["a", "b"]), r"predictions\[1\] .*lone UTF-16 surrogate"),
    (dict(predictions=["a"], references=["\udfff"]), r"references\[0\] .*lone UTF-16 surrogate"),
    # settings of the LLM judge given to the rule judge would be silently ignored
    (dict(predictions=["a"], references=["a"], judge_prompt="my-judge.yaml"), r"judge_prompt= .*judge='rule'"),
    (dict(predictions=["a"], references=["a"], judge_model="m", api_base="http://x/v1"),
     r"judge_model=, api_base= .*judge='rule'"),
])
def test_bad_input_names_the_item(kwargs, message):
    with pytest.raises(InputError, match=message):
        compute_factual(**kwargs)


def test_breakdowns_follow_the_vocabulary_and_chinese_type_names():
    result = compute_factual(
        ["1919年", "不知道", "1920年", "陶渊明"], ["1919", "3518.17", "1919", "陶渊明"],
        domains=["news", "law", "news", "academic"], question_types=["检索", "计算", "retrieval", "比较"],
        levels=["L2", "L1", "L1", "L2"], categories=["factual"] * 4)
    assert result["grades"] == ["CO", "NA", "IN", "CO"]
    assert list(result["by_domain"]) == ["academic", "law", "news"]  # the vocabulary's order
    assert result["by_domain"]["news"] == {"CO": 50.0, "NA": 0.0, "IN": 50.0, "CGA": 50.0, "F1": 50.0, "n": 2}
    assert list(result["by_question_type"]) == ["retrieval", "computational", "comparison"]
    assert result["by_level"]["L1"]["NA"] == 50.0 and result["by_category"]["factual"]["CO"] == 50.0
    fields = parse_signature(result["signature"])
    assert fields["judge"] == "rule" and fields["rules"].startswith("zh-rule-")


def test_chinese_simpleqa_records_by_primary_category():
    records = [  # the release's own fields: primary_category, question, answer
        {"primary_category": "中华文化", "question": "《桃花源记》的作者是谁？", "answer": "陶渊明"},
        {"primary_category": "中华文化", "question": "水排是在哪个朝代由杜诗发明的？", "answer": "东汉"},
        {"primary_category": "自然与自然科学", "question": "御夫座最亮的恒星是什么？", "answer": "五车二"},
        {"primary_category": "自然与自然科学", "question": "伯利兹在何年正式独立？", "answer": "1981"},
        {"primary_category": "社会", "question": "国际DOI基金会成立于哪一年？", "answer": "1998"},
    ]
    predictions = ["陶渊明", "西汉", "五车二（御夫座α）", "我不确定。", "1998年"]
    result = compute_factual(predictions, [r["answer"] for r in records], [r["question"] for r in records],
                             groups={"primary_category": [r["primary_category"] for r in records]})
    assert result["grades"] == ["CO", "IN", "CO", "NA", "CO"]
    by = result["by_primary_category"]
    assert list(by) == ["中华文化", "自然与自然科学", "社会"]
    assert by["中华文化"]["CGA"] == 50.0 and by["自然与自然科学"]["NA"] == 50.0 and by["社会"]["F1"] == 100.0


def test_parse_verdict_is_strict():
    parse_verdict = load_template().parse
    assert parse_verdict("回答与标准答案一致。\n结论：正确") == "CO"
    assert parse_verdict("理由：给出了错误年份。\n**结论：错误**") == "IN"
    assert parse_verdict("结论: 未作答。") == "NA"
    for reply in ("正确", "结论：部分正确", "结论：正确\n结论：错误", "", "Verdict: correct"):
        with pytest.raises(ValueError):
            parse_verdict(reply)


def test_a_verdict_inside_the_reasoning_is_not_the_verdict():
    """A reasoning model's <think> block drafts verdicts; only what follows it is the reply's verdict."""
    parse_verdict = load_template().parse
    assert parse_verdict("<think>\n先假设：\n结论：错误\n不对，年份一致。\n</think>\n回答一致。\n结论：正确") == "CO"
    assert parse_verdict("<think>结论：正确</think>\n\n理由：年份不同。\n结论：错误") == "IN"
    # a chat template that opens the block in the prompt: the reply only closes it
    assert parse_verdict("先看年份。\n结论：正确\n不对，差一年。\n</think>\n\n结论：错误") == "IN"
    for reply in ("<think>\n初步看来\n结论：正确\n还要核对", "<think>\n结论：正确\n</think>\n"):
        with pytest.raises(ValueError):  # cut off while reasoning, or no verdict after it
            parse_verdict(reply)


def _grader(body):
    """A stand-in grader model: compares the answer with the reference in the prompt it was sent (the first user
    turn: a repair request adds the reply and the repair instruction after it)."""
    user = body["messages"][1]["content"]
    reference = re.search(r"【标准答案】\n(.*?)\n\n", user, re.S).group(1)
    answer = user.rsplit("【待评回答】\n", 1)[1]
    if "乱码" in answer:
        return "I am not sure how to grade this."
    if "不知道" in answer:
        return "理由：拒绝回答。\n结论：未作答"
    return "理由：比较了关键信息。\n结论：" + ("正确" if answer == reference else "错误")


def test_llm_judge_against_a_local_server(tmp_path):
    predictions = ["陶渊明", "李白", "不知道", "乱码回答"]
    references = ["陶渊明"] * 4
    questions = ["《桃花源记》的作者是谁？"] * 4
    with ChatServer(_grader) as server:
        kwargs = dict(judge="llm", judge_model="grader-1", api_base=server.api_base,
                      cache_path=tmp_path / "judge.sqlite", concurrency=4)
        with pytest.warns(UserWarning, match="no verdict for 1 of 4 items"):
            result = compute_factual(predictions, references, questions, **kwargs)
        asked = len(server.requests)
        assert asked == 3 + 2  # three verdicts, and the garbage item asked, then once more with the repair text
        system, user = server.requests[0]["messages"]
        assert system["role"] == "system" and "结论：正确" in system["content"]
        assert "《桃花源记》的作者是谁？" in user["content"]

        assert result["grades"] == ["CO", "IN", "NA", "UNGRADED"]
        assert result["ungraded"] == 1 and result["judge_errors"][0]["index"] == 3
        assert "unparseable" in result["judge_errors"][0]["error"]
        assert (result["CO"], result["NA"], result["IN"]) == (25.0, 25.0, 25.0)  # not silently NA
        fields = parse_signature(result["signature"])
        assert fields["judge"] == "llm" and fields["prompt"] == "zh-judge-1"
        assert fields["judge_model"] == "grader-1" and fields["judge_api"] == server.api_base[:-len("/v1")]

        # A re-run asks only for the item that has no verdict yet.
        server.handler = lambda body: "结论：错误"
        again = compute_factual(predictions, references, questions, **kwargs)
        assert len(server.requests) == asked + 1
        assert again["grades"] == ["CO", "IN", "NA", "IN"] and again["ungraded"] == 0


def test_evaluate_load_gives_the_library_result():
    metric = evaluate.load(str(METRIC_DIR))
    predictions = ["碳酸镁", "大约3500", "3520", "抱歉，文档中没有提到。"]
    references = ["碳酸镁（MgCO3）", "3518.17", "3518.17", "3518.17"]
    result = metric.compute(predictions=predictions, references=references, questions=["问题"] * 4,
                            domains=["finance"] * 4, question_types=["计算"] * 4)
    assert result == compute_factual(predictions, references, ["问题"] * 4, domains=["finance"] * 4,
                                     question_types=["计算"] * 4)
    assert set(result) == {"CO", "NA", "IN", "CGA", "F1", "grades", "certain", "reasons", "rules", "by_domain",
                           "by_question_type", "signature"}
    assert all(rule.count(".") == 1 for rule in result["rules"])  # each verdict names its rule (numeric.number_match)
    with pytest.raises(InputError, match=r"predictions\[1\]"):
        metric.compute(predictions=["a", None], references=["a", "b"])


def test_evaluate_incremental_api_works():
    """evaluate's add_batch() / add() then compute() with no arguments, as for any evaluate metric."""
    metric = evaluate.load(str(METRIC_DIR))
    metric.add_batch(predictions=["3518", "大约3500"], references=["3518.17", "3518.17"])
    metric.add(predictions="3520", references="3518.17")
    assert metric.compute()["grades"] == ["CO", "NA", "IN"]


def test_the_library_docstring_example_holds():
    import chimdqa_eval.factual as factual
    assert doctest.testmod(factual).failed == 0


def test_the_module_docstring_examples_hold(monkeypatch):
    monkeypatch.chdir(REPO)  # the examples load "metrics/chimdqa_factual" relative to a checkout
    module_text = (METRIC_DIR / "chimdqa_factual.py").read_text(encoding="utf-8")
    examples = module_text.split('_KWARGS_DESCRIPTION = """', 1)[1].split('"""', 1)[0]
    test = doctest.DocTestParser().get_doctest(examples, {"evaluate": evaluate}, "chimdqa_factual", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize().failed == 0 and len(test.examples) >= 5


def test_llm_judge_takes_an_endpoint_or_a_shared_client(tmp_path):
    from chimdqa_eval.llm import LLMEndpoint

    predictions, references = ["陶渊明", "李白"], ["陶渊明"] * 2
    questions = ["《桃花源记》的作者是谁？"] * 2
    with ChatServer(_grader) as a, ChatServer(_grader) as b:
        endpoint = LLMEndpoint("grader-1", (a.api_base, b.api_base.replace("127.0.0.1", "localhost")),
                               concurrency=1, cache_path=tmp_path / "judge.sqlite")
        result = compute_factual(predictions, references, questions, judge="llm", endpoint=endpoint)
        assert result["grades"] == ["CO", "IN"] and len(a.requests) + len(b.requests) == 2
        assert parse_signature(result["signature"])["judge_api"] == ",".join(sorted(
            [a.api_base[:-len("/v1")], b.api_base[:-len("/v1")].replace("127.0.0.1", "localhost")]))
        with endpoint.client() as client:  # shared: the caller keeps it open and reads its usage
            compute_factual(predictions, references, questions, judge="llm", endpoint=client)
            compute_factual(["不知道"], ["陶渊明"], questions[:1], judge="llm", endpoint=client)
            usage = client.usage_report()["stages"]["judge"]
    assert (usage["cache_hits"], usage["requests"]) == (2, 1)


def test_clearing_the_judge_caches_frees_them_and_changes_no_grade():
    """chimdqa evaluate empties the rule judge's memo caches once the factual answers are graded (memory for
    the other families); the vocabulary tables (caches of one entry) stay loaded and grading again gives the
    same grades."""
    import sys

    from chimdqa_eval.factual import clear_judge_caches

    def caches():
        return {f"{name}.{key}": value.cache_info() for name, module in list(sys.modules.items())
                if name.startswith("chimdqa_eval.factual") and module is not None
                for key, value in vars(module).items()
                if hasattr(value, "cache_info") and getattr(value, "__module__", None) == name}

    predictions, references = ["李白", "大约3500", "Li Bai 写的", "不知道"], ["Li Bai", "3518.17", "李白", "北京"]
    first = compute_factual(predictions, references)["grades"]
    memos = {k: c for k, c in caches().items() if (c.maxsize or 1) > 1}
    assert "chimdqa_eval.factual.reading_reference.parse_reference" in memos and sum(c.currsize for c in memos.values()) > 20
    clear_judge_caches()
    after = caches()
    assert all(after[k].currsize == 0 for k in memos)
    assert after["chimdqa_eval.factual.vocabulary.units"].currsize == 1  # a loaded table, not a memo
    assert any(c.maxsize == 1 and c.currsize == 1 for c in after.values())
    assert compute_factual(predictions, references)["grades"] == first


def test_many_answers_are_judged_in_blocks_with_the_same_grades(monkeypatch):
    """Beyond RULE_BLOCK answers the rule judge reads them block by block, its caches emptied between blocks
    (bounded memory): the verdicts are those of one pass."""
    import chimdqa_eval.factual as factual
    predictions = ["李白", "大约3500", "Li Bai 写的", "不知道", "3518", "李白写的"]
    references = ["Li Bai", "3518.17", "李白", "北京", "3518.17", "Li Bai"]
    whole = compute_factual(predictions, references)
    monkeypatch.setattr(factual, "RULE_BLOCK", 4)
    blocked = compute_factual(predictions, references)
    assert blocked["grades"] == whole["grades"] and blocked["rules"] == whole["rules"]
    assert factual.reading_reference.parse_reference.cache_info().currsize == 0  # emptied after the last block
