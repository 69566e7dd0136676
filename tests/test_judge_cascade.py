"""The cascade judge (rules where certain, the LLM judge for the rest) and grader templates, against the local
chat server over real HTTP."""
import hashlib
import re

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli, release
from chimdqa_eval.factual import compute_factual
from chimdqa_eval.factual.judge_llm import DEFAULT_REPAIR, load_template
from chimdqa_eval.factual.judge_rule import judge_answers
from chimdqa_eval.report.results import read_items, read_results
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import parse_signature

# verbose answers of the kind chat models give: some the rules settle, some (aliases, several names) they cannot
PREDICTIONS = ["答案是3518。", "抱歉，我不知道这个问题的答案。", "应该是陶潜吧，他字元亮。",
               "《三国演义》里的关云长。", "1921年，不对，我记错了，是1919年。", "我认为是李白或杜甫中的一位。"]
REFERENCES = ["3518.17", "北京", "陶渊明", "关羽", "1919年", "杜甫"]
QUESTIONS = ["营业收入是多少万元？", "首都是哪座城市？", "《桃花源记》的作者是谁？", "过五关斩六将的是谁？",
             "五四运动发生在哪一年？", "《春望》的作者是谁？"]


def test_cascade_sends_only_what_the_rules_are_unsure_of(tmp_path):
    verdicts = judge_answers(PREDICTIONS, REFERENCES, QUESTIONS)
    unsure = [i for i, v in enumerate(verdicts) if not v.certain]
    assert 0 < len(unsure) < len(PREDICTIONS)  # the cases above exercise both paths
    with ChatServer(lambda body: "理由：核对了人物。\n结论：正确") as server:
        result = compute_factual(PREDICTIONS, REFERENCES, QUESTIONS, judge="cascade", judge_model="grader",
                                 api_base=server.api_base, cache_path=tmp_path / "c.sqlite")
        assert len(server.requests) == len(unsure)
        asked = [body["messages"][-1]["content"] for body in server.requests]
    for i in unsure:
        assert any(PREDICTIONS[i] in text for text in asked)
    assert result["judged_by"] == ["llm" if i in unsure else "rule" for i in range(len(PREDICTIONS))]
    assert result["grades"] == ["CO" if i in unsure else verdicts[i].grade for i in range(len(PREDICTIONS))]
    assert result["cascade"] == {"rule": len(PREDICTIONS) - len(unsure), "llm": len(unsure),
                                 "llm_calls_saved": len(PREDICTIONS) - len(unsure)}
    assert result["certain"] == [v.certain for v in verdicts]
    fields = parse_signature(result["signature"])
    assert fields["judge"] == "cascade" and fields["rules"] and fields["prompt"] == "zh-judge-1"
    assert fields["judge_model"] == "grader"  # both judges named


LETTERS = """version: letters-1
system: >-
  You grade answers. Reply with one line 'Grade: A' (correct), 'Grade: B' (incorrect) or 'Grade: C'
  (not attempted).
user: |-
  Question: {question}
  Gold: {reference}
  Answer: {prediction}
verdict_regex: '^\\s*Grade:\\s*([ABC])\\b'
verdicts: {A: CO, B: IN, C: NA}
"""


def _letter_grader(body):
    user = next(m for m in body["messages"] if m["role"] == "user")["content"]  # a repair request adds turns
    gold = re.search(r"Gold: (.*)", user).group(1)
    answer = re.search(r"Answer: (.*)", user).group(1)
    if "反复" in answer:
        return "Grade: A\nGrade: B"  # conflicting verdicts: unparseable
    if "不知道" in answer:
        return "It is a refusal.\nGrade: C"
    return "Grade: A" if gold in answer else "Some reasoning first.\nGrade: B\nGrade: B"  # repeated, consistent


def test_a_custom_template_with_letter_verdicts(tmp_path):
    path = tmp_path / "letters.yaml"
    path.write_text(LETTERS, encoding="utf-8")
    with ChatServer(_letter_grader) as server:
        with pytest.warns(UserWarning, match="no verdict for 1 of 4"):
            result = compute_factual(["陶渊明", "李白", "不知道", "反复横跳"], ["陶渊明"] * 4, ["谁写了《桃花源记》？"] * 4,
                                     judge="llm", judge_model="grader", api_base=server.api_base,
                                     cache_path=tmp_path / "c.sqlite", judge_prompt=str(path))
        system, user = server.requests[0]["messages"]
        assert system["content"].startswith("You grade answers.") and user["content"].startswith("Question: ")
        # the conflicting reply is asked again once, with the repair instruction after it, then UNGRADED
        assert len(server.requests) == 3 + 1 + 1
        [repair] = [body["messages"] for body in server.requests if len(body["messages"]) > 2]
        assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
        assert repair[2]["content"] == "Grade: A\nGrade: B" and repair[3]["content"] == DEFAULT_REPAIR
    assert result["grades"] == ["CO", "IN", "NA", "UNGRADED"]
    assert "conflicting verdicts" in result["judge_errors"][0]["error"]
    fields = parse_signature(result["signature"])
    assert fields["prompt"] == "letters-1"
    assert fields["prompt_sha"] == hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def test_the_built_in_template_is_a_template_file():
    template = load_template()
    assert template.version == "zh-judge-1" and template.verdicts == {"正确": "CO", "错误": "IN", "未作答": "NA"}
    assert template.parse("理由……\n**结论：未作答**") == "NA"
    assert "{prediction}" in template.user and template.system.startswith("你是一名严谨的问答评测员")


@pytest.mark.parametrize("text, message", [
    (LETTERS.replace("Answer: {prediction}", "Answer:"), "must use {prediction} and {reference}"),
    (LETTERS.replace("{question}", "{context}"), "it uses context, prediction, reference"),
    (LETTERS.replace("([ABC])", "(A|B)(C)?"), "exactly one capture group"),
    (LETTERS.replace("C: NA", "C: SKIP"), "'verdicts' must map"),
    (LETTERS.replace("([ABC])", "([ABC]"), "does not compile"),
    (LETTERS + "temperature: 0\n", "unknown key"),
    (LETTERS.replace("version: letters-1\n", ""), "'version' is missing"),
    # YAML reads an unquoted yes / no as true / false: no reply would ever match them
    (LETTERS.replace("([ABC])", "(yes|no)").replace("{A: CO, B: IN, C: NA}", "{yes: CO, no: IN}"),
     "'verdicts' key True is not text"),
])
def test_bad_templates_are_named(tmp_path, text, message):
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as err:
        load_template(path)
    assert str(path) in str(err.value)


def test_cascade_through_evaluate_records_who_judged(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    sample = release.SAMPLE_DIR / "predictions.jsonl"
    with ChatServer(lambda body: "结论：错误") as server:
        args = ["evaluate", "--predictions", str(sample), "--out", str(tmp_path / "out"), "--metrics", "factual",
                "--resamples", "0", "--judge", "cascade", "--judge-model", "grader", "--api-base", server.api_base]
        assert cli.main([*args, "--dry-run"]) == 0
        planned = int(re.search(r"judge +(\d+)", capsys.readouterr().out).group(1))
        assert server.requests == []
        assert cli.main(args) == 0
        asked = len([b for b in server.requests if b.get("messages")])
    printed = capsys.readouterr().out
    results = read_results(tmp_path / "out")
    rows = [r for r in read_items(results).values() if "factual" in r]
    by_llm = [r for r in rows if r["factual"]["judged_by"] == "llm"]
    assert asked == planned == len(by_llm) and 0 < len(by_llm) < len(rows)
    assert all(r["factual"]["grade"] == "IN" for r in by_llm)  # the server's verdict
    # the rule judge's trace for every item, and the split in results.json, the summary and the report
    assert all(r["factual"]["certain"] == (r["factual"]["judged_by"] == "rule") for r in rows)
    assert all(isinstance(r["factual"]["rule"], str) and r["factual"]["rule"] for r in rows)
    split = {"rule": len(rows) - len(by_llm), "llm": len(by_llm), "llm_calls_saved": len(rows) - len(by_llm)}
    assert results["cascade"] == split
    line = f"the rules decided {split['rule']} factual grades, the LLM judge {split['llm']}"
    assert line in printed
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert f"the rules decided {split['rule']} grades, the LLM judge {split['llm']}" in page
    assert results["settings"]["judge"] == "cascade"
    assert results["settings"]["judge_prompt"]["version"] == "zh-judge-1"
    assert parse_signature(results["metrics"]["factual"]["F1"]["signature"])["judge"] == "cascade"
    # --judge-prompt belongs to the LLM judges
    assert cli.main(["evaluate", "--predictions", str(sample), "--out", str(tmp_path / "x"),
                     "--judge-prompt", str(tmp_path / "none.yaml")]) == 2
    assert "--judge llm or --judge cascade" in capsys.readouterr().err
