"""Aggregates derived from per-item results only: breakdowns, bootstrap confidence intervals, paired tests.

Every corpus score in this project is a function of the means of per-item vectors (a grade as a one-hot
(CO, NA, IN) row, a per-item ROUGE-L, ...). Resampling therefore only needs the per-item matrix and the
function that turns column means into the score, never a re-scoring.

Where the per-item values do not vary (all equal within NO_VARIATION_TOLERANCE: a metric that is 0 on every
item, a set of identical grades, two systems equal item by item), every bootstrap resample gives the same
score: its percentiles are not an interval and its tail share is not a p-value. The functions below then
return None in their place, and callers report NO_VARIATION.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from chimdqa_eval.grades import SCORE_NAMES, grade_matrix, scores_from_grades, scores_from_shares

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 12345
NO_VARIATION = "no variation"
# Per-item values (or paired differences) spreading by at most this much count as constant. Our scores are on
# 0-100 scales (perplexity >= 1), where 1e-4 is the last digit results.json keeps; CIDEr-D's per-item values on
# paragraph answers (below 6e-6 on the sample) fall under it.
NO_VARIATION_TOLERANCE = 1e-4


def group_indices(labels: Sequence, order: Sequence = ()) -> dict:
    """{label: [indices]}; labels listed in `order` come first in that order, the rest by first appearance. An item
    labelled None is in no group (a question without evidence pages has no evidence position)."""
    groups: dict = {}
    for key in order:
        if key in labels:
            groups[key] = []
    for i, label in enumerate(labels):
        if label is not None:
            groups.setdefault(label, []).append(i)
    return {k: v for k, v in groups.items() if v}


def _as_matrix(values) -> np.ndarray:
    m = np.asarray(values, dtype=float)
    return m[:, None] if m.ndim == 1 else m


def has_variation(values, tolerance: float = NO_VARIATION_TOLERANCE) -> bool:
    """Whether the rows of an (n,) or (n, k) array of per-item values differ: some column spreads (max - min)
    by more than `tolerance`."""
    matrix = _as_matrix(values)
    return bool(len(matrix)) and bool(np.any(np.ptp(matrix, axis=0) > tolerance))


# Bootstrap temporaries (the resampled indices and the values they pick) are made for a block of resamples at a
# time, at most this many bytes: 100 resamples of 100,000 items took 320 MB at once. The draws and the means do
# not depend on the block size.
RESAMPLE_BLOCK_BYTES = 32 * 2**20


def _resampled_means(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator, chunk: int | None = None):
    """(n_resamples, k) column means of bootstrap resamples of the rows of `matrix`: resample r draws its n row
    indices after resample r - 1's (rng.integers(0, n) in row-major order, whatever the block size `chunk`).

    A matrix of zeros and ones (grades as one-hot rows) is resampled as counts: its mean is the count of ones
    over n, exactly what the mean of the picked values gives, from a byte per picked value instead of eight."""
    if n_resamples < 2:
        raise ValueError(f"a bootstrap needs at least 2 resamples, got {n_resamples}")
    n, k = matrix.shape
    ones = [matrix[:, j] == 1 for j in range(k)] if np.all((matrix == 0) | (matrix == 1)) else None
    if chunk is None:
        per_resample = n * (8 + (k if ones is not None else 8 * k))  # indices, then the picked values
        chunk = max(1, min(n_resamples, RESAMPLE_BLOCK_BYTES // max(per_resample, 1)))
    out = np.empty((n_resamples, k))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        if ones is None:
            out[start:stop] = matrix[idx].mean(axis=1)
        else:
            for j, column in enumerate(ones):
                out[start:stop, j] = np.count_nonzero(column[idx], axis=1) / n
        del idx
    return out


def bootstrap_ci(values, statistic: Callable[[np.ndarray], np.ndarray] | None = None, *,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, confidence: float = 0.95):
    """Percentile bootstrap interval (low, high) of ``statistic(column means)``; None when the values have no
    variation (see has_variation).

    `values` is an (n,) or (n, k) array of per-item values; `statistic` maps an (..., k) array of column means
    to (...) scores and defaults to the mean of the single column.
    """
    matrix = _as_matrix(values)
    if not has_variation(matrix):
        return None
    statistic = statistic or (lambda means: means[..., 0])
    return _interval(statistic(_resampled_means(matrix, n_resamples, np.random.default_rng(seed))), confidence)


def _resamples_vary(scores: np.ndarray) -> bool:
    """Whether resampled scores (or differences) take more than one value: when the per-item values vary but
    the score does not depend on what varies (NA when no item is NA, CGA when every attempt is correct), every
    resample gives the same score, and that is no interval and no p-value either. Equal up to floating-point
    rounding: the per-item tolerance (has_variation) was applied before resampling."""
    return len(scores) < 2 or bool(np.ptp(scores) > 1e-9)


def _interval(scores: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The central `confidence` percentile interval of resampled scores; None when they do not vary."""
    if not _resamples_vary(scores):
        return None
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(scores, [tail, 100 - tail])
    return float(low), float(high)


def paired_bootstrap(values_a, values_b, statistic: Callable[[np.ndarray], np.ndarray] | None = None, *,
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED):
    """Paired bootstrap test on the same items: (observed difference b - a, two-sided p-value).

    Items are resampled jointly; the p-value is the share of resampled differences on the other side of zero
    from the observed one (doubled, capped at 1), with the usual +1 correction so it is never exactly 0.
    It is None when the per-item differences b - a have no variation (see has_variation): both systems
    constant, equal item by item, or apart by the same amount on every item.
    """
    a, b = _as_matrix(values_a), _as_matrix(values_b)
    statistic = statistic or (lambda means: means[..., 0])
    observed = float(statistic(b.mean(axis=0)) - statistic(a.mean(axis=0)))
    if not _paired_variation(a, b):
        return observed, None
    means_a, means_b = _paired_resampled_means(a, b, n_resamples, seed)
    return observed, _paired_p_value(statistic(means_b) - statistic(means_a), observed, n_resamples)


def _check_paired(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same items: shapes {a.shape} and {b.shape}")


def _paired_variation(a: np.ndarray, b: np.ndarray) -> bool:
    _check_paired(a, b)
    return has_variation(b - a)


def _paired_resampled_means(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int):
    """Column means of the same bootstrap resamples of the rows of a and of b."""
    _check_paired(a, b)
    k = a.shape[1]
    means = _resampled_means(np.concatenate([a, b], axis=1), n_resamples, np.random.default_rng(seed))
    return means[:, :k], means[:, k:]


def _paired_p_value(diffs: np.ndarray, observed: float, n_resamples: int) -> float | None:
    if not _resamples_vary(diffs):
        return None
    if observed == 0:
        return 1.0
    crossing = np.sum(diffs <= 0) if observed > 0 else np.sum(diffs >= 0)
    return float(min(1.0, 2 * (crossing + 1) / (n_resamples + 1)))


# --- factual grades (CO / NA / IN) ----------------------------------------------------------------------
# The factual package imports this module, so its score rule is imported when these functions run.

def factual_confidence_intervals(grades, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                                 confidence: float = 0.95) -> dict:
    """{"CO": (low, high), "NA": ..., "IN": ..., "CGA": ..., "F1": ...}: percentile bootstrap intervals (0-100)
    from per-item grades. All five use the same resamples (same seed), so the intervals are jointly consistent.
    Every interval is None when all items have the same grade (no variation)."""
    matrix = grade_matrix(grades)
    if len(matrix) == 0:
        raise ValueError("no grades: confidence intervals of an empty set are undefined")
    if not has_variation(matrix):
        return {name: None for name in SCORE_NAMES}
    # One set of resamples serves all five scores (what bootstrap_ci would draw for each, with the same seed).
    scores = scores_from_shares(_resampled_means(matrix, n_resamples, np.random.default_rng(seed)))
    return {name: _interval(scores[name], confidence) for name in SCORE_NAMES}


def paired_factual_test(grades_a, grades_b, *, n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED) -> dict:
    """Paired bootstrap between two systems graded on the same items (in the same order):
    {"CO": (diff, p_value), ..., "F1": (diff, p_value)} with diff = B - A on the 0-100 scale and a two-sided
    p-value (see paired_bootstrap; None when every item's grade changed in the same way, e.g. not at all)."""
    a, b = grade_matrix(grades_a), grade_matrix(grades_b)
    if len(a) == 0:
        raise ValueError("no grades: a paired test on an empty set is undefined")
    observed_a, observed_b = scores_from_shares(a.mean(axis=0)), scores_from_shares(b.mean(axis=0))
    if not _paired_variation(a, b):
        return {name: (float(observed_b[name] - observed_a[name]), None) for name in SCORE_NAMES}
    # One set of resamples serves all five scores (what paired_bootstrap would draw for each, with the same seed).
    means_a, means_b = _paired_resampled_means(a, b, n_resamples, seed)
    resampled_a, resampled_b = scores_from_shares(means_a), scores_from_shares(means_b)
    out = {}
    for name in SCORE_NAMES:
        observed = float(observed_b[name] - observed_a[name])
        out[name] = (observed, _paired_p_value(resampled_b[name] - resampled_a[name], observed, n_resamples))
    return out


# --- the one aggregation: overall + breakdowns (+ CIs) from per-item values ------------------------------------
STATISTICS = ("mean", "grades")


def _mean_scores(arrays: dict, indices, resamples: int, seed: int) -> dict:
    """{metric: (mean, CI, n)} over the items at `indices`; items without a value (None / NaN: the metric is
    undefined for them) are left out of the mean and of n. CI is (nan, nan) when resamples is 0, None when
    the values have no variation."""
    out = {}
    for metric, array in arrays.items():
        values = array[indices]
        values = values[~np.isnan(values)]
        if not len(values):
            continue
        ci = bootstrap_ci(values, n_resamples=resamples, seed=seed) if resamples else (float("nan"),) * 2
        out[metric] = (float(values.mean()), ci, int(len(values)))
    return out


def _grade_scores(grades: list, resamples: int, seed: int) -> dict:
    """{CO, NA, IN, CGA, F1: (score, CI, n)} from the grades of a set of items, CIs resampled jointly."""
    scores = scores_from_grades(grades)
    cis = factual_confidence_intervals(grades, n_resamples=resamples, seed=seed) if resamples else {}
    return {m: (float(scores[m]), cis.get(m, (float("nan"),) * 2), len(grades)) for m in SCORE_NAMES}


def _float_array(values) -> np.ndarray:
    """Per-item values as a float array, None as NaN (an array of floats is taken as it is)."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        return values
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def summarize(per_item: dict, labels: dict | None = None, *, statistic: str = "mean", resamples: int = 0,
              seed: int = DEFAULT_SEED, label_order: dict | None = None) -> dict:
    """Every aggregate of a metric family from its per-item values, in one shape:

        {metric: {"value", "ci95": (low, high) | None (no variation) | (nan, nan) (not computed), "n",
                  "by": {column: {label: {"value", "ci95", "n"}}}}}

    per_item: {name: one value per item}. statistic "mean": each name is a metric whose corpus score is the mean
    of its per-item values (None / NaN values left out). statistic "grades": per_item["grade"] holds CO / NA / IN
    (or UNGRADED) per item and the metrics are CO, NA, IN, CGA and F1 (other per-item fields are ignored).
    labels: {column: one label per item} for the breakdowns, ordered by label_order[column] first.
    resamples: bootstrap resamples for the 95% CIs (0: none).
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {', '.join(STATISTICS)}")
    if statistic == "grades":
        grades = list(per_item["grade"])

        def scores(indices):
            return _grade_scores([grades[i] for i in indices], resamples, seed)
        n = len(grades)
    else:
        arrays = {m: _float_array(values) for m, values in per_item.items()}
        n = len(next(iter(arrays.values()))) if arrays else 0

        def scores(indices):
            return _mean_scores(arrays, np.asarray(indices, dtype=int), resamples, seed)

    def entry(stats):
        value, ci, count = stats
        return {"value": value, "ci95": ci, "n": count}

    result = {metric: {**entry(stats), "by": {}} for metric, stats in scores(list(range(n))).items()} if n else {}
    for column, column_labels in (labels or {}).items():
        for label, indices in group_indices(column_labels, (label_order or {}).get(column, ())).items():
            for metric, stats in scores(indices).items():
                result[metric]["by"].setdefault(column, {})[label] = entry(stats)
    return result


def breakdown_values(summary: dict, column: str, column_labels) -> dict:
    """{label: {metric: value, ..., "n": items with the label}} for one breakdown column of a summary: the
    by_<column> tables the metric libraries return (the same numbers results.json carries)."""
    out: dict = {}
    for metric, entry in summary.items():
        for label, cell in entry["by"].get(column, {}).items():
            out.setdefault(label, {})[metric] = cell["value"]
    for label, row in out.items():
        row["n"] = sum(1 for x in column_labels if x == label)
    return out
