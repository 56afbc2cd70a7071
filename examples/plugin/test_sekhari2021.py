"""Ground truth for the plug-in: the bounds against an independent mpmath recomputation, the
constants against the logistic loss, the mechanism against the theorem and its own seeds, the
adapter against the bound engine and a deliberately broken mechanism."""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest
import torch
from unlearn_sekhari2021.algorithm import ADAPTER, M_LOGISTIC, newton_removal
from unlearn_sekhari2021.bound import RENYI, SENSITIVITY, SIGMA

from audits.attacks import DEFAULT_ATTACKS
from audits.registry import register_adapter
from audits.runner import prepare_audit
from audits.testing import assert_consistent, assert_violation
from bounds.conversions import best_epsilon

register_adapter(ADAPTER)  # the entry point does this when the package is installed
mpmath.mp.dps = 50
CASES = [dict(L=2, M="1/10", lam="1/10", m=1, n=256), dict(L=1, M="3/7", lam="1/1000", m=5, n=10**6),
         dict(L="5/2", M=2, lam=3, m=9, n=10)]


def gamma_mp(c: dict) -> mpmath.mpf:
    L, M, lam = (mpmath.mpf(mpmath.fraction(*map(int, str(c[k]).split("/"))) if "/" in str(c[k])
                            else c[k]) for k in ("L", "M", "lam"))
    return 2 * M * L**2 * c["m"] ** 2 / (lam**3 * mpmath.mpf(c["n"]) ** 2)


@pytest.mark.parametrize("case", CASES)
def test_the_bounds_equal_an_independent_mpmath_recomputation(case: dict) -> None:
    gamma = gamma_mp(case)
    checks = [(SENSITIVITY, {}, gamma),
              (RENYI, {"sigma": "1/20", "alpha": 7}, 7 * gamma**2 / (2 * mpmath.mpf(1) / 400)),
              (SIGMA, {"epsilon": "1/2", "delta": "1/1000"},
               gamma / mpmath.mpf(0.5) * mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1250))))]
    for bound, extra, truth in checks:
        interval = bound.evaluate(precision="interval", **case, **extra)
        assert interval.upper >= truth and interval.upper <= truth * (1 + mpmath.mpf(10) ** -30)
        assert math.isclose(bound.evaluate(**case, **extra).value, float(truth), rel_tol=1e-14)


def test_the_hessian_lipschitz_constant_bounds_the_logistic_third_derivative() -> None:
    peak = 1 / (6 * mpmath.sqrt(3))  # |s(1-s)(1-2s)| is largest at s = (1 +- 1/sqrt 3)/2
    t = mpmath.log((1 + 1 / mpmath.sqrt(3)) / (1 - 1 / mpmath.sqrt(3)))
    s = 1 / (1 + mpmath.e ** -t)
    assert mpmath.almosteq(abs(s * (1 - s) * (1 - 2 * s)), peak, 1e-40)
    grid = np.linspace(-12, 12, 200001)
    sig = 1 / (1 + np.exp(-grid))
    assert np.abs(sig * (1 - sig) * (1 - 2 * sig)).max() <= float(peak) <= float(M_LOGISTIC)


def demo_data(size: int = 1):
    spec = ADAPTER.demo_spec(trials=40).replace(  # without the likelihood-ratio wrapper
        attacks=DEFAULT_ATTACKS,
        request=dataclasses.replace(ADAPTER.demo.request, size=size, indices=tuple(range(size))))
    return spec, prepare_audit(spec).mechanism


@pytest.mark.parametrize("size", [1, 3])
def test_the_newton_step_lands_within_gamma_of_retraining(size: int) -> None:
    from empirical.mechanisms.common import TrialOptions

    spec, mechanism = demo_data(size)
    data, lam = mechanism.data(), spec.algorithm.lam
    _, w_bar, w_ret = newton_removal(data.dataset, data.request, config=mechanism.config,
                                     options=TrialOptions(n_trials=1, seed=0, retain_scores=1))
    n, gap = data.dataset.n, float(torch.linalg.vector_norm(w_bar - w_ret))
    # Strong convexity gives ||w_hat - w_hat'|| <= m L / (lambda n); Newton's error is then
    # at most M/(2 lambda) of its square, a quarter of gamma.
    assert 0 < gap <= 1.0001 * 0.1 * size**2 * 4 / (2 * lam**3 * n**2)
    assert gap <= SENSITIVITY.evaluate(L=2, M="1/10", lam=lam, m=size, n=n).value / 4
    assert float(torch.linalg.vector_norm(w_ret)) <= 1 / lam  # inside the ball where L = 2


def test_batched_trials_equal_looped_ones_and_depend_only_on_seed_and_index() -> None:
    _, mechanism = demo_data()
    batched = mechanism.run_trials(seed=3, first_trial=0, n_trials=6)
    looped = mechanism.run_trials(seed=3, first_trial=0, n_trials=6, mode="loop")
    later = mechanism.run_trials(seed=3, first_trial=4, n_trials=2)
    for side in ("unlearned", "retrained"):
        a, b, c = (getattr(x, side).statistics["params"] for x in (batched, looped, later))
        assert np.array_equal(a, b) and np.array_equal(a[4:], c)
    assert not np.array_equal(batched.unlearned.statistics["params"],
                              mechanism.run_trials(seed=4, first_trial=0, n_trials=6)
                              .unlearned.statistics["params"])


def test_the_published_models_have_the_exact_laws() -> None:
    spec, mechanism = demo_data()
    prepared = prepare_audit(spec)
    laws = ADAPTER.exact_laws(spec, prepared)
    batch = mechanism.run_trials(seed=0, first_trial=0, n_trials=4000)
    for side, mean in (("unlearned", laws.unlearned_mean), ("retrained", laws.retrained_mean)):
        params = getattr(batch, side).statistics["params"]
        z = (params.mean(0) - mean) / math.sqrt(laws.variance / len(params))
        assert np.abs(z).max() < 5  # 64 coordinates: a miss has chance ~ 4e-5
        assert abs(params.var(0).mean() / laws.variance - 1) < 0.05


def test_the_certificate_is_the_bound_engines_and_a_broken_mechanism_is_caught() -> None:
    spec, _ = demo_data()
    prepared = prepare_audit(spec)
    cert = prepared.certificate
    sigma = cert.inputs["sigma"]
    engine = best_epsilon(RENYI, delta=cert.delta, conversion="mironov", L=2, M="1/10",
                          lam=spec.algorithm.lam, m=1, n=cert.inputs["n"], sigma=sigma)
    assert cert.epsilon == pytest.approx(engine.epsilon, rel=1e-9) and cert.epsilon <= 1
    assert_consistent(spec, trials=400)
    assert_violation(ADAPTER.with_noise_reduced(spec, factor=1e6), trials=400)
