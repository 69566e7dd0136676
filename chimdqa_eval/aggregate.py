"""Aggregates derived from per-item results only: breakdowns, bootstrap confidence intervals, paired tests.

Every corpus score in this project is a function of the means of per-item vectors (a grade as a one-hot
(CO, NA, IN) row, a per-item ROUGE-L, ...). Resampling therefore only needs the per-item matrix and the
function that turns column means into the score, never a re-scoring.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 12345


def group_indices(labels: Sequence, order: Sequence = ()) -> dict:
    """{label: [indices]}; labels listed in `order` come first in that order, the rest by first appearance."""
    groups: dict = {}
    for key in order:
        if key in labels:
            groups[key] = []
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
    return {k: v for k, v in groups.items() if v}


def _as_matrix(values) -> np.ndarray:
    m = np.asarray(values, dtype=float)
    return m[:, None] if m.ndim == 1 else m


def _resampled_means(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator, chunk: int = 100):
    """(n_resamples, k) column means of bootstrap resamples of the rows of `matrix`."""
    n = matrix.shape[0]
    out = np.empty((n_resamples, matrix.shape[1]))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = matrix[idx].mean(axis=1)
    return out


def bootstrap_ci(values, statistic: Callable[[np.ndarray], np.ndarray] | None = None, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, confidence: float = 0.95):
    """Percentile bootstrap interval (low, high) of ``statistic(column means)``.

    `values` is an (n,) or (n, k) array of per-item values; `statistic` maps an (..., k) array of column means
    to (...) scores and defaults to the mean of the single column.
    """
    matrix = _as_matrix(values)
    statistic = statistic or (lambda means: means[..., 0])
    scores = statistic(_resampled_means(matrix, n_resamples, np.random.default_rng(seed)))
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(scores, [tail, 100 - tail])
    return float(low), float(high)


def paired_bootstrap(values_a, values_b, statistic: Callable[[np.ndarray], np.ndarray] | None = None, *,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED):
    """Paired bootstrap test on the same items: (observed difference b - a, two-sided p-value).

    Items are resampled jointly; the p-value is the share of resampled differences on the other side of zero
    from the observed one (doubled, capped at 1), with the usual +1 correction so it is never exactly 0.
    """
    a, b = _as_matrix(values_a), _as_matrix(values_b)
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same items: shapes {a.shape} and {b.shape}")
    statistic = statistic or (lambda means: means[..., 0])
    k = a.shape[1]
    joint = np.concatenate([a, b], axis=1)
    means = _resampled_means(joint, n_resamples, np.random.default_rng(seed))
    diffs = statistic(means[:, k:]) - statistic(means[:, :k])
    observed = float(statistic(b.mean(axis=0)) - statistic(a.mean(axis=0)))
    if observed == 0:
        return observed, 1.0
    crossing = np.sum(diffs <= 0) if observed > 0 else np.sum(diffs >= 0)
    p = min(1.0, 2 * (crossing + 1) / (n_resamples + 1))
    return observed, float(p)


# --- factual grades (CO / NA / IN) ----------------------------------------------------------------------
# The factual package imports this module, so its score rule is imported when these functions run.

def factual_confidence_intervals(grades, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                                 confidence: float = 0.95) -> dict:
    """{"CO": (low, high), "NA": ..., "IN": ..., "CGA": ..., "F1": ...}: percentile bootstrap intervals (0-100)
    from per-item grades. All five use the same resamples (same seed), so the intervals are jointly consistent."""
    from chimdqa_eval.factual.scores import SCORE_NAMES, grade_matrix, scores_from_shares

    matrix = grade_matrix(grades)
    if len(matrix) == 0:
        raise ValueError("no grades: confidence intervals of an empty set are undefined")
    return {name: bootstrap_ci(matrix, lambda means, name=name: scores_from_shares(means)[name],
                               n_resamples=n_resamples, seed=seed, confidence=confidence)
            for name in SCORE_NAMES}


def paired_factual_test(grades_a, grades_b, *, n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED) -> dict:
    """Paired bootstrap between two systems graded on the same items (in the same order):
    {"CO": (diff, p_value), ..., "F1": (diff, p_value)} with diff = B - A on the 0-100 scale and a two-sided
    p-value (see paired_bootstrap)."""
    from chimdqa_eval.factual.scores import SCORE_NAMES, grade_matrix, scores_from_shares

    a, b = grade_matrix(grades_a), grade_matrix(grades_b)
    if len(a) == 0:
        raise ValueError("no grades: a paired test on an empty set is undefined")
    return {name: paired_bootstrap(a, b, lambda means, name=name: scores_from_shares(means)[name],
                                   n_resamples=n_resamples, seed=seed)
            for name in SCORE_NAMES}
