"""The LLM extractor and checker against a local chat-completions server: prompts, batching, failures, resume."""
import json

import pytest

from chimdqa_eval.llm import ChatClient
from chimdqa_eval.rag import LLMChecker, LLMFailure, compute_rag
from chimdqa_eval.rag.checkers import CHECK_SYSTEM, CheckTask, parse_check_reply
from chimdqa_eval.rag.claims import EXTRACT_SYSTEM
from chimdqa_eval.schema import InputError
from tests.chat_server import ChatServer, Reply


def _section(text, start, end=None):
    body = text.split(start, 1)[1]
    return body.split(end, 1)[0] if end else body


def _claims_in(prompt):
    lines = _section(prompt, "【待核查陈述】\n").strip().splitlines()
    return [line.split(". ", 1)[1] for line in lines]


def oracle(body):
    """A judge that is right by construction: claims are the text's sentences; a claim is entailed when the
    premise contains it word for word."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system == EXTRACT_SYSTEM:
        text = _section(user, "【回答】\n")
        return json.dumps([s for s in text.split("。") if s], ensure_ascii=False)
    assert system == CHECK_SYSTEM
    premise = _section(user, "【参考文本】\n", "\n\n【待核查陈述】")
    return json.dumps(["蕴含" if c in premise else "中立" for c in _claims_in(user)], ensure_ascii=False)


QUERY = dict(
    predictions=["甲公司成立于2001年。总部在上海。"],
    references=["甲公司成立于2001年。总部在北京。员工约500人。"],
    questions=["介绍一下甲公司"],
    retrieved_contexts=[["甲公司成立于2001年，总部在北京。", "总部在上海的乙公司规模较小。"]],
)
# Worked by hand from the oracle: response claims r0 (correct, in chunk 0), r1 (wrong, only in chunk 1);
# reference claims g0, g1 in chunk 0, g2 nowhere; chunk 0 is relevant, chunk 1 is not.
EXPECTED = {"precision": 50.0, "recall": 100 / 3, "f1": 40.0, "claim_recall": 200 / 3, "context_precision": 50.0,
            "context_utilization": 50.0, "noise_sensitivity_in_relevant": 0.0,
            "noise_sensitivity_in_irrelevant": 50.0, "hallucination": 0.0, "self_knowledge": 0.0,
            "faithfulness": 100.0}


def _llm(server, tmp_path, **kw):
    return dict(extractor="llm", checker="llm", judge_model="judge", api_base=server.api_base,
                cache_path=tmp_path / "llm.sqlite", **kw)


def test_llm_extractor_and_checker_give_the_hand_worked_metrics(tmp_path):
    with ChatServer(oracle) as server:
        out = compute_rag(**QUERY, **_llm(server, tmp_path))
        # 2 extractions (response, reference) + 1 + 1 (the two answers) + 2 + 2 (each claim list x 2 chunks).
        assert len(server.requests) == 8
    for metric, value in EXPECTED.items():
        assert out[metric] == pytest.approx(value), metric
    item = out["per_item"][0]
    assert item["response_claims"] == ["甲公司成立于2001年", "总部在上海"]
    assert item["retrieved2response"] == [["Entailment", "Neutral"], ["Neutral", "Entailment"]]
    assert "extractor:llm-rag-extract-zh-v1:judge" in out["signature"]
    assert "checker:llm-rag-check-zh-v1:judge:k=8" in out["signature"]
    # The judge is signed as the factual metric signs it: model, API origin, temperature.
    assert f"|judge_model:judge|judge_api:{server.api_base[:-len('/v1')]}|judge_temperature:0.0|" in out["signature"]


def test_a_rerun_asks_nothing_again(tmp_path):
    with ChatServer(oracle) as server:
        first = compute_rag(**QUERY, **_llm(server, tmp_path))
        asked = len(server.requests)
        second = compute_rag(**QUERY, **_llm(server, tmp_path))
        assert len(server.requests) == asked
    assert second["per_item"] == first["per_item"]


def test_an_edited_prompt_is_not_served_stale_answers_from_the_cache(tmp_path, monkeypatch):
    from chimdqa_eval.rag import checkers, claims

    with ChatServer(oracle) as server:
        compute_rag(**QUERY, **_llm(server, tmp_path))
        asked = len(server.requests)
        monkeypatch.setattr(claims, "EXTRACT_TEMPLATE", "（修订版）" + claims.EXTRACT_TEMPLATE)
        monkeypatch.setattr(checkers, "CHECK_TEMPLATE", "（修订版）" + checkers.CHECK_TEMPLATE)
        compute_rag(**QUERY, **_llm(server, tmp_path))
        assert len(server.requests) == 2 * asked


def test_only_the_needed_structures_are_asked_for(tmp_path):
    with ChatServer(oracle) as server:
        out = compute_rag(**QUERY, metrics=["precision"], **_llm(server, tmp_path))
        # The response's claims, checked against the reference: nothing about chunks or the reference's claims.
        assert len(server.requests) == 2
        assert server.hits("【回答】\n甲公司成立于2001年。总部在上海。") == 1
    assert out["precision"] == 50.0 and "recall" not in out
    assert set(out["per_item"][0]) == {"response_claims", "answer2response", "metrics"}


def test_failed_requests_are_reported_and_a_rerun_asks_only_those(tmp_path):
    def refuse_chunk_1(body):
        if "乙公司" in body["messages"][-1]["content"] and body["messages"][0]["content"] == CHECK_SYSTEM:
            return Reply(status=400, text="context too long")
        return oracle(body)

    with ChatServer(refuse_chunk_1) as server:
        with pytest.raises(LLMFailure, match=r"2 request\(s\) failed .*query 0 \(retrieved2response\), chunk 1"):
            compute_rag(**QUERY, **_llm(server, tmp_path))
        server.handler = oracle
        before = len(server.requests)
        out = compute_rag(**QUERY, **_llm(server, tmp_path))
        assert len(server.requests) - before == 2
        assert server.hits("乙公司") == 4  # each failed request once, then once more on the rerun
    assert out["noise_sensitivity_in_irrelevant"] == 50.0


def test_a_reply_with_the_wrong_number_of_labels_is_reasked_then_reported(tmp_path):
    with ChatServer(lambda body: '["蕴含"]') as server:
        client = ChatClient("judge", server.api_base, cache_path=tmp_path / "c.sqlite", parse_retries=2)
        checker = LLMChecker(client)
        with pytest.raises(LLMFailure, match="expected 2 labels, got 1"):
            checker.check([CheckTask("问题", "参考", ["甲", "乙"], "query 4 (answer2response)")])
        assert len(server.requests) == 3


def test_several_claims_per_request_in_order(tmp_path):
    with ChatServer(oracle) as server:
        client = ChatClient("judge", server.api_base, cache_path=tmp_path / "c.sqlite")
        checker = LLMChecker(client, claims_per_request=2)
        claims = ["甲", "乙", "丙", "丁", "戊"]
        labels = checker.check([CheckTask("问", "甲丙戊", claims, "q"), CheckTask("问", "", claims, "q"),
                                CheckTask("问", "乙", [], "q")])
        assert labels == [["Entailment", "Neutral", "Entailment", "Neutral", "Entailment"], ["Neutral"] * 5, []]
        # 5 claims in requests of 2, 2, 1; the empty premise and the empty claim list ask nothing.
        assert sorted(len(_claims_in(b["messages"][-1]["content"])) for b in server.requests) == [1, 2, 2]


def test_parse_check_reply_accepts_chinese_and_english_labels():
    assert parse_check_reply('判断：["蕴含", "矛盾", "neutral"]', 3) == ["Entailment", "Contradiction", "Neutral"]
    for bad in ('["蕴含"]', '["可能"]', "蕴含"):
        with pytest.raises(ValueError):
            parse_check_reply(bad, 1 if bad != '["蕴含"]' else 2)


def test_llm_tools_need_a_model_and_an_endpoint():
    with pytest.raises(InputError, match="judge_model= and api_base="):
        compute_rag(**QUERY, checker="llm")
