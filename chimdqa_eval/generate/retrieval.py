"""RAG mode's retrieval: chunks of the question's document ranked by BM25 over jieba tokens (bm25s), or by a
sentence-transformers encoder (dense), or both fused (hybrid: reciprocal rank fusion), optionally re-ranked by a
cross-encoder; the top k go into the prompt and into `retrieved_contexts`.

Every question is answered from its own document, so each document has its own index. Indexes live on disk
under cache_dir("retrieval")/<key>/, where the key hashes the documents' page texts, the chunking settings, the
tokenizer and the bm25s version (and a dense encoder's identity names its embeddings file there): a second run
on the same release loads them instead of tokenizing every page again. sentence-transformers is the `rag`
extra, which only dense retrieval imports; a re-ranker is any sequence-pair classifier (cross-encoder) run by
chimdqa_eval.models.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from chimdqa_eval import models
from chimdqa_eval.cache import cache_dir
from chimdqa_eval.generate.chunking import Chunk, chunk_pages
from chimdqa_eval.jsonio import write_atomic
from chimdqa_eval.models import encode_sentences, pair_logits
from chimdqa_eval.schema import InputError
from chimdqa_eval.signature import package_version
from chimdqa_eval.text import tokenize_many, tokenizer_signature

METHODS = ("bm25", "dense", "hybrid")
RRF_K = 60  # reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, 2009)
INDEX_VERSION = "3"  # 2: long runs of heading-like lines (tables) are body text; overlap within the size;
#                     3: chunks within one page
TOKENIZE_GROUP_CHARS = 1_000_000  # characters of chunk text tokenized at once when an index is built


@dataclass(frozen=True)
class RetrievalSettings:
    method: str = "bm25"
    top_k: int = 5
    chunk_size: int = 400
    chunk_overlap: int = 80
    embedding_model: str | None = None
    reranker: str | None = None
    rerank_candidates: int = 20

    def __post_init__(self):
        if self.method not in METHODS:
            raise InputError(f"--retrieval {self.method!r}: expected one of {', '.join(METHODS)}")
        if self.method != "bm25" and not self.embedding_model:
            raise InputError(f"--retrieval {self.method} needs an encoder: --embedding-model NAME_OR_PATH")
        if self.top_k < 1:
            raise InputError(f"--top-k: expected at least 1, got {self.top_k}")
        if self.chunk_size < 1 or not 0 <= self.chunk_overlap < self.chunk_size:
            raise InputError(f"--chunk-size {self.chunk_size} / --chunk-overlap {self.chunk_overlap}: expected "
                             "a size of at least 1 and 0 <= overlap < size")
        if self.reranker and self.rerank_candidates < self.top_k:
            raise InputError(f"--rerank-candidates {self.rerank_candidates} must be at least --top-k {self.top_k}")

    def metadata(self) -> dict:
        out = asdict(self)
        if not self.reranker:
            del out["rerank_candidates"]
        out["bm25"] = {"library": f"bm25s-{package_version('bm25s')}", "variant": "lucene", "k1": 1.5, "b": 0.75,
                       "tokenizer": tokenizer_signature("jieba")} if self.method != "dense" else None
        out["chunking"] = "heading-, paragraph- and page-aware (a chunk within one page), sizes in characters"
        return out


def bm25_tokens(texts) -> list[list[str]]:
    """jieba tokens (text.tokenize, the project's one tokenizer) that carry a letter or digit, lower-cased:
    punctuation would match every chunk."""
    return [[t.lower() for t in tokens if any(c.isalnum() for c in t)] for tokens in tokenize_many(texts)]


def documents_fingerprint(pages_by_doc: dict) -> str:
    """sha256 over every document's id, page numbers and page texts: what an index was built from."""
    digest = hashlib.sha256()
    for doc_id in sorted(pages_by_doc):
        digest.update(doc_id.encode() + b"\0")
        for page, text in pages_by_doc[doc_id]:
            digest.update(f"{page}\0".encode() + text.encode("utf-8") + b"\0")
    return digest.hexdigest()


def model_identity(name: str) -> str:
    """A model's cache identity: for a local folder its files' names, sizes and modification times (a re-saved
    model is re-encoded); for a Hub name, the name."""
    path = Path(name)
    if not path.is_dir():
        return name
    digest = hashlib.sha256(str(path.resolve()).encode())
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(path)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def rank_top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the k highest scores; ties keep document order (the earlier chunk first)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def reciprocal_rank_fusion(rankings, k: int = RRF_K) -> list[int]:
    """One ranking from several (lists of indices, best first): sum of 1 / (k + rank), rank from 1; ties keep
    the order of first appearance."""
    scores: dict = {}
    for ranking in rankings:
        for rank, index in enumerate(ranking, 1):
            scores[index] = scores.get(index, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda i: -scores[i])


class _Index:
    """One document's chunks, its BM25 index and (for dense / hybrid) its normalized chunk embeddings."""

    def __init__(self, chunks, bm25=None, embeddings=None):
        self.chunks = chunks
        self.bm25 = bm25
        self.embeddings = embeddings


class Retriever:
    """Build or load the indexes of the given documents ({doc_id: [(page, text)]}), then `search_all`."""

    def __init__(self, pages_by_doc: dict, settings: RetrievalSettings, *, device=None, download: bool = False):
        self.settings = settings
        self.device = device
        self.download = download
        self.fingerprint = documents_fingerprint(pages_by_doc)
        key_fields = {"index": INDEX_VERSION, "documents": self.fingerprint, "chunk_size": settings.chunk_size,
                      "chunk_overlap": settings.chunk_overlap, "tokenizer": tokenizer_signature("jieba"),
                      "bm25s": package_version("bm25s")}
        self.key = hashlib.sha256(json.dumps(key_fields, sort_keys=True).encode()).hexdigest()[:20]
        self.folder = cache_dir("retrieval") / self.key
        self.indexes = {doc_id: _Index(chunk_pages(doc_id, pages, settings.chunk_size, settings.chunk_overlap))
                        for doc_id, pages in pages_by_doc.items()}
        self.cached = {"bm25": False, "embeddings": False}
        if settings.method != "dense":
            self._load_or_build_bm25()
        if settings.method != "bm25":
            self._load_or_build_embeddings()
        self._reranker = _load("classifier", settings.reranker, device, download) if settings.reranker else None

    @property
    def n_chunks(self) -> int:
        return sum(len(index.chunks) for index in self.indexes.values())

    def _doc_order(self) -> list[str]:
        return sorted(self.indexes)

    def _load_or_build_bm25(self) -> None:
        import bm25s

        target = self.folder / "bm25"
        if (target / "done").is_file():
            for number, doc_id in enumerate(self._doc_order()):
                if (target / str(number)).is_dir():  # none for a document without any term
                    self.indexes[doc_id].bm25 = bm25s.BM25.load(str(target / str(number)))
            self.cached["bm25"] = True
            return
        order = self._doc_order()
        built = {}
        sizes = [sum(len(c.search_text) for c in self.indexes[d].chunks) for d in order]
        for group in _groups(order, sizes, TOKENIZE_GROUP_CHARS):
            # Documents are tokenized a group at a time: large enough for tokenize_many's worker processes, small
            # enough that the token lists of a whole release are never in memory at once.
            tokens = iter(bm25_tokens([c.search_text for doc_id in group for c in self.indexes[doc_id].chunks]))
            for doc_id in group:
                doc_tokens = [next(tokens) for _ in self.indexes[doc_id].chunks]
                if not any(doc_tokens):
                    continue  # no chunk or no term (a page without a text layer): bm25s cannot index it
                index = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
                index.index(doc_tokens, show_progress=False)
                built[doc_id] = index
        with _atomic_folder(target) as scratch:
            for number, doc_id in enumerate(order):
                if doc_id in built:
                    built[doc_id].save(str(scratch / str(number)))
            (scratch / "done").write_text(json.dumps(order), encoding="utf-8")
        for doc_id, index in built.items():
            self.indexes[doc_id].bm25 = index

    def _load_or_build_embeddings(self) -> None:
        identity = hashlib.sha256(model_identity(self.settings.embedding_model).encode()).hexdigest()[:16]
        path = self.folder / f"embeddings-{identity}.npy"
        order = self._doc_order()
        self._encoder = _load("encoder", self.settings.embedding_model, self.device, self.download)
        if path.is_file():
            matrix = np.load(path)
            self.cached["embeddings"] = True
        else:
            texts = [c.search_text for doc_id in order for c in self.indexes[doc_id].chunks]
            matrix = self._encode(texts)
            path.parent.mkdir(parents=True, exist_ok=True)
            buffer = io.BytesIO()
            np.save(buffer, matrix)
            write_atomic(path, buffer.getvalue())
        start = 0
        for doc_id in order:
            n = len(self.indexes[doc_id].chunks)
            self.indexes[doc_id].embeddings = matrix[start:start + n]
            start += n

    def _encode(self, texts) -> np.ndarray:
        return encode_sentences(self._encoder, texts)

    def search_all(self, questions, doc_ids) -> list[list[Chunk]]:
        """The top-k chunks of each question's document, best first."""
        settings = self.settings
        first_k = settings.rerank_candidates if settings.reranker else settings.top_k
        query_tokens = bm25_tokens(questions) if settings.method != "dense" else None
        query_vectors = self._encode(questions) if settings.method != "bm25" else None
        results = []
        for i, doc_id in enumerate(doc_ids):
            index = self.indexes[doc_id]
            rankings = []
            if query_tokens is not None:
                # A document without any term (no index) or a question without one scores every chunk 0: the
                # ranking is the document order.
                scores = np.zeros(len(index.chunks))
                if index.bm25 is not None and query_tokens[i]:
                    scores = np.asarray(index.bm25.get_scores(query_tokens[i]))
                rankings.append(rank_top(scores, len(index.chunks)))
            if query_vectors is not None:
                rankings.append(rank_top(index.embeddings @ query_vectors[i], len(index.chunks)))
            ranking = rankings[0] if len(rankings) == 1 else reciprocal_rank_fusion(rankings)
            results.append([index.chunks[j] for j in ranking[:first_k]])
        if self._reranker is not None:
            results = self._rerank(questions, results)
        return results

    def _rerank(self, questions, candidates) -> list[list[Chunk]]:
        """Candidates re-ordered by the cross-encoder's relevance logit (its last class) for (question, chunk)."""
        pairs = [(q, c.search_text) for q, chunks in zip(questions, candidates) for c in chunks]
        scores = iter(pair_logits(self._reranker, pairs, desc="re-ranking")[:, -1] if pairs else ())
        out = []
        for chunks in candidates:
            chunk_scores = np.array([next(scores) for _ in chunks])
            out.append([chunks[j] for j in rank_top(chunk_scores, self.settings.top_k)])
        return out


def _groups(items, sizes, budget: int):
    """Consecutive groups of items whose sizes add up to about `budget` (an item larger than it goes alone)."""
    group, total = [], 0
    for item, size in zip(items, sizes):
        if group and total + size > budget:
            yield group
            group, total = [], 0
        group.append(item)
        total += size
    if group:
        yield group


class _atomic_folder:
    """Write a folder under a scratch name and move it into place whole: a killed build leaves no half index."""

    def __init__(self, target: Path):
        self.target = target

    def __enter__(self) -> Path:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(dir=self.target.parent, prefix=".build-"))
        return self.scratch

    def __exit__(self, kind, *rest):
        if kind is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            return
        if self.target.exists():  # another run finished the same index meanwhile
            shutil.rmtree(self.scratch, ignore_errors=True)
        else:
            os.replace(self.scratch, self.target)


def _load(kind: str, name: str, device, download: bool):
    """The dense encoder or the re-ranker, or InputError saying what to install or pass."""
    try:
        if kind == "encoder":
            return models.load_sentence_encoder(name, "embedding", device=device, download=download)
        return models.load_model("classifier", name, "re-ranker", device=device, download=download)
    except models.ModelUnavailable as err:
        raise InputError(str(err)) from None
