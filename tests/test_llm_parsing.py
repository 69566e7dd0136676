"""Parsing what an LLM endpoint sends and the templates that ask it: verdicts and confidences in time linear in
the reply, JSON replies within the limits of chimdqa_eval.jsonio (an unparseable reply, never a traceback), and
grader / prompt templates whose fields are plain {names}."""
import random
import re
import time

import pytest

from chat_server import ChatServer, Reply
from chimdqa_eval.build.endpoints import parse_json_object
from chimdqa_eval.factual.judge_llm import load_template
from chimdqa_eval.generate import prompts
from chimdqa_eval.llm import ChatClient, ChatRequest
from chimdqa_eval.rag.checkers import parse_check_reply
from chimdqa_eval.rag.claims import parse_claim_list
from chimdqa_eval.schema import InputError

MB = 2**20


def quickly(parse, reply, seconds=3.0):
    """What parse(reply) returns or the ValueError it raises, asserting it used under `seconds` of this process's
    CPU. Not a speed goal (those are in bench/): a regex that backtracks takes hours on a megabyte, a linear one
    milliseconds, so the bound tells them apart on any machine however loaded, and other processes' load does
    not count against it."""
    start = time.process_time()
    try:
        result = parse(reply)
    except ValueError as err:
        result = err
    assert time.process_time() - start < seconds, f"{time.process_time() - start:.2f} s of CPU"
    return result


# -- the built-in verdict regex ----------------------------------------------------------------------------------

@pytest.mark.parametrize("reply", [
    " " * MB,
    "结论：" + " " * MB,
    "结论" + " " * MB + "：",
    "结论：" + "*_` \n" * (MB // 5),
    "结论：正确" + " " * MB + "x",
    ("结论：" + " " * 1000) * 1000,
], ids=["spaces", "after-colon", "before-colon", "markup", "after-verdict", "repeated"])
def test_a_megabyte_reply_is_searched_for_a_verdict_in_linear_time(reply):
    assert isinstance(quickly(load_template().parse, reply), ValueError)


def test_a_verdict_after_a_megabyte_of_spaces_is_still_found():
    assert quickly(load_template().parse, "结论：" + " " * MB + "正确") == "CO"


# The regex of zh-judge-1 before it was made linear: the rewrite must give every reply the same verdicts.
OLD_VERDICT = re.compile(r"结论\s*[:：]\s*[*_`\s]*(正确|错误|未作答)[*_`\s。.]*$", re.MULTILINE)
AROUND = ["结论", "：", ":", " ", "\n", "\t", "*", "_", "`", "正确", "错误", "未作答", "。", ".", "x", "理由"]
BETWEEN = ["：", ":", " ", "\n", "\t", "*", "_", "`", "x"]


def random_reply(rng) -> str:
    """Text around 结论, marks and spaces, maybe a verdict, more text: where the two regexes could differ."""
    def pieces(choices, most):
        return "".join(rng.choice(choices) for _ in range(rng.randint(0, most)))

    return (pieces(AROUND, 4) + "结论" + pieces(BETWEEN, 3) + rng.choice(["：", ":", ""]) + pieces(BETWEEN, 3)
            + rng.choice(["正确", "错误", "未作答", "", "部分"]) + pieces(AROUND, 3))


def test_the_linear_verdict_regex_matches_exactly_what_the_old_one_did():
    new = load_template().verdict_regex
    rng = random.Random(22)
    replies = [random_reply(rng) for _ in range(20000)]
    replies += ["回答与标准答案一致。\n结论：正确", "**结论：错误**", "结论: 未作答。", "结论：\n\n`正确`  \n",
                "结论 ： 正确。\n理由", "结论：正确\n结论：错误", "结论：部分正确"]
    assert sum(bool(OLD_VERDICT.search(r)) for r in replies) > 1000  # the sample holds many verdicts
    for reply in replies:
        assert [m.span() for m in new.finditer(reply)] == [m.span() for m in OLD_VERDICT.finditer(reply)], reply


# -- the confidence line of `chimdqa generate` -------------------------------------------------------------------

@pytest.mark.parametrize("line", ["_" * MB, "置信度：90" + " " * MB + "x", "**" + " " * MB + "置信度：", "置信度" * (MB // 3)])
def test_a_megabyte_last_line_is_searched_for_a_confidence_in_linear_time(line):
    answer, confidence = quickly(lambda reply: prompts.parse_reply(reply, True), "甲\n" + line)
    assert confidence is None and answer == ("甲\n" + line).strip()


OLD_CONFIDENCE = re.compile(r"[*_\s]*置信度[*_\s]*[:：][*_\s]*(\d{1,3}(?:\.\d+)?)\s*%?[*_\s]*$")
LINE_PIECES = ["置信度", "：", ":", " ", "*", "_", "9", "85", "100", "150", ".5", "%", "x", "甲"]
MARKS = [" ", "*", "_", "：", ":", "%"]


def random_line(rng) -> str:
    def pieces(choices, most):
        return "".join(rng.choice(choices) for _ in range(rng.randint(0, most)))

    return (pieces(LINE_PIECES, 3) + pieces(MARKS, 2) + "置信度" + pieces(MARKS, 3)
            + rng.choice(["9", "85", "100", "1234", "85.5", ""]) + pieces(MARKS, 3) + pieces(LINE_PIECES, 2))


def test_the_linear_confidence_regex_matches_exactly_what_the_old_one_did():
    rng = random.Random(22)
    lines = [random_line(rng) for _ in range(20000)]
    assert sum(bool(OLD_CONFIDENCE.search(line)) for line in lines) > 500
    for line in lines:
        old, new = OLD_CONFIDENCE.search(line), prompts._CONFIDENCE.search(line)
        assert (old and (old.span(), old.group(1))) == (new and (new.span(), new.group(1))), line


# -- JSON in replies ---------------------------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
LONG_INT = '["a", ' + "1" * 5000 + "]"


@pytest.mark.parametrize("parse", [parse_claim_list, lambda raw: parse_check_reply(raw, 1), parse_json_object],
                         ids=["claims", "check", "build"])
@pytest.mark.parametrize("reply", [DEEP, LONG_INT, '{"a": ' + DEEP + "}"], ids=["deep", "long-int", "deep-in-object"])
def test_a_hostile_json_reply_is_an_unparseable_reply(parse, reply):
    assert isinstance(quickly(parse, reply), ValueError)


def test_an_unclosed_array_of_a_megabyte_is_refused_in_linear_time():
    assert isinstance(quickly(lambda raw: parse_check_reply(raw, 1), "[" * MB), ValueError)
    assert isinstance(quickly(parse_claim_list, "[" * MB), ValueError)


def test_a_fenced_json_object_is_read_and_an_unclosed_fence_of_a_megabyte_refused_in_linear_time():
    for reply in ('```json\n{"a": 1}\n```', '```\n\n{"a": 1}\n```', '  {"a": 1}\n'):
        assert parse_json_object(reply) == {"a": 1}
    for reply in ("```" + "\n" * MB + "x", "```json" + " \n" * (MB // 2) + "{}"):
        assert isinstance(quickly(parse_json_object, reply), ValueError)


def test_a_deeply_nested_reply_reaches_the_caller_as_an_error_not_a_traceback(tmp_path):
    with ChatServer(lambda body: DEEP) as server:
        client = ChatClient("judge-x", server.api_base, cache_path=tmp_path / "c.sqlite", parse_retries=1)
        [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "q")], parse_claim_list)
    assert outcome.error.startswith("unparseable reply after 2 attempts") and "nested" in outcome.error


def test_a_deeply_nested_response_body_is_not_a_chat_completion(tmp_path):
    with ChatServer(lambda body: "7") as server:
        server.queue(Reply(body=DEEP), Reply(body='{"choices": ' + "1" * 5000 + "}"))
        client = ChatClient("judge-x", server.api_base, cache_path=tmp_path / "c.sqlite", backoff=0.01)
        [outcome] = client.complete_all([ChatRequest(({"role": "user", "content": "q"},), "q")], int)
    assert outcome.value == 7 and len(server.requests) == 3  # both retried as a broken reply


# -- template fields ---------------------------------------------------------------------------------------------

GRADER = """version: g-1
user: |-
  Q: {question}
  Gold: {reference}
  Answer: {prediction}
verdict_regex: '^Grade: ([AB])$'
verdicts: {A: CO, B: IN}
"""


@pytest.mark.parametrize("field", ["{prediction!r}", "{reference:>10}", "{question.__class__}", "{0}", "{}",
                                   "{reference[0]}", "{prediction:{reference}}"])
def test_a_grader_template_field_with_a_spec_or_conversion_is_refused(tmp_path, field):
    path = tmp_path / "grader.yaml"
    path.write_text(GRADER.replace("Q: {question}", f"Q: {{question}} {field}"), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_template(path)
    assert str(path) in str(err.value) and "'user'" in str(err.value) and field in str(err.value)


def test_a_grader_template_with_plain_fields_loads(tmp_path):
    path = tmp_path / "grader.yaml"
    path.write_text(GRADER.replace("Q: {question}", "Q: {question} {{literal}}"), encoding="utf-8")
    template = load_template(path)
    assert template.request("p", "r", "q").messages[-1]["content"].startswith("Q: q {literal}")


def edited_prompt_template(key: str, old: str, new: str) -> str:
    """The bundled prompt template with the first `old` under `key` (e.g. user.closed_book) replaced by `new`."""
    text = prompts.DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    index = text.index(key.split(".")[-1] + ":")
    assert old in text[index:]
    return text[:index] + text[index:].replace(old, new, 1)


@pytest.mark.parametrize("key, old, new", [
    ("user.closed_book", "问题：{question}\n    {instruction}", "问题：{question!s}\n    {instruction}"),
    ("user.with_context", "《{title}》", "《{title:.20}》"),
    ("passage", "[片段{number}]", "[片段{0}]"),
    ("user.closed_book", "问题：{question}\n    {instruction}", "问题：{question.upper}\n    {instruction}"),
])
def test_a_prompt_template_field_with_a_spec_or_conversion_is_refused(tmp_path, key, old, new):
    path = tmp_path / "prompt.yaml"
    path.write_text(edited_prompt_template(key, old, new), encoding="utf-8")
    with pytest.raises(InputError) as err:
        prompts.load_template(path)
    assert str(path) in str(err.value) and f"'{key}'" in str(err.value)


@pytest.mark.parametrize("key, old", [("user.closed_book", "问题：{question}\n    {instruction}"),
                                      ("user.with_context", "问题：{question}\n    {instruction}")])
def test_a_prompt_template_that_never_asks_the_question_is_refused(tmp_path, key, old):
    path = tmp_path / "prompt.yaml"
    path.write_text(edited_prompt_template(key, old, "{instruction}"), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"'{key}' must use {{question}}")) as err:
        prompts.load_template(path)
    assert str(path) in str(err.value)
