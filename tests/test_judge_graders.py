"""The official graders one flag away: Chinese SimpleQA's and SimpleQA's grader templates by name, read under
their parse rule (the first A / B / C decides, none is C) or ours (strict: one repair request, then UNGRADED),
against the local chat server over real HTTP replying the way those graders are asked to."""
import hashlib
import re
import time

import pytest

from chat_server import ChatServer, Reply
from chimdqa_eval import cli, release
from chimdqa_eval.factual import compute_factual
from chimdqa_eval.factual.judge_llm import DEFAULT_REPAIR, load_template, template_names
from chimdqa_eval.llm import ChatClient, ChatRequest
from chimdqa_eval.report.results import read_results
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import parse_signature

TEMPLATES = release.shipped_path("chimdqa_eval/factual/templates")
QUESTION = "《桃花源记》的作者是谁？"
# (the answer, what the stand-in grader replies to it)
ANSWERS = {"陶渊明": "A", "李白": "B", "不知道": "C",
           "陶潜": "I cannot decide on this one.",    # no capital A, B or C: unparseable
           "五柳先生": "评级：B",                       # a lead-in ("Grade: B" in English): both rules read B
           "王维": "Correct, I think."}                # no letter of its own: officially its first capital C


def _field(text, label):
    return re.search(rf"^{label}[:：]\s*(.*)$", text, re.M).group(1)


def _official_grader(zh: bool):
    """A grader answering the official prompt: reads the new example at the end of the first user turn; a
    repair request (the reply and the template's repair text appended) is answered with the bare letter."""
    answer_label = "模型回答" if zh else "Predicted answer"

    def reply(body):
        messages = body["messages"]
        assert [m["role"] for m in messages][:1] == ["user"]  # the official protocol: one user message, no system
        prompt = messages[0]["content"]
        answer = _field(prompt.rsplit("```", 2)[-2], answer_label)
        if len(messages) > 1:
            return "C" if answer == "陶潜" else "?"
        return "Grade: B" if answer == "五柳先生" and not zh else ANSWERS[answer]
    return reply


def test_the_shipped_graders_by_name():
    assert {"chinese-simpleqa-official", "simpleqa-official", "zh-judge-1"} <= set(template_names())
    for name, version in (("chinese-simpleqa-official", "chinese-simpleqa-official-1"),
                          ("simpleqa-official", "simpleqa-official-1")):
        template = load_template(name)
        data = (TEMPLATES / f"{name}.yaml").read_bytes()
        assert template.version == version and template.parse_mode == "official" and template.system is None
        assert template.verdicts == {"A": "CO", "B": "IN", "C": "NA"}
        assert template.signature_fields == {"prompt": version, "prompt_sha": hashlib.sha256(data).hexdigest()[:12],
                                             "prompt_parse": "official"}
        [message] = template.request("答案X", "参考Y", "问题Z").messages
        new_example = message["content"].rsplit("```", 2)[-2]  # the item comes last, after the rules' examples
        assert "问题Z" in new_example and "参考Y" in new_example and "答案X" in new_example
        strict = load_template(f"{name}:strict")
        assert strict.parse_mode == "strict" and strict.sha256 == template.sha256
        assert "prompt_parse" not in strict.signature_fields and strict.source == f"{name}:strict"
        # the official rule: the first capital A, B or C anywhere; none is C (NA)
        for reply, grade in (("A", "CO"), ("**B**", "IN"), ("Based on the gold target: A", "IN"), ("CORRECT", "NA"),
                             ("无法判断", "NA"), ("", "NA"), ("<think>B? or A?</think>\nC", "NA")):
            assert template.parse(reply) == grade, reply
    assert load_template("zh-judge-1").sha256 == load_template().sha256
    assert load_template("zh-judge-1").parse_mode == "strict"


@pytest.mark.parametrize("name, replies", [
    ("chinese-simpleqa-official", {"A": "CO", "**C**": "NA", "评级：B": "IN", "A：【正确】": "CO", "  [B]。": "IN"}),
    ("simpleqa-official", {"A": "CO", "Grade: C": "NA", "B - INCORRECT": "IN", "`A`": "CO", "A: CORRECT": "CO"}),
])
def test_strict_reading_of_the_official_graders(name, replies):
    strict = load_template(f"{name}:strict")
    for reply, grade in replies.items():
        assert strict.parse(reply) == grade, reply
    for reply in ("Based on the gold target, A", "CORRECT", "A\nB", "我认为应该选A", ""):
        with pytest.raises(ValueError):
            strict.parse(reply)


@pytest.mark.parametrize("name", ["chinese-simpleqa-official", "simpleqa-official"])
@pytest.mark.parametrize("reply", [" " * 2**20, "A" + " " * 2**20 + "x", "**" * 2**19 + "x", "A：" + " " * 2**20,
                                   "评级：" + " " * 2**20 + "x", "Grade:" + " " * 2**20 + "x", "A\n" * 2**19 + "B"])
def test_the_strict_verdict_regexes_take_linear_time(name, reply):
    strict = load_template(f"{name}:strict")
    start = time.process_time()  # this process's CPU: a backtracking regex takes hours here, a linear one ms
    try:
        strict.parse(reply)
    except ValueError:
        pass
    assert time.process_time() - start < 3.0


@pytest.mark.parametrize("name, zh", [("chinese-simpleqa-official", True), ("simpleqa-official", False)])
def test_official_parse_mode_against_a_local_server(tmp_path, name, zh):
    answers = list(ANSWERS)
    with ChatServer(_official_grader(zh)) as server:
        result = compute_factual(answers, ["陶渊明"] * len(answers), [QUESTION] * len(answers), judge="llm",
                                 judge_model="grader", api_base=server.api_base, cache_path=tmp_path / "c.sqlite",
                                 judge_prompt=name)
        # one request per answer: under the official rule every reply has a grade, nothing is asked again
        assert len(server.requests) == len(answers)
        assert all(len(body["messages"]) == 1 for body in server.requests)
    assert result["grades"] == ["CO", "IN", "NA", "NA", "IN", "NA"]
    assert result["ungraded"] == 0 and result["judge_errors"] == []
    fields = parse_signature(result["signature"])
    assert fields["prompt"] == load_template(name).version and fields["prompt_parse"] == "official"
    assert fields["prompt_sha"] == hashlib.sha256((TEMPLATES / f"{name}.yaml").read_bytes()).hexdigest()[:12]


@pytest.mark.parametrize("name, zh", [("chinese-simpleqa-official", True), ("simpleqa-official", False)])
def test_strict_parse_mode_repairs_once_then_ungraded(tmp_path, name, zh):
    template = load_template(f"{name}:strict")
    answers = list(ANSWERS)
    kwargs = dict(judge="llm", judge_model="grader", cache_path=tmp_path / "c.sqlite", judge_prompt=f"{name}:strict")
    with ChatServer(_official_grader(zh)) as server:
        with pytest.warns(UserWarning, match="no verdict for 1 of 6"):
            result = compute_factual(answers, ["陶渊明"] * 6, [QUESTION] * 6, api_base=server.api_base, **kwargs)
        # the two unparseable replies (陶潜, 王维) are each asked exactly once more, with the repair text
        repairs = [body["messages"] for body in server.requests if len(body["messages"]) > 1]
        assert len(server.requests) == 6 + 2 and len(repairs) == 2
        for messages in repairs:
            assert [m["role"] for m in messages] == ["user", "assistant", "user"]
            assert messages[2]["content"] == template.repair != DEFAULT_REPAIR
            assert messages[1]["content"] in (ANSWERS["陶潜"], ANSWERS["王维"])  # the model's own reply, then the fix
        # 陶潜: repaired to C; 王维: still unreadable after the repair: UNGRADED with the reason, never NA
        assert result["grades"] == ["CO", "IN", "NA", "NA", "IN", "UNGRADED"]
        [error] = result["judge_errors"]
        assert error["index"] == 5 and "unparseable reply also after the repair instruction" in error["error"]
        assert "prompt_parse" not in parse_signature(result["signature"])
        # the repaired verdict is cached under the item's own request: a re-run asks only for the ungraded one
        asked = len(server.requests)
        with pytest.warns(UserWarning, match="no verdict for 1 of 6"):
            again = compute_factual(answers, ["陶渊明"] * 6, [QUESTION] * 6, api_base=server.api_base, **kwargs)
        assert len(server.requests) == asked + 2 and again["grades"] == result["grades"]


def test_a_repair_request_is_one_more_request_and_parse_retries_still_bound_it(tmp_path):
    def strict_int(text):
        if not text.strip().isdigit():
            raise ValueError(f"not a number: {text!r}")
        return int(text)

    request = ChatRequest(({"role": "user", "content": "how many?"},), "q1", repair="Only the number, please.")
    with ChatServer(lambda body: "3" if body["messages"][-1]["content"] == "Only the number, please." else "three") \
            as server:
        with ChatClient("m", server.api_base, cache_path=tmp_path / "c.sqlite") as client:
            [outcome] = client.complete_all([request], strict_int)
        assert outcome.value == 3 and len(server.requests) == 2
        assert server.requests[1]["messages"] == [{"role": "user", "content": "how many?"},
                                                  {"role": "assistant", "content": "three"},
                                                  {"role": "user", "content": "Only the number, please."}]
        server.handler = lambda body: "many"
        for retries, sent in ((2, 2), (0, 1)):  # at most one repair whatever parse_retries allows beyond it
            before = len(server.requests)
            with ChatClient("m", server.api_base, cache_path=tmp_path / f"r{retries}.sqlite",
                            parse_retries=retries) as client:
                [outcome] = client.complete_all([ChatRequest(request.messages, "q2", repair="Only the number.")],
                                                strict_int)
            assert not outcome.ok and len(server.requests) - before == sent and outcome.raw == "many"
        server.queue(Reply(text="four"), Reply(text="4"))  # a request without repair text: re-asked unchanged
        with ChatClient("m", server.api_base, cache_path=tmp_path / "plain.sqlite") as client:
            [outcome] = client.complete_all([ChatRequest(request.messages, "q3")], strict_int)
        assert outcome.value == 4 and server.requests[-1]["messages"] == [{"role": "user", "content": "how many?"}]


def test_bad_parse_settings_are_named(tmp_path):
    text = (TEMPLATES / "simpleqa-official.yaml").read_text(encoding="utf-8")
    for change, message in ((("parse: official", "parse: lenient"), "'parse' must be one of strict, official"),
                            (("repair: |-", "repair: ''\nunused: |-"), "unknown key"),
                            (("version: simpleqa-official-1", "version: x\nrepair_: 1"), "unknown key")):
        path = tmp_path / "t.yaml"
        path.write_text(text.replace(*change), encoding="utf-8")
        with pytest.raises(InputError, match=re.escape(message)) as err:
            load_template(path)
        assert str(path) in str(err.value)
    path.write_text(text.replace("Reply with a single letter, A (CORRECT)", " ").split("repair: |-")[0]
                    + "repair: ' '\n", encoding="utf-8")
    with pytest.raises(InputError, match="'repair' is empty"):
        load_template(path)
    with pytest.raises(InputError, match="parse mode after ':' must be one of strict, official"):
        load_template("simpleqa-official:loose")
    with pytest.raises(InputError, match=r"simpleqa-oficial: no such file \(nor the name of a shipped template: "
                                         r"chinese-simpleqa-official, simpleqa-official, zh-judge-1\)"):
        load_template("simpleqa-oficial")


def test_evaluate_with_an_official_grader_by_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    sample = release.SAMPLE_DIR / "predictions.jsonl"
    with ChatServer(lambda body: "B") as server:
        assert cli.main(["evaluate", "--predictions", str(sample), "--out", str(tmp_path / "out"), "--metrics",
                         "factual", "--resamples", "0", "--judge", "llm", "--judge-model", "grader", "--api-base",
                         server.api_base, "--judge-prompt", "chinese-simpleqa-official",
                         "--llm-cache", str(tmp_path / "c.sqlite")]) == 0
        asked = len(server.requests)
    results = read_results(tmp_path / "out")
    template = load_template("chinese-simpleqa-official")
    assert results["settings"]["judge_prompt"] == {"version": template.version, "sha256": template.sha256,
                                                   "source": "chinese-simpleqa-official", "parse": "official"}
    fields = parse_signature(results["metrics"]["factual"]["F1"]["signature"])
    assert fields["prompt"] == template.version and fields["prompt_parse"] == "official"
    assert results["metrics"]["factual"]["IN"]["value"] == 100.0 and asked == 36
    capsys.readouterr()
    assert cli.main(["evaluate", "--predictions", str(sample), "--out", str(tmp_path / "x"), "--judge", "llm",
                     "--judge-model", "grader", "--api-base", "http://127.0.0.1:9/v1",
                     "--judge-prompt", "simpleqa-offical"]) == 2
    assert "nor the name of a shipped template" in capsys.readouterr().err
