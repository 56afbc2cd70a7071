"""Every PNSGD, Langevin and D2D bound agrees with an independent mpmath re-derivation
(:mod:`tests.bounds.reference_pnsgd`) in float, mp and interval mode, at extreme inputs.

* mp (60 digits) must agree with the 80-digit reference to 1e-35 relative;
* the interval enclosure (60 digits) must contain the reference;
* float must agree to 1e-6 relative with the reference evaluated at the same float-rounded
  inputs, wherever the value is a normal float and the engine did not flag an underflow (float
  is not rigorous and some formulas are ill-conditioned at extreme inputs, e.g. 1 - gamma^I of
  D2D for m << L; the engine says so in its notes).

Points: each bound's documented example, the same example pushed to the numerical extremes
(1 - c down to 1e-15, c = 0, T to 1e12, K to 1e9, alpha from 1 + 1e-9 to 1e6, delta to 1e-300,
epsilon to 1e-9), and random draws from the full domain (bounds.strategies).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings

import bounds
from bounds.strategies import is_valid, strategy_for
from tests.bounds.reference_pnsgd import REFERENCE

PAPERS = ("chien2024", "chien2024lu", "neel2021")
# Derived here rather than restated from the papers' text: checked against its own 60-digit
# recursion in tests/bounds/test_chien2024lu_sequential.py, not against this re-derivation.
DERIVED = {"chien2024lu:thm3.2+thm3.3/sequence-step"}
IDS = [b.id for paper in PAPERS for b in bounds.list_bounds(paper)
       if b.paper == paper and b.id not in DERIVED]

EXTREMES = [
    {"eta": 1, "m": "1e-15", "L": 1},  # 1 - c = 1e-15
    {"eta": "1/L", "m": "0.25", "L": "0.25"},  # c = 0
    {"T": 10**12},
    {"K": 10**9},
    {"alpha": "1.000000001"},
    {"alpha": 10**6},
    {"delta": "1e-300"},
    {"epsilon": "1e-9"},
    {"s": 10**9},
    {"c": "0.999999999999999", "N": 10**9},
]

FEW = settings(deadline=None, max_examples=6,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def test_every_id_has_a_reference():
    assert sorted(IDS) == sorted(REFERENCE), set(IDS) ^ set(REFERENCE)


def _points(bound: bounds.Bound) -> list[dict]:
    points = [dict(bound.example)]
    for extreme in EXTREMES:
        if not set(extreme) <= set(bound.parameter_names):
            continue
        candidate = {**bound.example, **extreme}
        if is_valid(bound, candidate):
            points.append(candidate)
    return points


def _reference(bound_id: str, params: dict) -> mpmath.mpf:
    resolved = bounds.get(bound_id).resolve(params)  # exact values of "1/L" and friends
    with mpmath.workdps(80):
        return +REFERENCE[bound_id](resolved)


def _compare(bound_id: str, params: dict) -> None:
    bound = bounds.get(bound_id)
    ref = _reference(bound_id, params)
    with mpmath.workdps(80):
        mp_value = bound.evaluate(precision="mp", digits=60, **params).value
        assert abs(mp_value - ref) <= mpmath.mpf(10) ** -35 * abs(ref) + mpmath.mpf(10) ** -300 \
            * (ref == 0), (bound_id, params, mp_value, ref)
        ev = bound.evaluate(precision="interval", digits=60, **params)
        slack = mpmath.mpf(10) ** -70 * abs(ref)
        assert ev.lower - slack <= ref <= ev.upper + slack, (bound_id, params, ev.lower, ref, ev.upper)
    try:
        fl = bound.evaluate(precision="float", **params)
    except bounds.BoundError:
        return  # overflow is reported as an error, never a wrong number
    if any("underflow" in note for note in fl.notes) or not (1e-300 < abs(ref) < 1e300) and ref != 0:
        return
    # Float evaluation rounds every resolved input to a float first (alpha = 1 + 1e-9 or
    # c = 1 - 1e-15 then move by up to ~10%): compare with the reference at those inputs.
    rounded = {k: Fraction(float(v)) for k, v in bound.resolve(params).items()}
    with mpmath.workdps(80):
        ref_rounded = +REFERENCE[bound_id](rounded)
    if not 1e-300 < abs(ref_rounded) < 1e300:
        return
    # Float may also land on the exact inputs' value: 1 - eta m rounds to exactly 0 in float when
    # eta = 1/m, though the rounded inputs' exact product leaves a residue near 1e-17.
    near_rounded = abs(fl.value - float(ref_rounded)) <= 1e-6 * abs(float(ref_rounded))
    near_exact = abs(fl.value - float(ref)) <= 1e-6 * abs(float(ref))
    assert near_rounded or near_exact, (bound_id, params, fl.value, ref_rounded, ref)


@pytest.mark.parametrize("bound_id", IDS)
def test_declaration_matches_the_reference_at_examples_and_extremes(bound_id):
    points = _points(bounds.get(bound_id))
    assert points
    for params in points:
        _compare(bound_id, params)


@pytest.mark.parametrize("bound_id", IDS)
def test_declaration_matches_the_reference_on_random_draws(bound_id):
    @FEW
    @given(strategy_for(bound_id, well_conditioned=False))
    def check(params):
        _compare(bound_id, params)

    check()


def test_reference_catches_a_wrong_declaration():
    # The check can fail: Corollary 3.7 with the exact-noise denominator is half of it.
    params = dict(bounds.get("chien2024:cor3.7").example)
    ref = _reference("chien2024:cor3.7", params)
    other = bounds.get("chien2024:cor3.7/exact-noise").evaluate(precision="mp", digits=60, **params)
    assert abs(other.value - ref) > mpmath.mpf(10) ** -5 * ref


@pytest.mark.parametrize(("steps", "start"), [(1, 1), (0, 0), (0, 1)])
def test_exact_zero_contraction(steps: int, start: int) -> None:
    # eta = 1/m exactly gives c = 0: the declaration, the reference (exact c) and every precision
    # must agree, including 0**0 = 1 in interval mode (found by random draws in CI).
    m = Fraction(6121026514868073, 2251799813685248)
    params = {"eta": 1 / m, "m": m, "L": m, "n": 1, "b": 1, "T": steps, "W0": Fraction(start)}
    _compare("chien2024:lem3.4", params)
    enclosure = bounds.get("chien2024:lem3.4").evaluate(precision="interval", digits=30, **params)
    expected = start if steps == 0 else 0
    assert enclosure.lower <= expected <= enclosure.upper <= expected + 1e-25
