"""RAGChecker's eleven metrics as pure functions of boolean entailment structures, one query at a time.

The four structures of a query (True = entailed), with RAGChecker's orientation (rows are claims):

    answer2response     (n_response_claims,)          response claim entailed by the reference answer
    response2answer     (n_reference_claims,)         reference claim entailed by the response
    retrieved2response  (n_response_claims, n_chunks) response claim entailed by each retrieved chunk
    retrieved2answer    (n_reference_claims, n_chunks) reference claim entailed by each retrieved chunk

Every metric is a share in [0, 1]; an undefined share (no claims, no chunks) is 0, as in RAGChecker, whose
per-query numbers these functions reproduce exactly — with one exception: for a query with reference claims but
no retrieved chunk, RAGChecker's claim_recall is NaN (a mean over an empty axis), ours is 0 like its other
metrics, so one such query does not turn the corpus mean into NaN. Corpus scores are the mean over queries,
times 100.
"""
from __future__ import annotations

import numpy as np

from chimdqa_eval.schema import InputError

OVERALL = ("precision", "recall", "f1")
RETRIEVER = ("claim_recall", "context_precision")
GENERATOR = ("context_utilization", "noise_sensitivity_in_relevant", "noise_sensitivity_in_irrelevant",
             "hallucination", "self_knowledge", "faithfulness")
ALL_METRICS = OVERALL + RETRIEVER + GENERATOR
GROUPS = {"overall": OVERALL, "retriever": RETRIEVER, "generator": GENERATOR}

STRUCTURES = ("answer2response", "response2answer", "retrieved2response", "retrieved2answer")
LABELS = ("Entailment", "Neutral", "Contradiction")

# Which structures each metric reads: only these are ever extracted and checked.
REQUIREMENTS = {
    "precision": ("answer2response",),
    "recall": ("response2answer",),
    "f1": ("answer2response", "response2answer"),
    "claim_recall": ("retrieved2answer",),
    "context_precision": ("retrieved2answer",),
    "context_utilization": ("retrieved2answer", "response2answer"),
    "noise_sensitivity_in_relevant": ("retrieved2response", "answer2response", "retrieved2answer"),
    "noise_sensitivity_in_irrelevant": ("retrieved2response", "answer2response", "retrieved2answer"),
    "hallucination": ("retrieved2response", "answer2response"),
    "self_knowledge": ("retrieved2response", "answer2response"),
    "faithfulness": ("retrieved2response",),
}
# Whose claims each structure checks.
CLAIMS_OF = {"answer2response": "response", "retrieved2response": "response",
             "response2answer": "reference", "retrieved2answer": "reference"}


def resolve_metrics(metrics) -> tuple[str, ...]:
    """Metric names (or the group names overall / retriever / generator / all) -> metric names in table order."""
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    wanted = set()
    for name in names:
        if name == "all":
            wanted.update(ALL_METRICS)
        elif name in GROUPS:
            wanted.update(GROUPS[name])
        elif name in REQUIREMENTS:
            wanted.add(name)
        else:
            raise InputError(f"unknown RAG metric {name!r}; expected metric names {', '.join(ALL_METRICS)} "
                             f"or groups {', '.join(GROUPS)}, all")
    if not wanted:
        raise InputError("no RAG metric requested")
    return tuple(m for m in ALL_METRICS if m in wanted)


def required_structures(metrics) -> tuple[str, ...]:
    needed = {s for m in metrics for s in REQUIREMENTS[m]}
    return tuple(s for s in STRUCTURES if s in needed)


def _share(mask: np.ndarray) -> float:
    return float(np.mean(mask)) if mask.size else 0.0


def _supported(matrix: np.ndarray) -> np.ndarray:
    """Per claim: entailed by at least one chunk (False for every claim when there are no chunks)."""
    return matrix.any(axis=1)


def precision(answer2response) -> float:
    return _share(answer2response)


def recall(response2answer) -> float:
    return _share(response2answer)


def f1(answer2response, response2answer) -> float:
    p, r = precision(answer2response), recall(response2answer)
    return 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0


def claim_recall(retrieved2answer) -> float:
    return _share(_supported(retrieved2answer))


def context_precision(retrieved2answer) -> float:
    """Share of chunks entailing some reference claim; 0 when the reference has no claims (RAGChecker)."""
    if retrieved2answer.shape[0] == 0:
        return 0.0
    return _share(retrieved2answer.any(axis=0))


def context_utilization(retrieved2answer, response2answer) -> float:
    recalled = _supported(retrieved2answer)
    if not recalled.any():
        return 0.0
    return float(np.sum(recalled & response2answer) / np.sum(recalled))


def _noise_sensitivity(retrieved2response, answer2response, retrieved2answer) -> tuple[float, float]:
    """(in relevant, in irrelevant): incorrect response claims entailed by a relevant chunk / only by irrelevant
    ones. A chunk is relevant when it entails some reference claim. 0 when any side has nothing to compare."""
    if 0 in retrieved2response.shape or retrieved2answer.shape[0] == 0:
        return 0.0, 0.0
    relevant = retrieved2answer.any(axis=0)
    from_relevant = (retrieved2response & relevant).any(axis=1)
    only_irrelevant = (retrieved2response & ~relevant).any(axis=1) & ~from_relevant
    incorrect = ~answer2response
    return _share(from_relevant & incorrect), _share(only_irrelevant & incorrect)


def noise_sensitivity_in_relevant(retrieved2response, answer2response, retrieved2answer) -> float:
    return _noise_sensitivity(retrieved2response, answer2response, retrieved2answer)[0]


def noise_sensitivity_in_irrelevant(retrieved2response, answer2response, retrieved2answer) -> float:
    return _noise_sensitivity(retrieved2response, answer2response, retrieved2answer)[1]


def _unsupported(retrieved2response, answer2response, correct: bool) -> float:
    """Share of response claims entailed by no chunk and (in)correct; 0 without claims or without chunks."""
    if 0 in retrieved2response.shape:
        return 0.0
    return _share(~_supported(retrieved2response) & (answer2response == correct))


def hallucination(retrieved2response, answer2response) -> float:
    return _unsupported(retrieved2response, answer2response, correct=False)


def self_knowledge(retrieved2response, answer2response) -> float:
    return _unsupported(retrieved2response, answer2response, correct=True)


def faithfulness(retrieved2response) -> float:
    return _share(_supported(retrieved2response))


FORMULAS = {
    "precision": precision, "recall": recall, "f1": f1,
    "claim_recall": claim_recall, "context_precision": context_precision,
    "context_utilization": context_utilization,
    "noise_sensitivity_in_relevant": noise_sensitivity_in_relevant,
    "noise_sensitivity_in_irrelevant": noise_sensitivity_in_irrelevant,
    "hallucination": hallucination, "self_knowledge": self_knowledge, "faithfulness": faithfulness,
}


def query_scores(structures: dict, metrics=ALL_METRICS) -> dict:
    """{metric: share in [0, 1]} for one query from its boolean structures (only the required ones needed)."""
    return {m: FORMULAS[m](*(structures[s] for s in REQUIREMENTS[m])) for m in metrics}


def entailed(labels, location: str = "input") -> np.ndarray:
    """RAGChecker labels (a list, or a list of equally long lists) -> a boolean array, True for "Entailment"."""
    if not isinstance(labels, (list, tuple)):
        raise InputError(f"{location}: expected a list of labels, got {type(labels).__name__}")
    rows = [labels] if all(isinstance(x, str) for x in labels) else labels
    for r, row in enumerate(rows):
        if not isinstance(row, (list, tuple)):
            raise InputError(f"{location}[{r}]: expected a list of labels, got {type(row).__name__}")
        if len(row) != len(rows[0]):
            raise InputError(f"{location}: row {r} has {len(row)} labels but row 0 has {len(rows[0])}")
        for c, label in enumerate(row):
            if label not in LABELS:
                at = f"[{c}]" if rows is not labels else f"[{r}][{c}]"
                raise InputError(f"{location}{at}: label {label!r} is not one of {', '.join(LABELS)}")
    flags = np.array([[label == "Entailment" for label in row] for row in rows], dtype=bool)
    return flags[0] if rows is not labels else flags.reshape(len(rows), len(rows[0]) if rows else 0)


def check_structure(name: str, value: np.ndarray, n_claims: int, n_chunks: int, location: str) -> np.ndarray:
    """`value` with the shape `name` must have for this query, or InputError naming the query."""
    expected = (n_claims,) if name in ("answer2response", "response2answer") else (n_claims, n_chunks)
    if value.shape != expected and not (value.size == 0 and 0 in expected):
        claims = CLAIMS_OF[name]
        raise InputError(f"{location}: {name} has shape {value.shape} but must be {expected} "
                         f"({n_claims} {claims} claims" + ("" if len(expected) == 1 else f" x {n_chunks} chunks")
                         + ")")
    return value.reshape(expected)
