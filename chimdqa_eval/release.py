"""Reading and validating release files: the ChiMDQA QA jsonl, the documents index and its PDFs, and the
Chinese SimpleQA jsonl.

A release folder (the sample in data/sample, or a full official release passed as ``data_dir``) holds

    qa/*.jsonl        one QA pair per line: id, domain, question_type, level, question, answer, doc_id, and
                      optionally evidence (the pages holding the answer, for retrieval hit@k / recall@k)
    documents.jsonl   one document per line: doc_id, domain, title, file (a PDF path relative to the folder)

Every reader validates each record and raises InputError naming the file, the line and the id; nothing is
skipped. Blank lines are not records and are passed over.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import inspect
import re
import sys
from pathlib import Path

from chimdqa_eval import jsonio
from chimdqa_eval.cache import cache_dir
from chimdqa_eval.schema import (ID_LIMIT, LEVELS, InputError, canonical_domain, canonical_question_type,
                                 category_of, shown, surrogate_problem, too_long, where)
from chimdqa_eval.text import is_wide, normalize_text


def shipped_path(relative: str) -> Path:
    """A file the toolkit ships: in the source tree (editable installs), else under <prefix>/share/chimdqa
    where a wheel install puts it (setup.cfg [options.data_files])."""
    source_tree = Path(__file__).resolve().parent.parent / relative
    installed = Path(sys.prefix) / "share" / "chimdqa" / relative
    return installed if not source_tree.exists() and installed.exists() else source_tree


SAMPLE_DIR = shipped_path("data/sample")
QA_DIR = "qa"
DOCUMENT_INDEX = "documents.jsonl"

QA_FIELDS = ("id", "domain", "question_type", "level", "question", "answer", "doc_id")
QA_COLUMNS = ("id", "domain", "question_type", "category", "level", "question", "answer", "doc_id")
DOCUMENT_FIELDS = ("doc_id", "domain", "title", "file")
SIMPLEQA_FIELDS = ("id", "primary_category", "secondary_category", "question", "answer", "urls")

_ID_IN_RAW_LINE = re.compile(r'"(?:doc_)?id"\s*:\s*"([^"]*)"')


def release_dir(data_dir=None) -> Path:
    path = Path(data_dir) if data_dir is not None else SAMPLE_DIR
    if not path.is_dir():
        raise InputError(f"{path}: release folder not found")
    return path


def qa_files(data_dir=None) -> list[Path]:
    """The QA jsonl files of a release, in name order."""
    folder = release_dir(data_dir) / QA_DIR
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise InputError(f"{folder}: no QA files (*.jsonl) found")
    return files


def id_in_raw_line(raw: str) -> str | None:
    """The id (or doc_id) of a line that is not valid JSON, when it can still be read off the text."""
    found = _ID_IN_RAW_LINE.search(raw)
    return found.group(1) if found else None


def read_jsonl(path):
    """Yield (line number, record) for each non-blank line; InputError at the first line that is not UTF-8, not
    JSON within jsonio's limits, not an object, or holds text that is not text (a lone surrogate)."""
    path = Path(path)
    for number, record, problem in jsonio.iter_jsonl(path, what="jsonl file"):
        if problem is not None:
            raise InputError(f"{where(path, number, id_in_raw_line(record))}: {problem}")
        if not isinstance(record, dict):
            raise InputError(f"{where(path, number)}: expected a JSON object, got {type(record).__name__}")
        problem = surrogate_problem(record)
        if problem:
            raise InputError(f"{_record_location(path, number, record)}: {problem}")
        yield number, record


def _check_fields(record: dict, fields, location: str) -> None:
    missing = [f for f in fields if f not in record]
    if missing:
        raise InputError(f"{location}: missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")


def _text(record: dict, field: str, location: str) -> str:
    value = record[field]
    if not isinstance(value, str):
        raise InputError(f"{location}: field {field} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InputError(f"{location}: field {field} is empty")
    if field in ("id", "doc_id") and (problem := too_long(f"field {field}", value, ID_LIMIT)):
        raise InputError(f"{location}: {problem}")
    return value.strip()


def _record_location(path, number, record) -> str:
    record_id = record.get("id", record.get("doc_id"))
    return where(path, number, record_id if isinstance(record_id, (str, int)) else None)


class _UniqueIds:
    """Remembers where each id was first seen, so a duplicate names both places."""

    def __init__(self):
        self.seen = {}

    def add(self, record_id: str, location: str) -> None:
        if record_id in self.seen:
            raise InputError(f"{location}: duplicate id, first seen at {self.seen[record_id]}")
        self.seen[record_id] = location


def qa_row(record: dict, location: str) -> dict:
    """One validated QA row with the canonical columns (English question type, derived category)."""
    _check_fields(record, QA_FIELDS, location)
    row = {field: _text(record, field, location) for field in ("id", "question", "answer", "doc_id")}
    row["domain"] = canonical_domain(record["domain"], location)
    row["question_type"] = canonical_question_type(record["question_type"], location)
    row["category"] = category_of(row["question_type"])
    if record.get("category", row["category"]) != row["category"]:
        raise InputError(f"{location}: category {shown(record['category'])} contradicts question type "
                         f"{row['question_type']} ({row['category']})")
    level = record["level"].strip().upper() if isinstance(record["level"], str) else record["level"]
    if level not in LEVELS:
        raise InputError(f"{location}: unknown level {shown(record['level'])}; expected one of {', '.join(LEVELS)}")
    row["level"] = level
    evidence_pages(record, location)  # optional, but checked wherever QA rows are read
    return {column: row[column] for column in QA_COLUMNS}


def select_qa(rows, domains=None, question_types=None) -> list[dict]:
    """The QA rows in `domains` and of `question_types` (None: all) — the one selection behind the builder's
    configs and splits and `chimdqa evaluate --config/--split`."""
    return [row for row in rows if (domains is None or row["domain"] in domains)
            and (question_types is None or row["question_type"] in question_types)]


def evidence_pages(record: dict, location: str) -> list[int] | None:
    """The optional ``evidence`` field of a QA record: the document pages (1-based) that hold the answer,
    annotated by hand; None when the record has none."""
    if "evidence" not in record:
        return None
    value = record["evidence"]
    if (not isinstance(value, list) or not value
            or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in value)):
        raise InputError(f"{location}: field evidence must be a non-empty list of page numbers (integers from 1), "
                         f"got {value!r:.60}")
    return sorted(set(value))


def read_evidence(data_dir=None, files=None) -> dict[str, list[int]]:
    """{question id: evidence pages} for the QA records that carry ``evidence`` (see read_qa for the files)."""
    return {record_id: pages for record_id, (pages, _) in evidence_records(data_dir, files).items()}


def evidence_records(data_dir=None, files=None) -> dict[str, tuple[list[int], str]]:
    """{question id: (evidence pages, where the record is: "file line N (id X)")} for the QA records that carry
    ``evidence``, so that a later check of the pages can name the line."""
    paths = [Path(f) for f in files] if files is not None else qa_files(data_dir)
    out = {}
    for path in paths:
        for number, record in read_jsonl(path):
            location = _record_location(path, number, record)
            pages = evidence_pages(record, location)
            if pages is not None:
                out[str(record.get("id", "")).strip()] = (pages, location)
    return out


def read_qa(data_dir=None, files=None, evidence: bool = False) -> list[dict]:
    """Validated QA rows of a release (or of the given jsonl files), in file order; with evidence, each row also
    has ``evidence``, its evidence pages ([] when the record has none), as the loader's QA configs do.

    When the release has a documents index, every doc_id must be listed there under the same domain."""
    paths = [Path(f) for f in files] if files is not None else qa_files(data_dir)
    index = None
    if files is None and (release_dir(data_dir) / DOCUMENT_INDEX).exists():
        index = {doc["doc_id"]: doc for doc in read_document_index(data_dir)}
    ids = _UniqueIds()
    rows = []
    for path in paths:
        for number, record in read_jsonl(path):
            location = _record_location(path, number, record)
            row = qa_row(record, location)
            if evidence:
                row["evidence"] = evidence_pages(record, location) or []
            ids.add(row["id"], location)
            if index is not None:
                _check_document(row, index, location)
            rows.append(row)
    if not rows:
        raise InputError(f"{', '.join(map(str, paths))}: no QA pairs")
    return rows


def _check_document(row: dict, index: dict, location: str) -> None:
    document = index.get(row["doc_id"])
    if document is None:
        raise InputError(f"{location}: doc_id {shown(row['doc_id'])} is not listed in {DOCUMENT_INDEX}")
    if document["domain"] != row["domain"]:
        raise InputError(f"{location}: domain {row['domain']} differs from its document's domain "
                         f"{document['domain']} ({shown(row['doc_id'], quoted=False)})")


def read_document_index(data_dir=None) -> list[dict]:
    """Validated rows of documents.jsonl; ``file`` becomes a Path inside the release folder that must exist
    (a relative path that leaves the folder, an absolute path or a link out of it is an error, never read)."""
    folder = release_dir(data_dir)
    path = folder / DOCUMENT_INDEX
    ids = _UniqueIds()
    documents = []
    for number, record in read_jsonl(path):
        location = _record_location(path, number, record)
        _check_fields(record, DOCUMENT_FIELDS, location)
        doc = {field: _text(record, field, location) for field in ("doc_id", "title", "file")}
        doc["domain"] = canonical_domain(record["domain"], location)
        doc["file"] = _document_file(folder, doc["file"], location)
        ids.add(doc["doc_id"], location)
        documents.append(doc)
    if not documents:
        raise InputError(f"{path}: no documents listed")
    return documents


def _document_file(folder: Path, name: str, location: str) -> Path:
    """folder / name, checked to be a file inside the release folder (after following links)."""
    path = folder / name
    if Path(name).is_absolute() or not path.resolve().is_relative_to(folder.resolve()):
        raise InputError(f"{location}: document file {shown(name, 200)} is outside the release folder {folder}; "
                         "give a path relative to the folder, inside it")
    if not path.is_file():
        raise InputError(f"{location}: document file {shown(str(path), 200, quoted=False)} not found"
                         + (" (it is a folder)" if path.is_dir() else ""))
    return path


def read_documents(data_dir=None) -> list[dict]:
    """One row per non-empty page of every listed PDF: doc_id, domain, title, page (1-based), text."""
    rows = []
    for doc in read_document_index(data_dir):
        pages = pdf_pages(doc["file"])
        if not any(pages):
            raise InputError(f"{where(doc['file'], record_id=doc['doc_id'])}: no extractable text on any page "
                             "(a scanned PDF needs OCR first)")
        rows.extend({"doc_id": doc["doc_id"], "domain": doc["domain"], "title": doc["title"],
                     "page": number, "text": text}
                    for number, text in enumerate(pages, start=1) if text)
    return rows


def pdf_pages(path) -> list[str]:
    """Normalized text of each page of a PDF (empty string for a page without text), read with PyMuPDF. Kept in
    $CHIMDQA_CACHE/pages under the file's sha256 and the extraction's own version (pymupdf's, and a digest of the
    code that turns a page into text), so a PDF is read once until it or the extraction changes."""
    data = Path(path).read_bytes() if Path(path).is_file() else None
    key = hashlib.sha256(data + _extraction_version().encode()).hexdigest() if data is not None else None
    cached = cache_dir("pages") / f"{key}.json" if key else None
    if cached is not None and cached.is_file():
        try:
            pages = jsonio.read_json(cached, what="page cache")
            if isinstance(pages, list) and all(isinstance(p, str) for p in pages):
                return pages
        except InputError:
            pass  # a damaged entry is read again from the PDF and rewritten
    pages = _read_pdf_pages(path, data)
    if cached is not None:
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs time
            jsonio.write_json_atomic(cached, pages, indent=None)
    return pages


@functools.lru_cache(maxsize=1)
def _extraction_version() -> str:
    """pymupdf's version and a digest of the functions that make a page's text (a change to them changes what a
    cached page would say)."""
    code = "".join(inspect.getsource(f) for f in (_read_pdf_pages, page_text, join_lines, normalize_text, is_wide))
    return f"pymupdf-{importlib.metadata.version('pymupdf')}|{hashlib.sha256(code.encode()).hexdigest()[:16]}"


def _read_pdf_pages(path, data: bytes | None = None) -> list[str]:
    """The pages of the PDF at `path`, read from `data` when given: the very bytes pdf_pages hashed, so the
    file is read once and its cache key always names what was parsed."""
    import pymupdf  # imported here so that reading QA files never needs it

    try:
        document = pymupdf.open(path) if data is None else pymupdf.open(stream=data, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError) as err:
        raise InputError(f"{path}: cannot be read as a PDF ({err})") from None
    with document:
        if document.needs_pass:
            raise InputError(f"{path}: the PDF is encrypted (it needs a password to open); release it decrypted")
        return [page_text(page) for page in document]


def page_text(page) -> str:
    """Text blocks of a PyMuPDF page, each with its layout line breaks removed, one block per line."""
    blocks = [join_lines(block[4].split("\n")) for block in page.get_text("blocks") if block[6] == 0]
    return normalize_text("\n".join(blocks))


def join_lines(lines) -> str:
    """Undo line wrapping inside a text block. Chinese text wraps anywhere, even inside a number such as
    48.6, so a block with any wide (CJK) character joins its lines directly; other blocks join with a space."""
    lines = [line.strip() for line in lines if line.strip()]
    wide = any(is_wide(char) for line in lines for char in line)
    return ("" if wide else " ").join(lines)


def read_simpleqa(path) -> list[dict]:
    """Validated Chinese SimpleQA rows (id, primary_category, secondary_category, question, answer, urls)."""
    ids = _UniqueIds()
    rows = []
    for number, record in read_jsonl(path):
        location = _record_location(path, number, record)
        _check_fields(record, SIMPLEQA_FIELDS, location)
        row = {field: _text(record, field, location) for field in SIMPLEQA_FIELDS[:-1]}
        urls = record["urls"]
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise InputError(f"{location}: field urls must be a list of strings")
        row["urls"] = urls
        ids.add(row["id"], location)
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no questions")
    return rows


def fingerprint(data_dir=None, files=None) -> str:
    """Short sha256 over the QA files' names and bytes: the dataset revision recorded with results."""
    paths = [Path(f) for f in files] if files is not None else qa_files(data_dir)
    return files_digest((path.name, path) for path in paths)


def documents_fingerprint(data_dir=None) -> str:
    """Short sha256 over documents.jsonl and every file it lists (names relative to the release folder, and
    bytes): what the documents config's rows are made of."""
    folder = release_dir(data_dir)
    paths = [folder / DOCUMENT_INDEX] + [doc["file"] for doc in read_document_index(data_dir)]
    return files_digest((path.relative_to(folder).as_posix(), path) for path in paths)


def files_digest(named_paths) -> str:
    """Short sha256 over (name, bytes) of each file, in name order; a file that is not there counts as such
    (whoever reads it reports that)."""
    digest = hashlib.sha256()
    for name, path in sorted(named_paths, key=lambda pair: pair[0]):
        content = path.read_bytes() if path.is_file() else b"\0missing"
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0" + content + b"\0")
    return digest.hexdigest()[:12]
