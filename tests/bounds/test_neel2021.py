"""Delete-to-Descent (Neel et al. 2021, Theorems 9 and 28 as restated in Appendix O of seed 000)."""

from __future__ import annotations

import math

import mpmath
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import bounds
from bounds.calibration import calibrate
from bounds.conversions import gaussian_delta
from bounds.errors import BoundError, PreconditionError

THM9 = bounds.get("neel2021:thm9")
THM28 = bounds.get("neel2021:thm28")
THM28_I = bounds.get("neel2021:thm28/iterations")
THM28_REQUEST = bounds.get("neel2021:thm28/request-iterations")
LEARNING = bounds.get("neel2021:thm9/learning-iterations")
ALL = (THM9, THM28, THM28_I, THM28_REQUEST, LEARNING)

# The experiments of seed 000 (Appendix N): lambda = m = 1e-6 n, L = 1/4 + m, M = 1, delta = 1/n.
MNIST = {"n": 11264, "m": "0.011264", "L": "0.261264", "M": 1, "delta": "1/11264"}
CIFAR = {"n": 9728, "m": "0.009728", "L": "0.259728", "M": 1, "delta": "1/9728"}
EPSILONS = (0.05, 0.1, 0.5, 1, 2, 5)


def plain_gamma(n: int) -> float:
    m = 1e-6 * n
    return 0.25 / (0.25 + 2 * m)


def plain_thm9(*, n: int, eps: float, iters: int) -> float:
    """Theorem O.1 by hand, epsilon inside the first root."""
    m, g, a = 1e-6 * n, plain_gamma(n), math.log(n)
    gap = math.sqrt(a + eps) - math.sqrt(a)
    return 4 * math.sqrt(2) * g**iters / (m * n * (1 - g**iters) * gap)


# ----------------------------------------------------------------------------------------------
# Registration
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "target"),
    [
        ("chien2024:thmO.1", "neel2021:thm9"),
        ("chien2024sglu:thmL.1", "neel2021:thm9"),
        ("chien2024:thmO.2", "neel2021:thm28"),
        ("chien2024sglu:thmL.2", "neel2021:thm28"),
        ("chien2024:eq94", "neel2021:thm28/iterations"),
        ("chien2024sglu:eq75", "neel2021:thm28/iterations"),
        ("chien2024:thmO.2/request-iterations", "neel2021:thm28/request-iterations"),
    ],
)
def test_aliases_resolve(alias: str, target: str) -> None:
    assert bounds.get(alias).id == target


def test_guarantees_and_listing() -> None:
    assert THM9.guarantee.kind == THM28.guarantee.kind == "noise_scale"
    assert {b.guarantee.kind for b in (THM28_I, THM28_REQUEST, LEARNING)} == {"iterations"}
    listed = {b.id for b in bounds.list_bounds(paper="neel2021")}
    assert listed == {b.id for b in ALL}
    for b in (THM9, THM28):
        assert any("add/remove" in a for a in b.assumptions)
        assert any("replacement" in a for a in b.assumptions)
        assert any("inside" in note for note in b.notes)  # the reading of the roots is documented


@pytest.mark.parametrize("bound", ALL, ids=lambda b: b.id)
def test_examples_evaluate(bound: bounds.Bound) -> None:
    value = bound.evaluate(**bound.example).value
    assert math.isfinite(value) and value > 0


# ----------------------------------------------------------------------------------------------
# Preconditions
# ----------------------------------------------------------------------------------------------


def test_precondition_m_below_L() -> None:
    with pytest.raises(PreconditionError, match=r"neel2021:thm9 \(Theorem 9\).*m < L"):
        THM9.evaluate(**{**THM9.example, "m": "0.261264"})


def test_precondition_learning_iterations() -> None:
    # For MNIST with R = 100 the learning run needs I + 109.5 iterations.
    with pytest.raises(PreconditionError, match=r"neel2021:thm9.*learning ran T"):
        THM9.evaluate(**{**THM9.example, "T": 114})
    THM9.evaluate(**{**THM9.example, "T": 115})
    with pytest.raises(PreconditionError, match=r"neel2021:thm28.*learning ran T"):
        THM28.evaluate(**{**THM28.example, "T": 100})


def test_precondition_eq94_on_I() -> None:
    # eq. (94) needs I >= 97.08 at the MNIST constants, d = 784, epsilon = 1.
    with pytest.raises(PreconditionError, match=r"neel2021:thm28 \(Theorem 28\).*eq. \(94\)"):
        THM28.evaluate(**{**THM28.example, "I": 97})
    with pytest.raises(PreconditionError, match=r"request-iterations.*eq. \(94\)"):
        THM28_REQUEST.evaluate(**{**THM28_REQUEST.example, "I": 97})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epsilon": 0}, "epsilon > 0"),
        ({"delta": 1}, "delta < 1"),
        ({"delta": 0}, "delta > 0"),
        ({"I": 0}, "I >= 1"),
        ({"I": "2.5"}, "I must be an integer"),
        ({"M": 0}, "M > 0"),
        ({"n": 0}, "n >= 1"),
    ],
)
def test_domains(change: dict, message: str) -> None:
    with pytest.raises(PreconditionError, match=message):
        THM9.evaluate(**{**THM9.example, **change})


def test_noise_scale_is_not_calibrated_as_a_privacy_loss() -> None:
    # (calibrate's own ``epsilon`` keyword is the target, so the theorem's epsilon is left out)
    params = {k: v for k, v in THM9.example.items() if k not in ("I", "epsilon")}
    with pytest.raises(BoundError, match="noise_scale, not a privacy loss"):
        calibrate(THM9, solve="I", epsilon=1, **params)


# ----------------------------------------------------------------------------------------------
# Hand-computed values (catalog leads, recomputed here in plain Python)
# ----------------------------------------------------------------------------------------------

# sigma of Theorem O.1 for Figure 3a at I = 1 and 5 (not printed in the paper; derived).
FIG3A_D2D = {
    ("MNIST", 1): (60.53, 30.31, 6.125, 3.101, 1.588, 0.6768),
    ("MNIST", 5): (10.11, 5.063, 1.023, 0.5181, 0.2653, 0.1131),
    ("CIFAR", 1): (93.23, 46.68, 9.435, 4.779, 2.448, 1.044),
    ("CIFAR", 5): (15.96, 7.991, 1.615, 0.8181, 0.4191, 0.1787),
}


@pytest.mark.parametrize(("key", "expected"), FIG3A_D2D.items(), ids=str)
def test_fig3a_d2d_sigma(key: tuple[str, int], expected: tuple[float, ...]) -> None:
    data, iters = key
    consts = MNIST if data == "MNIST" else CIFAR
    n = consts["n"]
    for eps, printed in zip(EPSILONS, expected, strict=True):
        value = THM9.evaluate(epsilon=eps, I=iters, T=10000, R=100, **consts).value
        assert value == pytest.approx(plain_thm9(n=n, eps=eps, iters=iters), rel=1e-12)
        assert float(f"{value:.4g}") == printed


def test_gamma_of_the_experiments() -> None:
    assert plain_gamma(11264) == pytest.approx(0.917337, abs=5e-7)
    assert plain_gamma(9728) == pytest.approx(0.927795, abs=5e-7)


@pytest.mark.parametrize(("consts", "dim", "least_i", "total"),
                         [(MNIST, 784, 98, 13374), (CIFAR, 512, 111, 15169)])
def test_fig3b_d2d_iterations(consts: dict, dim: int, least_i: int, total: int) -> None:
    """Theorem O.2 at epsilon = 1: least I, sigma, and the iterations of 100 requests."""
    n = consts["n"]
    m, g, dl = 1e-6 * n, plain_gamma(n), 1 / n
    a = 2 * math.log(2 / dl)
    gap = math.sqrt(a + 1) - math.sqrt(a)
    i_min = math.log(math.sqrt(2 * dim) / (1 - g) / gap) / math.log(1 / g)
    common = {k: v for k, v in consts.items() if k not in ("M", "n")}
    assert THM28_I.evaluate(epsilon=1, d=dim, **common).value == pytest.approx(i_min, rel=1e-12)
    assert math.ceil(i_min) == least_i

    sigma = 8 * g**least_i / (m * n * (1 - g**least_i) * (math.sqrt(a + 3) - math.sqrt(a + 2)))
    got = THM28.evaluate(epsilon=1, d=dim, I=least_i, T=10000, R=100, **consts).value
    assert got == pytest.approx(sigma, rel=1e-12)

    per_request = [
        math.ceil(THM28_REQUEST.evaluate(epsilon=1, d=dim, I=least_i, i=i, **common).value)
        for i in range(1, 101)
    ]
    by_hand = [least_i + math.ceil(math.log(math.log(4 * dim * i / dl)) / math.log(1 / g))
               for i in range(1, 101)]
    assert per_request == by_hand
    assert sum(per_request) == total


def test_learning_iterations_by_hand() -> None:
    g = plain_gamma(11264)
    expected = 5 + math.log(100 * 0.011264 * 11264 / 1) / math.log(1 / g)
    assert LEARNING.evaluate(**LEARNING.example).value == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# The reading of the square roots
# ----------------------------------------------------------------------------------------------


def test_literal_reading_collapses_to_epsilon() -> None:
    a, e = sp.symbols("a e", positive=True)
    assert sp.simplify(sp.sqrt(a) + e - sp.sqrt(a)) == e
    assert sp.simplify(sp.sqrt(a) + 3 * e - sp.sqrt(a) + 2 * e) == 5 * e


@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1 / 11264, 1e-9])
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 5.0])
def test_root_reading_is_a_valid_gaussian_calibration(delta: float, eps: float) -> None:
    """sigma = Delta/(sqrt 2 (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))) is (eps, delta)-DP
    for the Gaussian mechanism of sensitivity Delta; the literal reading (gap = eps) is not."""
    a = math.log(1 / delta)
    mu = math.sqrt(2) * (math.sqrt(a + eps) - math.sqrt(a))  # Delta / sigma
    assert gaussian_delta(epsilon=eps, mu=mu) <= delta
    assert gaussian_delta(epsilon=eps, mu=math.sqrt(2) * eps) > delta


def test_declared_sigma_exceeds_literal_reading() -> None:
    """The literal reading understates sigma by more than 2 sqrt(log(1/delta))."""
    ex = THM9.example
    value = THM9.evaluate(**ex).value
    a = math.log(11264)
    literal = value * (math.sqrt(a + 1) - math.sqrt(a)) / 1  # gap replaced by epsilon = 1
    assert value > 2 * math.sqrt(a) * literal


# ----------------------------------------------------------------------------------------------
# Precision: float vs 60-digit mpmath; interval enclosure
# ----------------------------------------------------------------------------------------------


def _check_precisions(bound: bounds.Bound, params: dict) -> None:
    reference = bound.evaluate(precision="mp", digits=80, **params).value
    with mpmath.workdps(80):
        mp60 = bound.evaluate(precision="mp", digits=60, **params).value
        assert abs(mp60 - reference) <= abs(reference) * mpmath.mpf(10) ** -55
        interval = bound.evaluate(precision="interval", digits=60, **params)
        lo, hi = interval.lower, interval.upper
        assert lo <= reference <= hi
        assert hi - lo <= abs(reference) * mpmath.mpf(10) ** -45
        assert interval.certified_upper >= reference
    value = bound.evaluate(precision="float", **params).value
    assert value == pytest.approx(float(reference), rel=1e-10)


@pytest.mark.parametrize("bound", ALL, ids=lambda b: b.id)
def test_precisions_at_example(bound: bounds.Bound) -> None:
    _check_precisions(bound, dict(bound.example))


@st.composite
def d2d_inputs(draw: st.DrawFn) -> dict:
    """A valid point of Theorems 9 and 28: m < L, eq. (94) and the learning length hold."""
    m = draw(st.floats(1e-3, 1.0))
    ratio = draw(st.floats(1.05, 200.0))  # L/m
    L = m * ratio
    g = (L - m) / (L + m)
    n = draw(st.integers(1, 10**6))
    M = draw(st.floats(0.01, 10.0))
    eps = draw(st.floats(0.01, 10.0))
    delta = draw(st.floats(1e-12, 0.5))
    d = draw(st.integers(1, 10**4))
    R = draw(st.floats(0.1, 1e3))
    a = 2 * math.log(2 / delta)
    gap = math.sqrt(a + eps) - math.sqrt(a)
    i_min = math.log(math.sqrt(2 * d) / (1 - g) / gap) / math.log(1 / g)
    # keep gamma^I above 1e-250 so the float evaluation does not underflow
    i_max = max(2, int(250 / math.log10(1 / g)))
    lo = max(1, math.ceil(i_min) + 1)
    iters = draw(st.integers(min(lo, i_max), i_max))
    learn = iters + math.log(R * m * n / M) / math.log(1 / g)
    T = max(0, math.ceil(learn) + 1 + draw(st.integers(0, 100)))
    return {"epsilon": eps, "delta": delta, "M": M, "m": m, "L": L, "n": n, "d": d, "I": iters,
            "T": T, "R": R, "i": draw(st.integers(1, 10**4))}


def _for(bound: bounds.Bound, point: dict) -> dict:
    return {k: point[k] for k in bound.parameter_names}


def _meets_eq94(point: dict) -> bool:
    return point["I"] >= float(THM28_I.evaluate(**_for(THM28_I, point)).value) + 1e-9


@settings(max_examples=40, deadline=None)
@given(d2d_inputs())
def test_precisions_property(point: dict) -> None:
    _check_precisions(THM9, _for(THM9, point))
    _check_precisions(THM28_I, _for(THM28_I, point))
    _check_precisions(LEARNING, _for(LEARNING, point))
    if _meets_eq94(point):
        _check_precisions(THM28, _for(THM28, point))
        _check_precisions(THM28_REQUEST, _for(THM28_REQUEST, point))


# ----------------------------------------------------------------------------------------------
# Monotonicity (the calibration solvers rely on it)
# ----------------------------------------------------------------------------------------------


def _mp(bound: bounds.Bound, params: dict) -> mpmath.mpf:
    return bound.evaluate(precision="mp", digits=40, **_for(bound, params)).value


@settings(max_examples=40, deadline=None)
@given(d2d_inputs(), st.floats(1.01, 10.0))
def test_sigma_decreasing_in_I_and_epsilon(point: dict, factor: float) -> None:
    more_iters = {**point, "I": point["I"] + 1, "T": point["T"] + 1}
    more_eps = {**point, "epsilon": point["epsilon"] * factor}
    assert _mp(THM9, more_iters) < _mp(THM9, point)
    assert _mp(THM9, more_eps) < _mp(THM9, point)
    if _meets_eq94(point):
        assert _mp(THM28, more_iters) < _mp(THM28, point)
        assert _mp(THM28, more_eps) < _mp(THM28, point)  # eq. (94) is easier at larger epsilon
        assert _mp(THM28_I, more_eps) < _mp(THM28_I, point)
        later = {**point, "i": point["i"] + 1}
        assert _mp(THM28_REQUEST, later) > _mp(THM28_REQUEST, point)


@pytest.mark.parametrize("bound", ALL, ids=lambda b: b.id)
def test_declared_monotonicity_at_example(bound: bounds.Bound) -> None:
    base = bound.resolve(dict(bound.example))
    for name, direction in bound.monotone.items():
        param = bound.parameter(name)
        value = base[name]
        steps = [value + 1, 2 * value] if param.integer else [value * sp.Rational(11, 10)]
        for bigger in steps:
            try:
                moved = bound.evaluate(precision="mp", digits=40, **{**base, name: bigger}).value
            except PreconditionError:
                continue
            start = bound.evaluate(precision="mp", digits=40, **base).value
            assert (moved > start) if direction == "increasing" else (moved < start), name
            break
        else:
            pytest.fail(f"no admissible step for {name}")

