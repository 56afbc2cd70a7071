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
