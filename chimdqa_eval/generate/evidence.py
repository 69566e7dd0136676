"""Retrieval quality against hand-annotated evidence pages: hit@k and recall@k, overall and per label.

For one question with evidence pages E and retrieved chunks from pages p_1 ... p_k (a chunk holds the text of one
page, the page it is cited by, and counts for that page only): hit@k = 1 when some p_i is an evidence page, else
0; recall@k = |E ∩ {p_1, ..., p_k}| / |E|.
Both are averaged over the questions that have evidence and reported on 0-100 like every other score.
"""
from __future__ import annotations

from chimdqa_eval.aggregate import group_indices
from chimdqa_eval.report.results import LABEL_ORDER


def evidence_hit(retrieved_pages, evidence) -> float:
    """1.0 when a retrieved chunk (given by its page number) comes from an evidence page."""
    return float(bool(set(evidence) & set(retrieved_pages)))


def evidence_recall(retrieved_pages, evidence) -> float:
    """Share of the evidence pages that some retrieved chunk comes from."""
    evidence = set(evidence)
    return len(evidence & set(retrieved_pages)) / len(evidence)


def _means(hits, recalls, indices) -> dict:
    n = len(indices)
    return {"hit_at_k": round(100 * sum(hits[i] for i in indices) / n, 4),
            "recall_at_k": round(100 * sum(recalls[i] for i in indices) / n, 4), "n": n}


def retrieval_quality(retrieved_pages, evidence, k: int, labels: dict | None = None) -> dict | None:
    """{"k", "hit_at_k", "recall_at_k", "n", "n_without_evidence", "by": {column: {label: {...}}}} over the
    questions with evidence (None when none has any). `retrieved_pages[i]` holds the page of each chunk
    question i got; `evidence[i]` its evidence pages (None or empty: not annotated); `labels` maps a column
    name (question_type, domain) to one label per question."""
    annotated = [i for i, e in enumerate(evidence) if e]
    if not annotated:
        return None
    hits = {i: evidence_hit(retrieved_pages[i], evidence[i]) for i in annotated}
    recalls = {i: evidence_recall(retrieved_pages[i], evidence[i]) for i in annotated}
    out = {"k": k, **_means(hits, recalls, annotated), "n_without_evidence": len(evidence) - len(annotated),
           "by": {}}
    for column, values in (labels or {}).items():
        groups = group_indices([values[i] for i in annotated], LABEL_ORDER.get(column, ()))
        out["by"][column] = {label: _means(hits, recalls, [annotated[j] for j in positions])
                             for label, positions in groups.items()}
    return out
