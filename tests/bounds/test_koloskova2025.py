"""Koloskova et al. 2025 (seed 004): Theorems 4.1, 4.2, A.9, the baselines, the adaptive
accountant, calibration, the step-table reproduction and the errata (docs/errata-koloskova2025.md).

Every declared id is compared, in float, mp and interval mode, with the independent mpmath
re-derivation in tests/bounds/reference_koloskova2025.py.
"""

# The reference table keeps one point per line for readability; its lines exceed 110 characters.
# ruff: noqa: E501

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import bounds
from bounds import hockey_stick as H
from bounds.conversions import best_epsilon
from bounds.errors import BoundError, PreconditionError, SolverError
from bounds.papers import koloskova2025 as K
from bounds.registry import get_reproduction
from tests.bounds import reference_koloskova2025 as ref

DELTA = "1e-5"

# ----------------------------------------------------------------------------------------------
# Every id against the reference, three precisions, realistic and extreme points
# ----------------------------------------------------------------------------------------------

POINTS: list[tuple[str, dict, object]] = [
    ("koloskova2025:eq9", {"epsilon": 1, "r": 2}, lambda p: ref.theta(1, 2)),
    ("koloskova2025:eq9", {"epsilon": 1, "r": "0.2"}, lambda p: ref.theta(1, "0.2")),
    ("koloskova2025:eq9", {"epsilon": 1, "r": "0.05"}, lambda p: ref.theta(1, "0.05")),
    ("koloskova2025:eq9", {"epsilon": 1, "r": 40}, lambda p: ref.theta(1, 40)),
    ("koloskova2025:eq9", {"epsilon": 10, "r": "1.965"}, lambda p: ref.theta(10, "1.965")),
    ("koloskova2025:eq9", {"epsilon": "0.001", "r": 3}, lambda p: ref.theta("0.001", 3)),
    ("koloskova2025:lemA.6", {"q": 3, "a": 2, "sigma": "0.5"}, lambda p: mpmath.mpf(24)),
    ("koloskova2025:lemA.7", {"rho": "0.5", "z": 2, "s": "0.02"}, lambda p: ref.ratio(102, 100)),
    ("koloskova2025:lemA.8", {"gamma": 3, "lam": 1, "C": 1, "z": 2}, lambda p: mpmath.mpf(10)),
    ("koloskova2025:thmA.9", {"q": 10, "T": 5, "gamma": "0.01", "lam": 50, "sigma": "0.275702", "C0": 1, "C1": 10},
     lambda p: ref.renyi_a9_constant(10, 5, "0.01", 50, "0.275702", 1, 10)),
    ("koloskova2025:thmA.9", {"q": "1.5", "T": 93, "gamma": "0.001", "lam": 50, "sigma": "0.012501", "C0": 1, "C1": 1},
     lambda p: ref.renyi_a9_constant("1.5", 93, "0.001", 50, "0.012501", 1, 1)),
    ("koloskova2025:thmA.9", {"q": 2, "T": 400, "gamma": "1e-7", "lam": "0.5", "sigma": 1, "C0": 1, "C1": 1},
     lambda p: ref.renyi_a9_constant(2, 400, "1e-7", "0.5", 1, 1, 1)),
    ("koloskova2025:thmA.9/lambda0", {"q": 4, "T": 10, "gamma": "0.01", "sigma": 3, "C0": 1, "C1": 10},
     lambda p: ref.renyi_a9_constant(4, 10, "0.01", 0, 3, 1, 10)),
    ("koloskova2025:eq5", {"epsilon": 1, "delta": DELTA, "T": 10, "gamma": "0.01", "C0": 1, "C1": 10},
     lambda p: ref.eq5(1, DELTA, 10, "0.01", 1, 10)),
    ("koloskova2025:eq5/literal", {"epsilon": 30, "delta": "1e-12", "T": 10**6, "gamma": "1e-9", "C0": 5, "C1": 3},
     lambda p: ref.eq5(30, "1e-12", 10**6, "1e-9", 5, 3, constant=9)),
    ("koloskova2025:eq6", {"epsilon": 1, "delta": DELTA, "T": 5, "gamma": "0.01", "lam": 60, "C0": 1, "C1": 10},
     lambda p: ref.eq6(1, DELTA, 5, "0.01", 60, 1, 10)),
    ("koloskova2025:eq6", {"epsilon": "0.1", "delta": "1e-9", "T": 500, "gamma": "0.001", "lam": 999, "C0": 20, "C1": 1},
     lambda p: ref.eq6("0.1", "1e-9", 500, "0.001", 999, 20, 1)),
    ("koloskova2025:tstar", {"gamma": "0.01", "C0": 1, "C1": 10}, lambda p: mpmath.mpf(10)),
    ("koloskova2025:eq7", {"epsilon": 1, "delta": DELTA, "T": 10, "gamma": "0.01", "C0": 1, "C1": 10},
     lambda p: ref.eq7(1, DELTA, 10, "0.01", 1, 10)),
    ("koloskova2025:eq8", {"epsilon": 1, "delta": DELTA, "T": 5, "gamma": "0.01", "lam": 60, "C0": 1, "C1": 10},
     lambda p: ref.eq8(1, DELTA, 5, "0.01", 60, 1, 10)),
    ("koloskova2025:eq12", {"epsilon": 1, "delta": DELTA, "gamma": "0.01", "C0": 1, "C1": 10},
     lambda p: ref.eq12(1, DELTA, "0.01", 1, 10)),
    ("koloskova2025:eq12/literal", {"epsilon": 1, "delta": DELTA, "gamma": "0.01", "C0": 1, "C1": 10},
     lambda p: ref.eq12(1, DELTA, "0.01", 1, 10, constant=36)),
    ("koloskova2025:eq13", {"epsilon": 1, "delta": DELTA, "gamma": "0.01", "lam": 60, "C0": 1, "C1": 10},
     lambda p: ref.eq13(1, DELTA, "0.01", 60, 1, 10)),
    ("koloskova2025:eq13/literal", {"epsilon": 1, "delta": DELTA, "gamma": "0.01", "lam": 60, "C0": 1, "C1": 10},
     lambda p: ref.eq13(1, DELTA, "0.01", 60, 1, 10, constant=1)),
    ("koloskova2025:eq13/steps", {"gamma": "0.01", "lam": 50, "C0": 1, "C1": 10},
     lambda p: ref.eq13_steps("0.01", 50, 1, 10)),
    ("koloskova2025:eq10", {"epsilon": 1, "delta": DELTA, "C0": 30, "C2": "0.5", "sigma0": 0, "sigma": "0.5"},
     lambda p: ref.eq10(1, DELTA, 30, "0.5", 0, "0.5")),
    ("koloskova2025:eq10", {"epsilon": "0.5", "delta": "1e-8", "C0": 1, "C2": "0.975", "sigma0": 2, "sigma": "0.5"},
     lambda p: ref.eq10("0.5", "1e-8", 1, "0.975", 2, "0.5")),
    ("koloskova2025:eq10", {"epsilon": 1, "delta": "1e-5", "C0": 1, "C2": 20, "sigma0": 0, "sigma": 1},
     lambda p: ref.eq10(1, "1e-5", 1, 20, 0, 1)),
    ("koloskova2025:thm4.2/steps", {"epsilon": 1, "delta": DELTA, "C0": 30, "C2": "0.975", "sigma0": 0, "sigma": "0.5"},
     lambda p: mpmath.mpf(ref.least_steps(1, DELTA, 30, "0.975", 0, "0.5"))),
    ("koloskova2025:thm4.2/adaptive", {"epsilon": 1, "delta": DELTA, "C0": 30, "C2": "0.975", "sigma0": 0, "sigma": "0.5"},
     lambda p: mpmath.mpf(ref.least_steps(1, DELTA, 30, "0.975", 0, "0.5", adaptive=True))),
    ("koloskova2025:thm4.2/adaptive", {"epsilon": "0.1", "delta": "1e-10", "C0": 1, "C2": 1, "sigma0": 3, "sigma": 4},
     lambda p: mpmath.mpf(ref.least_steps("0.1", "1e-10", 1, 1, 3, 4, adaptive=True))),
    ("koloskova2025:eq11", {"epsilon": "0.5", "delta": DELTA, "T": 5, "C0": 1, "C2": 1, "sigma0": 0},
     lambda p: ref.eq11("0.5", DELTA, 5, 1, 1, 0)),
    ("koloskova2025:eq11/literal", {"epsilon": "0.5", "delta": DELTA, "T": 5, "C0": 1, "C2": 1, "sigma0": 0},
     lambda p: ref.eq11("0.5", DELTA, 5, 1, 1, 0, literal=True)),
    ("koloskova2025:thm4.2/simplified-steps", {"epsilon": "0.5", "delta": DELTA, "C0": 1, "C2": 1, "sigma0": 0, "sigma": 10},
     lambda p: ref.simplified_steps("0.5", DELTA, 1, 1, 0, 10)),
    ("koloskova2025:eq14", {"epsilon": "0.5", "C2": 1}, lambda p: ref.eq14("0.5", 1)),
    ("koloskova2025:eq1", {"epsilon": "0.5", "delta": DELTA, "C0": 1}, lambda p: ref.eq1("0.5", DELTA, 1)),
    ("koloskova2025:eq1/analytic", {"epsilon": 1, "delta": DELTA, "C0": 1}, lambda p: ref.analytic_sigma(1, DELTA, 1)),
    ("koloskova2025:eq1/analytic", {"epsilon": "0.05", "delta": "1e-12", "C0": 3}, lambda p: ref.analytic_sigma("0.05", "1e-12", 3)),
    ("koloskova2025:dpsgd-group", {"epsilon": 50, "delta": DELTA, "C": "0.5", "k": 225},
     lambda p: ref.dpsgd_group(50, DELTA, "0.5", 225)),
    ("koloskova2025:dpsgd-group/derived", {"epsilon": 50, "delta": DELTA, "C": "0.5", "k": 225},
     lambda p: ref.dpsgd_group(50, DELTA, "0.5", 225, derived=True)),
]

INTEGER_VALUED = {"koloskova2025:thm4.2/steps", "koloskova2025:thm4.2/adaptive"}
# Solved on the safe side with a relative margin of about 1e-32 (AnalyticGaussianSigma).
SAFE_SIDE_SOLVES = {"koloskova2025:eq1/analytic"}


def test_every_id_has_a_reference_point() -> None:
    declared = {b.id for b in bounds.list_bounds("koloskova2025")}
    assert declared == {p[0] for p in POINTS}


@pytest.mark.parametrize(("bound_id", "params", "reference"), POINTS,
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(POINTS)])
def test_three_precisions_match_reference(bound_id: str, params: dict, reference) -> None:
    bound = bounds.get(bound_id)
    expected = reference(params)
    mp_value = bound.evaluate(precision="mp", digits=40, **params).value
    iv = bound.evaluate(precision="interval", digits=40, **params)
    fl = bound.evaluate(precision="float", **params).value
    if bound_id in INTEGER_VALUED:
        assert mp_value == expected and iv.lower <= expected <= iv.upper and fl == float(expected)
        return
    with mpmath.workdps(80):
        if bound_id in SAFE_SIDE_SOLVES:
            assert expected <= mp_value <= expected * (1 + mpmath.mpf(10) ** -25)
        else:
            assert mpmath.almosteq(mp_value, expected, rel_eps=mpmath.mpf(10) ** -35)
        assert iv.lower <= expected <= iv.upper
        assert iv.upper - iv.lower <= abs(expected) * mpmath.mpf(10) ** -30
    assert fl == pytest.approx(float(expected), rel=1e-9)


# ----------------------------------------------------------------------------------------------
# theta (eq. 9)
# ----------------------------------------------------------------------------------------------

GOLDEN_THETA = [  # (epsilon, r, first 12 significant digits computed by the 460-digit reference)
    (1, 2, "0.509861660055"), (1, "2.5", "0.667860064294"), (1, "3.9", "0.917648675286"),
    (1, "0.2", "1.75463333190e-8"), (1, 1, "0.126936737507"), ("0.5", 1, "0.238421708135"),
    ("0.1", 1, "0.352325171681"), (10, "1.965", "6.12889874809e-6"),
]


@pytest.mark.parametrize(("e", "r_", "digits"), GOLDEN_THETA)
def test_theta_golden_values(e, r_, digits: str) -> None:
    reference = ref.theta(e, r_)
    assert mpmath.nstr(reference, 12) == mpmath.nstr(mpmath.mpf(digits), 12)
    assert mpmath.almosteq(reference, ref.theta_by_quadrature(e, r_), rel_eps=1e-20)
    declared = H.theta(epsilon=str(e), r=str(r_), precision="mp", digits=50)
    with mpmath.workdps(80):
        assert mpmath.almosteq(declared, reference, rel_eps=mpmath.mpf(10) ** -45)
    assert H.theta(epsilon=float(e), r=float(r_)) == pytest.approx(float(reference), rel=1e-12)


def test_theta_log_space_at_the_extremes() -> None:
    # a naive double-precision evaluation rounds to 1 at r = 40 and to 0 at r = 0.02
    for e, r_ in ((1, 40), (1, "0.02"), (30, 50), ("0.01", 200)):
        reference = ref.theta(e, r_)
        exact_log = mpmath.log(reference)
        assert H.log_theta(epsilon=float(e), r=float(r_)) == pytest.approx(float(exact_log), rel=1e-10)
        if reference < 1 - 1e-12:
            one_minus = float(1 - reference)
            assert 1 - math.exp(H.log_theta(epsilon=float(e), r=float(r_))) == pytest.approx(
                one_minus, rel=1e-6) or one_minus < 1e-15


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 30), st.floats(1e-2, 60), st.floats(1.0001, 3))
def test_theta_monotone_in_r_and_epsilon(e: float, r_: float, factor: float) -> None:
    base = H.log_theta(epsilon=e, r=r_)
    assert H.log_theta(epsilon=e, r=r_ * factor) >= base
    assert H.log_theta(epsilon=e * factor, r=r_) <= base
    assert base <= 0


# ----------------------------------------------------------------------------------------------
# Theorem 4.1 and A.9 identities
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("literal", [False, True])
def test_eq5_at_tstar_equals_eq12(literal: bool) -> None:
    eq5 = bounds.get("koloskova2025:eq5" + ("/literal" if literal else ""))
    eq12 = bounds.get("koloskova2025:eq12" + ("/literal" if literal else ""))
    e_, d_, g_, c0, c1 = sp.symbols("epsilon delta gamma C0 C1", positive=True)
    subs = {bounds.get("koloskova2025:tstar").parameter(n).symbol: v
            for n, v in (("gamma", g_), ("C0", c0), ("C1", c1))}
    sym = {s.name: s for s in eq5.expression.free_symbols}
    tstar = c0 / (g_ * c1)
    at_tstar = eq5.expression.subs({sym["T"]: tstar, sym["gamma"]: g_, sym["C0"]: c0, sym["C1"]: c1,
                                    sym["epsilon"]: e_, sym["delta"]: d_})
    sym12 = {s.name: s for s in eq12.expression.free_symbols}
    target = eq12.expression.subs({sym12["gamma"]: g_, sym12["C0"]: c0, sym12["C1"]: c1,
                                   sym12["epsilon"]: e_, sym12["delta"]: d_})
    assert sp.simplify(at_tstar**2 - target**2) == 0
    assert subs  # the T* bound's symbols are the shared ones


def test_eq5_is_convex_with_integer_minimum_next_to_tstar() -> None:
    eq5 = bounds.get("koloskova2025:eq5")
    p = {"epsilon": 1, "delta": DELTA, "gamma": "0.013", "C0": 1, "C1": 10}
    values = [eq5(T=t, **p) for t in range(1, 40)]
    best = 1 + int(np.argmin(values))
    tstar = 1 / (0.013 * 10)
    assert best in (math.floor(tstar), math.ceil(tstar))


def test_eq6_decreases_in_T_to_its_limit() -> None:
    eq6 = bounds.get("koloskova2025:eq6")
    p = {"epsilon": 1, "delta": DELTA, "gamma": "0.01", "lam": 70, "C0": 5, "C1": 10}
    values = [float(eq6.evaluate(precision="mp", digits=30, T=t, **p).value) for t in (1, 2, 5, 20, 100)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))
    limit = math.sqrt(72 * 0.01 * math.log(1e5) / 70) * 10 / 1
    assert values[-1] == pytest.approx(limit, rel=1e-12)
    assert all(v > limit for v in values)


@pytest.mark.parametrize("T", [1, 3, 7])
def test_lambda_to_zero_limit_of_a9_is_its_lambda0_form(T: int) -> None:
    a9 = bounds.get("koloskova2025:thmA.9").expression
    a9_0 = bounds.get("koloskova2025:thmA.9/lambda0").expression
    sym = {s.name: s for s in a9.free_symbols}
    limit = sp.limit(a9.subs(sym["T"], T), sym["lam"], 0, "+")
    assert sp.simplify(limit - a9_0.subs(sym["T"], T)) == 0


def test_a9_closed_form_equals_the_sum_form_and_time_varying() -> None:
    p = {"q": 3, "T": 7, "gamma": "0.02", "lam": 20, "sigma": "0.3", "C0": 2, "C1": 5}
    closed = bounds.get("koloskova2025:thmA.9").evaluate(precision="mp", digits=50, **p).value
    summed = K.renyi_time_varying(q=3, gammas=["0.02"] * 7, sigmas=["0.3"] * 7, C1s=[5] * 7, lam=20, C0=2)
    with mpmath.workdps(80):
        assert mpmath.almosteq(closed, summed, rel_eps=mpmath.mpf(10) ** -40)
    gammas, sigmas, c1s = ["0.01", "0.05", "0.02", "0.04"], ["0.3", "0.2", "0.5", "0.4"], [1, 3, 2, 4]
    mine = K.renyi_time_varying(q=2, gammas=gammas, sigmas=sigmas, C1s=c1s, lam=10, C0=1)
    with mpmath.workdps(80):
        assert mpmath.almosteq(mine, ref.renyi_a9(2, gammas, sigmas, c1s, 10, 1), rel_eps=mpmath.mpf(10) ** -40)


def test_lemma_a8_offset_lipschitz_property() -> None:
    rng = np.random.default_rng(0)
    lem = bounds.get("koloskova2025:lemA.8")
    for _ in range(200):
        d = 5
        g_, l_, c_ = rng.uniform(0, 0.5), rng.uniform(0, 3), rng.uniform(0.1, 5)
        mat = rng.normal(size=(d, d)) * 10

        def psi(x: np.ndarray, mat=mat, c_=c_, g_=g_, l_=l_) -> np.ndarray:
            grad = np.tanh(mat @ x) * 7 + np.sin(x) * 20  # arbitrary map G
            norm = np.linalg.norm(grad)
            clipped = grad * min(1.0, c_ / norm) if norm > 0 else grad
            return x - g_ * (clipped + l_ * x)

        x, y = rng.normal(size=d) * 3, rng.normal(size=d) * 3
        bound_value = lem(gamma=g_, lam=l_, C=c_, z=float(np.linalg.norm(x - y)))
        assert np.linalg.norm(psi(x) - psi(y)) <= bound_value * (1 + 1e-12)


# ----------------------------------------------------------------------------------------------
# Gaussian ground truths: every accountant >= the exact divergence
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [0, 20])
def test_a9_dominates_exact_gaussian_renyi(lam: float) -> None:
    # G constant and shared: the iterates are Gaussian, D_q is exact; A.9 with C1 -> 0 equals it
    gammas, sigmas = ["0.01", "0.03", "0.02"], ["0.2", "0.5", "0.3"]
    exact = ref.gaussian_exact_renyi(4, gammas, sigmas, lam, 1)
    tight = K.renyi_time_varying(q=4, gammas=gammas, sigmas=sigmas, C1s=[0, 0, 0], lam=lam, C0=1)
    with mpmath.workdps(80):
        assert mpmath.almosteq(exact, tight, rel_eps=mpmath.mpf(10) ** -40)
    loose = K.renyi_time_varying(q=4, gammas=gammas, sigmas=sigmas, C1s=[1, 1, 1], lam=lam, C0=1)
    assert loose > exact


def test_gradient_clipping_epsilon_dominates_exact_gaussian_epsilon() -> None:
    # Constant schedule, G constant: x_T - x_T' ~ N(rho^T 2C0, sigma^2 sum rho^2j): exact delta(eps)
    p = {"T": 5, "gamma": "0.01", "lam": 50, "sigma": "0.3", "C0": 1, "C1": 10}
    rho = 0.5
    mu = rho**5 * 2 / math.sqrt(0.09 * sum(rho ** (2 * j) for j in range(5)))
    for conversion in ("mironov", "balle2020"):
        cert = K.gradient_clipping_epsilon(delta=1e-5, conversion=conversion, **p)
        assert float(ref.theta(cert.epsilon, mu)) <= 1e-5


def _clamped_density(y: float, m: float, s: float, c: float) -> float:
    """Density of clamp(X, -c, c) + N(0, s^2) with X ~ N(m, s^2), in closed form."""
    atoms = stats.norm.cdf((-c - m) / s) * stats.norm.pdf(y + c, scale=s) + \
        stats.norm.sf((c - m) / s) * stats.norm.pdf(y - c, scale=s)
    centre = (y + m) / 2
    inner = stats.norm.pdf(y - m, scale=s * math.sqrt(2)) * (
        stats.norm.cdf((c - centre) / (s / math.sqrt(2))) - stats.norm.cdf((-c - centre) / (s / math.sqrt(2))))
    return atoms + inner


@pytest.mark.parametrize(("e", "c2", "sigma"), [(1.0, 1.0, 1.0), (0.5, 1.0, 0.8), (2.0, 0.5, 0.3)])
def test_model_clipping_accountants_dominate_exact_two_steps(e: float, c2: float, sigma: float) -> None:
    # 1-D, sigma0 = 0, x0 = +-C0 with C0 = C2, G = 0: x1 ~ N(+-C2, s^2) exactly (the first step is
    # tight), x2 = clamp(x1, C2) + noise has the closed-form density above; E_eps by quadrature.
    def hockey(m1: float, m2: float) -> float:
        def f(y: float) -> float:
            return max(_clamped_density(y, m1, sigma, c2) - math.exp(e) * _clamped_density(y, m2, sigma, c2), 0.0)

        return integrate.quad(f, -c2 - 12 * sigma, c2 + 12 * sigma, limit=400, epsabs=1e-13)[0]

    exact_2 = hockey(c2, -c2)
    paper = ref.deltas(e, c2, c2, 0, sigma, 2)
    adaptive = ref.deltas(e, c2, c2, 0, sigma, 2, adaptive=True)
    assert exact_2 <= float(adaptive[2]) + 1e-12 <= float(paper[2]) + 2e-12
    exact_1 = float(ref.theta(e, 2 * c2 / sigma))
    assert exact_1 == pytest.approx(float(adaptive[1]), rel=1e-12)  # one step: tight
    declared = H.model_clipping_log_deltas(epsilon=e, C0=c2, C2=c2, sigma0=0, sigma=sigma, T=2, adaptive=True)
    assert math.exp(declared[2]) == pytest.approx(float(adaptive[2]), rel=1e-9)


def test_adaptive_never_needs_more_steps_than_theorem_42() -> None:
    for r_ in (0.2, 1, 2, 2.5, 3.9, 6):
        p = {"epsilon": 1, "delta": DELTA, "C0": 1, "C2": r_ / 2, "sigma0": 0, "sigma": 1}
        assert bounds.get("koloskova2025:thm4.2/adaptive")(**p) <= bounds.get("koloskova2025:thm4.2/steps")(**p)


def test_output_perturbation_dominates_exact_and_analytic_is_tight() -> None:
    for e in (0.1, 0.5, 0.9):
        sigma_dr = bounds.get("koloskova2025:eq1")(epsilon=e, delta=1e-5, C0=1)
        assert float(ref.theta(e, 2 / sigma_dr)) <= 1e-5
        sigma_exact = bounds.get("koloskova2025:eq1/analytic").evaluate(
            precision="interval", digits=30, epsilon=str(e), delta="1e-5", C0=1)
        with mpmath.workdps(60):
            assert ref.theta(e, 2 / mpmath.mpf(sigma_exact.upper)) <= mpmath.mpf("1e-5")
            assert ref.theta(e, 2 / (mpmath.mpf(sigma_exact.lower) * (1 - mpmath.mpf("1e-9")))) > mpmath.mpf("1e-5")
        assert float(sigma_exact.upper) < sigma_dr


# ----------------------------------------------------------------------------------------------
# Calibration: least T, smallest sigma, safe side
# ----------------------------------------------------------------------------------------------


def test_smallest_sigma_gradient_clipping_is_safe_and_tight() -> None:
    p = {"T": 5, "gamma": "0.01", "lam": 50, "C0": 1, "C1": 10}
    cal = K.smallest_sigma_gradient_clipping(epsilon=1.0, delta=1e-5, **p)
    assert cal.certified_epsilon <= 1.0 < cal.neighbour_epsilon
    rate = ref.renyi_a9_constant(1, 5, "0.01", 50, cal.value, 1, 10)
    assert ref.balle_epsilon(rate, "1e-5") <= 1
    # the table's sigma for this row is 0.275702; (1, 1e-5) needs about 5.72 times more
    assert cal.value / 0.275702 == pytest.approx(5.72, abs=0.01)


def test_least_steps_gradient_clipping() -> None:
    p = {"gamma": "0.01", "sigma": 8, "C0": 1, "C1": 10}
    cal = K.least_steps_gradient_clipping(epsilon=1.0, delta=1e-5, conversion="mironov", **p)
    rates = [ref.renyi_a9_constant(1, t, "0.01", 0, 8, 1, 10) for t in (cal.steps - 1, cal.steps)]
    assert ref.mironov_epsilon(rates[1], "1e-5") <= 1 < ref.mironov_epsilon(rates[0], "1e-5")
    with pytest.raises(SolverError):  # infeasible: even T* leaves epsilon about 2.1
        K.least_steps_gradient_clipping(epsilon=1.0, delta=1e-5, conversion="mironov", max_steps=10**5,
                                        gamma="0.01", sigma=3, C0=1, C1=10)


@pytest.mark.parametrize("adaptive", [False, True])
def test_model_clipping_calibration_is_safe(adaptive: bool) -> None:
    p = {"epsilon": 1, "delta": 1e-5, "C0": 30, "C2": 0.625, "sigma0": 0, "sigma": 0.5}
    steps = K.least_steps_model_clipping(adaptive=adaptive, **p)
    seq = ref.deltas(1, 30, "0.625", 0, "0.5", steps.steps, adaptive=adaptive)
    assert seq[-1] <= mpmath.mpf("1e-5") < seq[-2]
    assert steps.steps == (9 if adaptive else 29)
    sigma = K.smallest_sigma_model_clipping(epsilon=1, delta=1e-5, C0=30, C2=0.625, sigma0=0, T=9,
                                            adaptive=adaptive)
    assert ref.deltas(1, 30, "0.625", 0, sigma, 9, adaptive=adaptive)[-1] <= mpmath.mpf("1e-5")
    assert ref.deltas(1, 30, "0.625", 0, sigma * (1 - 1e-6), 9, adaptive=adaptive)[-1] > mpmath.mpf("1e-5")


# ----------------------------------------------------------------------------------------------
# Preconditions
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bound_id", "params", "message"), [
    ("koloskova2025:eq5", {"epsilon": 40, "delta": "0.01", "T": 1, "gamma": 1, "C0": 1, "C1": 1}, "3*log"),
    ("koloskova2025:eq6", {"epsilon": 1, "delta": DELTA, "T": 1, "gamma": "0.01", "lam": 40, "C0": 1, "C1": 1}, "1/2"),
    ("koloskova2025:thmA.9", {"q": 2, "T": 1, "gamma": 1, "lam": 1, "sigma": 1, "C0": 1, "C1": 1}, r"gamma\*lam < 1"),
    ("koloskova2025:eq11", {"epsilon": 1, "delta": DELTA, "T": 1, "C0": 1, "C2": 1, "sigma0": 0}, "epsilon < 1"),
    ("koloskova2025:eq11", {"epsilon": "0.5", "delta": DELTA, "T": 1, "C0": 1, "C2": 1, "sigma0": 100}, "sigma0"),
    ("koloskova2025:eq1", {"epsilon": 1, "delta": DELTA, "C0": 1}, "epsilon < 1"),
    ("koloskova2025:eq13", {"epsilon": 1, "delta": DELTA, "gamma": "0.01", "lam": 60, "C0": 1, "C1": 100}, "C0"),
    ("koloskova2025:dpsgd-group", {"epsilon": 5, "delta": DELTA, "C": 1, "k": 2}, "epsilon < k"),
])
def test_preconditions_name_the_theorem(bound_id: str, params: dict, message: str) -> None:
    with pytest.raises(PreconditionError, match=message):
        bounds.get(bound_id).evaluate(**params)


def test_time_varying_rejects_bad_inputs() -> None:
    with pytest.raises(PreconditionError):
        K.renyi_time_varying(q=2, gammas=[1], sigmas=[1], C1s=[1], lam=2, C0=1)
    with pytest.raises(BoundError):
        K.renyi_time_varying(q=2, gammas=[1], sigmas=[1, 2], C1s=[1], lam=0, C0=1)


# ----------------------------------------------------------------------------------------------
# Reproduction of the step tables
# ----------------------------------------------------------------------------------------------


def test_steps_reproduction() -> None:
    result = get_reproduction("koloskova2025:steps").run()
    rows = result["rows"]
    assert result["matches"] == result["total"] == 193
    gc = [r for r in rows if r["method"] == "gradient clipping"]
    mc = [r for r in rows if r["method"] == "model clipping"]
    op = [r for r in rows if r["method"] == "output perturbation"]
    assert (len(gc), len(mc), len(op)) == (139, 27, 27)
    assert not any(r["holds"] for r in gc)
    assert all(r["holds"] for r in mc) and not any(r["holds_thm4.2"] for r in mc if r["published"] > 1)
    assert all(r["holds"] for r in op)
    # each gradient-clipping row certifies only the epsilon of zCDP slope = claimed epsilon
    for claimed, expected in ((0.1, 1.914), (1.0, 7.077), (10.0, 30.111)):
        # the printed sigma is rounded to 6 decimals, so the certified epsilon varies a little
        certified = [r["certified_epsilon"] for r in gc if r["epsilon"] == claimed]
        assert all(abs(c - expected) <= 0.01 for c in certified), certified
        assert float(ref.balle_epsilon(claimed, "1e-5")) == pytest.approx(expected, abs=1e-3)


# ----------------------------------------------------------------------------------------------
# Errata (docs/errata-koloskova2025.md): each check re-runs here
# ----------------------------------------------------------------------------------------------


def test_erratum_k1_table_sigma_certifies_zcdp_slope_not_epsilon() -> None:
    p = {"T": 5, "gamma": "0.01", "lam": 50, "sigma": "0.275702", "C0": 1, "C1": 10}
    rate = bounds.get("koloskova2025:thmA.9").evaluate(precision="mp", q=2, **p).value / 2
    assert float(rate) == pytest.approx(1.0, abs=2e-5)  # the table sets rho_z = epsilon = 1
    assert K.gradient_clipping_epsilon(delta=1e-5, conversion="balle2020", **p).epsilon == pytest.approx(7.077, abs=2e-3)
    assert K.gradient_clipping_epsilon(delta=1e-5, conversion="mironov", **p).epsilon == pytest.approx(7.786, abs=2e-3)


def test_erratum_k2_eq11_literal_is_unsafe() -> None:
    literal = bounds.get("koloskova2025:eq11/literal")(epsilon=0.5, delta=1e-5, T=1, C0=1, C2=1, sigma0=0)
    corrected = bounds.get("koloskova2025:eq11")(epsilon=0.5, delta=1e-5, T=1, C0=1, C2=1, sigma0=0)
    assert literal**2 == pytest.approx(90.943, abs=1e-3) and corrected**2 == pytest.approx(382.695, abs=1e-3)
    assert float(ref.theta("0.5", 2 / literal)) > 7e-4  # exact delta after one step, sigma0 = 0
    assert float(ref.theta("0.5", 2 / corrected)) < 1e-5


def test_erratum_k3_eq5_constant() -> None:
    # (5) with 9: zCDP slope 2 eps^2/(9 L); Mironov gives eps' <= eps only up to 0.2574 L
    L = math.log(1e5)
    edge = 4.5 * (1 - 2 * math.sqrt(2) / 3) * L
    for e, holds in ((edge * 0.999, True), (edge * 1.001, False), (10.0, False)):
        sigma = bounds.get("koloskova2025:eq5/literal")(epsilon=e, delta=1e-5, T=10, gamma=0.01, C0=1, C1=10)
        rate = ref.renyi_a9_constant(1, 10, "0.01", 0, sigma, 1, 10)
        assert (ref.mironov_epsilon(rate, "1e-5") <= e) is holds
    sigma = bounds.get("koloskova2025:eq5/literal")(epsilon=10, delta=1e-5, T=10, gamma=0.01, C0=1, C1=10)
    assert float(ref.mironov_epsilon(ref.renyi_a9_constant(1, 10, "0.01", 0, sigma, 1, 10), "1e-5")) == \
        pytest.approx(11.358, abs=1e-3)
    for e in (0.5, 3.0, 20.0, 3 * L * 0.999):  # the corrected 18 holds over the whole range
        sigma = bounds.get("koloskova2025:eq5")(epsilon=e, delta=1e-5, T=10, gamma=0.01, C0=1, C1=10)
        assert ref.mironov_epsilon(ref.renyi_a9_constant(1, 10, "0.01", 0, sigma, 1, 10), "1e-5") <= e


def test_eq6_constant_72_is_valid() -> None:
    L = math.log(1e5)
    for gl, T in ((0.51, 1), (0.6, 3), (0.99, 1), (0.75, 50)):
        for e in (0.1, 1.0, 3 * L * 0.999):
            sigma = bounds.get("koloskova2025:eq6")(epsilon=e, delta=1e-5, T=T, gamma=0.01, lam=gl / 0.01, C0=2, C1=3)
            rate = ref.renyi_a9_constant(1, T, "0.01", str(gl / 0.01), sigma, 2, 3)
            assert ref.mironov_epsilon(rate, "1e-5") <= e


def test_erratum_k4_model_clipping_tables_use_the_adaptive_accountant() -> None:
    for r_, printed, paper in ((2, 6, 18), (2.5, 9, 29), (3.9, 36, 134)):
        p = {"epsilon": 1, "delta": DELTA, "C0": 1, "C2": r_ / 2, "sigma0": 0, "sigma": 1}
        assert bounds.get("koloskova2025:thm4.2/steps")(**p) == paper
        assert bounds.get("koloskova2025:thm4.2/adaptive")(**p) == printed


def test_erratum_k5_eq13_literal_understates_eq6() -> None:
    p = {"epsilon": 1, "delta": 1e-5, "gamma": 0.01, "lam": 60, "C0": 1, "C1": 10}
    steps = math.ceil(bounds.get("koloskova2025:eq13/steps")(gamma=0.01, lam=60, C0=1, C1=10))
    eq6 = bounds.get("koloskova2025:eq6")(T=steps, **p)
    assert bounds.get("koloskova2025:eq13/literal")(**p) < eq6 / 5 < eq6 <= bounds.get("koloskova2025:eq13")(**p)


def test_erratum_k6_lemma_a3_normalisation() -> None:
    with mpmath.workdps(30):
        total = mpmath.quad(lambda u: mpmath.exp(-u**2 / 2), [-mpmath.inf, mpmath.inf])
        assert mpmath.almosteq(total / mpmath.sqrt(mpmath.pi), mpmath.sqrt(2))  # printed: Q(-inf) = sqrt 2
        assert mpmath.almosteq(total / mpmath.sqrt(2 * mpmath.pi), 1)


def test_k9_lemma_a4_needs_epsilon_below_one() -> None:
    assert float(ref.theta(20, "8.71")) > 1.25 * math.exp(-400 / (2 * 8.71**2))
    for e in (0.01, 0.3, 0.999):
        for r_ in (0.01, 0.5, 2, 10, 100):
            assert float(ref.theta(e, r_)) <= 1.25 * math.exp(-e * e / (2 * r_ * r_))


def test_erratum_k7_a9_product_index() -> None:
    gammas, sigmas = ["0.01", "0.02", "0.05"], ["0.2", "0.6", "0.3"]
    exact = ref.gaussian_exact_renyi(2, gammas, sigmas, 10, 1)
    corrected = K.renyi_time_varying(q=2, gammas=gammas, sigmas=sigmas, C1s=[0] * 3, lam=10, C0=1)
    printed = K.renyi_time_varying(q=2, gammas=gammas, sigmas=sigmas, C1s=[0] * 3, lam=10, C0=1, index="paper")
    with mpmath.workdps(80):
        assert mpmath.almosteq(corrected, exact, rel_eps=mpmath.mpf(10) ** -40)
    assert printed < exact  # the printed index can understate an exact divergence


def test_erratum_k8_dpsgd_group() -> None:
    printed = bounds.get("koloskova2025:dpsgd-group")(epsilon=50, delta=1e-5, C=0.5, k=225)
    derived = bounds.get("koloskova2025:dpsgd-group/derived")(epsilon=50, delta=1e-5, C=0.5, k=225)
    assert printed**2 == pytest.approx(114079.9, rel=1e-5) and derived**2 == pytest.approx(679.9, rel=1e-3)
    # per-record Gaussian mechanism at eps' = eps/k, delta' = delta/(k e^eps), group lemma -> (eps, delta)
    e1, d1 = 50 / 225, 1e-5 / (225 * math.exp(50))
    assert derived == pytest.approx(0.5 * math.sqrt(2 * math.log(1.25 / d1)) / e1, rel=1e-12)
    assert 225 * math.exp(225 * e1) * d1 == pytest.approx(1e-5, rel=1e-12)


def test_output_perturbation_at_epsilon_one_holds_exactly() -> None:
    # eq. (1) is stated for epsilon < 1; the tables use epsilon = 1, where it still certifies
    sigma = float(ref.eq1(1, DELTA, 1))
    assert float(ref.theta(1, 2 / sigma)) == pytest.approx(4.114e-8, rel=1e-3)


def test_best_epsilon_on_a9_matches_reference_conversions() -> None:
    p = {"T": 10, "gamma": "0.01", "sigma": 3, "C0": 1, "C1": 10}
    rate = ref.renyi_a9_constant(1, 10, "0.01", 0, 3, 1, 10)
    for conversion, fn in (("mironov", ref.mironov_epsilon), ("balle2020", ref.balle_epsilon)):
        cert = best_epsilon("koloskova2025:thmA.9/lambda0", delta=1e-5, conversion=conversion, **p)
        assert float(fn(rate, "1e-5")) <= cert.epsilon <= float(fn(rate, "1e-5")) * (1 + 1e-6)


def test_adaptive_steps_past_the_exact_phase_stay_on_the_safe_side_and_close(monkeypatch) -> None:
    # 385 adaptive steps (an independent 60-digit recursion), with the step-by-step phase cut to
    # 100 steps, so mp counts the rest in blocks and interval mode gives an enclosure.
    monkeypatch.setattr(H, "ADAPTIVE_EXACT_STEPS", 100)
    params = dict(epsilon=1, delta="1e-5", C0=1, C2=1, sigma0=0, sigma="0.35")
    exact = ref.least_steps(1, "1e-5", 1, 1, 0, "0.35", adaptive=True, limit=10_000)
    assert exact == 385
    assert H.ADAPTIVE_EXACT_STEPS < exact
    adaptive = bounds.get("koloskova2025:thm4.2/adaptive")
    mp_count = adaptive.evaluate(precision="mp", digits=40, **params).value
    assert exact <= mp_count <= exact * (1 + H.STEP_TOLERANCE)
    enclosure = adaptive.evaluate(precision="interval", digits=40, **params)
    assert enclosure.lower <= exact <= enclosure.upper
    assert enclosure.upper <= exact * (1 + H.STEP_TOLERANCE)


def test_adaptive_steps_work_is_bounded_when_theta_is_close_to_one(monkeypatch) -> None:
    # theta_eps(2 C2/sigma) = 1 - 2.5e-23: Theorem 4.2 needs 4.6e23 steps and the adaptive
    # recursion about 1e23, far beyond stepping one at a time.
    calls = []
    real = H.log_theta_mp
    monkeypatch.setattr(H, "log_theta_mp", lambda *a: calls.append(1) or real(*a))
    params = dict(epsilon=1, delta="1e-5", C0=1, C2=1, sigma0=0, sigma="0.1")
    adaptive = bounds.get("koloskova2025:thm4.2/adaptive")
    closed = bounds.get("koloskova2025:thm4.2/steps").evaluate(precision="mp", digits=30, **params).value
    count = adaptive.evaluate(precision="mp", digits=30, **params).value
    assert len(calls) <= H.ADAPTIVE_EVALUATIONS + 10
    calls.clear()
    enclosure = adaptive.evaluate(precision="interval", digits=30, **params)
    assert len(calls) <= 2 * (H.ADAPTIVE_EVALUATIONS + 10)
    assert enclosure.lower <= count < closed and enclosure.upper < closed
    assert count == pytest.approx(float(enclosure.upper), rel=1e-9)
    # the lower end: every step is at most as long as the one at delta_t = delta
    longest = -ref.log_theta(math.log1p(math.expm1(1) / 1e-5), 20)
    assert enclosure.lower >= (1 - 1e-9) * math.log(1e5) / float(longest)


def test_eq10_is_not_declared_monotone_where_it_is_not() -> None:
    # Where the initial noise alone certifies (numerator < 0), eq. (10) rises toward 0 with
    # sigma and falls with C2: found by the CI monotonicity sample at these inputs.
    eq10 = bounds.get("koloskova2025:eq10")
    steps = bounds.get("koloskova2025:thm4.2/steps")
    base = dict(epsilon=1, delta="828390857088487/2251799813685248", C0=1, C2=1, sigma0=2,
                sigma=1)
    low, high = (eq10.evaluate(precision="interval", digits=40, **{**base, "sigma": s})
                 for s in (1, 3))
    assert low.upper < high.lower < 0  # increasing in sigma here
    smaller_c2 = eq10.evaluate(precision="interval", digits=40, **{**base, "C2": "1/2"})
    assert smaller_c2.lower > low.upper  # decreasing in C2 here
    assert not {"sigma", "C2", "epsilon"} & set(eq10.monotone)
    assert steps.monotone["sigma"] == "decreasing" and steps.monotone["C2"] == "increasing"
    assert [steps.evaluate(precision="float", **{**base, "sigma": s}).value for s in (1, 3)] == [1, 1]


def test_erratum_k4_accountant_is_balle_2019_theorem_1_with_the_exact_gaussian_gamma():
    """Each adaptive step is Balle et al. 2019, Theorem 1 ((gamma, eps~)-Dobrushin case):
    delta' = gamma delta with gamma = E_{e^eps~}(N(0,s^2) || N(r s, s^2)) = theta_{eps~}(r) and
    eps~ = log(1 + (e^eps - 1)/delta), recomputed here at 60 digits from Phi."""
    from pathlib import Path

    from bounds.hockey_stick import model_clipping_log_deltas

    def theta(e, r):
        return mpmath.ncdf(r / 2 - e / r) - mpmath.exp(e) * mpmath.ncdf(-r / 2 - e / r)

    eps, C0, C2, sigma0, sigma = 1.0, 1.0, 1.0, 1.5, 1.0
    logs = model_clipping_log_deltas(epsilon=eps, C0=C0, C2=C2, sigma0=sigma0, sigma=sigma, T=3,
                                     adaptive=True)
    with mpmath.workdps(60):
        delta = theta(mpmath.mpf(eps), mpmath.mpf(2 * C0) / sigma0)
        for t in range(1, 4):
            eps_tilde = mpmath.log(1 + mpmath.expm1(eps) / delta)
            delta = delta * theta(eps_tilde, mpmath.mpf(2 * C2) / sigma)
            assert abs(logs[t] - float(mpmath.log(delta))) < 1e-9 * abs(logs[t])
    adaptive = bounds.get("koloskova2025:thm4.2/adaptive").citation.describe()
    assert "Balle, Barthe, Gaboardi and Geumlek 2019" in adaptive and "Theorem 1" in adaptive
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert "Theorem 1 of\nBalle, Barthe, Gaboardi and Geumlek 2019" in (
        docs / "errata-koloskova2025.md").read_text()
