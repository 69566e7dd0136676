"""Release files: the sample's coverage and answerability, PDF text extraction, and every bad-input error."""
import json
import shutil
from pathlib import Path

import pymupdf
import pytest

from chimdqa_eval import release
from chimdqa_eval.schema import DOMAINS, QUESTION_TYPES, TYPE_ALIASES, InputError
from chimdqa_eval.text import normalize_text
from shared_data import CHINESE_SIMPLEQA as SIMPLEQA_SHARED


def qa_record(**changes):
    record = {"id": "fin-ret-001", "domain": "finance", "question_type": "retrieval", "level": "L1",
              "question": "公司2023年研发投入是多少？", "answer": "3.15亿元", "doc_id": "finance-01"}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def write_lines(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
                            for line in lines), encoding="utf-8")
    return path


def write_chinese_pdf(path: Path, pages, *, right: float = 300) -> None:
    """A PDF with one text box per paragraph (its right edge at `right` points), in PyMuPDF's built-in
    simplified-Chinese font."""
    document = pymupdf.open()
    for paragraphs in pages:
        page = document.new_page()
        y = 50
        for text in paragraphs:
            left = page.insert_textbox(pymupdf.Rect(50, y, right, 800), text, fontname="china-s", fontsize=11)
            assert left >= 0
            y = 800 - left + 10
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(path)


# --- the sample release -------------------------------------------------------------------------------

def test_sample_covers_every_domain_and_type_at_both_levels():
    rows = release.read_qa()
    assert len(rows) >= 60
    assert {(r["domain"], r["question_type"]) for r in rows} == {(d, t) for d in DOMAINS for t in QUESTION_TYPES}
    assert {r["level"] for r in rows} == {"L1", "L2"}
    assert len({r["id"] for r in rows}) == len(rows)
    raw_lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in release.qa_files())
    assert raw_lines == len(rows)  # nothing dropped


def test_sample_chinese_type_names_become_english():
    law_raw = [json.loads(row) for row in (release.SAMPLE_DIR / "qa" / "law.jsonl").read_text("utf-8").splitlines()]
    assert {r["question_type"] for r in law_raw} == set(TYPE_ALIASES)  # the law file uses the Chinese names
    by_id = {r["id"]: r for r in release.read_qa()}
    for raw in law_raw:
        assert by_id[raw["id"]]["question_type"] == TYPE_ALIASES[raw["question_type"]]


def test_sample_retrieval_answers_are_in_their_documents():
    doc_text = {}
    for page in release.read_documents():
        doc_text[page["doc_id"]] = doc_text.get(page["doc_id"], "") + page["text"]
    assert len(doc_text) >= 6
    assert {doc["domain"] for doc in release.read_document_index()} == set(DOMAINS)
    for row in release.read_qa():
        if row["question_type"] == "retrieval":
            assert normalize_text(row["answer"]) in doc_text[row["doc_id"]], row["id"]


def test_sample_open_answers_are_paragraphs_and_factual_answers_short():
    for row in release.read_qa():
        if row["category"] == "factual":
            assert len(row["answer"]) <= 40, row["id"]
        else:
            assert len(row["answer"]) >= 80, row["id"]


def test_read_qa_returns_canonical_columns_in_file_order(tmp_path):
    path = write_lines(tmp_path / "r" / "qa" / "a.jsonl",
                       [qa_record(id="b-1", question_type="统计", category="factual", level="l1", extra="kept out"),
                        qa_record(id="a-1", question_type="Summarization", level="L2")])
    rows = release.read_qa(files=[path])
    assert [r["id"] for r in rows] == ["b-1", "a-1"]
    assert rows[0] == {"id": "b-1", "domain": "finance", "question_type": "statistical", "category": "factual",
                       "level": "L1", "question": "公司2023年研发投入是多少？", "answer": "3.15亿元",
                       "doc_id": "finance-01"}
    assert (rows[1]["question_type"], rows[1]["category"]) == ("summarization", "open_ended")


# --- bad input: each error names the file, the line and the id ------------------------------------------

BAD_QA_LINES = {
    "invalid JSON": ('{"id": "fin-ret-002", "domain": "finance", "question": "x",', "not valid JSON"),
    "missing field": (qa_record(id="fin-ret-002", answer=None), "missing field answer"),
    "unknown domain": (qa_record(id="fin-ret-002", domain="sports"), "unknown domain 'sports'"),
    "unknown type": (qa_record(id="fin-ret-002", question_type="翻译"), "unknown question type '翻译'"),
    "empty question": (qa_record(id="fin-ret-002", question="  "), "field question is empty"),
    "empty answer": (qa_record(id="fin-ret-002", answer=""), "field answer is empty"),
    "unknown level": (qa_record(id="fin-ret-002", level="L3"), "unknown level 'L3'"),
    "wrong category": (qa_record(id="fin-ret-002", category="open_ended"), "contradicts question type"),
    "non-string answer": (qa_record(id="fin-ret-002", answer=42), "field answer must be a string"),
    "duplicate id": (qa_record(id="fin-ret-001"), "duplicate id, first seen at"),
}


@pytest.mark.parametrize("case", list(BAD_QA_LINES))
def test_bad_qa_line_names_file_line_and_id(tmp_path, case):
    line, problem = BAD_QA_LINES[case]
    path = write_lines(tmp_path / "qa" / "finance.jsonl", [qa_record(), "", line])
    with pytest.raises(InputError) as err:
        release.read_qa(files=[path])
    message = str(err.value)
    expected_id = "fin-ret-001" if case == "duplicate id" else "fin-ret-002"
    assert f"{path} line 3 (id {expected_id})" in message
    assert problem in message
    if case == "duplicate id":
        assert message.endswith(f"{path} line 1 (id fin-ret-001)")


def test_non_object_line_and_non_utf8_file(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", ["[1, 2]"])
    with pytest.raises(InputError, match=r"a.jsonl line 1: expected a JSON object, got list"):
        release.read_qa(files=[path])
    path.write_bytes("{\"id\": \"中\"}\n".encode("gbk"))
    with pytest.raises(InputError, match="not UTF-8"):
        release.read_qa(files=[path])


def make_release(root: Path, qa_rows, documents) -> Path:
    """A release folder: qa/finance.jsonl, documents.jsonl, and a PDF per document."""
    write_lines(root / "qa" / "finance.jsonl", qa_rows)
    index = []
    for doc_id, domain, pages in documents:
        (root / "pdf").mkdir(parents=True, exist_ok=True)
        write_chinese_pdf(root / "pdf" / f"{doc_id}.pdf", pages)
        index.append({"doc_id": doc_id, "domain": domain, "title": f"标题{doc_id}", "file": f"pdf/{doc_id}.pdf"})
    write_lines(root / "documents.jsonl", index)
    return root


def test_qa_doc_ids_must_be_listed_under_the_same_domain(tmp_path):
    root = make_release(tmp_path, [qa_record(), qa_record(id="fin-ret-002", doc_id="missing-01")],
                        [("finance-01", "finance", [["正文"]])])
    with pytest.raises(InputError, match=r"finance.jsonl line 2 \(id fin-ret-002\): doc_id 'missing-01' is not"):
        release.read_qa(root)
    write_lines(root / "documents.jsonl", [{"doc_id": "finance-01", "domain": "law", "title": "t",
                                            "file": "pdf/finance-01.pdf"}])
    with pytest.raises(InputError, match=r"line 1 \(id fin-ret-001\): domain finance differs"):
        release.read_qa(root)


GOOD_DOCUMENT = {"doc_id": "finance-01", "domain": "finance", "title": "t", "file": "pdf/finance-01.pdf"}


@pytest.mark.parametrize("second, problem", [
    ({**GOOD_DOCUMENT, "doc_id": "finance-02", "file": "pdf/none.pdf"}, "document file .*none.pdf not found"),
    ({k: v for k, v in GOOD_DOCUMENT.items() if k != "title"}, "missing field title"),
    ({**GOOD_DOCUMENT, "doc_id": "finance-02", "domain": "sports"}, "unknown domain 'sports'"),
    (GOOD_DOCUMENT, "duplicate id, first seen at .*documents.jsonl line 1"),
])
def test_document_index_errors(tmp_path, second, problem):
    root = make_release(tmp_path, [qa_record()], [("finance-01", "finance", [["正文"]])])
    write_lines(root / "documents.jsonl", [GOOD_DOCUMENT, second])
    with pytest.raises(InputError, match=rf"documents.jsonl line 2 \(id {second['doc_id']}\): {problem}"):
        release.read_documents(root)


def test_missing_release_and_missing_qa_files(tmp_path):
    with pytest.raises(InputError, match="release folder not found"):
        release.read_qa(tmp_path / "nowhere")
    with pytest.raises(InputError, match=r"no QA files"):
        release.read_qa(tmp_path)
    write_lines(tmp_path / "qa" / "a.jsonl", [""])
    with pytest.raises(InputError, match="no QA pairs"):
        release.read_qa(tmp_path)


# --- PDFs ---------------------------------------------------------------------------------------------

def test_chinese_pdf_round_trip_joins_wrapped_lines_and_drops_empty_pages(tmp_path):
    long_paragraph = ("瑞丰新能源2023年实现营业收入48.6亿元，同比增长12.5%；储能电池板块毛利率22.5%，"
                      "技术服务板块毛利率48.9%，研发投入3.15亿元。")
    pages = [["第一章　总则", long_paragraph], [], ["ＡＢＣ１２３，全角字符。", "English text wraps at spaces in a "
                                                              "narrow box like this one"]]
    root = make_release(tmp_path, [qa_record()], [("finance-01", "finance", pages)])
    rows = release.read_documents(root)
    assert [r["page"] for r in rows] == [1, 3]  # page 2 has no text
    assert all(r["doc_id"] == "finance-01" and r["title"] == "标题finance-01" for r in rows)
    # the narrow box wraps the long paragraph over several lines; extraction must undo that
    assert rows[0]["text"] == "第一章 总则\n" + normalize_text(long_paragraph)
    assert rows[1]["text"] == ("ABC123,全角字符。\n"
                               "English text wraps at spaces in a narrow box like this one")


def test_pdf_without_text_and_non_pdf_are_errors(tmp_path):
    root = make_release(tmp_path, [qa_record()], [("finance-01", "finance", [[], []])])
    with pytest.raises(InputError, match=r"finance-01.pdf \(id finance-01\): no extractable text"):
        release.read_documents(root)
    (root / "pdf" / "finance-01.pdf").write_text("not a pdf")
    with pytest.raises(InputError, match="cannot be read as a PDF"):
        release.read_documents(root)


def test_join_lines():
    assert release.join_lines(["营业收入为48.", "6亿元，同比", " 增长12.5%"]) == "营业收入为48.6亿元，同比增长12.5%"
    assert release.join_lines(["long documents", "", "need retrieval"]) == "long documents need retrieval"


# --- Chinese SimpleQA -----------------------------------------------------------------------------------

def simpleqa_record(**changes):
    record = {"id": "97e7f58a", "primary_category": "中华文化", "secondary_category": "中医",
              "question": "伏兔穴所属的经脉是什么？", "answer": "足阳明胃经", "urls": ["https://example.org/a", ""]}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def test_read_simpleqa(tmp_path):
    path = write_lines(tmp_path / "csqa.jsonl", [simpleqa_record(), simpleqa_record(id="b2", urls=[])])
    rows = release.read_simpleqa(path)
    assert rows == [simpleqa_record(), simpleqa_record(id="b2", urls=[])]


@pytest.mark.parametrize("record, problem", [
    (simpleqa_record(id="b2", urls="https://x"), "field urls must be a list of strings"),
    (simpleqa_record(id="b2", secondary_category=None), "missing field secondary_category"),
    (simpleqa_record(id="b2", answer=" "), "field answer is empty"),
    (simpleqa_record(), "duplicate id"),
])
def test_bad_simpleqa_line(tmp_path, record, problem):
    path = write_lines(tmp_path / "csqa.jsonl", [simpleqa_record(), record])
    with pytest.raises(InputError) as err:
        release.read_simpleqa(path)
    assert f"csqa.jsonl line 2 (id {record['id']}): {problem}" in str(err.value)


@pytest.mark.skipif(not SIMPLEQA_SHARED.exists(), reason="the shared Chinese SimpleQA copy is not on this machine")
def test_read_the_real_chinese_simpleqa():
    rows = release.read_simpleqa(SIMPLEQA_SHARED)
    assert len(rows) == 3000
    assert {r["primary_category"] for r in rows} == {"中华文化", "人文与社会科学", "工程、技术与应用科学",
                                                     "生活、艺术与文化", "社会", "自然与自然科学"}
    assert len({r["secondary_category"] for r in rows}) == 99


# --- fingerprint --------------------------------------------------------------------------------------

def test_fingerprint_follows_content_not_location(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(release.SAMPLE_DIR / "qa", copy / "qa")
    assert release.fingerprint(copy) == release.fingerprint()
    with (copy / "qa" / "news.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(qa_record(id="news-x", domain="news", doc_id="news-01"), ensure_ascii=False) + "\n")
    assert release.fingerprint(copy) != release.fingerprint()
    assert len(release.fingerprint()) == 12


def test_sample_pdfs_hold_exactly_their_sources():
    """The committed PDFs are up to date with data/sample/sources (rebuild with data/sample/make_pdfs.py)."""
    pages = release.read_documents()
    for doc in release.read_document_index():
        source = (release.SAMPLE_DIR / "sources" / f"{doc['doc_id']}.txt").read_text(encoding="utf-8")
        source_pages = [part.replace("# ", "") for part in source.split("<<<page>>>")]
        extracted = [p["text"] for p in pages if p["doc_id"] == doc["doc_id"]]
        assert len(extracted) == len(source_pages) >= 2
        expected = [doc["title"] + "\n" + source_pages[0], *source_pages[1:]]
        for want, got in zip(expected, extracted):
            assert "".join(normalize_text(want).split()) == "".join(got.split()), doc["doc_id"]


# --- hostile or broken release files: InputError naming the file, nothing read outside the release -----------

def test_lone_surrogate_in_a_release_line_names_file_line_and_id(tmp_path):
    path = tmp_path / "qa" / "finance.jsonl"
    line = json.dumps(qa_record(id="fin-ret-002"), ensure_ascii=True).replace("\\u516c", "\\ud800")
    write_lines(path, [qa_record(), line])
    with pytest.raises(InputError) as err:
        release.read_qa(files=[path])
    assert f"{path} line 2 (id fin-ret-002): question (character 1: '\\ud800') holds a lone UTF-16 surrogate" \
        in str(err.value)
    simpleqa = write_lines(tmp_path / "csqa.jsonl", ['{"id": "b\\udc00", "primary_category": "x"}'])
    with pytest.raises(InputError, match=r"csqa.jsonl line 1 \(id b\\udc00\): id \(character 2"):
        release.read_simpleqa(simpleqa)


def test_json_error_column_and_escaped_ids_in_release_messages(tmp_path):
    path = write_lines(tmp_path / "qa" / "a.jsonl", ['{"id": "fin-ret-009", "domain": "finance"'])
    with pytest.raises(InputError, match=r"line 1 \(id fin-ret-009\): not valid JSON \(Expecting ',' delimiter at "
                                         r"line 1, column 42\)"):
        release.read_qa(files=[path])
    write_lines(path, [qa_record(id="x\n\x1b[2J", domain="sp\u202eorts")])
    with pytest.raises(InputError) as err:
        release.read_qa(files=[path])
    assert str(err.value) == (f"{path} line 1 (id x\\n\\x1b[2J): unknown domain 'sp\\u202eorts'; expected one of "
                              "academic, education, finance, law, medical, news")


def test_folders_where_jsonl_files_belong(tmp_path):
    root = make_release(tmp_path, [qa_record()], [("finance-01", "finance", [["正文"]])])
    (root / "documents.jsonl").unlink()
    (root / "documents.jsonl").mkdir()
    with pytest.raises(InputError, match=r"documents.jsonl: is a folder; expected a jsonl file"):
        release.read_qa(root)
    (root / "documents.jsonl").rmdir()
    (root / "qa" / "z.jsonl").mkdir()
    with pytest.raises(InputError, match=r"qa/z.jsonl: is a folder; expected a jsonl file"):
        release.read_qa(root)
    with pytest.raises(InputError, match=rf"{tmp_path}: is a folder; expected a jsonl file"):
        release.read_simpleqa(tmp_path)


def test_document_files_outside_the_release_are_refused_unread(tmp_path):
    root = make_release(tmp_path / "release", [qa_record()], [("finance-01", "finance", [["正文"]])])
    outside = tmp_path / "secret.pdf"
    write_chinese_pdf(outside, [["机密"]])
    (root / "pdf" / "link.pdf").symlink_to(outside)
    (root / "pdf" / "inner.pdf").symlink_to(root / "pdf" / "finance-01.pdf")  # a link that stays inside is fine
    for name in ("../secret.pdf", str(outside), "pdf/link.pdf", "pdf/../../secret.pdf"):
        write_lines(root / "documents.jsonl", [{**GOOD_DOCUMENT, "file": name}])
        with pytest.raises(InputError) as err:
            release.read_documents(root)
        assert str(err.value).startswith(f"{root / 'documents.jsonl'} line 1 (id finance-01): document file "
                                         f"{name!r} is outside the release folder"), name
    write_lines(root / "documents.jsonl", [{**GOOD_DOCUMENT, "file": "pdf/inner.pdf"}])
    assert release.read_documents(root)[0]["text"].endswith("正文")


def test_encrypted_pdf_is_an_input_error(tmp_path):
    root = make_release(tmp_path, [qa_record()], [("finance-01", "finance", [["正文"]])])
    pdf = root / "pdf" / "finance-01.pdf"
    with pymupdf.open(pdf) as document:
        document.save(tmp_path / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    shutil.copy(tmp_path / "locked.pdf", pdf)
    with pytest.raises(InputError, match=r"finance-01.pdf: the PDF is encrypted \(it needs a password"):
        release.read_documents(root)


def test_long_ids_are_refused(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", [qa_record(id="f" * 201)])
    with pytest.raises(InputError, match=r"field id is 201 characters long; at most 200 are allowed"):
        release.read_qa(files=[path])


def test_documents_fingerprint_follows_the_index_and_the_pdfs(tmp_path):
    root = make_release(tmp_path / "a", [qa_record()], [("finance-01", "finance", [["正文"]])])
    before = release.documents_fingerprint(root)
    assert release.documents_fingerprint(shutil.copytree(root, tmp_path / "b")) == before  # content, not place
    write_chinese_pdf(root / "pdf" / "finance-01.pdf", [["正文二"]])
    assert release.documents_fingerprint(root) != before
    assert release.fingerprint(root) == release.fingerprint(tmp_path / "b")  # the QA revision is the QA files'


def test_pdf_pages_are_read_once_and_again_when_the_file_changes(tmp_path, monkeypatch, private_cache):
    """The page texts of a PDF are cached under its sha256 (and the extraction's version): a second read does not
    open the PDF; a changed file, or a damaged cache entry, is read from the PDF again."""
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes((release.SAMPLE_DIR / "pdf").glob("*.pdf").__next__().read_bytes())
    first = release.pdf_pages(pdf)
    assert first and any(first)
    reads = []
    real = release._read_pdf_pages
    monkeypatch.setattr(release, "_read_pdf_pages", lambda path, data: reads.append(path) or real(path, data))
    assert release.pdf_pages(pdf) == first and reads == []
    pdf.write_bytes(pdf.read_bytes() + b"\n%% appended\n")  # still a PDF, another sha256
    assert release.pdf_pages(pdf) == first and len(reads) == 1
    for entry in (private_cache / "pages").glob("*.json"):
        entry.write_text("[1, 2", encoding="utf-8")
    assert release.pdf_pages(pdf) == first and len(reads) == 2
