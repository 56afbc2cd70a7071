"""Tests of the membership-inference scores: score formulas, layouts, torch input, U-LiRA."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from empirical.statistics import roc_curve
from tests.empirical import membership_scores as A


def softmax_true_probability(logits, labels):
    probs = special.softmax(logits, axis=-1)
    return np.take_along_axis(probs, labels[..., None], axis=-1)[..., 0]


def test_multiclass_scores_match_softmax_definitions():
    rng = np.random.default_rng(0)
    logits = rng.normal(0.0, 2.0, (50, 10))
    labels = rng.integers(0, 10, 50)
    p = softmax_true_probability(logits, labels)
    np.testing.assert_allclose(
        A.logit_scaled_confidence(logits, labels), np.log(p / (1 - p)), rtol=1e-10
    )
    np.testing.assert_allclose(A.cross_entropy_loss(logits, labels), -np.log(p), rtol=1e-10)
    np.testing.assert_allclose(A.loss_score(logits, labels), np.log(p), rtol=1e-10)
    np.testing.assert_allclose(A.probability_logit(p), np.log(p / (1 - p)), rtol=1e-8)


def test_logit_scaled_confidence_is_stable_for_extreme_logits():
    logits = np.array([[1000.0, 0.0, -5.0], [-1000.0, 0.0, 0.0]])
    labels = np.array([0, 0])
    scores = A.logit_scaled_confidence(logits, labels)
    expected_first = 1000.0 - np.logaddexp(0.0, -5.0)
    assert scores[0] == pytest.approx(expected_first, rel=1e-12)
    assert scores[1] == pytest.approx(-1000.0 - math.log(2.0), rel=1e-12)
    assert np.all(np.isfinite(A.cross_entropy_loss(logits, labels)))


def test_binary_single_logit_layout():
    logits = np.array([2.0, -1.0, 0.5, 3.0])
    labels_pm = np.array([1, 1, -1, -1])
    labels_01 = np.array([1, 1, 0, 0])
    margin = np.array([2.0, -1.0, -0.5, -3.0])
    np.testing.assert_allclose(A.logit_scaled_confidence(logits, labels_pm), margin)
    np.testing.assert_allclose(A.logit_scaled_confidence(logits, labels_01), margin)
    np.testing.assert_allclose(A.cross_entropy_loss(logits, labels_pm), np.log1p(np.exp(-margin)))
    # Binary equals the two-class softmax with logits (0, f).
    two_class = np.stack([np.zeros_like(logits), logits], axis=-1)
    np.testing.assert_allclose(
        A.logit_scaled_confidence(two_class, labels_01), margin, rtol=1e-12
    )


def test_labels_broadcast_over_shadow_models():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(8, 5, 3))  # [n_models, n_examples, n_classes]
    labels = rng.integers(0, 3, 5)
    scores = A.logit_scaled_confidence(logits, labels, binary=False)
    assert scores.shape == (8, 5)
    np.testing.assert_allclose(scores[3], A.logit_scaled_confidence(logits[3], labels))
    binary_logits = rng.normal(size=(8, 5))
    binary_scores = A.logit_scaled_confidence(binary_logits, np.ones(5, int), binary=True)
    np.testing.assert_allclose(binary_scores, binary_logits)


def test_layout_and_label_validation():
    with pytest.raises(ValueError, match="binary=True or binary=False"):
        A.logit_scaled_confidence(np.zeros((8, 5)), np.zeros(5, int))
    with pytest.raises(ValueError, match="labels must lie"):
        A.logit_scaled_confidence(np.zeros((4, 3)), np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="binary labels"):
        A.logit_scaled_confidence(np.zeros(3), np.array([1, 2, 0]))
    with pytest.raises(ValueError, match="size >= 2"):
        A.logit_scaled_confidence(np.zeros((3, 1)), np.zeros(3, int))
    with pytest.raises(ValueError, match="NaN"):
        A.loss_score(np.array([[np.nan, 0.0]]), np.array([0]))
    with pytest.raises(ValueError, match="integer"):
        A.loss_score(np.zeros((2, 2)), np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        A.probability_logit(np.array([1.5]))


def test_probability_logit_is_finite_at_the_ends():
    scores = A.probability_logit(np.array([0.0, 1.0, 0.5]))
    assert np.all(np.isfinite(scores))
    assert scores[2] == 0.0 and scores[0] < -100 < 100 < scores[1]


def test_torch_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(6, 4)).astype(np.float32)
    labels = rng.integers(0, 4, 6)
    expected = A.logit_scaled_confidence(logits.astype(np.float64), labels)
    t_logits = torch.tensor(logits, requires_grad=True)
    got = A.logit_scaled_confidence(t_logits, torch.tensor(labels))
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    bf16 = A.loss_score(t_logits.to(torch.bfloat16), torch.tensor(labels))
    np.testing.assert_allclose(bf16, -A.cross_entropy_loss(logits, labels), atol=0.1)
    shadows = torch.randn(5, 3, dtype=torch.float64)
    result = A.ulira_log_likelihood_ratio(
        shadows[0], unlearned_shadow_scores=shadows, retrained_shadow_scores=shadows + 1
    )
    assert isinstance(result.log_likelihood_ratio, np.ndarray)


# ----------------------------------------------------------------------------------------------
# U-LiRA.


def test_ulira_matches_gaussian_log_likelihood_ratio():
    unlearned = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 8.0]])
    retrained = np.array([[1.0, 0.0], [1.0, 2.0], [4.0, 1.0], [2.0, 1.0]])
    target = np.array([[1.5, 2.0], [0.0, 0.0]])
    result = A.ulira_log_likelihood_ratio(
        target, unlearned_shadow_scores=unlearned, retrained_shadow_scores=retrained
    )
    mu_u, sd_u = unlearned.mean(0), unlearned.std(0, ddof=1)
    mu_r, sd_r = retrained.mean(0), retrained.std(0, ddof=1)
    expected = stats.norm.logpdf(target, mu_u, sd_u) - stats.norm.logpdf(target, mu_r, sd_r)
    np.testing.assert_allclose(result.log_likelihood_ratio, expected, rtol=1e-12)
    np.testing.assert_allclose(result.unlearned_std, sd_u)
    assert result.kind == "estimate"
    assert result.n_unlearned_shadows == 3 and result.n_retrained_shadows == 4


def test_ulira_fixed_variance_pools_each_group_separately():
    rng = np.random.default_rng(3)
    unlearned = rng.normal(0.0, 3.0, (40, 6))
    retrained = rng.normal(0.0, 1.0, (40, 6))
    result = A.ulira_log_likelihood_ratio(
        retrained[0],
        unlearned_shadow_scores=unlearned,
        retrained_shadow_scores=retrained,
        fixed_variance=True,
    )
    pooled_u = math.sqrt(unlearned.var(0, ddof=1).mean())
    pooled_r = math.sqrt(retrained.var(0, ddof=1).mean())
    np.testing.assert_allclose(result.unlearned_std, pooled_u)
    np.testing.assert_allclose(result.retrained_std, pooled_r)
    assert pooled_u > 2 * pooled_r  # the two groups were not mixed up


def test_ulira_constant_columns_stay_finite():
    unlearned = np.ones((4, 2))
    retrained = np.zeros((4, 2))
    result = A.ulira_log_likelihood_ratio(
        np.array([1.0, 0.0]), unlearned_shadow_scores=unlearned, retrained_shadow_scores=retrained
    )
    llr = result.log_likelihood_ratio
    assert np.all(np.isfinite(llr)) and llr[0] > 0 > llr[1]


def test_ulira_per_example_calibration_beats_a_global_threshold():
    """Per-example offsets hide a shift of 1 from a global score but not from U-LiRA."""
    rng = np.random.default_rng(4)
    n_examples, n_shadow, shift = 400, 64, 1.0
    offsets = rng.normal(0.0, 5.0, n_examples)
    unlearned_shadows = offsets + shift + rng.normal(size=(n_shadow, n_examples))
    retrained_shadows = offsets + rng.normal(size=(n_shadow, n_examples))
    target_unlearned = offsets + shift + rng.normal(size=n_examples)
    target_retrained = offsets + rng.normal(size=n_examples)
    result = A.ulira_log_likelihood_ratio(
        np.stack([target_unlearned, target_retrained]),
        unlearned_shadow_scores=unlearned_shadows,
        retrained_shadow_scores=retrained_shadows,
    )
    llr = result.log_likelihood_ratio
    ulira_auc = roc_curve(llr[0], llr[1]).auc
    global_auc = roc_curve(target_unlearned, target_retrained).auc
    optimal_auc = stats.norm.cdf(shift / math.sqrt(2))  # AUC of N(1, 1) vs N(0, 1)
    assert ulira_auc == pytest.approx(optimal_auc, abs=0.05)
    assert global_auc < 0.62


def test_ulira_validation():
    good = np.zeros((3, 2))
    with pytest.raises(ValueError, match="n_examples"):
        A.ulira_log_likelihood_ratio(
            np.zeros(2), unlearned_shadow_scores=good, retrained_shadow_scores=np.zeros((3, 3))
        )
    with pytest.raises(ValueError, match="at least 2 shadow"):
        A.ulira_log_likelihood_ratio(
            np.zeros(2), unlearned_shadow_scores=good[:1], retrained_shadow_scores=good
        )
    with pytest.raises(ValueError, match="target_scores"):
        A.ulira_log_likelihood_ratio(
            np.zeros(3), unlearned_shadow_scores=good, retrained_shadow_scores=good
        )
    with pytest.raises(ValueError, match="min_std"):
        A.ulira_log_likelihood_ratio(
            np.zeros(2), unlearned_shadow_scores=good, retrained_shadow_scores=good, min_std=0.0
        )
