"""The model-based parts of `chimdqa generate`, with tiny models the tests build: dense retrieval (a tiny BERT
wrapped by sentence-transformers), hybrid fusion, cross-encoder re-ranking, and the transformers backend (a tiny
GPT-2), each checked against the same computation done directly with transformers."""
import importlib.util
import json

import numpy as np
import pytest

from chimdqa_eval import cli, release
from chimdqa_eval.generate.retrieval import Retriever, RetrievalSettings, rank_top, reciprocal_rank_fusion
from tiny_models import tiny_bert, tiny_gpt2

# Dense retrieval needs the rag extra, which the test extra includes (pip install -e '.[test]').
needs_sentence_transformers = pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                                                 reason="sentence-transformers is not installed")

PAGES = {"d": [(1, "一、收入\n公司营业收入增长。"), (2, "二、利润\n净利润增长较快，利润率提高。"),
               (3, "三、员工\n员工人数三千。"), (4, "四、风险\n原材料价格波动。")]}
QUESTIONS = ["公司的利润增长多少？", "员工有多少人？"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("encoder"), seed=1)


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("reranker"), num_labels=1, seed=2)


def mean_pooled(model_dir, texts):
    """Sentence embeddings computed without sentence-transformers: masked mean of the last hidden states, L2."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy()


@needs_sentence_transformers
def test_dense_retrieval_ranks_by_cosine_and_caches_the_embeddings(encoder_dir):
    settings = RetrievalSettings(method="dense", top_k=4, chunk_size=50, chunk_overlap=0,
                                 embedding_model=str(encoder_dir))
    retriever = Retriever(PAGES, settings)
    chunks = retriever.indexes["d"].chunks
    vectors = mean_pooled(encoder_dir, [c.text for c in chunks])
    queries = mean_pooled(encoder_dir, QUESTIONS)
    assert retriever.indexes["d"].embeddings == pytest.approx(vectors, abs=1e-5)
    expected = [[chunks[j].index for j in rank_top(vectors @ q, 4)] for q in queries]
    got = retriever.search_all(QUESTIONS, ["d", "d"])
    assert [[c.index for c in ranked] for ranked in got] == expected
    again = Retriever(PAGES, settings)
    assert retriever.cached["embeddings"] is False and again.cached["embeddings"] is True
    assert [[c.index for c in r] for r in again.search_all(QUESTIONS, ["d", "d"])] == expected


@needs_sentence_transformers
def test_hybrid_fuses_the_bm25_and_dense_rankings(encoder_dir):
    def ranking(method):
        r = Retriever(PAGES, RetrievalSettings(method=method, top_k=4, chunk_size=50, chunk_overlap=0,
                                               embedding_model=str(encoder_dir)))
        return [[c.index for c in ranked] for ranked in r.search_all(QUESTIONS, ["d", "d"])]

    bm25, dense, hybrid = ranking("bm25"), ranking("dense"), ranking("hybrid")
    assert hybrid == [reciprocal_rank_fusion([b, d])[:4] for b, d in zip(bm25, dense)]


def test_the_reranker_orders_candidates_by_its_logit(reranker_dir):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    first = Retriever(PAGES, RetrievalSettings(top_k=4, chunk_size=50, chunk_overlap=0))
    candidates = first.search_all(QUESTIONS, ["d", "d"])
    reranked = Retriever(PAGES, RetrievalSettings(top_k=2, chunk_size=50, chunk_overlap=0, reranker=str(reranker_dir),
                                                  rerank_candidates=4)).search_all(QUESTIONS, ["d", "d"])
    tokenizer = AutoTokenizer.from_pretrained(str(reranker_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(reranker_dir)).eval()
    for question, pool, got in zip(QUESTIONS, candidates, reranked):
        with torch.inference_mode():
            logits = model(**tokenizer([question] * len(pool), [c.text for c in pool], padding=True,
                                       return_tensors="pt")).logits[:, 0].numpy()
        assert [c.index for c in got] == [pool[j].index for j in np.argsort(-logits, kind="stable")[:2]]


@needs_sentence_transformers
def test_a_missing_encoder_is_a_clear_input_error(tmp_path):
    from chimdqa_eval.schema import InputError

    with pytest.raises(InputError, match="embedding model .*could not be loaded"):
        Retriever(PAGES, RetrievalSettings(method="dense", embedding_model=str(tmp_path / "nothing")))


# ---- the transformers backend ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return tiny_gpt2(tmp_path_factory.mktemp("gpt2"), max_length=512)


def test_transformers_backend_generates_in_batches_what_one_by_one_generation_gives(gpt2_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "p.jsonl"
    assert cli.main(["generate", "--backend", "transformers", "--model", str(gpt2_dir), "--mode", "closed-book",
                     "--config", "finance", "--max-tokens", "6", "--batch-size", "4", "--logprobs",
                     "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 11 and all(r["logprobs"] and all(x <= 0 for x in r["logprobs"]) for r in rows)
    # greedy decoding of one prompt alone, without padding, must give the same answer and log-probabilities
    from chimdqa_eval.generate import prompts

    template = prompts.load_template()
    question = next(r for r in release.read_qa() if r["id"] == rows[3]["id"])
    messages = prompts.render_messages(template, question["question"], question["category"])
    tokenizer = AutoTokenizer.from_pretrained(str(gpt2_dir))
    model = AutoModelForCausalLM.from_pretrained(str(gpt2_dir)).eval()
    ids = tokenizer("\n\n".join(m["content"] for m in messages) + "\n\n", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        alone = model.generate(ids, do_sample=False, max_new_tokens=6, return_dict_in_generate=True,
                               output_scores=True, pad_token_id=tokenizer.pad_token_id)
    new = alone.sequences[0, ids.shape[1]:].tolist()
    if tokenizer.sep_token_id in new:
        new = new[:new.index(tokenizer.sep_token_id) + 1]
    logprobs = model.compute_transition_scores(alone.sequences, alone.scores, normalize_logits=True)[0, :len(new)]
    assert rows[3]["prediction"] == tokenizer.decode(new, skip_special_tokens=True).strip()
    assert rows[3]["logprobs"] == pytest.approx(logprobs.tolist(), abs=1e-4)
    meta = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]
    assert meta["backend"] == "transformers" and "api" not in meta and len(meta["model_fingerprint"]) == 16
    # evaluate reads the log-probabilities for perplexity without a local LM
    results_dir = tmp_path / "res"
    assert cli.main(["evaluate", "--predictions", str(out), "--config", "finance", "--out", str(results_dir),
                     "--resamples", "0"]) == 0
    results = json.loads((results_dir / "results.json").read_text(encoding="utf-8"))
    assert "perplexity" in results["metrics"]["open_ended"]


def test_long_mode_fits_the_document_into_the_model_and_rag_reports_prompts_too_long(gpt2_dir, tmp_path, capsys):
    from chimdqa_eval.generate import prompts

    out = tmp_path / "p.jsonl"
    base = ["generate", "--backend", "transformers", "--model", str(gpt2_dir), "--config", "news",
            "--max-tokens", "4", "--out", str(out)]
    assert cli.main(base + ["--mode", "long", "--max-context-tokens", "120"]) == 0
    context = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]["context"]
    assert context["token_counter"] == f"tokenizer of {gpt2_dir}" and context["questions_truncated"] == 11
    assert "budgets" not in context  # 120 tokens of document fit the 512 positions
    # the default budget (32000) is cut to what the 512 positions leave after the longest prompt and the answer
    assert cli.main(base + ["--mode", "long"]) == 0
    context = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]["context"]
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gpt2_dir))
    template = prompts.load_template()
    title = next(p["title"] for p in release.read_documents() if p["doc_id"] == "news-01")
    longest = max(len(tokenizer("\n\n".join(m["content"] for m in prompts.render_messages(
        template, r["question"], r["category"], context="", title=title)) + "\n\n")["input_ids"])
        for r in release.read_qa() if r["domain"] == "news")
    assert context["budgets"] == {"news-01": 512 - 4 - longest}
    assert len(out.read_text(encoding="utf-8").splitlines()) == 11
    # five 400-character chunks do not fit: every question is reported, none silently cut, and the advice is
    # the flags that shorten the passages
    assert cli.main(base + ["--mode", "rag"]) == 1
    err = capsys.readouterr().err
    assert "the prompt has" in err and "lower --top-k or --chunk-size" in err and "--max-context-tokens" not in err


@pytest.mark.parametrize("mode", ["long", "rag", "closed-book"])
def test_a_prompt_that_cannot_fit_even_without_the_document_advises_fewer_new_tokens(gpt2_dir, tmp_path, capsys,
                                                                                    mode):
    # 500 new tokens leave 12 of the 512 positions: not even the question and the instructions fit. Fewer
    # passages or a smaller document budget would not help; fewer new tokens would.
    out = tmp_path / "p.jsonl"
    assert cli.main(["generate", "--backend", "transformers", "--model", str(gpt2_dir), "--config", "news",
                     "--max-tokens", "500", "--mode", mode, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "without the document" in err or mode == "closed-book"
    assert "lower --max-tokens" in err and "--top-k" not in err and "--max-context-tokens" not in err


def test_the_transformers_backend_caches_its_answers_and_an_interrupted_run_resumes(gpt2_dir, tmp_path,
                                                                                     monkeypatch):
    from chimdqa_eval import models

    generate = models.greedy_generate
    asked = []

    def counting(model, sequences, **kwargs):
        if len(asked) == 4 and interrupt:
            raise KeyboardInterrupt  # the run is stopped while the third batch is generated
        asked.extend(sequences)
        return generate(model, sequences, **kwargs)

    monkeypatch.setattr(models, "greedy_generate", counting)
    out = tmp_path / "p.jsonl"
    argv = ["generate", "--backend", "transformers", "--model", str(gpt2_dir), "--mode", "closed-book", "--config",
            "finance", "--max-tokens", "6", "--batch-size", "2", "--logprobs", "--out", str(out)]
    interrupt = True
    with pytest.raises(KeyboardInterrupt):
        cli.main(argv)
    assert len(asked) == 4 and not out.exists()
    # the same command generates only the 7 answers it lacks
    interrupt = False
    assert cli.main(argv) == 0
    assert len(asked) == 4 + 7
    meta = json.loads((tmp_path / "p.meta.json").read_text(encoding="utf-8"))["generation"]
    assert meta["n_from_cache"] == 4 and meta["n_answered"] == 11
    first = out.read_bytes()
    # and once more: nothing is generated, the same file is written
    assert cli.main(argv) == 0 and len(asked) == 11 and out.read_bytes() == first
    # the answers are those of an uninterrupted run (another cache)
    monkeypatch.setenv("CHIMDQA_CACHE", str(tmp_path / "fresh-cache"))
    fresh = tmp_path / "fresh.jsonl"
    assert cli.main([*argv[:-1], str(fresh)]) == 0
    rows = [json.loads(line) for line in first.decode("utf-8").splitlines()]
    again = [json.loads(line) for line in fresh.read_text(encoding="utf-8").splitlines()]
    assert [r["prediction"] for r in rows] == [r["prediction"] for r in again]
    assert all(a["logprobs"] == pytest.approx(b["logprobs"], abs=1e-4) for a, b in zip(rows, again))


@pytest.mark.parametrize("policy", ["middle", "head", "tail"])
def test_a_cut_document_stays_within_the_budget_by_a_real_tokenizer(gpt2_dir, policy):
    from transformers import AutoTokenizer

    from chimdqa_eval.generate import packing

    count = packing.tokenizer_counter(AutoTokenizer.from_pretrained(str(gpt2_dir)))
    pages = [(p["page"], p["text"]) for p in release.read_documents() if p["doc_id"] == "finance-01"]
    for budget in (7, 40, 150, 333):
        text, info = packing.pack_pages(pages, budget, count, policy)
        assert info["truncated"] and info["tokens"] == count(text) <= budget, budget
        assert info["tokens"] >= budget - 20  # and not much below it


# ---- the answer's log-probabilities, without the confidence line ---------------------------------------------

def test_the_answer_token_count_by_a_real_tokenizer(gpt2_dir):
    from transformers import AutoTokenizer

    from chimdqa_eval.generate.prompts import answer_token_count

    tokenizer = AutoTokenizer.from_pretrained(str(gpt2_dir))
    reply = "512万元\n置信度：90"
    ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    decode = lambda part: tokenizer.decode(part, skip_special_tokens=True)  # noqa: E731
    # 5 1 2 万 元 | 置 信 度 [UNK] 9 0: the answer is the first five tokens of the eleven
    assert len(ids) == 11 and answer_token_count(ids, decode, "512万元") == 5
    assert answer_token_count(ids, decode, "") == 0 and answer_token_count(ids, decode, "512万元\n置信度") == 8
    assert answer_token_count(ids, decode, "513万元") is None


def test_only_the_answer_tokens_log_probabilities_are_stored(gpt2_dir, tmp_path, capsys):
    from transformers import AutoTokenizer

    from chat_server import ChatServer, Reply

    tokenizer = AutoTokenizer.from_pretrained(str(gpt2_dir))
    replies = {"n": "512万元\n置信度：90"}

    def numbered(body):  # log-probabilities -0.1, -0.2, ... one per token of the reply
        text = replies["n"]
        n = len(tokenizer(text, add_special_tokens=False)["input_ids"]) + replies.get("extra", 0)
        return Reply(text=text, logprobs=[-(k + 1) / 10 for k in range(n)])

    out = tmp_path / "p.jsonl"
    argv = ["generate", "--model", "m", "--api-base", None, "--mode", "closed-book", "--config", "law",
            "--logprobs", "--ask-confidence", "--context-tokenizer", str(gpt2_dir), "--out", str(out)]
    with ChatServer(numbered) as server:
        argv[4] = server.api_base
        assert cli.main(argv) == 0
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        # before: the eleven of the whole reply, the confidence line's six included
        assert all(r["prediction"] == "512万元" and r["confidence"] == 90 for r in rows)
        assert all(r["logprobs"] == pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5]) for r in rows)
        # a reply without a confidence line is all answer (other questions: the replies above are cached)
        replies["n"] = "512万元"
        argv[argv.index("law")] = "news"
        assert cli.main([*argv[:-1], str(tmp_path / "plain.jsonl")]) == 0
        plain = [json.loads(line) for line in (tmp_path / "plain.jsonl").read_text(encoding="utf-8").splitlines()]
        assert all(len(r["logprobs"]) == 5 and r["confidence"] is None for r in plain)
        # a count that does not fit the tokenizer's (another model's tokenizer?) leaves the question unanswered
        replies.update(n="300万元\n置信度：80", extra=4)
        argv[argv.index("news")] = "finance"
        assert cli.main([*argv[:-1], str(tmp_path / "odd.jsonl")]) == 1
        assert "15 log-probabilities for a reply of 11 tokens" in capsys.readouterr().err
