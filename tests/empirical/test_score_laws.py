"""The peer suite's score laws: their declared exact survival functions against their samplers,
and the exact mean bound of a rule fixed with the truth against a simulation of the same rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from empirical.benchmarks.score_laws import (
    SCORE_LAWS,
    fixed_rule_mean_bound,
    truth_chosen_bound,
)
from empirical.statistics.checks import epsilon_from_error_rates
from empirical.statistics.thresholds import clopper_pearson_upper


@pytest.mark.parametrize("law", sorted(SCORE_LAWS))
def test_declared_survival_functions_match_the_sampler(law):
    score_law = SCORE_LAWS[law]
    n = 40_000
    positive, negative = score_law.draw(np.random.default_rng([431, len(law)]), n)
    for t in np.quantile(np.concatenate([positive, negative]), [0.05, 0.3, 0.5, 0.7, 0.95]):
        for scores, survival in ((positive, score_law.survival_positive),
                                 (negative, score_law.survival_negative)):
            exact = float(survival(np.asarray(t)))
            seen = float(np.mean(scores >= t))
            # 5 standard errors: a survival shifted by a tenth of a unit is off by ~10 of them
            assert abs(seen - exact) <= 5.0 * math.sqrt(exact * (1.0 - exact) / n) + 1e-12, (t, seen)


def _simulated_mean(law: str, *, threshold: float, n: int, delta: float, alpha: float,
                    share: float, runs: int, seed: int) -> tuple[float, float]:
    draw = SCORE_LAWS[law].draw
    values = []
    for run in range(runs):
        positive, negative = draw(np.random.default_rng([seed, run]), n)
        missed = np.count_nonzero(positive < threshold)
        bound = np.count_nonzero(negative >= threshold)
        fnr_hi = float(clopper_pearson_upper(missed, n, (1.0 - share) * alpha))
        fpr_hi = float(clopper_pearson_upper(bound, n, share * alpha))
        values.append(max(0.0, float(epsilon_from_error_rates(fpr=fpr_hi, fnr=fnr_hi, delta=delta,
                                                              direction="forward"))))
    return float(np.mean(values)), float(np.std(values) / math.sqrt(runs))


@pytest.mark.parametrize(("law", "threshold"), [("logistic", 1.2), ("binomial", 13.0),
                                                 ("mixture", 3.5)])
def test_exact_mean_bound_of_a_fixed_rule_matches_its_simulation(law, threshold):
    n, delta, alpha, share = 300, 1e-5, 0.05, 0.7
    score_law = SCORE_LAWS[law]
    exact = fixed_rule_mean_bound(
        detected=float(score_law.survival_positive(np.asarray(threshold))),
        binding=float(score_law.survival_negative(np.asarray(threshold))),
        n=n, delta=delta, alpha=alpha, binding_share=share)
    simulated, error = _simulated_mean(law, threshold=threshold, n=n, delta=delta, alpha=alpha,
                                       share=share, runs=3000, seed=432)
    assert exact > 0.1
    assert abs(simulated - exact) <= 4.0 * error, (exact, simulated, error)


def test_a_rule_that_detects_nothing_has_mean_bound_zero():
    assert fixed_rule_mean_bound(detected=1e-6, binding=0.5, n=500, delta=1e-5, alpha=0.05,
                                 binding_share=0.7) == 0.0


def test_truth_chosen_rule_is_the_best_fixed_threshold_of_the_grid():
    n, delta = 1_000, 1e-5
    best = truth_chosen_bound("gaussian", n=n, delta=delta)
    law = SCORE_LAWS["gaussian"]
    for t in (-1.5, 0.0, 1.0, 1.5, 3.0):
        p_above = float(law.survival_positive(np.asarray(t)))
        q_above = float(law.survival_negative(np.asarray(t)))
        for detected, binding in ((p_above, q_above), (1.0 - q_above, 1.0 - p_above)):
            for share in (0.5, 0.7, 0.9):
                other = fixed_rule_mean_bound(detected=detected, binding=binding, n=n,
                                              delta=delta, alpha=0.05, binding_share=share)
                assert other <= best.epsilon_mean
    # N(1, 1) against N(0, 1) is symmetric about 1/2: the optimum lies a few standard deviations
    # out, above the upper bulk (forward) or, mirrored, below the lower one (reverse)
    mirrored = best.threshold if best.inequality == "forward" else 1.0 - best.threshold
    assert 1.5 < mirrored < 3.0


def test_support_edge_rule_of_the_exponential_is_found():
    # {score < 1} holds no unlearned score: its false-negative count is 0 with certainty, and the
    # truth-chosen rule is that edge, bound by the false-negative rate.
    best = truth_chosen_bound("exponential", n=1_000, delta=1e-5)
    assert (best.threshold, best.inequality) == (1.0, "reverse")
    lower_tnr = 1.0 - math.exp(-1.0)
    assert best.epsilon_mean < math.log(lower_tnr / float(clopper_pearson_upper(0, 1_000, 0.05)))
