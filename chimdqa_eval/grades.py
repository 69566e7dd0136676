"""CO / NA / IN / CGA / F1 from per-item grades (the definitions of the ChiMDQA and Chinese SimpleQA papers).

CO, NA and IN are percentages of all items; CGA = CO / (CO + IN), the accuracy on attempted items (0 when
nothing was attempted); F1 is the harmonic mean of CO and CGA (0 when both are 0). An item the LLM judge could
not grade ("UNGRADED") stays in the denominator and in none of the three shares, so CO + NA + IN falls short of
100 by exactly the ungraded share: it is never counted as a refusal.
"""
from __future__ import annotations

import numpy as np

GRADES = ("CO", "NA", "IN")
UNGRADED = "UNGRADED"
SCORE_NAMES = ("CO", "NA", "IN", "CGA", "F1")


def grade_matrix(grades) -> np.ndarray:
    """(n, 3) one-hot rows over (CO, NA, IN); an ungraded item is a row of zeros."""
    matrix = np.zeros((len(grades), 3))
    for i, grade in enumerate(grades):
        if grade in GRADES:
            matrix[i, GRADES.index(grade)] = 1.0
        elif grade != UNGRADED:
            raise ValueError(f"grades[{i}]: unknown grade {grade!r}; expected CO, NA, IN or {UNGRADED}")
    return matrix


def scores_from_shares(shares: np.ndarray) -> dict:
    """The five scores (0-100) from (..., 3) shares of CO, NA, IN; works on a batch of bootstrap resamples."""
    shares = np.asarray(shares, dtype=float) * 100
    co, na, inc = shares[..., 0], shares[..., 1], shares[..., 2]
    attempted = co + inc
    cga = np.divide(co * 100, attempted, out=np.zeros_like(co), where=attempted > 0)
    f1 = np.divide(2 * co * cga, co + cga, out=np.zeros_like(co), where=(co + cga) > 0)
    return {"CO": co, "NA": na, "IN": inc, "CGA": cga, "F1": f1}


def scores_from_grades(grades) -> dict:
    """{"CO", "NA", "IN", "CGA", "F1"} as floats on a 0-100 scale; ValueError on an empty list."""
    if len(grades) == 0:
        raise ValueError("no grades: the scores of an empty set are undefined")
    scores = scores_from_shares(grade_matrix(grades).mean(axis=0))
    return {name: float(value) for name, value in scores.items()}
