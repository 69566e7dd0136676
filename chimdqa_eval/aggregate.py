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
    return _interval(statistic(_resampled_means(matrix, n_resamples, np.random.default_rng(seed))), confidence)


def _interval(scores: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central `confidence` percentile interval of resampled scores."""
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
    statistic = statistic or (lambda means: means[..., 0])
    means_a, means_b = _paired_resampled_means(a, b, n_resamples, seed)
    observed = float(statistic(b.mean(axis=0)) - statistic(a.mean(axis=0)))
    return observed, _paired_p_value(statistic(means_b) - statistic(means_a), observed, n_resamples)


def _paired_resampled_means(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int):
    """Column means of the same bootstrap resamples of the rows of a and of b."""
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same items: shapes {a.shape} and {b.shape}")
    k = a.shape[1]
    means = _resampled_means(np.concatenate([a, b], axis=1), n_resamples, np.random.default_rng(seed))
    return means[:, :k], means[:, k:]


def _paired_p_value(diffs: np.ndarray, observed: float, n_resamples: int) -> float:
    if observed == 0:
        return 1.0
    crossing = np.sum(diffs <= 0) if observed > 0 else np.sum(diffs >= 0)
    return float(min(1.0, 2 * (crossing + 1) / (n_resamples + 1)))


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
    # One set of resamples serves all five scores (what bootstrap_ci would draw for each, with the same seed).
    scores = scores_from_shares(_resampled_means(matrix, n_resamples, np.random.default_rng(seed)))
    return {name: _interval(scores[name], confidence) for name in SCORE_NAMES}


def paired_factual_test(grades_a, grades_b, *, n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED) -> dict:
    """Paired bootstrap between two systems graded on the same items (in the same order):
    {"CO": (diff, p_value), ..., "F1": (diff, p_value)} with diff = B - A on the 0-100 scale and a two-sided
    p-value (see paired_bootstrap)."""
    from chimdqa_eval.factual.scores import SCORE_NAMES, grade_matrix, scores_from_shares

    a, b = grade_matrix(grades_a), grade_matrix(grades_b)
    if len(a) == 0:
        raise ValueError("no grades: a paired test on an empty set is undefined")
    # One set of resamples serves all five scores (what paired_bootstrap would draw for each, with the same seed).
    means_a, means_b = _paired_resampled_means(a, b, n_resamples, seed)
    resampled_a, resampled_b = scores_from_shares(means_a), scores_from_shares(means_b)
    observed_a, observed_b = scores_from_shares(a.mean(axis=0)), scores_from_shares(b.mean(axis=0))
    out = {}
    for name in SCORE_NAMES:
        observed = float(observed_b[name] - observed_a[name])
        out[name] = (observed, _paired_p_value(resampled_b[name] - resampled_a[name], observed, n_resamples))
    return out
