"""`chimdqa generate` on releases made here, page by page: truncation of a long document (which pages, and which
evidence pages, the prompt keeps under each policy) and page-exact citations on a release whose pages are much
shorter than a chunk."""
import json
import re
from pathlib import Path

import pytest

from chat_server import ChatServer
from chimdqa_eval import cli, release
from test_release import write_chinese_pdf

_QUESTION = re.compile(r"问题：(.*)")
DISTRICTS = "东城 西城 朝阳 海淀 丰台 石景山 门头沟 房山 通州 顺义 昌平 大兴".split()


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def write_lines(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def make_release(root: Path, documents, questions) -> Path:
    """documents: (doc_id, [[paragraph, ...] per page]); questions: (id, doc_id, question, answer, evidence)."""
    index = []
    for doc_id, pages in documents:
        write_chinese_pdf(root / "pdf" / f"{doc_id}.pdf", pages, right=540)
        index.append({"doc_id": doc_id, "domain": "news", "title": f"{doc_id}统计公报",
                      "file": f"pdf/{doc_id}.pdf"})
    write_lines(root / "documents.jsonl", index)
    write_lines(root / "qa" / "news.jsonl", [
        {"id": qid, "domain": "news", "question_type": "retrieval", "level": "L1", "question": question,
         "answer": answer, "doc_id": doc_id, "evidence": evidence}
        for qid, doc_id, question, answer, evidence in questions])
    return root


def population(district: str, year: int) -> int:
    return 20 + (sum(map(ord, district)) * 7 + year * 13) % 180


def short_page_release(root: Path) -> Path:
    """Three documents of 12 short pages (two or three sentences, about 70 characters: far below a 400-character
    chunk); a section heading on every third page, so sections run over several pages; one question a page, its
    evidence that page."""
    documents, questions = [], []
    sections = ["一、人口", "二、就业", "三、教育", "四、交通"]
    for d, year in enumerate((2019, 2020, 2021)):
        doc_id = f"gov-{d + 1:02d}"
        pages = []
        for n, district in enumerate(DISTRICTS, 1):
            paragraphs = [f"{district}区{year}年末常住人口为{population(district, year)}万人，比上年有所变化。",
                          f"该区当年新增就业岗位{population(district, year + 1) * 100}个。"]
            if n % 3 == 1:
                paragraphs.insert(0, sections[n // 3])
            pages.append(paragraphs)
            questions.append((f"gov-{d + 1}-{n:02d}", doc_id, f"{year}年末{district}区的常住人口是多少？",
                              f"{population(district, year)}万人", [n]))
        documents.append((doc_id, pages))
    return make_release(root, documents, questions)


def long_document_release(root: Path) -> Path:
    """One document of 12 pages alike (the same number of tokens each); questions whose evidence is on page 1,
    6 (the middle) and 12."""
    pages = [[f"本部分记载第{n:02d}号区域的概况。" + "该区域地处城市的一隅，" * 8,
              f"第{n:02d}号区域的标志性建筑编号为{n * 1111:05d}号。"] for n in range(1, 13)]
    questions = [(f"gov-long-{n:02d}", "gov-long", f"第{n:02d}号区域的标志性建筑编号是多少？", f"{n * 1111:05d}号", [n])
                 for n in (1, 6, 12)]
    return make_release(root, [("gov-long", pages)], questions)


def page_tokens(root) -> int:
    """The tokens of one page of the long document, with its marker (the approximate count)."""
    from chimdqa_eval.generate.packing import approx_tokens, page_block

    sizes = {approx_tokens(page_block(n, text)) for (_, n), text in page_texts(root).items()}
    assert len(sizes) == 1
    return sizes.pop()


def generate(server, root, out, *extra, mode):
    return cli.main(["generate", "--model", "test-model", "--api-base", server.api_base, "--mode", mode,
                     "--data-dir", str(root), "--out", str(out), "--max-retries", "1", *map(str, extra)])


def unknown(body) -> str:
    return "无法确定"


def page_texts(root) -> dict:
    return {(p["doc_id"], p["page"]): p["text"] for p in release.read_documents(root)}


def on_page(text: str, page_text: str) -> bool:
    """Every line of `text` stands on the page (spaces and line breaks aside)."""
    squeeze = "".join
    return all(squeeze(line.split()) in squeeze(page_text.split()) for line in text.split("\n"))


def cited_on_page_share(predictions: Path, texts: dict) -> float:
    contexts = [c for line in predictions.read_text(encoding="utf-8").splitlines()
                for c in json.loads(line)["retrieved_contexts"]]
    return sum(on_page(c["text"], texts[(c["doc_id"], c["page"])]) for c in contexts) / len(contexts)


# ---- page-exact citations -----------------------------------------------------------------------------------

def test_every_retrieved_context_is_found_on_the_page_it_names(tmp_path):
    root = short_page_release(tmp_path / "release")
    texts = page_texts(root)
    assert max(map(len, texts.values())) < 120  # pages far shorter than a 400-character chunk
    out = tmp_path / "rag.jsonl"
    with ChatServer(unknown) as server:
        assert generate(server, root, out, "--top-k", 3, mode="rag") == 0
    assert cited_on_page_share(out, texts) == 1.0
    rows = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    evidence = release.read_evidence(root)
    # the asked page is retrieved first for every question, and hit@3 counts exactly those pages
    assert all(rows[q]["retrieved_contexts"][0]["page"] == evidence[q][0] for q in rows)
    meta = json.loads((tmp_path / "rag.meta.json").read_text(encoding="utf-8"))["generation"]
    assert meta["retrieval_quality"]["hit_at_k"] == 100.0 and meta["retrieval_quality"]["n"] == 36
    assert meta["retrieval"]["n_chunks"] == 36  # one chunk a page: none spans two


def test_hit_at_k_counts_a_chunk_for_its_own_page_only(tmp_path):
    # With one retrieved chunk, a question whose evidence page is not the retrieved chunk's page is a miss, even
    # when the page before it is retrieved (a chunk that ran on into the next page counted as a hit before).
    root = short_page_release(tmp_path / "release")
    out = tmp_path / "rag.jsonl"
    with ChatServer(unknown) as server:
        assert generate(server, root, out, "--top-k", 1, mode="rag") == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    evidence = release.read_evidence(root)
    hits = [r["retrieved_contexts"][0]["page"] in evidence[r["id"]] for r in rows]
    quality = json.loads((tmp_path / "rag.meta.json").read_text(encoding="utf-8"))["generation"]["retrieval_quality"]
    assert quality["hit_at_k"] == pytest.approx(100 * sum(hits) / len(hits))


# ---- truncation of a long document --------------------------------------------------------------------------

def long_run(tmp_path, root, policy, budget=1000):
    """(predictions, metadata, {question: user prompt}) of a long-mode run with --truncation `policy`."""
    out = tmp_path / f"{policy or 'default'}.jsonl"
    with ChatServer(unknown) as server:
        extra = ["--truncation", policy] if policy else []
        assert generate(server, root, out, "--max-context-tokens", budget, *extra, mode="long") == 0
        prompts = {_QUESTION.search(b["messages"][-1]["content"]).group(1).strip(): b["messages"][-1]["content"]
                   for b in server.requests}
    meta = json.loads(out.with_name(out.name.replace(".jsonl", ".meta.json")).read_text(encoding="utf-8"))
    return out, meta, prompts


def test_evidence_in_the_middle_is_kept_by_a_head_cut_and_cut_by_a_middle_cut(tmp_path):
    root = long_document_release(tmp_path / "release")
    texts = page_texts(root)
    # Six pages and 2 tokens: a head cut keeps pages 1-6; a middle cut keeps 3 pages from the start (3 pages and
    # 1 token) and 3 from the end (3 pages and 2 tokens: too few for page 9's marker); a tail cut pages 7-12.
    budget = 6 * page_tokens(root) + 2
    fact = {n: next(line for line in texts[("gov-long", n)].split("\n") if "标志性建筑" in line) for n in (1, 6, 12)}
    question = {n: f"第{n:02d}号区域的标志性建筑编号是多少？" for n in (1, 6, 12)}
    kept = {}
    for policy in ("head", "middle", "tail"):
        _, meta, prompts = long_run(tmp_path, root, policy, budget)
        context = meta["generation"]["context"]
        assert context["truncation"] == policy and context["max_context_tokens"] == budget
        assert context["token_counter"].startswith("approx") and context["questions_truncated"] == 3
        assert f"truncation:{policy}|budget:{budget}|tokens:approx" in context["signature"]
        assert context["pages"]["gov-long"] == [6, 12] and context["tokens"]["gov-long"][1] == 12 * budget // 6 - 4
        kept[policy] = {n: context["questions"][f"gov-long-{n:02d}"]["evidence"][str(n)] for n in (1, 6, 12)}
        for n in (1, 6, 12):  # what the metadata says is what the model was shown
            assert (fact[n] in prompts[question[n]]) == (kept[policy][n] == "kept"), (policy, n)
            assert context["questions"][f"gov-long-{n:02d}"]["tokens"] == context["tokens"]["gov-long"][0]
            assert context["tokens"]["gov-long"][0] <= budget
        assert context["evidence_pages"] == {s: list(kept[policy].values()).count(s) for s in ("kept", "partly", "cut")}
    assert kept["head"] == {1: "kept", 6: "kept", 12: "cut"}
    assert kept["middle"] == {1: "kept", 6: "cut", 12: "kept"}
    assert kept["tail"] == {1: "cut", 6: "cut", 12: "kept"}


def test_the_default_truncation_is_middle_and_evaluate_accepts_the_metadata(tmp_path):
    root = long_document_release(tmp_path / "release")
    out, meta, _ = long_run(tmp_path, root, None)
    _, middle_meta, _ = long_run(tmp_path, root, "middle")
    assert meta["generation"]["context"]["truncation"] == "middle"
    assert meta["generation"]["context"]["questions"] == middle_meta["generation"]["context"]["questions"]
    code = cli.main(["evaluate", "--predictions", str(out), "--data-dir", str(root), "--out", str(tmp_path / "res"),
                     "--resamples", "0"])
    results = json.loads((tmp_path / "res" / "results.json").read_text(encoding="utf-8"))
    assert code == 0 and results["generation"]["context"]["truncation"] == "middle"


def test_a_document_within_the_budget_is_the_same_prompt_under_every_policy(tmp_path):
    root = long_document_release(tmp_path / "release")
    seen = []
    for policy in ("head", "middle", "tail"):
        _, meta, prompts = long_run(tmp_path, root, policy, budget=32000)
        context = meta["generation"]["context"]
        assert context["questions_truncated"] == 0
        assert all(set(q["evidence"].values()) == {"kept"} for q in context["questions"].values())
        seen.append(prompts)
    assert seen[0] == seen[1] == seen[2]


def test_bad_truncation_and_bad_metadata_are_refused(tmp_path, capsys):
    from chimdqa_eval.submission import generation_problems

    root = long_document_release(tmp_path / "release")
    with ChatServer(unknown) as server:
        with pytest.raises(SystemExit) as exit_info:
            generate(server, root, tmp_path / "p.jsonl", "--truncation", "sides", mode="long")
    assert exit_info.value.code == 2 and "--truncation" in capsys.readouterr().err
    bad = {"mode": "long", "context": {"truncation": "sides", "questions": {"q": {"tokens": -1,
                                                                                 "evidence": {"3": "maybe"}}}}}
    problems = generation_problems(bad)
    assert any(p.startswith("generation.context.truncation") for p in problems)
    assert any(p.startswith("generation.context.questions.q.tokens") for p in problems)
    assert any(p.startswith("generation.context.questions.q.evidence.3") for p in problems)
