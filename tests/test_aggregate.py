"""Bootstrap confidence intervals and the paired test for factual grades (chimdqa_eval.aggregate)."""
import math

import pytest

from chimdqa_eval.aggregate import factual_confidence_intervals, paired_factual_test
from chimdqa_eval.factual import scores_from_grades

GRADES = ["CO"] * 120 + ["NA"] * 30 + ["IN"] * 50   # CO 60%, NA 15%, IN 25% of 200 items


def test_intervals_bracket_the_scores_with_the_expected_width():
    cis = factual_confidence_intervals(GRADES, n_resamples=2000, seed=7)
    scores = scores_from_grades(GRADES)
    assert set(cis) == {"CO", "NA", "IN", "CGA", "F1"}
    for name, (low, high) in cis.items():
        assert low < scores[name] < high, name
    # normal approximation of a proportion: 1.96 * sqrt(.6 * .4 / 200) * 100 = 6.8 points
    half_width = (cis["CO"][1] - cis["CO"][0]) / 2
    assert 5.5 < half_width < 8.0
    # CGA is a proportion over the 170 attempted items: 1.96 * sqrt(.706 * .294 / 170) * 100 = 6.8 points
    assert 5.5 < (cis["CGA"][1] - cis["CGA"][0]) / 2 < 8.0


def test_intervals_are_seeded():
    assert factual_confidence_intervals(GRADES, seed=3) == factual_confidence_intervals(GRADES, seed=3)
    assert factual_confidence_intervals(GRADES, seed=3) != factual_confidence_intervals(GRADES, seed=4)


def test_paired_test_sign_and_significance():
    better = list(GRADES)
    for i in range(120, 150):          # B turns 30 of A's refusals into correct answers
        better[i] = "CO"
    tests = paired_factual_test(GRADES, better, seed=1)
    diff, p = tests["CO"]
    assert diff == pytest.approx(15.0) and p < 0.01
    assert tests["F1"][0] == pytest.approx(scores_from_grades(better)["F1"] - scores_from_grades(GRADES)["F1"])
    assert paired_factual_test(better, GRADES, seed=1)["CO"][0] == pytest.approx(-15.0)


def test_paired_test_identical_and_nearly_identical_systems():
    # Equal item by item: every resample gives a difference of 0, which is no test at all.
    assert paired_factual_test(GRADES, GRADES)["F1"] == (0.0, None)
    one_more = ["CO"] + GRADES[1:]      # unchanged
    one_more[-1] = "CO"                 # one IN -> CO out of 200: not significant
    diff, p = paired_factual_test(GRADES, one_more, seed=2)["CO"]
    assert diff == pytest.approx(0.5) and p > 0.2


def test_paired_test_needs_the_same_items():
    with pytest.raises(ValueError, match="same items"):
        paired_factual_test(GRADES, GRADES[:-1])
    with pytest.raises(ValueError, match="empty"):
        factual_confidence_intervals([])
    assert not math.isnan(factual_confidence_intervals(["NA", "CO"])["CGA"][0])  # nothing attempted: 0, not NaN


def test_identical_grades_have_no_variation():
    assert factual_confidence_intervals(["CO"] * 40) == dict.fromkeys(("CO", "NA", "IN", "CGA", "F1"))
    assert factual_confidence_intervals(["NA"]) == dict.fromkeys(("CO", "NA", "IN", "CGA", "F1"))
    # Every item moves from IN to CO: a difference of 100 points, but nothing for a bootstrap to resample.
    tests = paired_factual_test(["IN"] * 40, ["CO"] * 40)
    assert tests["CO"] == (pytest.approx(100.0), None) and tests["F1"] == (pytest.approx(100.0), None)
    # One item differs from the rest: variation again, and a p-value.
    assert paired_factual_test(["IN"] * 40, ["CO"] * 39 + ["IN"])["CO"][1] is not None


def test_factual_intervals_and_tests_are_the_generic_bootstrap_of_each_score():
    """The factual helpers draw one set of resamples for all five scores: each result must equal the generic
    bootstrap_ci / paired_bootstrap of that score alone with the same seed."""
    from chimdqa_eval.aggregate import bootstrap_ci, paired_bootstrap
    from chimdqa_eval.grades import grade_matrix, scores_from_shares

    other = ["CO", "NA", "IN", "CO", "NA", "CO", "NA", "IN", "CO", "CO"] * 20  # CO 50%, NA 30%, IN 20%
    cis = factual_confidence_intervals(GRADES, n_resamples=300, seed=3, confidence=0.9)
    tests = paired_factual_test(GRADES, other, n_resamples=300, seed=3)
    for name in cis:
        def statistic(means, name=name):
            return scores_from_shares(means)[name]
        assert cis[name] == bootstrap_ci(grade_matrix(GRADES), statistic, n_resamples=300, seed=3, confidence=0.9)
        assert tests[name][0] != 0 and tests[name] == paired_bootstrap(grade_matrix(GRADES), grade_matrix(other), statistic,
                                               n_resamples=300, seed=3)


def test_a_score_that_no_resample_moves_has_no_variation():
    """Grades vary, but one score does not: NA when no item is NA, CGA when every attempt is correct. Every
    resample gives that score the same value, so it gets no interval and no p-value ("no variation"), while
    the scores that do vary keep theirs."""
    grades = ["CO"] * 30 + ["IN"] * 10  # no NA at all
    cis = factual_confidence_intervals(grades, seed=1)
    assert cis["NA"] is None
    assert all(cis[m] is not None and cis[m][0] < cis[m][1] for m in ("CO", "IN", "CGA", "F1"))
    assert factual_confidence_intervals(["CO"] * 30 + ["NA"] * 10, seed=1)["CGA"] is None  # always 100
    # The same NA on every item of both systems: a difference of 0 that no resample can change.
    tests = paired_factual_test(grades, ["CO"] * 35 + ["IN"] * 5, seed=1)
    assert tests["NA"] == (0.0, None)
    assert tests["CO"][1] is not None and tests["CO"][1] < 0.2


def test_resamples_do_not_depend_on_the_block_size_and_grades_are_counted_exactly():
    """The bootstrap draws its resamples in blocks of bounded size (memory): every block size gives the same
    means, and a matrix of zeros and ones (one-hot grades, counted instead of averaged) gives exactly the means
    of the picked rows."""
    import numpy as np

    from chimdqa_eval.aggregate import _resampled_means
    from chimdqa_eval.grades import grade_matrix
    rng = np.random.default_rng(5)
    grades = grade_matrix(list(rng.choice(["CO", "NA", "IN", "UNGRADED"], size=501)))
    scores = rng.random((501, 2)) * 100
    for matrix in (grades, scores):
        draws = np.random.default_rng(9).integers(0, 501, size=(40, 501))
        expected = matrix[draws].mean(axis=1)
        for chunk in (None, 1, 7, 40):
            assert np.array_equal(_resampled_means(matrix, 40, np.random.default_rng(9), chunk), expected)
