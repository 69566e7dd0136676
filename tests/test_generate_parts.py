"""The pure parts of `chimdqa generate`: chunking, long-context packing, BM25 ranking, evidence recall, prompt
templates and reply parsing, checked by hand on small inputs."""
import math

import pytest

from chimdqa_eval.generate import packing, prompts
from chimdqa_eval.generate.chunking import chunk_pages, is_heading, sections
from chimdqa_eval.generate.evidence import evidence_hit, evidence_recall, retrieval_quality
from chimdqa_eval.generate.retrieval import (Retriever, RetrievalSettings, bm25_tokens, rank_top,
                                             reciprocal_rank_fusion)
from chimdqa_eval.schema import InputError


# ---- chunking -------------------------------------------------------------------------------------------

def test_headings():
    assert is_heading("一、主要会计数据") and is_heading("第三章 研究方法") and is_heading("2.1 数据集")
    assert is_heading("附录")  # short, no punctuation
    assert not is_heading("公司2023年营业收入48.6亿元。")
    assert not is_heading("董事长:许明哲 报告日期:2024年4月18日")
    assert not is_heading("第十五条 禁止在建筑物的公共门厅、疏散通道、楼梯间、安全出口停放电动自行车或者为其充电。")


def test_sections_join_nested_headings_and_keep_pages():
    pages = [(1, "第一章 总则\n一、目的\n本规范用于基层。\n二、范围"), (2, "适用于成人。\n结语")]
    # (heading, the pages its lines stand on, paragraphs)
    assert sections(pages) == [("第一章 总则 一、目的", (1,), [("本规范用于基层。", 1, 1)]),
                               ("二、范围", (1,), [("适用于成人。", 2, 2)]),
                               ("", (), [("结语", 2, 3)])]


def test_a_table_of_short_cells_is_body_text_not_one_long_heading():
    # A financial report's table comes out of the PDF one cell a line: short, no punctuation, numbers like 48.6
    # (which look numbered). As headings they joined into one heading path of hundreds of characters, repeated
    # in front of every chunk of the section; a run of heading-like lines that long is body text.
    cells = ["项目", "2023年", "2022年", "营业收入", "48.6", "42.1", "净利润", "5.2", "4.8"] * 3
    page = "\n".join(["一、主要财务数据", *cells, "营业收入增长15%。"])
    [(heading, _, paragraphs)] = sections([(1, page)])
    assert heading == "一、主要财务数据"
    assert [text for text, _, _ in paragraphs] == [*cells, "营业收入增长15%。"]
    chunks = chunk_pages("d", [(1, page)], size=40, overlap=0)
    # (the size counts the body's characters, not the line breaks between its paragraphs)
    assert all(c.heading == "一、主要财务数据" and len(c.text.replace("\n", "")) <= len("一、主要财务数据") + 40
               for c in chunks)
    # a short chain of headings still joins (see test_sections_join_nested_headings_and_keep_pages)
    assert sections([(1, "第三章 研究方法\n3.1 数据集\n3.1.1 采集\n正文。")])[0][0] == "第三章 研究方法 3.1 数据集 3.1.1 采集"


def test_chunks_never_cross_a_heading_or_a_page_and_overlap_by_whole_paragraphs():
    paragraphs = ["甲" * 30 + "。", "乙" * 30 + "。", "丙" * 30 + "。"]
    pages = [(1, "一、开头\n" + "\n".join(paragraphs[:2])), (2, paragraphs[2] + "\n二、结尾\n丁丁。")]
    chunks = chunk_pages("d", pages, size=70, overlap=40)
    assert [c.heading for c in chunks] == ["一、开头", "一、开头", "二、结尾"]
    assert chunks[0].text == "一、开头\n" + paragraphs[0] + "\n" + paragraphs[1] and chunks[0].page == 1
    # page 2 starts a chunk of its own: no overlap carried over from page 1, and the heading, which stands on
    # page 1, is ranked with the chunk but not shown in it (a citation of page 2 quotes page 2 only)
    assert chunks[1].text == paragraphs[2] and chunks[1].page == 2
    assert chunks[1].search_text == "一、开头\n" + paragraphs[2]
    assert chunks[2].text == chunks[2].search_text == "二、结尾\n丁丁。" and chunks[2].page == 2
    assert chunks[1].context() == {"text": chunks[1].text, "doc_id": "d", "page": 2}
    assert [c.index for c in chunks] == [0, 1, 2]
    # within a page, consecutive chunks overlap by the whole paragraphs that fit
    one_page = chunk_pages("d", [(1, "\n".join(paragraphs))], size=70, overlap=40)
    assert [c.text for c in one_page] == ["\n".join(paragraphs[:2]), "\n".join(paragraphs[1:])]


def on_page(text: str, page_text: str) -> bool:
    """Every line of `text` stands on the page (spaces and line breaks aside)."""
    squeeze = "".join
    return all(squeeze(line.split()) in squeeze(page_text.split()) for line in text.split("\n"))


def test_a_chunk_holds_the_text_of_one_page_only():
    # Pages far shorter than a chunk, one section running over all of them: before, a chunk took several pages
    # and was cited by the first; now every chunk is one page's text, overlap included.
    pages = [(n, f"第{n}页的正文，编号{n}甲乙。\n补充说明{n}，丙丁戊。") for n in range(1, 9)]
    pages[0] = (1, "一、总述\n" + pages[0][1])
    chunks = chunk_pages("d", pages, size=400, overlap=80)
    assert [c.page for c in chunks] == list(range(1, 9))
    texts = dict(pages)
    assert all(on_page(c.text, texts[c.page]) for c in chunks)
    assert chunks[0].text.startswith("一、总述\n") and all(c.heading == "一、总述" for c in chunks)
    # a page longer than a chunk: several chunks of that page, overlapping within it
    long = [(1, "二、细则\n" + "\n".join(f"第{i}条规定了事项{i}。" + "内容" * 20 for i in range(6))), (2, "附注。")]
    chunks = chunk_pages("d", long, size=100, overlap=50)
    assert [c.page for c in chunks] == [1, 1, 1, 1, 1, 2]
    assert all(on_page(c.text, dict(long)[c.page]) for c in chunks)
    assert chunks[1].text.split("\n")[0] in chunks[0].text  # overlap within page 1


def test_a_heading_split_over_two_pages_is_shown_only_where_all_of_it_stands():
    chunks = chunk_pages("d", [(1, "正文一。\n第一章 总则"), (2, "一、目的\n本规范用于基层。")], size=50, overlap=0)
    assert [c.text for c in chunks] == ["正文一。", "本规范用于基层。"]
    assert chunks[1].heading == "第一章 总则 一、目的" and chunks[1].search_text == "第一章 总则 一、目的\n本规范用于基层。"


def test_the_heading_of_a_section_continued_from_an_earlier_page_still_finds_its_chunk():
    pages = {"d": [(1, "一、利润\n净利润增长。"), (2, "其中第四季度最多。"), (3, "二、员工\n员工人数三千。")]}
    retriever = Retriever(pages, RetrievalSettings(top_k=3, chunk_size=50, chunk_overlap=0))
    [ranked] = retriever.search_all(["第四季度的利润是多少？"], ["d"])
    assert ranked[0].page == 2 and ranked[0].text == "其中第四季度最多。" and "利润" in ranked[0].search_text


def test_the_overlap_carried_into_a_chunk_leaves_room_for_what_comes_next():
    # A short paragraph, then one of 391 characters: carrying the whole short one (31 <= 80) in front made a
    # chunk of 422 characters (over --chunk-size 400) holding all of the previous chunk. The overlap is cut to
    # the room the next piece leaves: the last 9 characters.
    short, long = "甲" * 30 + "。", "乙" * 390 + "。"
    chunks = chunk_pages("d", [(1, short + "\n" + long)], size=400, overlap=80)
    assert [c.text for c in chunks] == [short, short[-9:] + "\n" + long]


def test_long_paragraphs_are_cut_at_sentence_ends_then_at_the_size():
    text = "一二三四五。六七八。" + "长" * 25
    chunks = chunk_pages("d", [(1, text)], size=10, overlap=0)
    # the two sentences fill one chunk exactly (pieces of a paragraph join without a break)
    assert [c.text for c in chunks] == ["一二三四五。六七八。", "长" * 10, "长" * 10, "长" * 5]
    assert [c.text for c in chunk_pages("d", [(1, text)], size=8, overlap=0)][:2] == ["一二三四五。", "六七八。"]


def test_character_overlap_starts_after_a_clause_end():
    chunks = chunk_pages("d", [(1, "首句很长很长很长很长，第二句在这里。"), (1, "下一段。")], size=20, overlap=12)
    assert chunks[1].text.startswith("第二句在这里。") and chunks[1].text.endswith("下一段。")


def test_chunk_settings_are_checked():
    with pytest.raises(ValueError):
        chunk_pages("d", [(1, "x")], size=10, overlap=10)


# ---- packing --------------------------------------------------------------------------------------------

def test_approx_token_count():
    assert packing.approx_tokens("中文abc defgh") == 2 + 1 + 2  # 2 CJK; "abc" -> 1; "defgh" -> 2
    assert packing.approx_tokens("营收48.6亿元") == 4 + 1      # 4 CJK; "48.6" -> 1


def test_pages_in_order_cut_at_the_budget():
    pages = [(1, "甲" * 10), (2, "乙" * 10), (3, "丙" * 10)]
    block = packing.page_block(1, "甲" * 10)  # "[第1页]": 2 CJK + "[1]" (3 others: 1 token), then 10 CJK
    assert packing.approx_tokens(block) == 2 + 1 + 10
    text, info = packing.pack_pages(pages, budget=30, truncation="head")
    # pages 1 and 2 take 13 each; page 3 is cut to the 4 tokens left: its marker (3) and one character
    assert text == block + "\n\n[第2页]\n" + "乙" * 10 + "\n\n[第3页]\n丙"
    assert info == {"pages_kept": 2, "pages_total": 3, "truncated": True, "tokens": 30, "tokens_total": 39,
                    "page_shares": {1: 1.0, 2: 1.0, 3: 0.1}}
    whole, info = packing.pack_pages(pages, budget=1000, truncation="head")
    assert not info["truncated"] and info["pages_kept"] == 3 and "丙" * 10 in whole


# Ten pages of ten characters, a different one each: 13 tokens a page with its marker, 130 in all.
TEN_PAGES = [(n, "甲乙丙丁戊己庚辛壬癸"[n - 1] * 10) for n in range(1, 11)]


def blocks(*numbers):
    return "\n\n".join(packing.page_block(n, text) for n, text in TEN_PAGES if n in numbers)


def test_head_truncation_keeps_the_start_and_a_page_marker_is_never_cut_in_two():
    text, info = packing.pack_pages(TEN_PAGES, 87, truncation="head")
    # pages 1-6 take 78 tokens; page 7 gets the 9 left: its marker (3) and 6 characters
    assert text == blocks(1, 2, 3, 4, 5, 6) + "\n\n[第7页]\n" + "庚" * 6
    assert info["tokens"] == 87 and info["pages_kept"] == 6 and info["page_shares"][7] == 0.6
    # 2 tokens left cannot hold page 7's marker: nothing of page 7 (not a stray "[第")
    text, info = packing.pack_pages(TEN_PAGES, 80, truncation="head")
    assert text == blocks(1, 2, 3, 4, 5, 6) and info["tokens"] == 78 and info["page_shares"][7] == 0.0


def test_middle_truncation_keeps_the_first_and_last_halves_of_the_budget():
    # LongBench's rule: the first ceil(87 / 2) = 44 tokens and the last 87 - 44 = 43; the middle is left out.
    text, info = packing.pack_pages(TEN_PAGES, 87, truncation="middle")
    head = blocks(1, 2, 3) + "\n\n[第4页]\n丁丁"          # 39 + 5 = 44
    tail = "[第7页]\n庚\n\n" + blocks(8, 9, 10)           # 4 + 39 = 43: page 7 keeps its end and its marker
    assert text == head + "\n\n" + tail
    assert info == {"pages_kept": 6, "pages_total": 10, "truncated": True, "tokens": 87, "tokens_total": 130,
                    "page_shares": {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.2, 5: 0.0, 6: 0.0, 7: 0.1, 8: 1.0, 9: 1.0,
                                    10: 1.0}}
    assert packing.approx_tokens(text) == 87


def test_tail_truncation_keeps_the_end():
    text, info = packing.pack_pages(TEN_PAGES, 87, truncation="tail")
    assert text == "[第4页]\n" + "丁" * 6 + "\n\n" + blocks(5, 6, 7, 8, 9, 10)
    assert info["tokens"] == 87 and info["pages_kept"] == 6 and info["page_shares"][4] == 0.6
    assert info["page_shares"][3] == 0.0 and info["page_shares"][10] == 1.0


def test_evidence_in_the_middle_survives_a_head_cut_and_not_a_middle_cut():
    # the evidence on page 5 of 10: within the first 87 tokens, outside the first 44 and the last 43
    shares = {policy: packing.pack_pages(TEN_PAGES, 87, truncation=policy)[1]["page_shares"]
              for policy in packing.TRUNCATIONS}
    assert [packing.survival(shares[p][5]) for p in ("head", "middle", "tail")] == ["kept", "cut", "kept"]
    assert [packing.survival(shares[p][4]) for p in ("head", "middle", "tail")] == ["kept", "partly", "partly"]


def test_a_document_within_the_budget_is_the_same_under_every_policy():
    packed = {policy: packing.pack_pages(TEN_PAGES, 130, truncation=policy) for policy in packing.TRUNCATIONS}
    assert {text for text, _ in packed.values()} == {blocks(*range(1, 11))}
    assert all(not info["truncated"] and info["tokens"] == 130 for _, info in packed.values())
    assert packing.DEFAULT_TRUNCATION == "middle"
    with pytest.raises(ValueError, match="truncation"):
        packing.pack_pages(TEN_PAGES, 10, truncation="sides")


def test_one_page_longer_than_the_budget_is_cut_in_its_middle():
    text, info = packing.pack_pages([(1, "甲" * 50 + "乙" * 50)], 21, truncation="middle")
    # 11 tokens from the start (marker + 8), 10 from the end under a repeated marker (marker + 7)
    assert text == "[第1页]\n" + "甲" * 8 + "\n\n[第1页]\n" + "乙" * 7
    assert info["tokens"] == 21 and info["page_shares"] == {1: 0.15} and info["pages_kept"] == 0


# ---- BM25 -----------------------------------------------------------------------------------------------

def lucene_bm25(query, docs, k1=1.5, b=0.75):
    """BM25 as Lucene scores it, written out for the test: idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    tf part = tf / (tf + k1 * (1 - b + b * len / avglen))."""
    n, avg = len(docs), sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        score = 0.0
        for term in set(query):
            df = sum(term in d for d in docs)
            if df:
                tf = doc.count(term)
                score += math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + k1 * (1 - b + b * len(doc) / avg))
        scores.append(score)
    return scores


def test_bm25_ranks_a_small_corpus_as_computed_by_hand(tmp_path):
    pages = {"d": [(1, "一、收入\n公司营业收入增长。"), (2, "二、利润\n净利润增长较快，利润率提高。"),
                   (3, "三、员工\n员工人数三千。")]}
    retriever = Retriever(pages, RetrievalSettings(top_k=3, chunk_size=50, chunk_overlap=0))
    chunks = retriever.indexes["d"].chunks
    assert [c.page for c in chunks] == [1, 2, 3]
    question = "公司的利润增长多少？"
    docs = bm25_tokens([c.text for c in chunks])
    [query] = bm25_tokens([question])
    assert "利润" in query and "？" not in query  # punctuation is no term
    expected = lucene_bm25(query, docs)
    got = retriever.indexes["d"].bm25.get_scores(query)
    assert list(got) == pytest.approx(expected, rel=1e-5)
    # By hand. Tokens: chunk 1 [一 收入 公司 营业 收入 增长] (6), chunk 2 [二 利润 净利润 增长 较 快 利润率 提高]
    # (8), chunk 3 (5); avg 19/3. Query terms found: 公司 (df 1), 利润 (df 1), 增长 (df 2).
    # idf(df 1) = ln(1 + 2.5 / 1.5) = 0.98083, idf(df 2) = ln(1 + 1.5 / 2.5) = 0.47000.
    # chunk 1: (0.98083 + 0.47000) / (1 + 1.5 * (0.25 + 0.75 * 6 / (19/3))) = 1.45083 * 0.40970 = 0.59441
    # chunk 2: (0.98083 + 0.47000) / (1 + 1.5 * (0.25 + 0.75 * 8 / (19/3))) = 1.45083 * 0.35765 = 0.51889
    assert list(got) == pytest.approx([0.59441, 0.51889, 0.0], abs=2e-5)
    [ranked] = retriever.search_all([question], ["d"])
    assert [c.index for c in ranked] == [0, 1, 2]


def test_the_index_is_cached_on_disk_by_documents_and_settings():
    pages = {"d": [(1, "收入增长。"), (2, "利润增长。")]}
    first = Retriever(pages, RetrievalSettings(chunk_size=6, chunk_overlap=0))
    again = Retriever(pages, RetrievalSettings(chunk_size=6, chunk_overlap=0, top_k=1))
    other = Retriever(pages, RetrievalSettings(chunk_size=7, chunk_overlap=0))
    edited = Retriever({"d": [(1, "收入下降。"), (2, "利润增长。")]}, RetrievalSettings(chunk_size=6, chunk_overlap=0))
    assert first.cached["bm25"] is False and again.cached["bm25"] is True and again.key == first.key
    assert other.key != first.key and not other.cached["bm25"]
    assert edited.key != first.key and not edited.cached["bm25"]
    # the loaded index ranks as the built one did
    assert [c.text for c in again.search_all(["利润"], ["d"])[0]] == ["利润增长。"]
    assert [c.text for c in first.search_all(["利润"], ["d"])[0]] == ["利润增长。", "收入增长。"]


def test_a_document_or_question_without_any_term_is_ranked_in_document_order():
    # A scanned page without a text layer, or one of only punctuation, gives no BM25 vocabulary, and a question
    # of only punctuation no query term: every chunk scores 0 and keeps its place; other documents index as
    # usual, and the built index and the one loaded from disk answer alike.
    pages = {"blank": [(1, ""), (2, "  ")], "dots": [(1, "……。"), (2, "——。")],
             "d": [(1, "收入增长。"), (2, "利润增长。")]}
    settings = RetrievalSettings(chunk_size=6, chunk_overlap=0)
    for retriever in (Retriever(pages, settings), Retriever(pages, settings)):
        blank, dots, d, none = retriever.search_all(["利润", "利润", "利润", "？？"], ["blank", "dots", "d", "d"])
        assert blank == [] and [c.text for c in dots] == ["……。", "——。"]  # one chunk a page
        assert [c.text for c in d] == ["利润增长。", "收入增长。"]
        assert [c.text for c in none] == ["收入增长。", "利润增长。"]
    assert retriever.cached["bm25"]


def test_documents_tokenized_in_groups_index_as_all_at_once(monkeypatch):
    from chimdqa_eval.generate import retrieval

    assert list(retrieval._groups("abcd", [3, 3, 5, 1], 6)) == [["a", "b"], ["c", "d"]]
    assert list(retrieval._groups("ab", [9, 1], 6)) == [["a"], ["b"]]
    pages = {"d1": [(1, "收入增长。"), (2, "利润增长较快。")], "d2": [(1, "员工人数三千。"), (2, "利润率提高。")]}
    settings = RetrievalSettings(chunk_size=8, chunk_overlap=0)
    together = Retriever(pages, settings)
    monkeypatch.setattr(retrieval, "TOKENIZE_GROUP_CHARS", 1)
    monkeypatch.setenv("CHIMDQA_CACHE", str(retrieval.cache_dir() / "apart"))
    apart = Retriever(pages, settings)
    assert not apart.cached["bm25"]
    for doc_id in pages:
        assert list(apart.indexes[doc_id].bm25.get_scores(["利润"])) == \
            list(together.indexes[doc_id].bm25.get_scores(["利润"]))


def test_ranking_helpers():
    import numpy as np

    assert rank_top(np.array([1.0, 3.0, 3.0, 0.0]), 3) == [1, 2, 0]  # ties keep document order
    # 0: 1/61 + 1/62; 1: 1/62 + 1/61; 2: 1/63 + ... the first two tie and keep first-seen order
    assert reciprocal_rank_fusion([[0, 1, 2], [1, 0, 3]]) == [0, 1, 2, 3]
    assert reciprocal_rank_fusion([[2, 0], [2, 1]])[0] == 2


def test_retrieval_settings_are_checked():
    with pytest.raises(InputError, match="--embedding-model"):
        RetrievalSettings(method="dense")
    with pytest.raises(InputError, match="--top-k"):
        RetrievalSettings(top_k=0)
    with pytest.raises(InputError, match="--rerank-candidates"):
        RetrievalSettings(reranker="x", top_k=5, rerank_candidates=3)


# ---- evidence -------------------------------------------------------------------------------------------

def test_evidence_hit_and_recall_by_hand():
    # a retrieved chunk counts for the one page it comes from
    assert evidence_hit([1, 4], [4]) == 1.0 and evidence_hit([1, 2], [3]) == 0.0
    assert evidence_recall([1, 4], [2, 4]) == 0.5 and evidence_recall([], [1]) == 0.0
    quality = retrieval_quality(
        retrieved_pages=[[1], [2, 3], [1], [5]],
        evidence=[[1], [1, 2, 3], [2], None],
        k=2, labels={"question_type": ["retrieval", "comparison", "retrieval", "retrieval"]})
    # question 1: hit, recall 1; question 2: hit, recall 2/3; question 3: miss; question 4 has no evidence
    assert quality["hit_at_k"] == pytest.approx(100 * 2 / 3, abs=1e-4)
    assert quality["recall_at_k"] == pytest.approx(100 * (1 + 2 / 3 + 0) / 3, abs=1e-4)
    assert quality["n"] == 3 and quality["n_without_evidence"] == 1 and quality["k"] == 2
    assert quality["by"]["question_type"]["retrieval"] == {"hit_at_k": 50.0, "recall_at_k": 50.0, "n": 2}
    assert retrieval_quality([[1]], [None], k=1) is None


# ---- prompts --------------------------------------------------------------------------------------------

def test_the_bundled_template_renders_each_mode():
    template = prompts.load_template()
    assert template.version and len(template.sha256) == 64
    closed = prompts.render_messages(template, "问题甲？", "factual")
    assert closed[0]["role"] == "system" and "问题甲？" in closed[1]["content"] and "文档" not in closed[1]["content"]
    assert template.text("instruction", "factual") in closed[1]["content"]
    long = prompts.render_messages(template, "问题乙？", "open_ended", context="[第1页]\n正文", title="标题",
                                   ask_confidence=True)
    body = long[1]["content"]
    assert "《标题》" in body and "[第1页]\n正文" in body and template.text("instruction", "open_ended") in body
    assert template.text("confidence") in body


def test_a_template_with_an_unknown_placeholder_or_missing_text_is_refused(tmp_path):
    text = prompts.DEFAULT_TEMPLATE.read_text(encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("问题：{question}\n    {instruction}", "问题：{question} {answer}", 1), encoding="utf-8")
    with pytest.raises(InputError, match="unknown placeholder.*answer"):
        prompts.load_template(bad)
    bad.write_text(text.replace("confidence:", "confidenc:"), encoding="utf-8")
    with pytest.raises(InputError, match="'confidence' must be a non-empty text"):
        prompts.load_template(bad)
    with pytest.raises(InputError, match="no such file"):
        prompts.load_template(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match=f"--prompt {tmp_path}: not a file"):
        prompts.load_template(tmp_path)


@pytest.mark.parametrize("reply, expected", [
    ("3.15亿元\n置信度：85", ("3.15亿元", 85.0)),
    ("答案是甲。置信度: 70%", ("答案是甲。", 70.0)),
    ("甲\n\n**置信度：**  90\n", ("甲", 90.0)),
    ("甲\n置信度：150", ("甲\n置信度：150", None)),   # not a 0-100 confidence: kept, none recorded
    ("置信度：60\n甲", ("置信度：60\n甲", None)),       # not the last line
    ("甲", ("甲", None)),
])
def test_confidence_is_parsed_from_the_last_line(reply, expected):
    assert prompts.parse_reply(reply, ask_confidence=True) == expected


def test_without_ask_confidence_the_reply_is_the_answer():
    assert prompts.parse_reply("  甲\n置信度：85 ", ask_confidence=False) == ("甲\n置信度：85", None)


# ---- evidence in the release ----------------------------------------------------------------------------

def test_the_sample_release_annotates_every_question_with_evidence_pages():
    from chimdqa_eval import release

    evidence = release.read_evidence()
    pages = {}
    for row in release.read_documents():
        pages.setdefault(row["doc_id"], set()).add(row["page"])
    rows = release.read_qa()
    assert set(evidence) == {r["id"] for r in rows}
    assert all(set(evidence[r["id"]]) <= pages[r["doc_id"]] for r in rows)
    assert evidence["fin-ret-002"] == [2] and evidence["fin-sum-001"] == [1, 2]


@pytest.mark.parametrize("value", [[], [0], ["1"], 2, [True]])
def test_bad_evidence_is_refused_naming_the_record(tmp_path, value):
    import json

    from chimdqa_eval import release

    record = {"id": "q1", "domain": "law", "question_type": "retrieval", "level": "L1", "question": "问？",
              "answer": "答", "doc_id": "law-01", "evidence": value}
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    for read in (release.read_qa, release.read_evidence):
        with pytest.raises(InputError, match=r"qa.jsonl line 1 \(id q1\): field evidence must be"):
            read(files=[path])
