"""Agreement between two raters over the same items: observed agreement, a confusion matrix and Cohen's κ.

κ = (p_o − p_e) / (1 − p_e), with p_o the share of items both raters label alike and p_e the agreement expected
by chance from each rater's own label shares (Cohen, 1960). When p_e = 1 (both raters used one and the same
label for everything) κ is undefined: None, never a made-up 1 or 0.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence


def label_order(a: Sequence, b: Sequence, preferred: Sequence = ()) -> list:
    """Labels used by either rater: those in `preferred` first in that order, then the rest sorted."""
    used = set(a) | set(b)
    return [x for x in preferred if x in used] + sorted(used - set(preferred), key=str)


def confusion(a: Sequence, b: Sequence, labels: Sequence) -> list[list[int]]:
    """Counts: rows are rater A's labels, columns rater B's, both in `labels` order."""
    if len(a) != len(b):
        raise ValueError(f"the raters labelled different numbers of items ({len(a)} and {len(b)})")
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for x, y in zip(a, b):
        matrix[index[x]][index[y]] += 1
    return matrix


def cohen_kappa(a: Sequence, b: Sequence) -> float | None:
    """Cohen's κ of two label lists over the same items; None when undefined (no items, or chance agreement 1)."""
    if len(a) != len(b):
        raise ValueError(f"the raters labelled different numbers of items ({len(a)} and {len(b)})")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def agreement(a: Sequence, b: Sequence, preferred_labels: Sequence = ()) -> dict:
    """{n, agreement (0-100), kappa, labels, confusion} for two raters over the same items."""
    labels = label_order(a, b, preferred_labels)
    n = len(a)
    return {"n": n, "agreement": 100 * sum(x == y for x, y in zip(a, b)) / n if n else None,
            "kappa": cohen_kappa(a, b), "labels": labels, "confusion": confusion(a, b, labels)}
