"""Breakdowns by document length and by evidence position: the two labels every ChiMDQA question gets from its
release, so that any score can be read the way long-document studies read theirs (LongBench-E by context length,
CLongEval and "lost in the middle" by where the evidence sits).

    length_labels((32000, 64000, 128000))       -> ["0-32k", "32k-64k", "64k-128k", "128k+"]
    length_bucket(70000, (32000, 64000, 128000)) -> "64k-128k"
    position_bucket([5], 9, 3)                    -> "33-67%"   (page 5 of 9: its centre at 0.5)
    position_bucket([1, 9], 9, 3)                 -> "spread"   (evidence in more than one bin)

A document's length is the number of tokens of its extracted page texts, split by the toolkit's tokenizer
(chimdqa_eval.text.tokenize, the evaluation's --tokenizer; its signature is recorded). A page's relative place is
the relative place of its centre, (page - 0.5) / pages, in a PDF of `pages` pages (empty pages count: evidence
pages are numbered in the PDF); bins split [0, 1) evenly. A question whose evidence pages fall into one bin gets
that bin; one whose pages fall into several gets SPREAD (neither beginning nor end, and not the middle either);
one without evidence pages gets none and is counted apart (n_without_evidence), never dropped silently.
"""
from __future__ import annotations

from chimdqa_eval import release
from chimdqa_eval.schema import InputError, where
from chimdqa_eval.signature import make_signature
from chimdqa_eval.text import tokenize

# LongBench-E splits at 4k and 8k words because its contexts run from about 1k to 20k; ChiMDQA's documents are
# about 140 pages, tens of thousands to several hundred thousand characters, which such bounds would put in one
# bucket. jieba gives about one token per two Chinese characters (0.51 on the sample), so the release spans
# roughly 10k to 200k+ tokens; doubling bounds as LongBench-E's do, at 32k, 64k and 128k, split it into four
# buckets of a handful of documents to a score each. In a chat model's own tokens (0.6-1 per Chinese
# character, see generate/packing.py) that is about twice as many: the first bucket is what a 64k-context model
# reads whole, the second what a 128k one does, the last what none of the usual windows holds.
DEFAULT_LENGTH_BUCKETS = (32000, 64000, 128000)
DEFAULT_POSITION_BINS = 3  # thirds: beginning, middle, end
SPREAD = "spread"
COLUMNS = ("doc_length", "evidence_position")  # the breakdown columns, in results.json's `by`


def _tokens_text(n: int) -> str:
    return f"{n // 1000}k" if n and n % 1000 == 0 else str(n)


def check_buckets(bounds, flag: str = "--length-buckets") -> tuple[int, ...]:
    """The bucket bounds as a tuple, or InputError when they are not increasing positive whole numbers."""
    bounds = tuple(bounds)
    if not bounds or any(not isinstance(b, int) or isinstance(b, bool) or b < 1 for b in bounds) or any(
            a >= b for a, b in zip(bounds, bounds[1:])):
        raise InputError(f"{flag}: expected increasing token counts from 1 (e.g. 32000 64000 128000), got "
                         f"{' '.join(map(str, bounds)) or 'nothing'}")
    return bounds


def length_labels(bounds) -> list[str]:
    """The buckets' labels, shortest first: "0-32k", ..., "128k+"."""
    edges = [0, *bounds]
    return [f"{_tokens_text(a)}-{_tokens_text(b)}" for a, b in zip(edges, edges[1:])] + [f"{_tokens_text(bounds[-1])}+"]


def length_bucket(tokens: int, bounds) -> str:
    """The label of the bucket holding a document of `tokens` tokens (a bound belongs to the bucket above it)."""
    return length_labels(bounds)[sum(tokens >= b for b in bounds)]


def position_labels(bins: int) -> list[str]:
    """The bins' labels, from the document's start: "0-33%", "33-67%", "67-100%" for thirds; then SPREAD."""
    return [f"{round(100 * b / bins)}-{round(100 * (b + 1) / bins)}%" for b in range(bins)] + [SPREAD]


def relative_place(page: int, n_pages: int) -> float:
    """Where a page's centre lies in its document, from 0 (start) to 1 (end)."""
    return (page - 0.5) / n_pages


def position_bucket(evidence, n_pages: int, bins: int) -> str | None:
    """The bin label of a question's evidence pages (SPREAD when they lie in several bins), None without any."""
    if not evidence:
        return None
    found = {min(int(relative_place(p, n_pages) * bins), bins - 1) for p in evidence}
    return position_labels(bins)[found.pop()] if len(found) == 1 else SPREAD


def question_labels(rows, evidence: dict, documents: dict, bounds, bins: int, locations: dict | None = None) -> dict:
    """{question id: {"doc_length": label, "evidence_position": label or None}} for QA rows (id, doc_id), from
    `evidence` {id: pages} and `documents` {doc_id: {"pages", "tokens", "file"}}. An evidence page past the end of
    its document is an InputError naming the question (where `locations` {id: "file line N (id X)"} has it) and
    the document's file."""
    out = {}
    for row in rows:
        location = (locations or {}).get(row["id"]) or where(record_id=row["id"])
        document = documents.get(row["doc_id"])
        if document is None:
            raise InputError(f"{location}: its document {row['doc_id']!r} is not listed in the "
                             "release's documents.jsonl")
        pages = evidence.get(row["id"]) or []
        beyond = [p for p in pages if p > document["pages"]]
        if beyond:
            raise InputError(f"{location}: evidence page {beyond[0]}, but its document "
                             f"{row['doc_id']} ({document['file']}) has {document['pages']} pages")
        out[row["id"]] = {"doc_length": length_bucket(document["tokens"], bounds),
                          "evidence_position": position_bucket(pages, document["pages"], bins)}
    return out


def summary(labels: dict, documents: dict, bounds, bins: int, tokenizer_signature: str) -> dict:
    """results.json's `document_breakdowns`: how the two columns were made (signature, buckets, bins), the questions
    per label, those without evidence (no position) and each document's pages and tokens."""
    values = list(labels.values())
    length_order, position_order = length_labels(bounds), position_labels(bins)
    return {
        "signature": make_signature({"length": "document-tokens", "tok": tokenizer_signature,
                                     "buckets": ",".join(map(str, bounds)), "position": "evidence-page-centre",
                                     "bins": bins}),
        "tokenizer": tokenizer_signature, "length_buckets": list(bounds), "position_bins": bins,
        "n_questions": {"doc_length": {label: sum(v["doc_length"] == label for v in values)
                                       for label in length_order},
                        "evidence_position": {label: sum(v["evidence_position"] == label for v in values)
                                              for label in position_order}},
        "n_without_evidence": sum(v["evidence_position"] is None for v in values),
        "documents": {doc_id: {"pages": d["pages"], "tokens": d["tokens"]} for doc_id, d in documents.items()},
    }


def label_order(bounds, bins: int) -> dict:
    """{column: its labels in order}, for the breakdowns (aggregate.summarize's label_order)."""
    return {"doc_length": length_labels(bounds), "evidence_position": position_labels(bins)}


def document_sizes(data_dir, doc_ids, tokenizer: str) -> dict:
    """{doc_id: {"pages": PDF pages, "tokens": tokens of its page texts, "file"}} for the release's documents
    named in `doc_ids` (reads their PDFs; the I/O edge of this module)."""
    sizes = {}
    for doc in release.read_document_index(data_dir):
        if doc["doc_id"] in doc_ids:
            pages = release.pdf_pages(doc["file"])
            sizes[doc["doc_id"]] = {"pages": len(pages), "tokens": sum(len(tokenize(p, tokenizer)) for p in pages),
                                    "file": str(doc["file"])}
    return sizes
