"""Calibration of stated confidence (Chinese SimpleQA's study): expected calibration error and the reliability
diagram's bins, from per-item confidences (0-100) and correctness.

Binning: N_BINS equal-width bins over [0, 100]; bin b holds confidences in [10b, 10b + 10), the last one also
100. ECE = sum over bins of (n_b / N) * |accuracy_b - mean confidence_b|, with accuracy and confidence in
percent, so ECE is in percentage points (0 = perfectly calibrated, 100 = always certain and always wrong).
"""
from __future__ import annotations

from chimdqa_eval.aggregate import group_indices
from chimdqa_eval.schema import LABEL_ORDER, check_same_length
from chimdqa_eval.signature import make_signature

N_BINS = 10
BINNING = f"{N_BINS} equal-width bins over confidence 0-100, the last one closed"


def bin_of(confidence: float, n_bins: int = N_BINS) -> int:
    return min(int(confidence * n_bins // 100), n_bins - 1)


def reliability_bins(confidences, correct, n_bins: int = N_BINS, *, digits: int | None = 4) -> list[dict]:
    """One entry per bin: {"low", "high", "n", "confidence" (mean, or None), "accuracy" (percent, or None)},
    means rounded to `digits` decimals (None: exact, what ECE is computed from)."""
    check_same_length(confidences=confidences, correct=correct)
    members = [[] for _ in range(n_bins)]
    for i, (confidence, ok) in enumerate(zip(confidences, correct)):
        if not 0 <= confidence <= 100:
            raise ValueError(f"confidences[{i}]: must be within 0-100, got {confidence}")
        members[bin_of(confidence, n_bins)].append((confidence, bool(ok)))
    def shown(value):
        return round(value, digits) if digits is not None else value

    bins = []
    for b, items in enumerate(members):
        n = len(items)
        bins.append({"low": 100 * b / n_bins, "high": 100 * (b + 1) / n_bins, "n": n,
                     "confidence": shown(sum(c for c, _ in items) / n) if n else None,
                     "accuracy": shown(100 * sum(ok for _, ok in items) / n) if n else None})
    return bins


def expected_calibration_error(bins) -> float:
    """ECE in percentage points from reliability_bins' output (exact with digits=None)."""
    total = sum(b["n"] for b in bins)
    return sum(b["n"] / total * abs(b["accuracy"] - b["confidence"]) for b in bins if b["n"])


def _block(confidences, correct) -> dict:
    bins = reliability_bins(confidences, correct)
    exact = expected_calibration_error(reliability_bins(confidences, correct, digits=None))
    return {"ece": round(exact, 4), "n": len(confidences),
            "accuracy": round(100 * sum(map(bool, correct)) / len(correct), 4),
            "mean_confidence": round(sum(confidences) / len(confidences), 4), "bins": bins}


def calibration_summary(confidences, correct, labels: dict | None = None, *, correctness: str,
                        label_order: dict | None = None) -> dict:
    """{"ece", "n", "accuracy", "mean_confidence", "bins", "binning", "signature", "by": {column: {label:
    {...}}}} over the items whose confidence is not None; `correctness` says what counts as correct (it goes
    into the signature); labels ordered as `label_order` (else the schema's LABEL_ORDER) lists them."""
    kept = [i for i, c in enumerate(confidences) if c is not None]
    if not kept:
        raise ValueError("no item carries a confidence")
    out = _block([confidences[i] for i in kept], [correct[i] for i in kept])
    out["n_without_confidence"] = len(confidences) - len(kept)
    out["binning"] = BINNING
    out["signature"] = make_signature({"metric": "ece", "bins": f"{N_BINS}-equal-width", "scale": "percent",
                                       "correct": correctness})
    out["by"] = {}
    for column, values in (labels or {}).items():
        groups = group_indices([values[i] for i in kept], {**LABEL_ORDER, **(label_order or {})}.get(column, ()))
        out["by"][column] = {label: _block([confidences[kept[j]] for j in positions],
                                           [correct[kept[j]] for j in positions])
                             for label, positions in groups.items()}
    return out
