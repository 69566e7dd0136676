import numpy as np
import pytest

from chimdqa_eval.aggregate import bootstrap_ci, group_indices, paired_bootstrap


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


def test_constant_values_give_a_degenerate_interval():
    assert bootstrap_ci(np.full(10, 0.25)) == pytest.approx((0.25, 0.25))


def test_paired_bootstrap_detects_a_real_difference_only():
    rng = np.random.default_rng(0)
    a = rng.random(200)
    better = a + 0.2
    diff, p = paired_bootstrap(a, better)
    assert diff == pytest.approx(0.2) and p < 0.01
    diff, p = paired_bootstrap(a, a)
    assert diff == 0 and p == 1.0
    noisy = a + rng.normal(0, 0.3, 200) * 0.01
    assert paired_bootstrap(a, noisy)[1] > 0.05
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap(a, a[:10])
