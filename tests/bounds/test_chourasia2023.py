"""Chourasia & Shah 2023 (seed 001): declarations against an independent re-derivation, ground
truths, the errata of docs/errata-chourasia2023.md, and hypothesis properties on the domains."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import bounds
from bounds import conversions
from bounds.calibration import calibrate
from bounds.errors import PreconditionError
from bounds.papers import chourasia2023 as paper
from bounds.registry import get_reproduction
from bounds.strategies import strategy_for
from tests.bounds import reference_chourasia2023 as ref
from tests.bounds.test_docs import as_params, check_output, console_examples, run_example

ROOT = Path(__file__).resolve().parents[2]
IDS = [b.id for b in bounds.list_bounds("chourasia2023")]
SETTINGS = settings(max_examples=10, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Extreme but valid points per bound (the realistic point is each bound's example).
EXTREME: dict[str, list[dict[str, Any]]] = {
    "chourasia2023:thm4.1": [{"epsilon": "1e-12", "q": "1.000001"}, {"epsilon": 40, "q": 10**6},
                             {"epsilon": 0, "q": 2}, {"epsilon": "1e-3", "q": 10**9}],
    # e^epsilon - 1 cancels below ~1e-8 (see the bound's notes): 1e-6 keeps 1e-9 in float
    "chourasia2023:thm4.1/q-infinity": [{"epsilon": "1e-6"}, {"epsilon": 300}],
    "chourasia2023:thm4.3": [{"q": "1.0001", "epsilon_dd": "1e-12", "epsilon_dp": 1000,
                              "p": 10**6}],
    "chourasia2023:thm4.5": [{"delta": "1e-6", "q": 2}, {"delta": "0.999999", "q": 10**6},
                             {"delta": "0.5", "q": "1.01"}],
    "chourasia2023:thm4.5/as-printed": [{"delta": "1e-6", "q": 2}, {"delta": "0.99", "q": 10**5}],
    "chourasia2023:thm5.1/sigma": [{"q": 10**4, "L": "1e-3", "lam": "1e-8", "epsilon_dp": "1e-3",
                                    "n": 10**9}],
    "chourasia2023:thm5.1/eta": [{"lam": "1e-12", "beta": 10**6}],
    "chourasia2023:thm5.1/rho-scale": [{"q": "1.001", "L": 100, "lam": "1e-9", "beta": 10**5,
                                        "epsilon_dp": 50, "n": 10**8}],
    "chourasia2023:thm5.1/deletion-iterations": [{"lam": "1e-6", "beta": 100, "epsilon_dp": 10,
                                                  "epsilon_dd": "1e-10"}],
    "chourasia2023:thm5.1/deletion-epsilon": [{"lam": 1, "beta": 1, "epsilon_dp": 1, "K_Abar": 0},
                                              {"lam": "1e-3", "beta": 10, "epsilon_dp": 5,
                                               "K_Abar": 10**7}],
    "chourasia2023:thm5.1/deletion-renyi": [{"q": "1.0001", "sigma": "1e-6", "L": 10,
                                             "lam": "1e-3", "beta": 100, "n": 10**6,
                                             "K_Abar": 0},
                                            {"q": 10**5, "sigma": 50, "L": "1e-4", "lam": 10,
                                             "beta": "1e-6", "n": 3, "K_Abar": 10**4}],
    "chourasia2023:thm4.3+thm5.1/adaptive-deletion-renyi": [
        {"q": "1.0001", "sigma": "1e-6", "L": 10, "lam": "1e-3", "beta": 100, "n": 10**6,
         "K_Abar": 0, "p": 0},
        {"q": 10**5, "sigma": 50, "L": "1e-4", "lam": 10, "beta": "1e-6", "n": 3, "K_Abar": 10**4,
         "p": 10**6}],
    "chourasia2023:thm5.1/learning-iterations": [{"lam": "1e-4", "beta": 50, "q": 100,
                                                  "epsilon_dp": "0.01", "n": 10**9, "d": 10**7}],
    "chourasia2023:thm5.1/utility-iterations": [{"lam": 1, "beta": "1e-9", "q": "1.5",
                                                 "epsilon_dp": 100, "d": 1, "r": 10**5}],
    "chourasia2023:thm5.1/unlearning-iterations": [{"lam": "0.01", "beta": 1, "q": 20,
                                                    "epsilon_dp": 2, "epsilon_dd": "1e-8",
                                                    "d": 10**6, "r": 1000}],
    "chourasia2023:thm5.1/savings": [{"lam": "0.1", "beta": 3, "q": 30, "epsilon_dp": "0.5",
                                      "epsilon_dd": "1e-3", "n": 10**8, "d": 10**4, "r": 10}],
    "chourasia2023:thm5.1/savings-order": [{"q": 1000, "epsilon_dd": "1e-7", "n": 10**9,
                                            "d": 10**6, "r": 1}],
    "chourasia2023:table1/noisy-gd": [{"epsilon": "1e-4", "n": 10**9, "d": 10**6}],
    "chourasia2023:thm5.2/rdp": [{"q": 64, "L": 10, "n": 50, "eta": "1e-7", "K_A": 10**8,
                                  "K_Abar": 3, "sigma": "0.5"}],
    "chourasia2023:thm5.2/sigma": [{"q": "1.01", "L": "1e-3", "epsilon_dp": 9, "n": 10**9,
                                    "eta": "1e-9", "K_A": 1, "K_Abar": 10**9}],
    "chourasia2023:thm5.2/eta": [{"lam": "1e-6", "beta": 10**3, "epsilon_dd": "1e-9", "d": 10**8,
                                  "q": 1000, "B": "1.0001"}],
    "chourasia2023:thm5.2/learning-iterations": [
        {"lam": "0.01", "beta": 1, "epsilon_dd": "1e-6", "d": 10**6, "q": 100, "B": "1.001",
         "eta": "1e-20"}],
    "chourasia2023:thm5.2/unlearning-iterations": [
        {"lam": "0.01", "beta": 1, "epsilon_dd": "1e-6", "d": 10**6, "q": 100, "B": "1.001",
         "eta": "1e-20", "n": 10**9, "r": 3, "K_A": 10**30}],
    "chourasia2023:thm5.2/savings": [
        {"lam": 5, "beta": "0.1", "epsilon_dd": "1e-4", "d": 3, "q": "1.2", "B": 10**4,
         "eta": "1e-15", "n": 10**7, "r": 1}],
}


def _points(bound_id: str) -> list[tuple[str, dict[str, Any]]]:
    bound = bounds.get(bound_id)
    return [("example", dict(bound.example))] + [
        (f"extreme{i}", p) for i, p in enumerate(EXTREME[bound_id])]


CASES = [(bid, name, p) for bid in IDS for name, p in _points(bid)]


def _reference(bound_id: str, params: dict[str, Any]) -> mpmath.mpf:
    """The independent value, fed the same exact inputs (60-digit strings where irrational)."""
    bound = bounds.get(bound_id)
    exact = bound.resolve(params)
    args = {k: (Fraction(int(v.p), int(v.q)) if v.is_Rational else str(sp.N(v, 70)))
            for k, v in exact.items()}
    return ref.REFERENCE[bound_id](**args)


def test_every_declared_bound_has_a_reference_and_extreme_points():
    assert set(IDS) == set(ref.REFERENCE) == set(EXTREME)
    required = {"chourasia2023:thm4.1", "chourasia2023:thm4.3", "chourasia2023:thm4.5",
                "chourasia2023:thm5.1/sigma", "chourasia2023:thm5.1/deletion-iterations",
                "chourasia2023:thm5.2/rdp", "chourasia2023:thm5.2/eta"}
    assert required <= set(IDS)
    for bid in IDS:
        assert bounds.get(bid).citation.seed == paper.SEED


@pytest.mark.parametrize(("bound_id", "where", "params"), CASES,
                         ids=[f"{b}-{w}" for b, w, _ in CASES])
def test_declaration_matches_the_reference_in_every_precision(bound_id, where, params):
    bound = bounds.get(bound_id)
    truth = _reference(bound_id, params)
    scale = max(abs(truth), mpmath.mpf(10) ** -300)
    with mpmath.workdps(60):
        mp_value = bound.evaluate(precision="mp", digits=50, **params).value
        assert abs(mp_value - truth) <= mpmath.mpf(10) ** -40 * scale, (mp_value, truth)
        enclosure = bound.evaluate(precision="interval", digits=50, **params)
        slack = mpmath.mpf(10) ** -45 * scale  # the reference itself is exact to ~1e-50
        assert enclosure.lower - slack <= truth <= enclosure.upper + slack
        assert enclosure.upper - enclosure.lower <= mpmath.mpf(10) ** -30 * scale
    value = bound.evaluate(precision="float", **params).value
    assert math.isclose(float(value), float(truth), rel_tol=1e-9, abs_tol=1e-300), (value, truth)


@pytest.mark.parametrize("bound_id", IDS)
def test_reference_agrees_on_random_valid_inputs(bound_id):
    bound = bounds.get(bound_id)
    examples = 6 if bound_id == "chourasia2023:thm5.2/rdp" else 20  # quadrature is slower

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(strategy_for(bound, well_conditioned=True))
    def check(params):
        truth = _reference(bound_id, params)
        with mpmath.workdps(60):
            value = bound.evaluate(precision="mp", digits=50, **params).value
            assert abs(value - truth) <= mpmath.mpf(10) ** -35 * max(abs(truth),
                                                                    mpmath.mpf(10) ** -200)

    check()


# --------------------------------------------------------------------------------------------
# Theorem 4.1
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [1.5, 2.0, 4.0, 16.0, 256.0])
@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5])
def test_thm41_holds_for_a_gaussian_pair_at_its_exact_renyi_divergence(q, mu):
    # H0: N(0,1), H1: N(mu,1), both at R_q = q (mu/2)^2/2 from N(mu/2,1); the best test's
    # advantage is TV = 2 Phi(mu/2) - 1.
    epsilon = q * (mu / 2) ** 2 / 2
    best_advantage = 2 * stats.norm.cdf(mu / 2) - 1
    bound = paper.THM41.evaluate(precision="interval", epsilon=epsilon, q=q).certified_upper
    assert best_advantage <= bound


def test_thm41_renyi_term_is_vacuous_exactly_when_its_minimiser_leaves_0_1():
    # delta* = (e^eps/(2(q-1)))^((q-1)/q) >= 1 forces the term to >= 2q - 1 >= 1.
    for q in (1.05, 1.2, 1.5):
        for epsilon in (0.0, 0.1, 1.0):
            delta_star = (math.exp(epsilon) / (2 * (q - 1))) ** ((q - 1) / q)
            term = float(sp.N(paper.THM41_RENYI_TERM.subs({paper.q: q, paper.eps: epsilon})))
            if delta_star >= 1:
                assert term >= 2 * q - 1 - 1e-12 >= 1 - 1e-12


def test_thm41_approaches_its_q_infinity_limit_from_above():
    for epsilon in (0.0, 0.01, 0.1, 1.0):
        limit = paper.THM41_LIMIT(epsilon=epsilon)
        values = [paper.THM41(epsilon=epsilon, q=q) for q in (10.0, 100.0, 1e4, 1e8)]
        assert all(v >= limit for v in values)
        assert values[-1] - limit < 1e-6
    # hence the limit is smaller than the finite-q bound: it needs R_infinity <= epsilon


def test_thm41_is_not_monotone_in_q():
    term = [float(paper.THM41_RENYI_TERM.subs({paper.eps: 0.1, paper.q: q})) for q in (1.01, 2, 10)]
    assert term[0] < term[1] > term[2]


def test_thm41_goes_to_zero_with_epsilon():
    assert paper.THM41(epsilon=1e-12, q=2) == pytest.approx(math.sqrt(2e-12), rel=1e-9)
    assert paper.THM41(epsilon=0, q=2) == 0


# --------------------------------------------------------------------------------------------
# Theorem 4.5 and erratum C1 (the garbled denominator)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [2.5, 3.0, 10.0, 50.0, 1000.0])
@pytest.mark.parametrize("delta", [0.6, 0.8, 0.9, 0.99])
def test_c1_thm45_is_the_inverse_of_thm41_and_the_printed_form_is_not(q, delta):
    # When the Rényi branch sets the limit, Theorem 4.1's second term there equals delta^2.
    renyi = float(sp.N(paper.THM45_RENYI.subs({paper.q: q, paper.delta: delta}), 30))
    printed = float(sp.N(paper.THM45_RENYI_PRINTED.subs({paper.q: q, paper.delta: delta}), 30))
    if renyi > delta**4 / 2:
        at_limit = float(sp.N(paper.THM41_RENYI_TERM.subs({paper.q: q, paper.eps: renyi}), 30))
        assert at_limit == pytest.approx(delta**2, rel=1e-12)
        at_printed = float(sp.N(paper.THM41_RENYI_TERM.subs({paper.q: q, paper.eps: printed}),
                                30))
        assert abs(at_printed - delta**2) > 1e-3


def test_c1_printed_denominator_crosses_the_correct_one_between_q_2_and_3():
    # q^(2^(1/q)) < q 2^(1/q) at q = 2 (printed limit larger), > at q = 3 (printed smaller).
    def gap(q: float) -> float:
        return 2 ** (1 / q) * math.log(q) - (math.log(q) + math.log(2) / q)

    assert gap(2.0) < 0 < gap(3.0)
    assert gap(2.3645) < 0 < gap(2.3646)  # the crossing quoted in the as-printed bound's notes
    assert paper.THM45_PRINTED(delta=0.99, q=1.05) > 10 * paper.THM45(delta=0.99, q=1.05)
    assert paper.THM45_PRINTED(delta=0.9, q=50) < paper.THM45(delta=0.9, q=50)


def test_thm45_threshold_values_by_hand():
    # delta = 0.5, q = 2: the Pinsker branch 0.5^4/2 = 1/32 (the Rényi branch is negative).
    assert paper.THM45(delta=0.5, q=2) == pytest.approx(1 / 32, rel=1e-15)
    # delta = 0.9, q = 2: 0.9^4/2 = 0.32805.
    assert paper.THM45(delta=0.9, q=2) == pytest.approx(0.32805, rel=1e-15)


# --------------------------------------------------------------------------------------------
# Theorem 4.3
# --------------------------------------------------------------------------------------------


def test_thm43_adds_p_privacy_budgets():
    assert paper.THM43(q=2, epsilon_dd=0.1, epsilon_dp=1, p=0) == pytest.approx(0.1)
    assert paper.THM43(q=2, epsilon_dd=0.1, epsilon_dp=1, p=3) == pytest.approx(3.1)
    with pytest.raises(PreconditionError, match="Theorem 4.3"):
        paper.THM43(q=1, epsilon_dd=0.1, epsilon_dp=1, p=1)


def test_thm43_converts_to_epsilon_delta_with_the_engine_conversion():
    # Appendix B reused: (q, value)-data-deletion -> one-sided (value + log(1/delta)/(q-1)).
    value = paper.THM43(q=11, epsilon_dd=0.1, epsilon_dp=0.2, p=2)
    converted = conversions.renyi_to_dp(renyi_epsilon=value, alpha=11.0, delta=1e-5)
    assert converted == pytest.approx(0.5 + math.log(1e5) / 10)


# --------------------------------------------------------------------------------------------
# Theorem 5.1
# --------------------------------------------------------------------------------------------


def test_thm51_worked_example_by_hand():
    # L = lam = beta = 1, q = 2, eps_dp = 1, eps_dd = 0.1, n = 1e4, d = 100, r = 1.
    setting = paper.convex_setting(q=2, L=1, lam=1, beta=1, epsilon_dp=1, epsilon_dd=0.1,
                                   n=10_000, d=100, r=1)
    assert setting.sigma**2 == pytest.approx(8e-8, rel=1e-14)  # 4*2/(1e8)
    assert setting.eta == 0.25  # 1/(2*2)
    assert setting.rho_variance == pytest.approx(8e-8 * 8 / 7, rel=1e-14)  # / (1 - 1/8)
    assert setting.K_Abar == math.ceil(8 * math.log(10))  # 19, eq. (16) beats 8 log 10 of (17)
    assert setting.K_A == math.ceil(8 * math.log(1e8 / 800))  # 94
    assert setting.K_Abar == 19 and setting.K_A == 94


def test_thm51_rho_is_the_stationary_law_of_a_regulariser_step():
    values = {"q": 3, "L": 2, "lam": sp.Rational(1, 7), "beta": 5, "epsilon_dp": 2, "n": 100}
    variance = paper.RHO51_VARIANCE.subs({sp.Symbol(k, real=True): v for k, v in values.items()})
    eta = paper.ETA51.subs({paper.lam: values["lam"], paper.beta: values["beta"]})
    sigma2 = paper.SIGMA51_SQUARED.subs({sp.Symbol(k, real=True): v for k, v in values.items()})
    assert sp.simplify((1 - eta * values["lam"]) ** 2 * variance + 2 * eta * sigma2 - variance) == 0


@pytest.mark.parametrize("target", [0.5, 0.1, 0.01, 1e-4])
@pytest.mark.parametrize(("lam", "beta"), [(1, 1), (0.01, 1), (2, 0.5)])
def test_thm51_calibrating_K_Abar_for_a_target_epsilon_dd(target, lam, beta):
    result = calibrate("chourasia2023:thm5.1/deletion-epsilon", solve="K_Abar", epsilon=target,
                       lam=lam, beta=beta, epsilon_dp=1)
    # eq. (16) directly, at 50 digits.
    with mpmath.workdps(50):
        need = 4 * (mpmath.mpf(lam) + beta) / lam * mpmath.log(1 / mpmath.mpf(target))
    assert result.value == int(mpmath.ceil(need))
    assert result.certified_epsilon <= target < result.neighbour_epsilon


@pytest.mark.parametrize("K_Abar", [0, 1, 5, 19, 40])
@pytest.mark.parametrize("q", [1.5, 2.0, 8.0])
def test_thm51_deletion_holds_for_the_linear_loss_oracle(K_Abar, q):
    # loss <theta, x> with ||x|| <= L: iterates stay Gaussian with the stationary covariance of
    # rho, so R_q between the deleted model and the same curator run on the edited database is
    # q ||mean gap||^2/(2 v) with the gap contracted by (1 - eta lam) per step (exact).
    L, lam, beta, eps_dp, n, K_A = 1.0, 0.5, 2.0, 1.0, 50, 30
    eta = 1 / (2 * (lam + beta))
    sigma2 = 4 * q * L**2 / (lam * eps_dp * n**2)
    v = sigma2 / (lam * (1 - eta * lam / 2))
    worst_gap = (1 - (1 - eta * lam) ** K_A) * 2 * L / (lam * n) * (1 - eta * lam) ** K_Abar
    exact = q * worst_gap**2 / (2 * v)
    certified = paper.THM51_EPSILON.evaluate(precision="interval", lam=lam, beta=beta,
                                             epsilon_dp=eps_dp, K_Abar=K_Abar).certified_upper
    assert exact <= certified
    # and before deletion the same pair is (q, eps_dp)-close: Theorem 5.1(1) for this loss
    assert q * ((1 - (1 - eta * lam) ** K_A) * 2 * L / (lam * n)) ** 2 / (2 * v) <= eps_dp


def test_thm51_preconditions_name_the_theorem():
    with pytest.raises(PreconditionError, match=r"Theorem 5.1.*epsilon_dd <= epsilon_dp"):
        paper.THM51_DELETION(lam=1, beta=1, epsilon_dp=0.1, epsilon_dd=1)
    with pytest.raises(PreconditionError, match="Theorem 5.1"):
        paper.THM51_SIGMA(q=2, L=1, lam=0, epsilon_dp=1, n=10)


# --------------------------------------------------------------------------------------------
# Erratum C4: r <= sqrt(qd/eps_dd) does not make the deletion iterations enough for utility
# --------------------------------------------------------------------------------------------


def test_c4_r_below_the_printed_threshold_can_still_need_more_iterations():
    q, d, eps_dd, eps_dp, lam, beta = 2, 100, 0.05, 1.0, 1.0, 1.0
    r = math.floor(math.sqrt(q * d / eps_dd))  # 63, inside the text's condition
    deletion = paper.THM51_DELETION(lam=lam, beta=beta, epsilon_dp=eps_dp, epsilon_dd=eps_dd)
    utility = paper.THM51_UTILITY(lam=lam, beta=beta, q=q, epsilon_dp=eps_dp, d=d, r=r)
    assert utility > deletion
    # the exact condition: r <= sqrt(qd/(8 eps_dd)) and 5 kappa <= eps_dp/eps_dd
    r_exact = math.floor(math.sqrt(q * d / (8 * eps_dd)))
    assert paper.THM51_UTILITY(lam=lam, beta=beta, q=q, epsilon_dp=eps_dp, d=d, r=r_exact) \
        <= deletion
    assert paper.THM51_UTILITY(lam=lam, beta=beta, q=q, epsilon_dp=eps_dp, d=d,
                               r=r_exact + 1) > deletion
    # kappa alone can break it, whatever r: eps_dp/eps_dd = 20 < 5 kappa = 25 at beta = 4
    assert paper.THM51_UTILITY(lam=1, beta=4, q=q, epsilon_dp=eps_dp, d=d, r=1) > \
        paper.THM51_DELETION(lam=1, beta=4, epsilon_dp=eps_dp, epsilon_dd=eps_dd)


# --------------------------------------------------------------------------------------------
# Erratum C3: the savings claims
# --------------------------------------------------------------------------------------------


def test_c3_convex_saving_tracks_the_claimed_order_for_bounded_kappa():
    # saving = 8 n log(n^2/8000) here and the order n log(n/44.7): the ratio tends to 16
    ratios = []
    for n in (10**5, 10**7, 10**9, 10**11):
        params = {"lam": 1, "beta": 1, "q": 2, "epsilon_dp": 1, "epsilon_dd": 0.1, "n": n,
                  "d": 100, "r": 1}
        saving = paper.THM51_SAVINGS(**params)
        order = paper.THM51_SAVINGS_ORDER(q=2, epsilon_dd=0.1, n=n, d=100, r=1)
        ratios.append(saving / order)
    assert all(a < b < 16 for a, b in zip(ratios, ratios[1:], strict=False))
    assert abs(ratios[-1] - 16) < 0.6


def test_c3_table1_row_drops_a_log_one_over_delta_factor():
    epsilon, delta_dp, n, d = 1.0, 1e-6, 10**6, 100
    q = 1 + 2 / epsilon * math.log(1 / delta_dp)
    from_theorem = paper.THM51_SAVINGS_ORDER(q=q, epsilon_dd=epsilon / 2, n=n, d=d, r=1)
    closed = n * math.log(epsilon * n / math.sqrt(2 * d * (epsilon + 2 * math.log(1 / delta_dp))))
    assert from_theorem == pytest.approx(closed, rel=1e-12)
    printed = paper.TABLE1_NOISY_GD(epsilon=epsilon, n=n, d=d)
    assert printed > from_theorem  # the printed row ignores delta


def test_c3_table1_row_holds_as_omega_once_n_is_large():
    """C3(c) is a presentation note: with x = eps n/sqrt(d) and c = eps + 2 log(1/delta), the
    exact order n log min{n, x/sqrt(2c)} is at least half the printed n log min{n, x} exactly
    when x >= 2c (recomputed at 60 digits), so the Omega row holds from there on."""
    from pathlib import Path

    import mpmath

    with mpmath.workdps(60):
        for epsilon, delta_dp, d in ((1, "1e-6", 100), ("0.5", "1e-3", 10), (4, "1e-12", 1000)):
            e, dl = mpmath.mpf(epsilon), mpmath.mpf(delta_dp)
            c = e + 2 * mpmath.log(1 / dl)
            threshold_n = 2 * c * mpmath.sqrt(d) / e  # x = 2c
            for factor, holds in (("1.0001", True), (10, True), (1000, True), ("0.9", False)):
                n = threshold_n * mpmath.mpf(factor)
                x = e * n / mpmath.sqrt(d)
                exact = n * mpmath.log(min(n, x / mpmath.sqrt(2 * c)))
                printed = n * mpmath.log(min(n, x))
                assert (exact >= printed / 2) is holds, (epsilon, delta_dp, d, factor)
            n = 10**6
            exact_pkg = paper.THM51_SAVINGS_ORDER(q=1 + 2 / float(e) * math.log(1 / float(dl)),
                                                  epsilon_dd=float(e) / 2, n=n, d=d, r=1)
            printed_pkg = paper.TABLE1_NOISY_GD(epsilon=float(e), n=n, d=d)
            assert printed_pkg / 2 <= exact_pkg < printed_pkg
    erratum = (Path(__file__).resolve().parents[2] / "docs" / "errata-chourasia2023.md").read_text()
    heading = next(line for line in erratum.splitlines() if line.startswith("**(c) Table 1"))
    assert "presentation note, not an error" in heading
    assert "εn/√d ≥ 2(ε + 2 log(1/δ))" in erratum


def test_c3_nonconvex_saving_is_theta_dn_not_dn_log_n_over_r():
    lam, beta, q, d, B = 1.0, 1.0, 2.0, 10, math.e**2
    eps_dd = math.log(B) / 4
    cap = "lam*epsilon_dd/(64*d*q*B*(beta + lam)**2)"  # eta at its cap, exactly
    ratios = []
    for n in (10**3, 10**5, 10**7, 10**9):
        saving = paper.THM52_SAVINGS(lam=lam, beta=beta, epsilon_dd="1/2", d=d, q=q, B="exp(2)",
                                     eta=cap, n=n, r=1)
        closed = 128 * d * q * B**2 * (beta + lam) ** 2 / (lam**2 * eps_dd) * n \
            * math.log(2 * n / (n + 4))
        assert saving == pytest.approx(closed, rel=1e-9)
        ratios.append(saving / (d * n * math.log(n)))
    assert all(b < a for a, b in zip(ratios, ratios[1:], strict=False))  # -> 0: not Omega(dn log n)
    assert ratios[-1] < ratios[0] / 2


def test_c3_strict_benefit_needs_strict_inequality():
    lam, beta, q, d, B, n = 1.0, 1.0, 2.0, 10, 8.0, 1000
    eps_dd = math.log(B) * (0.5 - 100 / n)  # r/n = 1/2 - eps_dd/log B at r = 100
    eta = lam * eps_dd / (64 * d * q * B * (beta + lam) ** 2) / 2
    at_boundary = paper.THM52_SAVINGS(lam=lam, beta=beta, epsilon_dd=eps_dd, d=d, q=q, B=B,
                                      eta=eta, n=n, r=100)
    assert abs(at_boundary) < 1e-6 * n * 2 * B / (lam * eta)
    assert paper.THM52_SAVINGS(lam=lam, beta=beta, epsilon_dd=eps_dd, d=d, q=q, B=B, eta=eta,
                               n=n, r=99) > 0


# --------------------------------------------------------------------------------------------
# Theorem 5.2
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_thm52_rdp_converted_is_never_below_the_exact_gaussian_epsilon(delta):
    # K Gaussian steps with shift 2 eta L/n and variance 2 eta sigma^2 compose to one Gaussian
    # with mu^2 = K (2 eta L/n)^2/(2 eta sigma^2) = 2 K eta L^2/(n^2 sigma^2).
    params = {"L": 1.0, "n": 100, "eta": 0.01, "K_A": 200, "K_Abar": 50, "sigma": 0.1}
    mu = math.sqrt(2 * 200 * 0.01 / (100**2 * 0.1**2))
    exact = conversions.gaussian_epsilon(delta=delta, mu=mu)
    converted = conversions.best_epsilon("chourasia2023:thm5.2/rdp", delta=delta, **params)
    assert exact <= converted.epsilon <= exact * 2  # sound, and not absurdly loose


def test_thm52_sigma_inverts_the_rdp_bound():
    params = {"q": 3, "L": 2, "n": 500, "eta": "1e-4", "K_A": 10**5, "K_Abar": 4 * 10**4}
    sigma = paper.THM52_SIGMA.evaluate(precision="mp", epsilon_dp=1, **params).value
    again = paper.THM52_RDP.evaluate(precision="mp", sigma=sigma, **params).value
    assert again == pytest.approx(1, rel=1e-30)


def test_thm52_catalogue_like_configuration_meets_the_conditions():
    q, L, lam, beta, B, eps_dp, eps_dd, n, d, r = 2, 1.0, 1.0, 1.0, math.e**2, 1.0, 0.5, 10**4, 10, 1
    # a hair below the cap: the float cap itself may round above the exact one
    eta = float(paper.THM52_ETA(lam=lam, beta=beta, epsilon_dd=eps_dd, d=d, q=q, B=B)) * (1 - 1e-12)
    k_a = math.ceil(paper.THM52_LEARNING(lam=lam, beta=beta, epsilon_dd=eps_dd, d=d, q=q, B=B,
                                         eta=eta))
    k_abar = math.ceil(paper.THM52_UNLEARNING(lam=lam, beta=beta, epsilon_dd=eps_dd, d=d, q=q,
                                              B=B, eta=eta, n=n, r=r, K_A=k_a))
    sigma = float(paper.THM52_SIGMA.evaluate(precision="interval", q=q, L=L, epsilon_dp=eps_dp,
                                             n=n, eta=eta, K_A=k_a,
                                             K_Abar=k_abar).certified_upper)
    check = paper.check_theorem52(q=q, L=L, lam=lam, beta=beta, B=B, epsilon_dp=eps_dp,
                                  epsilon_dd=eps_dd, n=n, d=d, r=r, eta=eta, sigma=sigma,
                                  K_A=k_a, K_Abar=k_abar)
    assert check.all_ok
    # orders of magnitude by hand: eta ~ 1.3e-5, K_A ~ 2.3e6, sigma^2 ~ 6e-7, |loss| ~ 3e-7
    assert 1.3e-5 < eta < 1.33e-5 and 2.3e6 < k_a < 2.4e6 and k_abar < k_a
    assert check.loss_bound == pytest.approx(sigma**2 * 2 / 4)
    shrunk = paper.check_theorem52(q=q, L=L, lam=lam, beta=beta, B=B, epsilon_dp=eps_dp,
                                   epsilon_dd=eps_dd, n=n, d=d, r=r, eta=eta, sigma=sigma * 0.99,
                                   K_A=k_a, K_Abar=k_abar)
    assert not shrunk.privacy_ok and not shrunk.all_ok
    late = paper.check_theorem52(q=q, L=L, lam=lam, beta=beta, B=B, epsilon_dp=eps_dp,
                                 epsilon_dd=eps_dd, n=n, d=d, r=r, eta=eta * 1.01, sigma=sigma,
                                 K_A=k_a, K_Abar=k_abar)
    assert not late.step_ok


def test_thm52_preconditions_name_the_theorem():
    with pytest.raises(PreconditionError, match=r"Theorem 5.2.*eta <="):
        paper.THM52_LEARNING(lam=1, beta=1, epsilon_dd=0.5, d=10, q=2, B=8, eta=1)
    with pytest.raises(PreconditionError, match=r"Theorem 5.2.*epsilon_dd < d"):
        paper.THM52_ETA(lam=1, beta=1, epsilon_dd=20, d=10, q=2, B=8)


# --------------------------------------------------------------------------------------------
# Appendix B conversions are the engine's; footnote 5 reproduces
# --------------------------------------------------------------------------------------------


def test_footnote5_reproduction_matches():
    result = get_reproduction("chourasia2023:footnote5").run()
    assert result["matches"] == result["total"] == 4


def test_remark21_conversion_is_valid_for_gaussian_pairs():
    # (q, eps0)-Rényi -> one-sided (eps0 + log(1/delta)/(q-1), delta): exact Gaussian delta below
    for mu, q, delta in ((0.5, 4.0, 1e-5), (1.0, 10.0, 1e-6), (0.1, 100.0, 1e-3)):
        eps0 = q * mu**2 / 2
        converted = conversions.renyi_to_dp(renyi_epsilon=eps0, alpha=q, delta=delta)
        assert conversions.gaussian_delta(epsilon=converted, mu=mu) <= delta


# --------------------------------------------------------------------------------------------
# Properties on the valid domains (hypothesis)
# --------------------------------------------------------------------------------------------


MONOTONE = [(b.id, name, direction) for b in bounds.list_bounds("chourasia2023")
            for name, direction in b.monotone.items()]


@pytest.mark.parametrize(("bound_id", "name", "direction"), MONOTONE,
                         ids=[f"{b}-{n}" for b, n, _ in MONOTONE])
def test_declared_monotonicity(bound_id, name, direction):
    bound = bounds.get(bound_id)

    @SETTINGS
    @given(strategy_for(bound, well_conditioned=True), st.floats(1.01, 3.0))
    def check(params, factor):
        integer = bound.parameter(name).integer
        base = params[name]
        bigger = (base + max(1, int(base * (factor - 1)))) if integer else \
            (base * Fraction(factor) if base > 0 else base + Fraction(factor))
        moved = {**params, name: bigger}
        try:
            after = bound.evaluate(precision="mp", digits=40, **moved).value
        except PreconditionError:
            return  # the move left the domain (e.g. eta above its cap)
        before = bound.evaluate(precision="mp", digits=40, **params).value
        with mpmath.workdps(45):  # compare at the evaluation's precision, not the global 15
            tol = mpmath.mpf(10) ** -30 * max(abs(before), 1)
            ok = (after >= before - tol) if direction == "increasing" else (after <= before + tol)
        assert ok, (before, after)

    check()


@SETTINGS
@given(strategy_for("chourasia2023:thm4.1", well_conditioned=True))
def test_thm41_is_nonnegative_and_below_the_limit_only_when_vacuous(params):
    value = paper.THM41(**params)
    assert value >= 0
    # below the q -> infinity limit only where the value is vacuous (>= 1)
    assert value >= min(math.sqrt(2 * float(params["epsilon"])),
                        math.expm1(float(params["epsilon"])), 1.0) - 1e-12


@SETTINGS
@given(strategy_for("chourasia2023:thm4.5", well_conditioned=True))
def test_thm45_limit_violates_thm41_exactly_below_it(params):
    limit = paper.THM45.evaluate(precision="mp", digits=40, **params).value
    delta, q = params["delta"], params["q"]
    below = limit * (1 - mpmath.mpf(10) ** -8)
    advantage_bound = paper.THM41.evaluate(precision="mp", digits=40, epsilon=below, q=q).value
    assert advantage_bound < (mpmath.mpf(delta.numerator) / delta.denominator) ** 2


@SETTINGS
@given(strategy_for("chourasia2023:thm5.1/unlearning-iterations", well_conditioned=True))
def test_thm51_unlearning_meets_both_conditions(params):
    both = paper.THM51_UNLEARNING(**params)
    deletion = paper.THM51_DELETION(**{k: params[k] for k in ("lam", "beta", "epsilon_dp",
                                                             "epsilon_dd")})
    assert both >= deletion - 1e-9 * max(1, abs(deletion))
    eps_dd = paper.THM51_EPSILON(lam=params["lam"], beta=params["beta"],
                                 epsilon_dp=params["epsilon_dp"], K_Abar=math.ceil(both))
    assert eps_dd <= float(params["epsilon_dd"]) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------
# The errata document's commands print what it quotes (parser and runner of test_docs.py)
# --------------------------------------------------------------------------------------------

ERRATA = ROOT / "docs" / "errata-chourasia2023.md"
ERRATA_EXAMPLES = console_examples(ERRATA.read_text(encoding="utf-8"), ERRATA.name)
SEEDS = ROOT.parent / "shared" / "seeds"


@pytest.mark.parametrize("example", as_params(ERRATA_EXAMPLES))
def test_errata_command_prints_what_the_document_quotes(example, capsys):
    if "../shared/seeds" in example.command and not SEEDS.exists():
        pytest.skip("the seed texts are not next to this checkout")
    status, output = run_example(example, capsys)
    assert status == 0, f"`{example.command}` exited {status}:\n" + "\n".join(output)
    check_output(example.expected, output)


def test_errata_document_quotes_a_command_per_finding():
    text = ERRATA.read_text(encoding="utf-8")
    for finding in ("C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"):
        section = text.split(f"## {finding}.")[1].split("\n## ")[0]
        assert "```console" in section, finding
    assert sum(e.command.startswith("unlearn bounds eval chourasia2023:")
               for e in ERRATA_EXAMPLES) >= 8


def test_c2_the_theorem_and_the_paragraph_after_it_carry_epsilon_dd():
    seed = SEEDS / paper.SEED
    if not seed.exists():
        pytest.skip("the seed texts are not next to this checkout")
    text = seed.read_text(encoding="utf-8")
    intro = r"\frac{1}{n}\sqrt{\frac{q}{\varepsilon_{\text{dp}}}}"
    theorem = r"\frac{1}{n} \sqrt{\frac{q\varepsilon_{\text{dd}}}{\varepsilon_{\text{dp}}}}"
    assert text.count(intro) == 1 and text.count(theorem) == 2
    assert text.index(intro) < text.index("**Theorem 5.2**") < text.index(theorem)


# --------------------------------------------------------------------------------------------
# Appendix B properties the proofs of Theorems 4.1 and 4.3 rely on, on exact Laplace pairs
# --------------------------------------------------------------------------------------------


def _laplace_renyi(order: float, shift: float) -> float:
    """R_q(Lap(0, 1) || Lap(shift, 1)) in closed form (Mironov 2017, Table II)."""
    mu = abs(shift)
    # log(q/(2q-1) e^((q-1) mu) + (q-1)/(2q-1) e^(-q mu)), factored so that nothing overflows
    inner = order / (2 * order - 1) + (order - 1) / (2 * order - 1) * math.exp(-(2 * order - 1) * mu)
    return mu + math.log(inner) / (order - 1)


def test_laplace_renyi_closed_form_against_quadrature():
    from scipy import integrate

    for order, shift in ((2.0, 0.5), (5.0, 1.0), (1.5, 2.0)):
        def integrand(x: float, order: float = order, shift: float = shift) -> float:
            return math.exp(order * (-abs(x)) + (1 - order) * (-abs(x - shift))) / 2

        moment, _ = integrate.quad(integrand, -60, 60, points=[0.0, shift], limit=200)
        assert math.log(moment) / (order - 1) == pytest.approx(_laplace_renyi(order, shift),
                                                               rel=1e-9)


@pytest.mark.parametrize("order", [1.2, 2.0, 8.0, 64.0])
@pytest.mark.parametrize(("a", "b"), [(0.3, 0.7), (1.0, 1.0), (0.05, 2.0)])
def test_weak_triangle_inequality_thm_b4(order, a, b):
    # R_q(nu || nu') <= R_q(nu || rho) + R_inf(rho || nu'): nu = Lap(0), rho = Lap(a),
    # nu' = Lap(a + b); R_inf of a unit Laplace shift b is b.
    assert _laplace_renyi(order, a + b) <= _laplace_renyi(order, a) + b + 1e-12


@pytest.mark.parametrize("shift", [0.1, 1.0, 3.0])
def test_renyi_is_monotone_in_the_order_thm_b2(shift):
    values = [_laplace_renyi(order, shift) for order in (1.01, 1.5, 2.0, 4.0, 16.0, 256.0)]
    assert all(x <= y + 1e-15 for x, y in zip(values, values[1:], strict=False))
    assert values[-1] <= shift  # and below the max-divergence


# --------------------------------------------------------------------------------------------
# Theorem 5.1 at a fixed sigma: the Rényi curve the audit certificate converts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [1.01, 2.0, 7.5, 300.0])
@pytest.mark.parametrize("K_Abar", [0, 3, 25])
def test_thm51_deletion_curve_is_the_theorem_at_the_budget_sigma_implies(q, K_Abar):
    sigma, L, lam, beta, n = 0.02, 0.5, 0.7, 0.25, 400
    curve = paper.THM51_DELETION_CURVE.evaluate(precision="interval", q=q, sigma=sigma, L=L,
                                                lam=lam, beta=beta, n=n, K_Abar=K_Abar)
    # epsilon_dp whose prescribed sigma (thm5.1/sigma) is exactly this sigma, solved by hand
    eps_dp = 4 * q * L**2 / (lam * sigma**2 * n**2)
    prescribed = float(paper.THM51_SIGMA.evaluate(precision="mp", q=q, L=L, lam=lam,
                                                  epsilon_dp=eps_dp, n=n).value)
    assert prescribed == pytest.approx(sigma, rel=1e-12)
    deletion = float(paper.THM51_EPSILON.evaluate(precision="mp", lam=lam, beta=beta,
                                                  epsilon_dp=eps_dp, K_Abar=K_Abar).value)
    assert float(curve.lower) <= deletion * (1 + 1e-12)
    assert deletion <= float(curve.upper) * (1 + 1e-12)
    # and it covers the exact divergence of the linear-loss oracle at this order
    eta = 1 / (2 * (lam + beta))
    c = 1 - eta * lam
    v0 = sigma**2 / (lam * (1 - eta * lam / 2))
    gap = c**K_Abar * 2 * L / (lam * n)  # K_A -> infinity, the worst learning length
    assert q * gap**2 / (2 * v0) <= float(curve.certified_upper)
