"""An independent high-precision re-derivation of every bound of seeds 000/003 (PNSGD, the
Langevin-unlearning restatement and Delete-to-Descent), written from the papers' text in plain
mpmath, without sympy and without importing any declaration.

Each function takes a dict of exact inputs (int, Fraction or str) and returns an ``mpmath.mpf``
computed at the current mpmath precision (the tests use 80 digits). Formulas are written the
way the paper states them (products of powers, sums over batch positions, the recursion of
Theorem 3.11 unrolled), not the way the engine rewrites them, so a slip in a declaration or in
the engine's numerics shows up as a disagreement.

Sources (seed 000 unless noted): Lemma 2.6 (PABI), Theorem 3.2, Lemmas 3.3/3.4, Corollaries
3.7/3.8/3.10, Proposition 3.9, Lemma K.1, Theorem 3.11, Corollary J.1, Proposition N.2,
Algorithms 5/7, Appendix P eqs. (96)-(100), Appendix O eqs. (93)-(95); the ``/optimal-shift``,
``/exact-noise``, ``/tight``, ``/capped`` and ``/time-shift`` forms follow docs/improved.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import mpmath

Inputs = Mapping[str, Any]


def num(x: Any) -> mpmath.mpf:
    """An exact input (int, Fraction, decimal string, sympy number) at the working precision."""
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    if isinstance(x, str) and "/" in x:
        p, q = x.split("/")
        return mpmath.mpf(int(p)) / int(q)
    if hasattr(x, "p") and hasattr(x, "q"):  # sympy Rational
        return mpmath.mpf(int(x.p)) / int(x.q)
    return mpmath.mpf(x)


class P:
    """Attribute access to the inputs as mpmath numbers (``P(p).eta``)."""

    def __init__(self, inputs: Inputs) -> None:
        self._inputs = inputs

    def __getattr__(self, name: str) -> mpmath.mpf:
        return num(self._inputs[name])


def _exact_rational(x: Any) -> Fraction | None:
    if isinstance(x, Fraction | int) and not isinstance(x, bool):
        return Fraction(x)
    if isinstance(x, str) and "/" in x:
        p, q = x.split("/")
        return Fraction(int(p), int(q))
    if hasattr(x, "p") and hasattr(x, "q"):  # sympy Rational
        return Fraction(int(x.p), int(x.q))
    return None


def contraction(v: P) -> mpmath.mpf:
    """c = 1 - eta m, the per-step contraction of the projected noisy gradient map; exact when
    eta and m are rationals (eta = 1/m makes c exactly 0, not a rounding residue)."""
    eta, m = _exact_rational(v._inputs["eta"]), _exact_rational(v._inputs["m"])
    if eta is not None and m is not None:
        return num(1 - eta * m)
    return 1 - v.eta * v.m


def power(base: mpmath.mpf, exponent: mpmath.mpf) -> mpmath.mpf:
    """base**exponent with 0**0 = 1 (c = 0 and no epochs)."""
    if base == 0:
        return mpmath.mpf(1) if exponent == 0 else mpmath.mpf(0)
    return base**exponent


def batches(v: P) -> mpmath.mpf:
    return v.n / v.b


def stationary_distance(v: P) -> mpmath.mpf:
    """Corollary 3.7's Z_B: the geometric series of per-epoch gradient differences, capped."""
    c, per_epoch = contraction(v), batches(v)
    return min(2 * v.eta * v.M / (v.b * (1 - power(c, per_epoch))), 2 * v.R)


def pabi_term(order: mpmath.mpf, distance: mpmath.mpf, steps: mpmath.mpf, v: P,
              noise_variance: mpmath.mpf) -> mpmath.mpf:
    """Lemma 2.6 with per-step contraction c over ``steps`` steps: order Z^2 c^{2 steps}/(2 s^2)."""
    return order * distance**2 * power(contraction(v), 2 * steps) / (2 * noise_variance)


def shift_factor(c: mpmath.mpf, steps: mpmath.mpf) -> mpmath.mpf:
    """The shift-optimised PABI factor: c^{2N}(1 - c^2)/(1 - c^{2N}) (docs/improved.md)."""
    return power(c, 2 * steps) * (1 - c**2) / (1 - power(c, 2 * steps))


# -- Theorem 3.2 and its lemmas ---------------------------------------------------------------


def thm32_distance(v: P) -> mpmath.mpf:
    """Z_B of Theorem 3.2: 2R c^{Tn/b} + min((1 - c^{Tn/b})/(1 - c^{n/b}) 2 eta M/b, 2R)."""
    c, per_epoch = contraction(v), batches(v)
    decayed = power(c, v.T * per_epoch)
    series = (1 - decayed) / (1 - power(c, per_epoch)) * 2 * v.eta * v.M / v.b
    return 2 * v.R * decayed + min(series, 2 * v.R)


def weak_triangle(order: mpmath.mpf, first: mpmath.mpf, second: mpmath.mpf) -> mpmath.mpf:
    return (order - mpmath.mpf(1) / 2) / (order - 1) * (first + second)


def thm32(p: Inputs) -> mpmath.mpf:
    v = P(p)
    var = v.eta * v.sigma**2
    return weak_triangle(v.alpha,
                         pabi_term(2 * v.alpha, 2 * v.R, v.T * batches(v), v, var),
                         pabi_term(2 * v.alpha, thm32_distance(v), v.K * batches(v), v, var))


def thm32_sequence(p: Inputs) -> mpmath.mpf:
    """Theorem 3.2's weak triangle with a free initial distance Z for the last request."""
    v = P(p)
    var = v.eta * v.sigma**2
    return weak_triangle(v.alpha,
                         pabi_term(2 * v.alpha, 2 * v.R, v.T * batches(v), v, var),
                         pabi_term(2 * v.alpha, v.Z, v.K * batches(v), v, var))


def thm32_capped(p: Inputs) -> mpmath.mpf:
    v = P(p)
    var = v.eta * v.sigma**2
    return weak_triangle(v.alpha,
                         pabi_term(2 * v.alpha, 2 * v.R, v.T * batches(v), v, var),
                         pabi_term(2 * v.alpha, min(thm32_distance(v), 2 * v.R),
                                   v.K * batches(v), v, var))


def thm32_shift(p: Inputs) -> mpmath.mpf:
    v = P(p)
    c, per_epoch = contraction(v), batches(v)
    var = v.eta * v.sigma**2
    first = 2 * v.alpha * (2 * v.R) ** 2 / (2 * var) * shift_factor(c, v.T * per_epoch)
    second = 2 * v.alpha * thm32_distance(v) ** 2 / (2 * var) * shift_factor(c, v.K * per_epoch)
    return weak_triangle(v.alpha, first, second)


def _time_shift(v: P, start: mpmath.mpf, noise_variance: mpmath.mpf | None = None) -> mpmath.mpf:
    """docs/improved.md (e): K <= T: unlearning and retraining end with the same K epochs on D',
    so PABI runs K n/b steps from W_inf <= min(start + 2R c^{(T-K)n/b}, 2R). K > T: both outputs
    are T epochs on D' from laws on C_R, so PABI runs T n/b steps from W_inf <= 2R. The noise
    variance is the papers' eta sigma^2 unless given (2 eta sigma^2 for /exact-noise)."""
    c, per_epoch = contraction(v), batches(v)
    var = v.eta * v.sigma**2 if noise_variance is None else noise_variance
    if v.K <= v.T:
        distance = min(start + 2 * v.R * power(c, (v.T - v.K) * per_epoch), 2 * v.R)
        return pabi_term(v.alpha, distance, v.K * per_epoch, v, var)
    return pabi_term(v.alpha, 2 * v.R, v.T * per_epoch, v, var)


def _learned_distance(v: P) -> mpmath.mpf:
    """Lemma 3.3 at the worst batch (j0 = n/b - 1) after T epochs, capped at 2R."""
    c, per_epoch = contraction(v), batches(v)
    learned = (2 * v.eta * v.M / v.b * (1 - power(c, v.T * per_epoch))
               / (1 - power(c, per_epoch)))
    return min(learned, 2 * v.R)


def _sequence_start(v: P) -> mpmath.mpf:
    """The given Z, raised to Theorem 3.11's least value after T burn-in and Kprev earlier
    epochs: the recursion starts at 2R c^{Tn/b}, every request adds at least min(Z_B, 2R)."""
    floor = min(2 * v.R * power(contraction(v), (v.T + v.Kprev) * batches(v))
                + stationary_distance(v), 2 * v.R)
    return max(v.Z, floor)


def thm32_time_shift(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return _time_shift(v, _learned_distance(v))


def thm32_time_shift_noise(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return _time_shift(v, _learned_distance(v), 2 * v.eta * v.sigma**2)


def thm32_time_shift_sequence(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return _time_shift(v, _sequence_start(v))


def thm32_time_shift_sequence_noise(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return _time_shift(v, _sequence_start(v), 2 * v.eta * v.sigma**2)


def lem33(p: Inputs) -> mpmath.mpf:
    """W_inf between learning on D and D' after T epochs, replaced point in batch j0."""
    v = P(p)
    c, per_epoch = contraction(v), batches(v)
    # one 2 eta M/b kick per epoch, contracted by the remaining n/b - j0 - 1 steps of its epoch
    kick = 2 * v.eta * v.M / v.b * power(c, per_epoch - v.j0 - 1)
    total = kick * (1 - power(c, v.T * per_epoch)) / (1 - power(c, per_epoch))
    return min(total, 2 * v.R)


def lem34(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.W0 * power(contraction(v), v.T * batches(v))


def cor37(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return pabi_term(v.alpha, stationary_distance(v), v.K * batches(v), v, v.eta * v.sigma**2)


def cor37_shift(p: Inputs) -> mpmath.mpf:
    v = P(p)
    c = contraction(v)
    return (v.alpha * stationary_distance(v) ** 2 / (2 * v.eta * v.sigma**2)
            * shift_factor(c, v.K * batches(v)))


def cor37_exact_noise(p: Inputs) -> mpmath.mpf:
    v = P(p)  # per-step noise variance 2 eta sigma^2, so the PABI denominator is 2 * 2 eta sigma^2
    return pabi_term(v.alpha, stationary_distance(v), v.K * batches(v), v, 2 * v.eta * v.sigma**2)


def cor37_tight(p: Inputs) -> mpmath.mpf:
    v = P(p)
    c = contraction(v)
    return (v.alpha * stationary_distance(v) ** 2 / (4 * v.eta * v.sigma**2)
            * shift_factor(c, v.K * batches(v)))


def cor38(p: Inputs) -> mpmath.mpf:
    """(1/(alpha-1)) log E_j exp(alpha(alpha-1) Z_j^2 c^{2Kn/b}/(2 eta sigma^2)), j uniform."""
    v = P(p)
    c, per_epoch = contraction(v), batches(v)
    count = int(per_epoch)
    terms = []
    for j0 in range(count):
        z = min(2 * v.eta * v.M / v.b * power(c, per_epoch - j0 - 1)
                / (1 - power(c, per_epoch)), 2 * v.R)
        terms.append(v.alpha * (v.alpha - 1) * z**2 * power(c, 2 * v.K * per_epoch)
                     / (2 * v.eta * v.sigma**2))
    top = max(terms)
    # log-mean-exp relative to the largest term; expm1/log1p keep tiny values (all terms far
    # below the working precision, e.g. K = 1e9) at full relative accuracy
    mean = mpmath.fsum(mpmath.expm1(t - top) for t in terms) / count
    return (top + mpmath.log1p(mean)) / (v.alpha - 1)


def cor310(p: Inputs) -> mpmath.mpf:
    """m = 0: Z = min(2 eta M T/b, 2R) and K n/b non-expansive steps (Lemma 2.6, c = 1)."""
    v = P(p)
    z = min(2 * v.eta * v.M * v.T / v.b, 2 * v.R)
    return v.alpha * z**2 / (2 * v.eta * v.sigma**2) / (v.K * batches(v))


def prop39(p: Inputs) -> mpmath.mpf:
    v = P(p)
    c = contraction(v)
    return v.M * power(c, v.K) * min(2 * v.eta * v.M / ((1 - c) * v.n), 2 * v.R) \
        + 2 * v.L * v.d * v.sigma**2 / v.m


def lemk1(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.L / 2 * v.E0 * mpmath.exp(-v.eta * v.m * v.T) + 2 * v.L * v.d * v.sigma**2 / v.m


def sequential_distance(v: P) -> mpmath.mpf:
    """Theorem 3.11 as the recursion Z1 = Z_B, Z_{s+1} = min(c^{Kn/b} Z_s + Z_B, 2R), unrolled.

    For s beyond a few thousand the recursion has reached its fixed point or the cap to far below
    the working precision; the closed form of the geometric series is then used instead.
    """
    step = power(contraction(v), v.K * batches(v))
    z_b = stationary_distance(v)
    s = int(v.s)
    if s <= 2000:
        z = z_b
        for _ in range(s - 1):
            z = min(step * z + z_b, 2 * v.R)
        return z
    return min(z_b * (1 - power(step, s)) / (1 - step), 2 * v.R)


def thm311(p: Inputs) -> mpmath.mpf:
    return sequential_distance(P(p))


def thm311_ru(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return pabi_term(v.alpha, sequential_distance(v), v.K * batches(v), v, v.eta * v.sigma**2)


def thm311_ru_shift(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return (v.alpha * sequential_distance(v) ** 2 / (2 * v.eta * v.sigma**2)
            * shift_factor(contraction(v), v.K * batches(v)))


def corj1(p: Inputs) -> mpmath.mpf:
    """S replaced points: S kicks of 2 eta M/b per epoch, each contracted at most by c^0."""
    v = P(p)
    c, per_epoch = contraction(v), batches(v)
    series = (1 - power(c, v.T * per_epoch)) / (1 - power(c, per_epoch))
    return min(2 * v.eta * v.M * v.S / v.b * series, 2 * v.R)


def corj1_printed(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return min(2 * v.S * v.M / (v.b * v.m) * (1 - power(contraction(v), v.T)), 2 * v.R)


def propn2(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.epsilon + mpmath.log(1 / v.delta) / (v.alpha - 1)


def alg5_printed(p: Inputs) -> mpmath.mpf:
    v = P(p)
    var = v.eta * v.sigma**2
    c, per_epoch = contraction(v), batches(v)
    z = 2 * v.eta * v.M / (v.b * (1 - power(c, per_epoch)))
    inner = pabi_term(2 * v.alpha, z, v.K * per_epoch, v, var) + 2 * v.R * power(c, v.T * per_epoch)
    return weak_triangle(v.alpha, pabi_term(2 * v.alpha, 2 * v.R, v.T * per_epoch, v, var), inner)


def alg7(p: Inputs) -> mpmath.mpf:
    v = P(p)
    c, per_epoch = contraction(v), batches(v)
    z = 2 * v.eta * v.M / (v.b * (1 - power(c, per_epoch)))
    return pabi_term(v.alpha, z, v.K * per_epoch, v, v.eta * v.sigma**2)


def exact_quadratic(p: Inputs) -> mpmath.mpf:
    """f(x; d) = m/2 |x - d|^2 without projection: the two unlearning laws are Gaussians with a
    common covariance; the Rényi divergence is alpha |mean gap|^2 / (2 variance)."""
    v = P(p)
    c, per_epoch = contraction(v), batches(v)
    # the replaced point shifts the mean by eta M/b... per epoch: stationary gap of the means
    gap = v.eta * v.M / v.b * power(c, per_epoch - v.j0 - 1) / (1 - power(c, per_epoch))
    gap = 2 * gap * power(c, v.K * per_epoch)
    # stationary per-coordinate variance of x <- c x + sqrt(2 eta sigma^2) W
    variance = 2 * v.eta * v.sigma**2 / (1 - c**2)
    return v.alpha * gap**2 / (2 * variance)


def lem26(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.alpha * v.Z**2 * power(v.c, 2 * v.N) / (2 * v.s**2)


def lem26_nonexpansive(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.alpha * v.Z**2 / (2 * v.N * v.s**2)


def lem26_shift(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.alpha * v.Z**2 / (2 * v.s**2) * shift_factor(v.c, v.N)


# -- Langevin unlearning (Appendix P) ---------------------------------------------------------


def lu_thm32(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return mpmath.exp(-2 * v.sigma**2 * v.eta * v.K / (v.alpha * v.C_LSI)) * v.eps0


def lu_thm33(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return (4 * v.alpha * v.S**2 * v.M**2 / (v.m * v.sigma**2 * v.n**2)
            * (1 - mpmath.exp(-v.m * v.eta * v.T)))


def lu_eq98(p: Inputs) -> mpmath.mpf:
    v = P(p)  # Theorem 3.2 with C_LSI = 2 sigma^2/m and Theorem 3.3 at T -> infinity
    return (mpmath.exp(-v.m * v.eta * v.K / v.alpha)
            * 4 * v.alpha * v.S**2 * v.M**2 / (v.m * v.sigma**2 * v.n**2))


def eq99(p: Inputs) -> mpmath.mpf:
    v = P(p)
    c = contraction(v)
    z = 2 * v.eta * v.M / ((1 - c) * v.b)
    return power(c, 2 * v.K * batches(v)) * v.alpha / (2 * v.eta * v.sigma**2) * z**2


def eq100(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return (mpmath.exp(-2 * v.K * v.eta * v.m) * 4 * v.alpha * v.M**2
            / (v.m * v.sigma**2 * v.n**2) / (2 * v.m * v.eta))


# -- Delete-to-Descent (Appendix O) -----------------------------------------------------------


def d2d_gamma(v: P) -> mpmath.mpf:
    return (v.L - v.m) / (v.L + v.m)


def neel_thm9(p: Inputs) -> mpmath.mpf:
    v = P(p)
    g = d2d_gamma(v) ** v.I
    gap = mpmath.sqrt(mpmath.log(1 / v.delta) + v.epsilon) - mpmath.sqrt(mpmath.log(1 / v.delta))
    return 4 * mpmath.sqrt(2) * v.M * g / (v.m * v.n * (1 - g) * gap)


def neel_thm28(p: Inputs) -> mpmath.mpf:
    v = P(p)
    g = d2d_gamma(v) ** v.I
    base = 2 * mpmath.log(2 / v.delta)
    gap = mpmath.sqrt(base + 3 * v.epsilon) - mpmath.sqrt(base + 2 * v.epsilon)
    return 8 * v.M * g / (v.m * v.n * (1 - g) * gap)


def neel_thm28_iterations(p: Inputs) -> mpmath.mpf:
    v = P(p)
    gamma = d2d_gamma(v)
    base = 2 * mpmath.log(2 / v.delta)
    gap = mpmath.sqrt(base + v.epsilon) - mpmath.sqrt(base)
    return mpmath.log(mpmath.sqrt(2 * v.d) / ((1 - gamma) * gap)) / mpmath.log(1 / gamma)


def neel_thm28_request(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.I + mpmath.log(mpmath.log(4 * v.d * v.i / v.delta)) / mpmath.log(1 / d2d_gamma(v))


def neel_learning(p: Inputs) -> mpmath.mpf:
    v = P(p)
    return v.I + mpmath.log(2 * v.R * v.m * v.n / (2 * v.M)) / mpmath.log(1 / d2d_gamma(v))


REFERENCE: dict[str, Callable[[Inputs], mpmath.mpf]] = {
    "chien2024:thm3.2": thm32,
    "chien2024:thm3.2+thm3.11/sequence": thm32_sequence,
    "chien2024:thm3.2/capped": thm32_capped,
    "chien2024:thm3.2/optimal-shift": thm32_shift,
    "chien2024:thm3.2/time-shift": thm32_time_shift,
    "chien2024:thm3.2+thm3.11/sequence/time-shift": thm32_time_shift_sequence,
    "chien2024:thm3.2/time-shift/exact-noise": thm32_time_shift_noise,
    "chien2024:thm3.2+thm3.11/sequence/time-shift/exact-noise": thm32_time_shift_sequence_noise,
    "chien2024:lem3.3": lem33,
    "chien2024:lem3.4": lem34,
    "chien2024:cor3.7": cor37,
    "chien2024:cor3.7/optimal-shift": cor37_shift,
    "chien2024:cor3.7/exact-noise": cor37_exact_noise,
    "chien2024:cor3.7/tight": cor37_tight,
    "chien2024:cor3.8": cor38,
    "chien2024:cor3.10": cor310,
    "chien2024:prop3.9": prop39,
    "chien2024:lemK.1": lemk1,
    "chien2024:thm3.11": thm311,
    "chien2024:thm3.11+cor3.7": thm311_ru,
    "chien2024:thm3.11+cor3.7/optimal-shift": thm311_ru_shift,
    "chien2024:corJ.1": corj1,
    "chien2024:corJ.1/as-printed": corj1_printed,
    "chien2024:propN.2": propn2,
    "chien2024:alg5/as-printed": alg5_printed,
    "chien2024:alg7": alg7,
    "chien2024:exact-quadratic": exact_quadratic,
    "chien2024:lem2.6": lem26,
    "chien2024:lem2.6/nonexpansive": lem26_nonexpansive,
    "chien2024:lem2.6/optimal-shift": lem26_shift,
    "chien2024lu:thm3.2": lu_thm32,
    "chien2024lu:thm3.3": lu_thm33,
    "chien2024lu:eq98": lu_eq98,
    "chien2024:eq99": eq99,
    "chien2024:eq100": eq100,
    "neel2021:thm9": neel_thm9,
    "neel2021:thm28": neel_thm28,
    "neel2021:thm28/iterations": neel_thm28_iterations,
    "neel2021:thm28/request-iterations": neel_thm28_request,
    "neel2021:thm9/learning-iterations": neel_learning,
}
