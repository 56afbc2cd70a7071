"""Guo et al. 2020, certified removal (seed 002): every ``guo2020:*`` declaration against an
independent mpmath re-derivation, the relations between the bounds on real Newton removals, the
erratum of Theorems 1 and 4, the Gaussian-delta check of Theorem 3 (ii), and the calibration."""

from __future__ import annotations

import math
import pathlib
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bounds
from bounds.conversions import gaussian_delta
from bounds.errors import PreconditionError
from bounds.papers import guo2020
from tests.bounds import reference_guo2020 as ref

IDS = sorted(ref.REFERENCE)
DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"

# Extreme but admissible points of every bound: huge n, tiny lambda, tiny delta, large sigma.
EXTREME: dict[str, dict[str, Any]] = {
    "guo2020:thm1": {"gamma": "1/4", "C": "1e-3", "lam": "1e-12", "n": 10**12},
    "guo2020:thm1/middle": {"gamma": "1e3", "n": 10**15, "update_norm": "1e-140"},
    "guo2020:thm4": {"gamma": "0.0962", "C": 50, "lam": "1e-9", "n": 10**9, "m": 10**9 - 1},
    "guo2020:thm4/middle": {"gamma": "1/4", "n": 3, "m": 2, "update_norm": "1e100"},
    "guo2020:thm1/corrected": {"gamma": "1/4", "C": 1, "lam": "1e-10", "n": 2, "b_norm": "1e120"},
    "guo2020:thm4/corrected": {"gamma": "1/4", "C": "1e-6", "lam": 1000, "n": 10**12, "m": 10**6,
                               "b_norm": "1e-300"},
    "guo2020:thm1/corrected-whp": {"gamma": "1/4", "C": 1, "lam": "1e-6", "n": 10**7,
                                   "sigma": "1e6", "d": 10**6, "tau": "1e-300"},
    "guo2020:thm4/corrected-whp": {"gamma": "1/4", "C": 1, "lam": "1e-3", "n": 60000, "m": 5000,
                                   "sigma": "1e-6", "d": 1, "tau": "0.999999"},
    "guo2020:cor1": {"gamma": "1/4", "n": 10**12, "X_norm": "999999", "update_norm": "1e-100",
                     "X_update_norm": "1e-95"},
    "guo2020:cor2": {"gamma": 3, "n": 2, "m": 1, "X_norm": 1, "update_norm": "1e100",
                     "X_update_norm": "1e100"},
    "guo2020:multiple": {"T": 10**15, "eps_prime": "1e-300"},
    "guo2020:thm2": {"epsilon": "1e-300"},
    "guo2020:thm3i": {"eps_prime": "1e-150", "scale": "1e150"},
    "guo2020:thm3ii": {"eps_prime": "1e-3", "sigma": 100, "delta": "1e-300"},
    "guo2020:thm3ii/literal": {"eps_prime": "1e100", "sigma": "1e-100", "delta": "0.999"},
    "guo2020:thm3ii/sigma": {"eps_prime": "1e-8", "epsilon": "1e-8", "delta": "1e-200"},
    "guo2020:alg2/budget": {"sigma": "1e10", "epsilon": 1, "delta": "1e-300"},
    "guo2020:thm5": {"eps_dp": 0, "eps_cr": "1e-300"},
    "guo2020:thm5/delta": {"delta_dp": "0.5", "delta_cr": "0.5"},
}


def close(a: Any, b: Any, rel: float) -> bool:
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    return abs(a - b) <= rel * max(abs(a), abs(b)) or a == b


# ----------------------------------------------------------------------------------------------
# Declarations against the independent reference
# ----------------------------------------------------------------------------------------------


def test_every_declared_id_has_a_reference_and_citation() -> None:
    declared = {b.id for b in bounds.list_bounds("guo2020")}
    assert declared == set(ref.REFERENCE)
    for bound in bounds.list_bounds("guo2020"):
        assert bound.citation.seed == "002_ef6ddb75b5fc6065.txt"
        assert bound.citation.label
        assert bound.id in EXTREME and bound.example


@pytest.mark.parametrize("point", ["example", "extreme"])
@pytest.mark.parametrize("bound_id", IDS)
def test_declaration_matches_reference(bound_id: str, point: str) -> None:
    bound = bounds.get(bound_id)
    params = dict(bound.example) if point == "example" else EXTREME[bound_id]
    truth = ref.reference(bound_id, **params)
    as_float = bound.evaluate(precision="float", **params).value
    assert close(as_float, truth, 1e-12), (as_float, truth)
    mp_value = bound.evaluate(precision="mp", digits=50, **params).value
    assert close(mp_value, truth, mpmath.mpf("1e-45")), (mp_value, truth)
    iv = bound.evaluate(precision="interval", digits=50, **params)
    with mpmath.workdps(60):
        assert iv.lower <= truth <= iv.upper, (iv.lower, truth, iv.upper)
        assert iv.upper - iv.lower <= mpmath.mpf("1e-40") * abs(truth) + mpmath.mpf("1e-320")


def _positive(lo: float, hi: float) -> st.SearchStrategy[Fraction]:
    return st.floats(math.log(lo), math.log(hi)).map(lambda t: Fraction(math.exp(t)))


@st.composite
def valid_params(draw: Any, bound_id: str) -> dict[str, Any]:
    """A draw from the valid domain of ``bound_id`` (domains and preconditions hold)."""
    bound = bounds.get(bound_id)
    out: dict[str, Any] = {}
    n = draw(st.integers(2, 10**9))
    for p in bound.parameters:
        if p.name == "n":
            out["n"] = n
        elif p.name == "m":
            out["m"] = draw(st.integers(1, n - 1))
        elif p.name in ("d", "T"):
            out[p.name] = draw(st.integers(1, 10**6))
        elif p.name in ("delta", "tau"):
            out[p.name] = draw(_positive(1e-200, 0.99))
        elif p.name in ("delta_dp", "delta_cr"):
            out[p.name] = draw(_positive(1e-12, 0.5))
        elif p.name == "epsilon" and p.upper == 1:
            out[p.name] = draw(_positive(1e-6, 1.0))
        else:
            out[p.name] = draw(_positive(1e-6, 1e6))
    if "X_norm" in out:  # ||X|| <= sqrt(rows) and ||X v|| <= ||X|| ||v||
        rows = n - out.get("m", 1)
        out["X_norm"] = min(out["X_norm"], Fraction(math.isqrt(rows)))
        out["X_update_norm"] = out["X_norm"] * out["update_norm"] * draw(_positive(1e-6, 1.0))
    if bound_id == "guo2020:thm3ii":  # keep epsilon = c eps'/sigma <= 1
        c = Fraction(float(ref.thm3ii(1, 1, float(out["delta"]))))
        out["sigma"] = max(out["sigma"], c * out["eps_prime"] * Fraction(11, 10))
    return out


@pytest.mark.parametrize("bound_id", IDS)
def test_interval_encloses_the_reference_on_the_valid_domain(bound_id: str) -> None:
    bound = bounds.get(bound_id)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(valid_params(bound_id))
    def check(params: dict[str, Any]) -> None:
        iv = bound.evaluate(precision="interval", digits=40, **params)
        as_mp = {k: (str(v.numerator) + "/" + str(v.denominator)) if isinstance(v, Fraction) else v
                 for k, v in params.items()}
        truth = ref.reference(bound_id, **as_mp)
        with mpmath.workdps(60):
            assert iv.lower <= truth <= iv.upper

    check()


@pytest.mark.parametrize("bound_id", IDS)
def test_declared_monotonicity(bound_id: str) -> None:
    bound = bounds.get(bound_id)
    base = {k: mpmath.mpf(ref._m(v)) for k, v in EXTREME[bound_id].items()}
    base = {k: float(v) if bound.parameter(k).integer is False else int(v) for k, v in base.items()}
    for name, direction in bound.monotone.items():
        p = bound.parameter(name)
        lower = dict(base)
        higher = dict(base)
        if p.integer:
            higher[name] = base[name] + 1
            if "m" in bound.parameter_names and name == "m" and higher["m"] >= base.get("n", 10**18):
                lower[name] = base[name] - 1
                higher[name] = base[name]
        else:
            higher[name] = base[name] * 1.5 if p.upper is None else base[name] * 0.5 + p.upper * 0.5
            if higher[name] <= lower[name]:
                lower[name], higher[name] = base[name] * 0.5, base[name]
        try:
            v_lo = ref.reference(bound_id, **lower)
            v_hi = ref.reference(bound_id, **higher)
        except (ValueError, ZeroDivisionError):  # pragma: no cover
            continue
        if direction == "increasing":
            assert v_hi >= v_lo, (name, lower, higher)
        else:
            assert v_hi <= v_lo, (name, lower, higher)


# ----------------------------------------------------------------------------------------------
# Identities between the declarations
# ----------------------------------------------------------------------------------------------


def test_theorem4_at_one_point_is_theorem1_and_corollary2_is_corollary1() -> None:
    n, m, b_norm = sp.Symbol("n", real=True), sp.Symbol("m", real=True), sp.Symbol("b_norm", real=True)
    pairs = [("guo2020:thm4", "guo2020:thm1"), ("guo2020:thm4/corrected", "guo2020:thm1/corrected"),
             ("guo2020:thm4/corrected-whp", "guo2020:thm1/corrected-whp"),
             ("guo2020:thm4/middle", "guo2020:thm1/middle"), ("guo2020:cor2", "guo2020:cor1")]
    for batch, single in pairs:
        difference = bounds.get(batch).expression.subs(m, 1) - bounds.get(single).expression
        assert sp.simplify(difference) == 0, batch
    # and the corrected bounds reduce to the printed ones at b = 0
    for corrected, printed in (("guo2020:thm1/corrected", "guo2020:thm1"),
                               ("guo2020:thm4/corrected", "guo2020:thm4")):
        difference = bounds.get(corrected).expression.subs(b_norm, 0) - bounds.get(printed).expression
        assert sp.simplify(difference) == 0
    del n


@settings(max_examples=30, deadline=None)
@given(valid_params("guo2020:cor1"))
def test_corollary2_at_m1_equals_corollary1_numerically(params: dict[str, Any]) -> None:
    one = bounds.get("guo2020:cor1").evaluate(precision="mp", **params).value
    two = bounds.get("guo2020:cor2").evaluate(precision="mp", m=1, **params).value
    assert one == two


# ----------------------------------------------------------------------------------------------
# The chain on real Newton removals (logistic regression, hypothesis-drawn data)
# ----------------------------------------------------------------------------------------------


@st.composite
def removal_problem(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(3, 24))
    d = draw(st.integers(1, 4))
    m = draw(st.integers(1, min(3, n - 1)))
    lam = math.exp(draw(st.floats(math.log(1e-2), math.log(10.0))))
    b_scale = draw(st.sampled_from([0.0, 0.0, 1.0, 30.0, 300.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.uniform(0.2, 1.0, size=(n, 1))  # ||x_i|| <= 1 (Theorem 1)
    y = rng.choice([-1.0, 1.0], size=n)
    b = rng.normal(size=d) * b_scale
    return {"X": X, "y": y, "lam": lam, "b": b, "m": m}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(removal_problem())
def test_true_residual_below_data_dependent_below_middle_below_worst_case(problem: dict[str, Any]) -> None:
    X, y, lam, b, m = problem["X"], problem["y"], problem["lam"], problem["b"], problem["m"]
    n = len(y)
    q = ref.newton_removal(X, y, lam, b, m)
    # The reference optimiser converged to the rounding of the gradient it evaluates.
    assert q["train_residual"] <= q["train_envelope"]
    # The theory assumes the exact minimiser w*; the optimiser's w = w* + e has
    # ||e|| <= ||g|| / (lam n) (strong convexity, g its gradient), and the residual of the Newton
    # step moves by at most ||e|| times twice the Hessian's norm (n/4 + lam n, ||x|| <= 1), on top
    # of the rounding of the residual's own evaluation.
    hessian_norm = n / 4 + lam * n
    slack = q["residual_envelope"] + q["train_residual"] * (1 + 2 * hessian_norm / (lam * n))
    common = {"gamma": "1/4", "n": n}
    cor = bounds.get("guo2020:cor2").evaluate(
        precision="interval", m=m, X_norm=q["X_norm"], update_norm=q["update_norm"],
        X_update_norm=q["X_update_norm"], **common).certified_upper
    middle = bounds.get("guo2020:thm4/middle").evaluate(
        precision="interval", m=m, update_norm=q["update_norm"], **common).certified_upper
    worst = bounds.get("guo2020:thm4").evaluate(precision="interval", m=m, C=1, lam=lam,
                                               **common).certified_upper
    corrected = bounds.get("guo2020:thm4/corrected").evaluate(
        precision="interval", m=m, C=1, lam=lam, b_norm=float(np.linalg.norm(b)),
        **common).certified_upper
    assert q["residual"] <= cor + slack
    assert cor <= middle * (1 + 1e-12)
    assert middle <= corrected * (1 + 1e-12)
    if not np.any(b):
        assert middle <= worst * (1 + 1e-12)


def test_least_squares_newton_removal_is_exact() -> None:
    """gamma = 0: the Newton step is the exact minimiser, residual 0 to rounding (Section 3.2)."""
    rng = np.random.default_rng(7)
    n, d, lam, m = 40, 5, 0.1, 3
    X = rng.normal(size=(n, d)) / 3
    y = rng.normal(size=n)
    b = rng.normal(size=d) * 50

    def gradient(w: np.ndarray, rows: slice) -> np.ndarray:
        Xr, yr = X[rows], y[rows]
        return 2 * Xr.T @ (Xr @ w - yr) + lam * len(yr) * w + b

    def hessian(rows: slice) -> np.ndarray:
        Xr = X[rows]
        return 2 * Xr.T @ Xr + lam * Xr.shape[0] * np.eye(d)

    everything, keep = slice(0, n), slice(0, n - m)
    w = np.linalg.solve(hessian(everything), 2 * X.T @ y - b)
    delta = m * lam * w + 2 * X[n - m:].T @ (X[n - m:] @ w - y[n - m:])
    w_minus = w + np.linalg.solve(hessian(keep), delta)
    residual = np.linalg.norm(gradient(w_minus, keep))
    assert residual <= 1e-11 * (1 + np.linalg.norm(b))
    assert bounds.get("guo2020:thm4")(gamma=0, C=1, lam=lam, n=n, m=m) == 0


# ----------------------------------------------------------------------------------------------
# Erratum G3: Theorem 1's worst case fails once the loss is perturbed
# ----------------------------------------------------------------------------------------------


def test_erratum_theorem1_fails_with_perturbation() -> None:
    example = ref.erratum_example()
    printed = bounds.get("guo2020:thm1").evaluate(precision="interval", gamma="1/4", C=1, lam=8, n=2)
    corrected = bounds.get("guo2020:thm1/corrected").evaluate(
        precision="interval", gamma="1/4", C=1, lam=8, n=2, b_norm=50)
    assert example["train_residual"] < mpmath.mpf("1e-40")  # w* is exact to 40 digits
    assert example["residual"] > 6 * printed.upper  # the printed bound is violated six-fold
    assert example["residual"] <= example["cor1"] <= corrected.lower
    assert example["delta_norm"] > 2  # the proof's ||Delta|| <= 2C fails
    # the float64 reference agrees with the 50-digit one
    q = ref.newton_removal(np.ones((2, 1)), np.array([-1.0, -1.0]), 8.0, np.array([-50.0]), 1)
    assert math.isclose(q["residual"], float(example["residual"]), rel_tol=1e-9)


def test_erratum_high_probability_norm_bound_holds_empirically() -> None:
    """||b|| <= sigma (sqrt d + sqrt(2 log 1/tau)) fails with frequency at most tau."""
    rng = np.random.default_rng(3)
    sigma, d, tau = 2.0, 50, 0.05
    limit = float(ref.gaussian_norm_tail(sigma, d, tau))
    norms = np.linalg.norm(rng.normal(scale=sigma, size=(20000, d)), axis=1)
    assert np.mean(norms > limit) <= tau
    whp = bounds.get("guo2020:thm1/corrected-whp")(gamma="1/4", C=1, lam="0.1", n=100, sigma=sigma,
                                                   d=d, tau=tau)
    given_norm = bounds.get("guo2020:thm1/corrected")(gamma="1/4", C=1, lam="0.1", n=100, b_norm=limit)
    assert math.isclose(whp, given_norm, rel_tol=1e-12)


# ----------------------------------------------------------------------------------------------
# Erratum G2: the Gaussian delta of Theorem 3 (ii)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "mu", "rel"),
                         [(1, 0.228, 1e-25), (0.1, 0.0228, 1e-25), (10, 2.28, 1e-25), (0.5, 4, 1e-25),
                          (3, 0.05, 1e-9)])  # delta ~ 1e-787: the quadrature is the weaker side
def test_exact_gaussian_delta_against_quadrature_and_scipy(epsilon: float, mu: float, rel: float) -> None:
    exact = guo2020.exact_gaussian_delta(epsilon=epsilon, mu=mu)
    quad = ref.hockey_stick_delta(epsilon=epsilon, mu=mu)
    assert close(exact, quad, rel)
    assert math.isclose(gaussian_delta(epsilon=epsilon, mu=mu), float(exact), rel_tol=1e-9)


def test_theorem3_delta_holds_for_epsilon_at_most_one() -> None:
    for c in np.linspace(0.3, 40.0, 60):
        stated = guo2020.theorem3_delta(c=c)
        for epsilon in np.linspace(1e-3, 1.0, 25):
            assert guo2020.exact_gaussian_delta(epsilon=epsilon, mu=epsilon / c) <= stated


def test_theorem3_delta_fails_for_large_epsilon() -> None:
    assert guo2020.theorem3_holds(epsilon=8.37, delta=1e-4)
    assert not guo2020.theorem3_holds(epsilon=8.39, delta=1e-4)
    assert not guo2020.theorem3_holds(epsilon=10, delta=1e-4)
    c = guo2020.c_of_delta(1e-4)
    assert guo2020.exact_gaussian_delta(epsilon=10, mu=10 / c) > mpmath.mpf("2.2e-4")
    # the literal declaration claims epsilon ~ 10 where the exact mechanism needs ~ 10.49
    claimed = bounds.get("guo2020:thm3ii/literal")(eps_prime="22.803", sigma=10, delta="1e-4")
    needed = guo2020.exact_gaussian_epsilon(eps_prime=22.803, sigma=10, delta=1e-4)
    assert claimed < 10 < needed
    assert ref.hockey_stick_delta(epsilon=claimed, mu=22.803 / 10) > 1e-4


def test_theorem3_refuses_epsilon_above_one_and_offers_the_exact_calibration() -> None:
    with pytest.raises(PreconditionError, match="Theorem 3 \\(ii\\).*exact"):
        bounds.get("guo2020:thm3ii").evaluate(eps_prime="22.803", sigma=10, delta="1e-4")
    with pytest.raises(PreconditionError, match="epsilon"):
        bounds.get("guo2020:alg2/budget").evaluate(sigma=10, epsilon=2, delta="1e-4")
    with pytest.raises(PreconditionError, match="method='exact'"):
        guo2020.sigma_for_removals(removals=10, eps_prime=0.1, epsilon=2, delta=1e-4)
    exact = guo2020.sigma_for_removals(removals=10, eps_prime=0.1, epsilon=2, delta=1e-4,
                                       method="exact")
    assert ref.hockey_stick_delta(epsilon=2, mu=1.0 / exact.sigma) <= 1e-4


# ----------------------------------------------------------------------------------------------
# Calibration
# ----------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(removals=st.integers(1, 10**6), eps_prime=_positive(1e-6, 10.0),
       epsilon=_positive(1e-3, 1.0), delta=_positive(1e-12, 0.5))
def test_sigma_for_removals_theorem3(removals: int, eps_prime: Fraction, epsilon: Fraction,
                                     delta: Fraction) -> None:
    eps_prime, epsilon, delta = float(eps_prime), float(epsilon), float(delta)
    result = guo2020.sigma_for_removals(removals=removals, eps_prime=eps_prime, epsilon=epsilon,
                                        delta=delta)
    with mpmath.workdps(60):
        needed = ref.thm3ii_sigma(mpmath.mpf(eps_prime) * removals, epsilon, delta)
        assert needed <= result.sigma <= needed * (1 + mpmath.mpf("1e-12"))
        assert ref.thm3ii(mpmath.mpf(eps_prime) * removals, result.sigma, delta) <= epsilon
        assert ref.thm3ii(mpmath.mpf(eps_prime) * removals, result.neighbour, delta) > epsilon
    back = guo2020.removals_supported(sigma=result.sigma, eps_prime=eps_prime, epsilon=epsilon,
                                      delta=delta)
    assert back.removals >= removals - 1  # the float eps' may round the last removal away
    with mpmath.workdps(60):
        budget = ref.alg2_budget(result.sigma, epsilon, delta)
        assert back.removals * mpmath.mpf(eps_prime) <= budget < (back.removals + 1) * mpmath.mpf(eps_prime)


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(removals=st.integers(1, 1000), eps_prime=_positive(1e-4, 1.0), epsilon=_positive(0.05, 20.0),
       delta=_positive(1e-10, 0.1))
def test_exact_calibration_is_safe_and_tight_hypothesis(removals: int, eps_prime: Fraction,
                                                        epsilon: Fraction, delta: Fraction) -> None:
    check_exact_calibration(removals, float(eps_prime), float(epsilon), float(delta))


@pytest.mark.parametrize(("removals", "eps_prime", "epsilon", "delta"),
                         [(100, 0.01, 1.0, 1e-4), (366, math.exp(-6), 6.85, 5.5e-5)])
def test_exact_calibration_is_safe_and_tight(removals: int, eps_prime: float, epsilon: float,
                                             delta: float) -> None:
    check_exact_calibration(removals, eps_prime, epsilon, delta)


def check_exact_calibration(removals: int, eps_prime: float, epsilon: float, delta: float) -> None:
    result = guo2020.sigma_for_removals(removals=removals, eps_prime=eps_prime, epsilon=epsilon,
                                        delta=delta, method="exact")
    total = mpmath.mpf(eps_prime) * removals
    assert ref.hockey_stick_delta(epsilon=epsilon, mu=total / result.sigma) <= delta
    assert ref.hockey_stick_delta(epsilon=epsilon, mu=total / result.neighbour) > delta
    if epsilon <= 1:  # exact Gaussian needs no more noise than Theorem 3 (ii)
        paper = guo2020.sigma_for_removals(removals=removals, eps_prime=eps_prime, epsilon=epsilon,
                                           delta=delta)
        assert result.sigma <= paper.sigma
    count = guo2020.removals_supported(sigma=result.sigma, eps_prime=eps_prime, epsilon=epsilon,
                                       delta=delta, method="exact")
    assert count.removals >= removals - 1
    assert ref.hockey_stick_delta(epsilon=epsilon, mu=count.removals * mpmath.mpf(eps_prime)
                                  / result.sigma) <= delta
    assert ref.hockey_stick_delta(epsilon=epsilon, mu=(count.removals + 1) * mpmath.mpf(eps_prime)
                                  / result.sigma) > delta


def test_paper_setting_budget_and_removals() -> None:
    """delta = 1e-4 (Section 4.1): c = sqrt(2 log 15000); sigma = 10, epsilon = 1 gives budget
    sigma epsilon / c; with eps' = 0.01 per removal, floor(budget / eps') removals."""
    with mpmath.workdps(60):
        c = mpmath.sqrt(2 * mpmath.log(15000))
        budget = 10 / c
    value = bounds.get("guo2020:alg2/budget").evaluate(precision="mp", sigma=10, epsilon=1,
                                                       delta="1e-4").value
    assert close(value, budget, 1e-45)
    result = guo2020.removals_supported(sigma=10, eps_prime=0.01, epsilon=1, delta=1e-4)
    assert result.removals == int(mpmath.floor(budget / mpmath.mpf(0.01)))


# ----------------------------------------------------------------------------------------------
# Preconditions
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bound_id", "params", "needle"),
    [
        ("guo2020:thm4", {"gamma": "1/4", "C": 1, "lam": 1, "n": 5, "m": 5}, "m < n"),
        ("guo2020:thm1", {"gamma": "1/4", "C": 1, "lam": 1, "n": 1}, "n >= 2"),
        ("guo2020:cor1", {"gamma": "1/4", "n": 5, "X_norm": 3, "update_norm": 1, "X_update_norm": 1},
         "sqrt"),
        ("guo2020:cor1", {"gamma": "1/4", "n": 5, "X_norm": 1, "update_norm": 1, "X_update_norm": 2},
         "consistent"),
        ("guo2020:thm1/corrected-whp", {"gamma": "1/4", "C": 1, "lam": 1, "n": 5, "sigma": 1, "d": 3,
                                        "tau": 1}, "tau < 1"),
    ],
)
def test_preconditions_name_the_theorem(bound_id: str, params: dict[str, Any], needle: str) -> None:
    bound = bounds.get(bound_id)
    with pytest.raises(PreconditionError, match=r"guo2020:.*\(" + bound.citation.label.split()[0]) as err:
        bound.evaluate(**params)
    assert needle in str(err.value)


# ----------------------------------------------------------------------------------------------
# The errata file: every command and snippet still prints what it quotes
# ----------------------------------------------------------------------------------------------


def test_errata_examples_still_hold(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.bounds.test_docs import check_output, console_examples, run_example

    text = (DOCS / "errata-guo2020.md").read_text(encoding="utf-8")
    examples = console_examples(text, "errata-guo2020.md")
    assert len(examples) >= 5
    for example in examples:
        if example.slow:
            continue
        status, lines = run_example(example, capsys)
        expected_failure = any(line.startswith("error:") for line in example.expected)
        assert (status != 0) == expected_failure, (example.command, lines)
        check_output(example.expected, lines)
