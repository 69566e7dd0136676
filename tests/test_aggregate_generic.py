import numpy as np
import pytest

from chimdqa_eval.aggregate import (NO_VARIATION_TOLERANCE, bootstrap_ci, group_indices, has_variation,
                                    paired_bootstrap)


def test_group_indices_orders_known_keys_first():
    labels = ["news", "law", "news", "academic"]
    assert group_indices(labels, order=("academic", "law", "news", "finance")) == {
        "academic": [3], "law": [1], "news": [0, 2]}
    assert group_indices(labels) == {"news": [0, 2], "law": [1], "academic": [3]}


def test_bootstrap_ci_brackets_the_mean_and_is_seeded():
    values = np.r_[np.ones(60), np.zeros(40)]
    low, high = bootstrap_ci(values)
    assert low < 0.6 < high
    # normal approximation of a proportion: half-width ~ 1.96 * sqrt(.6 * .4 / 100) = 0.096
    assert 0.07 < (high - low) / 2 < 0.12
    assert bootstrap_ci(values) == (low, high)
    assert bootstrap_ci(values, seed=1) != (low, high)


def test_constant_values_have_no_interval():
    assert bootstrap_ci(np.full(10, 0.25)) is None
    assert bootstrap_ci(np.zeros((10, 3))) is None
    assert bootstrap_ci([42.0]) is None  # one item: nothing to resample


def test_near_zero_values_have_no_variation():
    # CIDEr-D x 100 on the sample's paragraph answers: every item below 6e-6, yet not all equal.
    rng = np.random.default_rng(0)
    cider_d = rng.random(30) * 5e-6
    assert not has_variation(cider_d) and bootstrap_ci(cider_d) is None
    other = rng.random(30) * 5e-6
    diff, p = paired_bootstrap(cider_d, other)
    assert p is None and diff == pytest.approx(other.mean() - cider_d.mean())
    # Two such runs differ by ~1e-7 per item: no p-value. Just above the tolerance the test is back.
    spread = np.r_[np.zeros(29), 2 * NO_VARIATION_TOLERANCE]
    assert has_variation(spread) and bootstrap_ci(spread) is not None
    assert paired_bootstrap(np.zeros(30), spread)[1] is not None


def test_has_variation_looks_at_every_column():
    assert not has_variation(np.ones((5, 2)))
    assert has_variation(np.c_[np.ones(5), np.arange(5)])
    assert not has_variation(np.arange(5) * 1e-5) and has_variation(np.arange(5) * 1e-5, tolerance=1e-6)
    assert not has_variation(np.empty(0))


def test_paired_bootstrap_detects_a_real_difference_only():
    rng = np.random.default_rng(0)
    a = rng.random(200)
    better = a + 0.2 + rng.normal(0, 0.05, 200)
    diff, p = paired_bootstrap(a, better)
    assert diff == pytest.approx(0.2, abs=0.02) and p < 0.01
    # The same systems, or one shifted by the same amount on every item: the differences do not vary, so every
    # resample gives the same difference and there is no p-value to report.
    assert paired_bootstrap(a, a) == (0.0, None)
    diff, p = paired_bootstrap(a, a + 0.2)
    assert diff == pytest.approx(0.2) and p is None
    noisy = a + rng.normal(0, 0.3, 200) * 0.01
    assert paired_bootstrap(a, noisy)[1] > 0.05
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap(a, a[:10])
