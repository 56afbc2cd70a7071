"""chien2024:thm3.2+thm3.11/sequence and its start distance (the certificate of sequence audits).

Ground truths written independently of the declaration: the recursion of Theorem 3.11 (with
Lemma 3.4's burn-in) unrolled by hand in mpmath at 60 digits, its geometric-sum closed form,
and Theorem 3.2 itself, which the sequence bound must reproduce when Z is Theorem 3.2's Z_B.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bounds
from bounds.errors import BoundError
from bounds.papers.chien2024 import sequence_start_distance

SEQ = "chien2024:thm3.2+thm3.11/sequence"


def _hand_recursion(*, eta, m, M, n, b, T, R, sizes, epochs):
    """Z at the start of the last request, from the lemmas, at 60 digits (no engine code)."""
    with mpmath.workdps(60):
        eta, m, M, R = (mpmath.mpf(Fraction(v).numerator) / Fraction(v).denominator
                        for v in (eta, m, M, R))
        P = n // b
        c = 1 - eta * m
        zb = 2 * eta * M / (b * (1 - c**P))  # Lemma 3.3 with T -> infinity (stationary)
        z = 2 * R * c ** (T * P)  # Lemma 3.4: burn-in from a law on C_R
        for s, size in enumerate(sizes):
            if s:
                z = c ** (epochs[s - 1] * P) * z  # K_{s-1} epochs contract by c per step
            z = min(z + min(size * zb, 2 * R), 2 * R)
        return z


@pytest.mark.parametrize("sizes, epochs", [([1], [1]), ([1, 1, 1], [1, 2, 1]),
                                           ([2, 1, 3, 1], [3, 1, 1, 2]), ([1] * 6, [1] * 6)])
def test_start_distance_encloses_the_hand_recursion(sizes, epochs):
    setting = dict(eta=Fraction(4, 5), m=Fraction(1, 20), M=Fraction(1, 20), n=256, b=32,
                   T=12, R=Fraction(100))
    got = sequence_start_distance(**setting, sizes=sizes, epochs=epochs)
    want = _hand_recursion(**setting, sizes=sizes, epochs=epochs)
    with mpmath.workdps(60):
        assert got >= want  # the upper end of an outward-rounded interval
        assert got - want <= want * mpmath.mpf("1e-30")


def test_constant_k_matches_the_geometric_closed_form():
    # Uncapped regime: z_s = 2R c^{TP} a^{s-1} + Z_B (1 - a^s)/(1 - a), a = c^{KP} (Thm 3.11).
    eta, m, M, n, b, T, R, K, s = Fraction(1, 2), Fraction(1, 10), Fraction(1, 100), 64, 8, 3, \
        Fraction(50), 2, 5
    got = sequence_start_distance(eta=eta, m=m, M=M, n=n, b=b, T=T, R=R, sizes=[1] * s,
                                  epochs=[K] * s)
    with mpmath.workdps(60):
        c = 1 - mpmath.mpf(1) / 20
        P = n // b
        a = c ** (K * P)
        zb = 2 * mpmath.mpf(1) / 2 * mpmath.mpf(1) / 100 / (b * (1 - c**P))
        closed = 2 * 50 * c ** (T * P) * a ** (s - 1) + zb * (1 - a**s) / (1 - a)
        assert closed < 100  # the 2R cap is not active
        assert got >= closed and got - closed <= closed * mpmath.mpf("1e-30")


def test_capped_at_the_diameter():
    z = sequence_start_distance(eta=1, m=Fraction(1, 1000), M=10, n=10, b=10, T=0, R=1,
                                sizes=[5, 5], epochs=[1, 1])
    assert z == 2 or abs(z - 2) < mpmath.mpf("1e-35")


def test_with_theorem_3_2_distance_the_bound_is_theorem_3_2():
    thm32, seq = bounds.get("chien2024:thm3.2"), bounds.get(SEQ)
    point = dict(alpha=3, sigma=Fraction(1, 10), eta=Fraction(4, 5), m=Fraction(1, 20),
                 L=Fraction(3, 10), M=Fraction(1, 20), n=256, b=32, T=12, K=2, R=100)
    with mpmath.workdps(60):
        eta, m, M, n, b, T, R = (mpmath.mpf(4) / 5, mpmath.mpf(1) / 20, mpmath.mpf(1) / 20, 256,
                                 32, 12, 100)
        c, P = 1 - eta * m, n // b
        z_thm32 = 2 * R * c ** (T * P) + min((1 - c ** (T * P)) / (1 - c**P) * 2 * eta * M / b,
                                             2 * R)
        z_text = mpmath.nstr(z_thm32, 60)
        a = thm32.evaluate(precision="mp", digits=50, **point).value
        z = seq.evaluate(precision="mp", digits=50, Z=z_text, **point).value
        assert abs(a - z) <= abs(a) * mpmath.mpf("1e-40")


def test_one_request_is_never_below_theorem_3_2():
    point = dict(sigma=0.01, eta=0.8, m=Fraction(1, 20), L=Fraction(1, 4) + Fraction(1, 20),
                 M=0.05, n=256, b=32, T=12, K=1, R=100.0)
    z = sequence_start_distance(eta=0.8, m=Fraction(1, 20), M=0.05, n=256, b=32, T=12, R=100.0,
                                sizes=[1], epochs=[1])
    from bounds.conversions import best_epsilon

    paper = best_epsilon("chien2024:thm3.2", delta=1 / 256, **point).epsilon
    composed = best_epsilon(SEQ, delta=1 / 256, Z=z, **point).epsilon
    assert composed >= paper


@settings(max_examples=30, deadline=None)
@given(z1=st.fractions(0, 200), z2=st.fractions(0, 200))
def test_increasing_in_z(z1, z2):
    seq = bounds.get(SEQ)
    point = dict(alpha=2.5, sigma=0.05, eta=0.8, m=0.05, L=0.3, M=0.05, n=256, b=32, T=3, K=1,
                 R=100)
    lo, hi = sorted((z1, z2))
    a = seq.evaluate(precision="mp", Z=str(lo), **point).value
    b = seq.evaluate(precision="mp", Z=str(hi), **point).value
    assert a <= b


def test_bad_shapes_are_refused():
    with pytest.raises(BoundError, match="one size and one K per request"):
        sequence_start_distance(eta=1, m=Fraction(1, 2), M=1, n=4, b=2, T=1, R=1, sizes=[1, 1],
                                epochs=[1])
    with pytest.raises(BoundError, match="divisible"):
        sequence_start_distance(eta=1, m=Fraction(1, 2), M=1, n=5, b=2, T=1, R=1, sizes=[1],
                                epochs=[1])
    with pytest.raises(BoundError):
        bounds.get(SEQ).evaluate(alpha=2, sigma=0.1, eta=5, m=0.05, L=0.3, M=0.05, n=256, b=32,
                                 T=3, K=1, R=100, Z=1)  # eta > 1/L: Theorem 3.2's precondition
