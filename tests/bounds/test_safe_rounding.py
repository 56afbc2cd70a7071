"""Safe-side float rounding: float_down never exceeds an exact value, float_up never falls
short of it, and each is the nearest float on its side."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from bounds.numerics import float_down, float_up

fractions = st.fractions(min_value=Fraction(-10**9), max_value=Fraction(10**9), max_denominator=10**15)


@given(fractions)
def test_float_down_is_the_largest_float_not_above(value: Fraction) -> None:
    x = float_down(value)
    assert Fraction(x) <= value < Fraction(math.nextafter(x, math.inf))


@given(fractions)
def test_float_up_is_the_smallest_float_not_below(value: Fraction) -> None:
    x = float_up(value)
    assert Fraction(math.nextafter(x, -math.inf)) < value <= Fraction(x)


@given(fractions)
def test_sympy_rationals_round_like_fractions(value: Fraction) -> None:
    rational = sp.Rational(value.numerator, value.denominator)
    assert (float_down(rational), float_up(rational)) == (float_down(value), float_up(value))


def test_mpmath_numbers_round_to_their_side() -> None:
    with mpmath.workdps(40):
        third = mpmath.mpf(1) / 3
        down, up = float_down(third), float_up(third)
    assert Fraction(down) < Fraction(1, 3) < Fraction(up)
    assert math.nextafter(down, math.inf) == up


def test_exact_floats_are_their_own_rounding() -> None:
    assert float_down(Fraction(1, 4)) == float_up(Fraction(1, 4)) == 0.25
    assert float_down(Fraction(1, 10)) == 0.09999999999999999
    assert float_up(Fraction(1, 10)) == 0.1


def test_one_over_l_of_the_demo_is_the_largest_float_not_above_it() -> None:
    # L = 1/4 + 1 = 5/4: 1/L = 4/5 is not a float; the float nearest 0.8 is above it
    exact = Fraction(4, 5)
    assert Fraction(0.8) > exact
    assert float_down(exact) == math.nextafter(0.8, 0.0)
    assert float_up(exact) == 0.8


def test_directed_floats_of_exact_values_beyond_the_float_range_stay_on_their_side():
    """10^400 rounds up to +inf and down to the largest float; -10^400 the mirror image (an
    exact value the float range cannot hold is never rounded onto the unsafe side)."""
    import sys

    big = sp.Rational(10) ** 400
    largest = sys.float_info.max
    assert float_up(big) == math.inf and float_down(big) == largest
    assert float_up(-big) == -largest and float_down(-big) == -math.inf


# Random real algebraic numbers a + b * c^(1/k) (a, b rational, c a positive integer that is not
# a perfect k-th power in most draws), and ones that are floats in disguise: a float r written as
# r + (sqrt(c) + 1)(sqrt(c) - 1) - (c - 1), which sympy leaves unsimplified.
_rationals = st.fractions(min_value=Fraction(-1000), max_value=Fraction(1000), max_denominator=10**6)
_radicands = st.integers(min_value=2, max_value=10**6)
_degrees = st.sampled_from([2, 3, 5])


def _reference(value: sp.Expr) -> mpmath.mpf:
    """The number to 60 significant digits, independently of float_up/float_down's evaluation."""
    with mpmath.workdps(60):
        return mpmath.mpf(sp.N(value, 60))


def _check_sides(value: sp.Expr) -> None:
    down, up = float_down(value), float_up(value)
    with mpmath.workdps(60):
        exact = _reference(value)
        assert mpmath.mpf(down) <= exact <= mpmath.mpf(up)
        assert mpmath.mpf(math.nextafter(down, math.inf)) > exact
        assert mpmath.mpf(math.nextafter(up, -math.inf)) < exact
    # an irrational is no float: its two sides are neighbours
    assert math.nextafter(down, math.inf) == up


@given(_rationals, _rationals.filter(lambda b: b != 0), _radicands, _degrees)
def test_algebraic_numbers_round_to_the_nearest_float_on_each_side(a: Fraction, b: Fraction,
                                                                   c: int, k: int) -> None:
    root = sp.Integer(c) ** sp.Rational(1, k)
    if root.is_Rational:  # a perfect power: the value is rational, covered above
        return
    value = sp.Rational(a.numerator, a.denominator) + sp.Rational(b.numerator, b.denominator) * root
    _check_sides(value)


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), _radicands)
def test_algebraic_expressions_that_are_exactly_floats_round_to_themselves(r: float, c: int
                                                                          ) -> None:
    root = sp.sqrt(c)
    value = sp.Rational(r) + (root + 1) * (root - 1) - (c - 1)
    assert float_down(value) == float_up(value) == r


def test_sqrt_three_rounds_outward_to_its_neighbouring_floats() -> None:
    value = sp.sqrt(3)
    down, up = float_down(value), float_up(value)
    assert Fraction(down) ** 2 < 3 < Fraction(up) ** 2
    assert math.nextafter(down, math.inf) == up


def test_transcendental_constants_round_outward() -> None:
    _check_sides(sp.pi)
    _check_sides(sp.exp(1) - 2)


def test_directed_rounding_refuses_symbols_and_non_real_values() -> None:
    import pytest

    with pytest.raises(ValueError, match="number"):
        float_up(sp.Symbol("x"))
    with pytest.raises((ValueError, TypeError)):
        float_down(sp.sqrt(-2))
