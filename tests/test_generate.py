"""`chimdqa generate` and `chimdqa run` end to end on the sample release, against the local chat-completions server
over real HTTP (tests/chat_server.py)."""
import hashlib
import json
import re
import threading

import jsonschema
import pytest

from chat_server import ChatServer, Reply
from chimdqa_eval import cli, release
from chimdqa_eval.report.results import SCHEMA_PATH

QUESTIONS = {r["question"]: r for r in release.read_qa()}
_QUESTION = re.compile(r"问题：(.*)")
FIRST_LAW = next(r for r in QUESTIONS.values() if r["domain"] == "law")


def oracle(body) -> str:
    """A model that knows the reference answers of the factual questions, and says a fixed sentence otherwise;
    with a confidence line when the prompt asks for one (90 when right, 40 otherwise)."""
    prompt = body["messages"][-1]["content"]
    row = QUESTIONS[_QUESTION.search(prompt).group(1).strip()]
    right = row["category"] == "factual" and not row["id"].endswith("-002")
    text = row["answer"] if right else "根据文档，无法确定。"
    return text + (f"\n置信度：{90 if right else 40}" if "置信度" in prompt else "")


@pytest.fixture(autouse=True)
def offline(monkeypatch, unrendered_plots):
    """Offline; the reports' plots are drawn but not rasterised (what is tested here is generation)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def server():
    with ChatServer(oracle) as s:
        yield s


def generate(server, out, *extra, mode="long"):
    return cli.main(["generate", "--model", "test-model", "--api-base", server.api_base, "--mode", mode,
                     "--out", str(out), "--max-retries", "1", *map(str, extra)])


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def evaluate(predictions, out, *extra):
    code = cli.main(["evaluate", "--predictions", str(predictions), "--out", str(out), "--resamples", "0", *extra])
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))).validate(results)
    return code, results


def user_prompt(server, question_id):
    question = next(r["question"] for r in QUESTIONS.values() if r["id"] == question_id)
    prompts = [b["messages"][-1]["content"] for b in server.requests]
    return next(p for p in prompts if f"问题：{question}" in p)


def test_long_mode_packs_the_document_and_evaluate_accepts_it(server, tmp_path):
    out = tmp_path / "long.jsonl"
    assert generate(server, out, "--mode", "long") == 0
    rows = read_jsonl(out)
    assert len(rows) == 66 == len(server.requests) and set(rows[0]) == {"id", "prediction"}
    pages = [p for p in release.read_documents() if p["doc_id"] == "finance-01"]
    prompt = user_prompt(server, "fin-ret-001")
    assert all(f"[第{p['page']}页]\n{p['text']}" in prompt for p in pages) and "《瑞丰新能源" in prompt
    meta = json.loads((tmp_path / "long.meta.json").read_text(encoding="utf-8"))
    assert meta["model"] == "test-model" and meta["rag"] is False
    gen = meta["generation"]
    assert gen["mode"] == "long" and gen["context"]["max_context_tokens"] == 32000
    assert gen["context"]["questions_truncated"] == 0 and gen["context"]["pages"]["finance-01"] == [2, 2]
    template_file = release.shipped_path("chimdqa_eval/generate/templates/chimdqa.yaml")
    assert gen["template"]["sha256"] == hashlib.sha256(template_file.read_bytes()).hexdigest()
    assert gen["api"] == server.api_base[:-len("/v1")] and gen["api_bases"] == 1 and gen["n_answered"] == 66
    assert gen["usage"]["stages"]["generate"]["asked"] == 66 and gen["usage"]["total"]["prompt_tokens"] > 0
    code, results = evaluate(out, tmp_path / "res")
    assert code == 0 and results["generation"]["mode"] == "long" and results["model"]["model"] == "test-model"
    # the oracle answers the factual questions not ending in -002 with the reference: the rule judge agrees
    assert results["metrics"]["factual"]["CO"]["value"] == pytest.approx(100 * 30 / 36, abs=0.01)


def test_a_small_budget_truncates_and_is_recorded(server, tmp_path):
    out = tmp_path / "short.jsonl"
    assert generate(server, out, "--max-context-tokens", 60, "--truncation", "head") == 0
    context = json.loads((tmp_path / "short.meta.json").read_text(encoding="utf-8"))["generation"]["context"]
    assert context["questions_truncated"] == 66 and context["pages"]["finance-01"] == [0, 2]
    assert context["truncation"] == "head" and context["tokens"]["finance-01"][0] <= 60
    prompt = user_prompt(server, "fin-ret-001")
    assert "[第1页]" in prompt and "[第2页]" not in prompt
    # by default the middle is cut: the start of page 1 and the end of page 2, each under its page marker
    page2 = next(p["text"] for p in release.read_documents() if p["doc_id"] == "finance-01" and p["page"] == 2)
    assert generate(server, tmp_path / "middle.jsonl", "--max-context-tokens", 60) == 0
    middle_prompts = [b["messages"][-1]["content"] for b in server.requests[66:]]
    prompt = next(p for p in middle_prompts if "研发投入是多少" in p)
    assert "[第1页]\n瑞丰新能源" in prompt and f"[第2页]\n{page2[-10:]}" not in prompt
    assert re.search(r"\[第2页\]\n[^\n]+" + re.escape(page2[-10:]) + "\n\n请根据", prompt)
    # the report's Generation section names the policy and what became of the evidence pages
    assert evaluate(tmp_path / "middle.jsonl", tmp_path / "res")[0] == 0
    page = (tmp_path / "res" / "report.html").read_text(encoding="utf-8")
    pages = json.loads((tmp_path / "middle.meta.json").read_text(encoding="utf-8"))["generation"]["context"][
        "evidence_pages"]
    assert "middle: " in page and f"{pages['kept']} kept, {pages['partly']} partly, {pages['cut']} cut" in page


def test_closed_book_gives_no_document(server, tmp_path):
    out = tmp_path / "cb.jsonl"
    assert generate(server, out, mode="closed-book") == 0
    assert all("[第" not in b["messages"][-1]["content"] and "文档《" not in b["messages"][-1]["content"]
               for b in server.requests)
    assert evaluate(out, tmp_path / "res")[0] == 0


def test_rag_mode_retrieves_from_the_question_document_and_scores_evidence(server, tmp_path):
    out = tmp_path / "rag.jsonl"
    assert generate(server, out, "--chunk-size", 150, "--chunk-overlap", 30, "--top-k", 2, mode="rag") == 0
    rows = {r["id"]: r for r in read_jsonl(out)}
    doc_of = {r["id"]: r["doc_id"] for r in QUESTIONS.values()}
    for question_id, row in rows.items():
        contexts = row["retrieved_contexts"]
        assert len(contexts) == 2 and all(c["doc_id"] == doc_of[question_id] and c["page"] >= 1 for c in contexts)
    prompt = user_prompt(server, "fin-ret-002")
    assert rows["fin-ret-002"]["retrieved_contexts"][0]["text"] in prompt and "[片段1]" in prompt
    # the profit-distribution question finds the page-2 chunk that holds its answer
    assert "每10股派发现金红利3.50元" in rows["fin-ret-002"]["retrieved_contexts"][0]["text"]
    gen = json.loads((tmp_path / "rag.meta.json").read_text(encoding="utf-8"))["generation"]
    assert gen["retrieval"]["method"] == "bm25" and gen["retrieval"]["top_k"] == 2
    assert gen["retrieval"]["index_cached"] == {"bm25": False, "embeddings": False}
    quality = gen["retrieval_quality"]
    assert quality["k"] == 2 and quality["n"] == 66 and 0 < quality["hit_at_k"] <= 100
    assert set(quality["by"]["question_type"]) == {r["question_type"] for r in QUESTIONS.values()}
    code, results = evaluate(out, tmp_path / "res")
    assert code == 0 and results["model"]["rag"] is True
    assert results["generation"]["retrieval_quality"] == quality
    report = (tmp_path / "res" / "report.html").read_text(encoding="utf-8")
    assert "<h2>Generation</h2>" in report and "<th>hit@2</th>" in report
    # the RAG metrics need a claim checker; offline they are skipped with the reason, the contexts were read
    assert any(s["family"] == "rag" for s in results["skipped"])


def test_a_second_run_asks_nothing_and_writes_the_same_file(server, tmp_path):
    out = tmp_path / "p.jsonl"
    assert generate(server, out, mode="rag") == 0
    first, asked = out.read_bytes(), len(server.requests)
    assert generate(server, out, mode="rag") == 0
    assert len(server.requests) == asked and out.read_bytes() == first
    meta = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]
    assert meta["n_from_cache"] == 66 and meta["retrieval"]["index_cached"]["bm25"] is True
    # a different request (here: asking for a confidence) is a different cache entry
    assert generate(server, out, "--ask-confidence", mode="rag") == 0
    assert len(server.requests) == 2 * asked


def test_a_server_killed_mid_run_and_restarted_loses_nothing(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    first = ChatServer(oracle, latency=0.01).start()
    port = int(first.api_base.rsplit(":", 1)[1].split("/")[0])

    def kill_after(n):
        while len(first.requests) < n:
            threading.Event().wait(0.005)
        first.close()

    killer = threading.Thread(target=kill_after, args=(20,))
    killer.start()
    try:
        code = generate(first, out, "--concurrency", 2, "--timeout", 2, mode="closed-book")
    finally:
        killer.join()
    # The endpoint died: the run stops naming it; the answers that arrived are cached, the rest reported.
    err = capsys.readouterr().err
    cached = re.search(rf"{first.api_base[:-len('/v1')]} stopped answering: .* (\d+) of 66 answers are cached", err)
    assert code == 2 and cached and 15 <= int(cached.group(1)) < 66 and not out.exists()
    answered = {QUESTIONS[_QUESTION.search(b["messages"][-1]["content"]).group(1).strip()]["id"]
                for b in first.replied}
    with ChatServer(oracle, port=port) as restarted:
        assert generate(restarted, out, mode="closed-book") == 0
        asked_again = {QUESTIONS[_QUESTION.search(b["messages"][-1]["content"]).group(1).strip()]["id"]
                       for b in restarted.requests}
    assert len(restarted.requests) == 66 - int(cached.group(1)) and not asked_again & answered
    assert len(read_jsonl(out)) == 66


def test_ask_confidence_reaches_the_calibration_report(server, tmp_path):
    out = tmp_path / "c.jsonl"
    assert generate(server, out, "--ask-confidence", mode="closed-book") == 0
    rows = {r["id"]: r for r in read_jsonl(out)}
    assert rows["fin-ret-001"]["confidence"] == 90 and rows["fin-ret-002"]["confidence"] == 40
    assert "置信度" not in rows["fin-ret-001"]["prediction"]
    code, results = evaluate(out, tmp_path / "res")
    cal = results["calibration"]
    # 30 right at 90 (|100 - 90| = 10), 6 wrong at 40 (|0 - 40| = 40): ECE = (30 * 10 + 6 * 40) / 36 = 15
    assert code == 0 and cal["n"] == 36 and cal["ece"] == pytest.approx(15.0)
    assert cal["by"]["question_type"]["retrieval"]["n"] == 12


def test_a_custom_template_is_used_and_recorded(server, tmp_path):
    template = release.shipped_path("chimdqa_eval/generate/templates/chimdqa.yaml").read_text(encoding="utf-8")
    custom = tmp_path / "mine.yaml"
    custom.write_text(template.replace("version: zh-generate-1", "version: mine-1").replace(
        "问题：{question}\n    {instruction}", "请回答：{question}\n    问题：{question}\n    {instruction}"), encoding="utf-8")
    out = tmp_path / "p.jsonl"
    assert generate(server, out, "--prompt", custom) == 0
    assert "请回答：" in server.requests[0]["messages"][-1]["content"]
    gen = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]
    assert gen["template"]["version"] == "mine-1"
    assert gen["template"]["sha256"] == hashlib.sha256(custom.read_bytes()).hexdigest()


def test_bad_invocations_exit_2_with_the_reason(server, tmp_path, capsys):
    assert cli.main(["generate", "--model", "m", "--mode", "long", "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "--api-base" in capsys.readouterr().err
    assert generate(server, tmp_path / "p.jsonl", "--config", "chinese_simpleqa", "--data-files", "x.jsonl",
                    mode="rag") == 2
    assert "closed-book" in capsys.readouterr().err
    assert generate(server, tmp_path / "p.txt") == 2
    assert ".jsonl" in capsys.readouterr().err
    # an encoder given without a retrieval that uses it would be ignored, yet recorded in the metadata
    assert generate(server, tmp_path / "p.jsonl", "--embedding-model", "some/encoder", mode="rag") == 2
    assert "--embedding-model some/encoder: only --retrieval dense or hybrid" in capsys.readouterr().err
    assert cli.main(["generate", "--backend", "transformers", "--model", str(tmp_path / "lm"), "--mode", "long",
                     "--context-tokenizer", "some/tokenizer", "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "--context-tokenizer some/tokenizer: the transformers backend counts" in capsys.readouterr().err
    assert not server.requests


def test_run_generates_and_evaluates_both_conditions_with_the_rag_pair(server, tmp_path):
    out = tmp_path / "runs"
    assert cli.main(["run", "--model", "test-model", "--api-base", server.api_base, "--mode", "rag", "long",
                     "--out", str(out), "--resamples", "0"]) == 0
    assert {p.name for p in (out / "long").iterdir()} >= {"predictions.jsonl", "results.json", "report.html"}
    rag = json.loads((out / "rag" / "results.json").read_text(encoding="utf-8"))
    assert rag["model"] == {**rag["model"], "model": "test-model", "rag": True}
    assert rag["generation"]["mode"] == "rag"
    report = (out / "rag" / "report.html").read_text(encoding="utf-8")
    assert "Without vs with RAG" in report and len(server.requests) == 2 * 66


def test_logprobs_are_asked_for_stored_and_give_perplexity(tmp_path):
    def with_logprobs(body):
        assert body["logprobs"] is True
        return Reply(text=oracle(body), logprobs=[-0.5, -1.5])

    out = tmp_path / "p.jsonl"
    with ChatServer(with_logprobs) as server:
        assert generate(server, out, "--logprobs", mode="closed-book") == 0
    rows = read_jsonl(out)
    assert all(r["logprobs"] == [-0.5, -1.5] for r in rows)
    code, results = evaluate(out, tmp_path / "res")
    # perplexity = exp(mean negative log-probability) = exp(1.0)
    assert code == 0 and results["metrics"]["open_ended"]["perplexity"]["value"] == pytest.approx(2.7183, abs=1e-3)


def test_logprobs_with_a_confidence_need_the_served_model_tokenizer(tmp_path, capsys):
    # The endpoint sends one log-probability per token of the whole reply, the confidence line's included, and
    # the client keeps the numbers only: which belong to the answer takes the model's tokenizer.
    out = tmp_path / "p.jsonl"
    with ChatServer(lambda body: Reply(text=oracle(body), logprobs=[-0.5])) as server:
        assert generate(server, out, "--logprobs", "--ask-confidence", mode="closed-book") == 2
        assert not server.requests
    assert "--context-tokenizer" in capsys.readouterr().err


def test_an_empty_reply_with_its_empty_logprobs_is_an_answer(tmp_path):
    # A model that stops at once sends "" and no token, so logprobs.content is []: an (empty) answer with no
    # perplexity, not a missing one (which, cached, no re-run could ever fill).
    from chimdqa_eval.submission import read_predictions

    def empty_for_one(body):
        if _QUESTION.search(body["messages"][-1]["content"]).group(1).strip() == FIRST_LAW["question"]:
            return Reply(text="", logprobs=[])
        return Reply(text=oracle(body), logprobs=[-0.5])

    out = tmp_path / "p.jsonl"
    with ChatServer(empty_for_one) as server:
        assert generate(server, out, "--logprobs", "--config", "law", mode="closed-book") == 0
    rows = {r["id"]: r for r in read_predictions(out)}
    assert len(rows) == 11 and rows[FIRST_LAW["id"]]["prediction"] == "" and rows[FIRST_LAW["id"]]["logprobs"] == []
    assert all(r["logprobs"] == [-0.5] for i, r in rows.items() if i != FIRST_LAW["id"])


def test_an_endpoint_without_logprobs_leaves_the_questions_unanswered(server, tmp_path, capsys):
    assert generate(server, tmp_path / "p.jsonl", "--logprobs", mode="closed-book") == 1
    assert "no token log-probabilities" in capsys.readouterr().err


def test_the_call_cap_stops_with_exit_2_as_evaluate_does_and_the_same_command_resumes(server, tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert generate(server, out, "--max-llm-calls", 10, "--concurrency", 2, mode="closed-book") == 2
    assert "--max-llm-calls 10" in capsys.readouterr().err
    assert len(read_jsonl(out)) == 10 == len(server.requests)
    assert generate(server, out, mode="closed-book") == 0
    assert len(read_jsonl(out)) == 66 == len(server.requests)
    # chimdqa run stops there too, with the same code, before evaluating
    runs = tmp_path / "runs"
    assert cli.main(["run", "--model", "test-model", "--api-base", server.api_base, "--mode", "long", "--out",
                     str(runs), "--max-llm-calls", "5", "--resamples", "0"]) == 2
    assert "--max-llm-calls 5" in capsys.readouterr().err and not (runs / "long" / "results.json").exists()


def test_a_dry_run_counts_the_calls_and_asks_nothing(server, tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert generate(server, tmp_path / "first.jsonl", "--config", "law", mode="closed-book") == 0
    capsys.readouterr()
    assert generate(server, out, "--dry-run", mode="closed-book") == 0
    printed = capsys.readouterr().out
    assert "generate (closed-book)" in printed and " 55" in printed and "11 of 66 cached" in printed
    assert len(server.requests) == 11 and not out.exists()


def test_several_api_bases_share_the_work(tmp_path):
    with ChatServer(oracle) as first, ChatServer(oracle) as second:
        out = tmp_path / "p.jsonl"
        assert cli.main(["generate", "--model", "test-model", "--api-base", first.api_base, second.api_base,
                         "--concurrency", "2", "--mode", "closed-book", "--out", str(out)]) == 0
        assert len(first.requests) + len(second.requests) == 66
        assert len(first.requests) >= 20 and len(second.requests) >= 20
    meta = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]
    assert meta["api_bases"] == 2 and len(read_jsonl(out)) == 66


def test_run_hands_its_evaluation_options_to_evaluate(tmp_path):
    """`chimdqa run` takes evaluate's options under evaluate's names (the judge's endpoint as --judge-api-base
    etc., which evaluate accepts too) and scores with the same EvalConfig."""
    import dataclasses

    from chimdqa_eval.evaluation import ENDPOINT_OPTIONS, EvalConfig

    prompt = tmp_path / "judge.yaml"
    prompt.write_text(release.shipped_path("chimdqa_eval/factual/templates/zh-judge-1.yaml")
                      .read_text(encoding="utf-8"), encoding="utf-8")
    scoring = ["--config", "law", "--judge", "llm", "--judge-model", "judge", "--judge-api-base", "http://j1/v1",
               "http://j2/v1", "--judge-timeout", "7", "--judge-prompt", str(prompt), "--metrics", "factual", "rag",
               "--resamples", "0", "--nli-model", "nli", "--tokenizer", "char", "--bertscore-num-layers", "3"]
    ran = cli.build_parser(["run"]).parse_args(
        ["run", "--model", "m", "--api-base", "http://a/v1", "--timeout", "99", "--mode", "long", "rag", "--out",
         str(tmp_path), *scoring])
    evaluated = cli.build_parser(["evaluate"]).parse_args(["evaluate", "--predictions", "p", "--out", "o", *scoring])
    config = EvalConfig.from_args(ran, endpoint_prefix="judge_")
    assert config == EvalConfig.from_args(evaluated)
    assert config.api_base == ("http://j1/v1", "http://j2/v1") and config.timeout == 7  # not the generator's
    assert config.judge_prompt == str(prompt) and config.tokenizer == "char"
    # every option a run can set is one `run` takes
    per_run = {"allow_partial", "rag_pair", "document_pair"}
    for field in dataclasses.fields(EvalConfig):
        if field.name not in per_run:
            name = "judge_" + field.name if field.name in ENDPOINT_OPTIONS else field.name
            assert hasattr(ran, name), f"chimdqa run lacks --{name.replace('_', '-')}"


def test_chinese_simpleqa_is_answered_closed_book_with_short_answer_prompts(tmp_path):
    rows = [{"id": f"s{i}", "primary_category": "自然", "secondary_category": "x", "question": q, "answer": a,
             "urls": []} for i, (q, a) in enumerate([("中国的首都是哪里？", "北京"), ("五四运动发生在哪一年？", "1919年")])]
    data = tmp_path / "csqa.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    answers = {"中国的首都是哪里？": "北京\n置信度：95", "五四运动发生在哪一年？": "1921年\n置信度：70"}
    with ChatServer(lambda body: answers[_QUESTION.search(body["messages"][-1]["content"]).group(1).strip()]) as server:
        out = tmp_path / "p.jsonl"
        assert generate(server, out, "--config", "chinese_simpleqa", "--data-files", data, "--ask-confidence",
                        mode="closed-book") == 0
        template = release.shipped_path("chimdqa_eval/generate/templates/chimdqa.yaml").read_text(encoding="utf-8")
        assert all("简短" in b["messages"][-1]["content"] for b in server.requests) and "简短" in template
    assert read_jsonl(out) == [{"id": "s0", "prediction": "北京", "confidence": 95.0},
                               {"id": "s1", "prediction": "1921年", "confidence": 70.0}]
    code, results = evaluate(out, tmp_path / "res", "--config", "chinese_simpleqa", "--data-files", str(data))
    # one right at 95 (|100 - 95| = 5), one wrong at 70 (|0 - 70| = 70): ECE = (5 + 70) / 2
    assert code == 0 and results["calibration"]["ece"] == pytest.approx(37.5)
