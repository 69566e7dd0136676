"""`chimdqa compare A/results.json B/results.json`: per-metric differences (B - A) on the questions both
scored, with paired-bootstrap p-values computed from the two items.jsonl files (never from re-scoring).
Where the per-item differences do not vary (aggregate.has_variation) there is no p-value: the row says
"no variation"."""
from __future__ import annotations

import math

import numpy as np

from chimdqa_eval.aggregate import DEFAULT_RESAMPLES, DEFAULT_SEED, NO_VARIATION, paired_bootstrap, paired_factual_test
from chimdqa_eval.families import METRIC_LABELS
from chimdqa_eval.grades import SCORE_NAMES, scores_from_grades
from chimdqa_eval.report.results import read_items
from chimdqa_eval.schema import InputError


def _values(items: dict, ids, family: str, name: str) -> list:
    return [items[i].get(family, {}).get(name) for i in ids]


def compare(a: dict, b: dict, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> list[dict]:
    """One row per metric both results have: values on the common items, B - A, p-value (None, with
    note "no variation", where the per-item differences are constant), n, comparable."""
    if a["dataset"].get("revision") != b["dataset"].get("revision"):
        raise InputError(f"{a['_path']} and {b['_path']} were scored on different dataset revisions "
                         f"({a['dataset'].get('revision')} vs {b['dataset'].get('revision')}); a paired test "
                         "needs the same questions")
    items_a, items_b = read_items(a), read_items(b)
    if not any(i in items_b for i in items_a):
        raise InputError(f"{a['_path']} and {b['_path']}: no question scored in both ({len(items_a)} and "
                         f"{len(items_b)} questions; configs {a['dataset'].get('config')} and "
                         f"{b['dataset'].get('config')}); a paired comparison needs common questions")
    rows = []
    for family, metrics in a["metrics"].items():
        if family not in b["metrics"]:
            continue
        common = [i for i in items_a if i in items_b and family in items_a[i] and family in items_b[i]]
        if not common:
            continue
        if family == "factual":
            rows += _factual_rows(a, b, common, items_a, items_b, n_resamples, seed)
            continue
        for metric in metrics:
            if metric not in b["metrics"][family]:
                continue
            va, vb = _values(items_a, common, family, metric), _values(items_b, common, family, metric)
            both = [(x, y) for x, y in zip(va, vb) if x is not None and y is not None]
            if not both:
                continue
            xa, xb = np.array(both, dtype=float).T
            diff, p = paired_bootstrap(xa, xb, n_resamples=n_resamples, seed=seed)
            rows.append(_row(a, b, family, metric, float(xa.mean()), float(xb.mean()), diff, p, len(both)))
    return rows


def _factual_rows(a, b, common, items_a, items_b, n_resamples, seed) -> list[dict]:
    grades_a = _values(items_a, common, "factual", "grade")
    grades_b = _values(items_b, common, "factual", "grade")
    scores_a, scores_b = scores_from_grades(grades_a), scores_from_grades(grades_b)
    tests = paired_factual_test(grades_a, grades_b, n_resamples=n_resamples, seed=seed)
    return [_row(a, b, "factual", m, scores_a[m], scores_b[m], scores_b[m] - scores_a[m], tests[m][1],
                 len(common)) for m in SCORE_NAMES if m in a["metrics"]["factual"]]


def _row(a, b, family, metric, value_a, value_b, diff, p, n) -> dict:
    sig_a = a["metrics"][family][metric].get("signature")
    sig_b = b["metrics"].get(family, {}).get(metric, {}).get("signature")
    row = {"family": family, "metric": metric, "a": value_a, "b": value_b, "diff": diff, "p_value": p, "n": n,
           "comparable": sig_a == sig_b}
    if p is None:
        row["note"] = NO_VARIATION
    return row


def format_table(a: dict, b: dict, rows: list[dict]) -> str:
    lines = [f"A: {a['model']['model']}  ({a['_path']})", f"B: {b['model']['model']}  ({b['_path']})",
             "paired bootstrap on the questions both scored; diff = B - A", "",
             f"{'family':<11} {'metric':<24} {'A':>8} {'B':>8} {'diff':>8} {'p':>12} {'n':>6}"]
    for r in rows:
        label = METRIC_LABELS.get(r["family"], {}).get(r["metric"], r["metric"])
        p = r.get("note", "") if r["p_value"] is None or math.isnan(r["p_value"]) else f"{r['p_value']:.3f}"
        flag = "" if r["comparable"] else "  signatures differ: not comparable"
        lines.append(f"{r['family']:<11} {label:<24} {r['a']:>8.2f} {r['b']:>8.2f} {r['diff']:>+8.2f} {p:>12} "
                     f"{r['n']:>6}{flag}")
    if not rows:
        lines.append("(no metric in common)")
    return "\n".join(lines)
