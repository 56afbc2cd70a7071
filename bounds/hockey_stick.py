"""Special functions of Gaussian hockey-stick divergences, one implementation per precision.

* ``theta_eps(r)`` (:class:`LogTheta`, :func:`log_theta`, :func:`theta`): the hockey-stick
  divergence E_eps(N(0, 1) || N(r, 1)), the exact delta of a Gaussian mechanism at distance r
  (Koloskova et al. 2025, eq. 9; Balle and Wang 2018, Theorem 8);
* :class:`ModelClippingSteps` and :class:`AdaptiveModelClippingSteps`: the least number of steps
  of the hockey-stick contraction delta_{t+1} = theta delta_t of clipped noisy iterations
  (Koloskova et al. 2025, Theorem 4.2, and the adaptive accountant of
  docs/improved-koloskova2025.md);
* :class:`AnalyticGaussianSigma`: the least sigma with theta_eps(sensitivity/sigma) <= delta.

Numerics of theta: theta_eps(r) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r) is computed
in log space from log-CDFs (scipy ``log_ndtr``), choosing between log(theta) and
log1p(-(1 - theta)) with 1 - theta written as a sum of positive terms, so it neither rounds to 1
for large r nor underflows for small r. The mp evaluation raises the working precision by the
number of digits the subtraction cancels; the interval evaluation uses that theta is
nonincreasing in eps and nondecreasing in r (it is the hockey-stick divergence between two
Gaussians, which data processing orders) and encloses the two extreme corners, each computed
at 20 extra digits and widened outward.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from scipy import special

from bounds.errors import BoundError
from bounds.numerics import interval_endpoints, iv_precision
from bounds.special import EXTRA_DIGITS, NumericFunction, by_precision, endpoints, interval_point
from bounds.values import exact_interval

# ----------------------------------------------------------------------------------------------
# theta_eps(r), in log space
# ----------------------------------------------------------------------------------------------

def log_theta_float(eps: Any, dist: Any, scale: Any) -> Any:
    """log theta_eps(dist/scale) in float; scale = 0 means r = inf (theta = 1, log = 0)."""
    eps, dist, scale = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (eps, dist, scale)))
    out = np.zeros(eps.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        r = np.where(scale > 0, dist / np.where(scale > 0, scale, 1.0), np.inf)
        finite = np.isfinite(r) & (r > 0)
        rr = np.where(finite, r, 1.0)
        a = rr / 2 - eps / rr  # theta = Phi(a) - e^eps Phi(b)
        b = -rr / 2 - eps / rr
        log_pa = special.log_ndtr(a)
        log_pb = eps + special.log_ndtr(b)
        # small theta: log Phi(a) + log(1 - e^{log_pb - log_pa}) keeps full relative accuracy
        small = log_pa + np.log(-np.expm1(log_pb - log_pa))
        # theta near 1: 1 - theta = Phi(-a) + e^eps Phi(b), a sum of positive terms
        log_one_minus = np.logaddexp(special.log_ndtr(-a), log_pb)
        large = np.log1p(-np.exp(log_one_minus))
        value = np.where(log_one_minus < math.log(0.5), large, small)
    out = np.where(finite, value, np.where(r == 0, -np.inf, 0.0))
    return out if out.shape else float(out)


def _ncdf_mp(x: Any) -> Any:
    """Phi(x) in mpmath; below -1e100 the Mills-ratio form phi(x)/|x| (relative error < x^-2,
    far below any working precision), since mpmath's erfc overflows a float there."""
    if x < -_FAR_TAIL:
        return mpmath.npdf(x) / -x
    if x > _FAR_TAIL:
        return mpmath.mpf(1) - mpmath.npdf(x) / x
    return mpmath.ncdf(x)


_FAR_TAIL = mpmath.mpf(10) ** 100


def log_theta_mp(eps: Any, dist: Any, scale: Any) -> Any:
    """log theta_eps(dist/scale) at the current mp precision (extra digits against cancellation)."""
    if scale == 0:
        return mpmath.mpf(0)
    if dist == 0:
        return mpmath.mpf("-inf")
    target = mpmath.mp.dps
    extra = EXTRA_DIGITS
    for _ in range(8):
        with mpmath.workdps(target + extra):
            r = mpmath.mpf(dist) / scale
            e = mpmath.mpf(eps)
            pa = _ncdf_mp(r / 2 - e / r)
            pb = mpmath.exp(e) * _ncdf_mp(-r / 2 - e / r)
            one_minus = _ncdf_mp(e / r - r / 2) + pb  # 1 - theta, no cancellation
            if one_minus < mpmath.mpf("0.5"):
                value = mpmath.log1p(-one_minus)
                lost = 0
            else:
                diff = pa - pb
                if diff <= 0:
                    extra *= 2
                    continue
                lost = int(mpmath.ceil(mpmath.log10(pa / diff)))
                value = mpmath.log(diff)
            if lost + 5 < extra:
                return +value
            extra = lost + EXTRA_DIGITS
    raise BoundError("theta_eps(r): could not reach the requested precision")


def log_theta_interval(eps: Any, dist: Any, scale: Any) -> Any:
    """Rigorous interval enclosure of log theta_eps(dist/scale) from its two extreme corners."""
    digits = mpmath.iv.dps
    (e_lo, e_hi), (d_lo, d_hi), (s_lo, s_hi) = endpoints(eps), endpoints(dist), endpoints(scale)
    # theta decreases in eps and in the noise scale, increases in the distance
    lo, _ = interval_point(log_theta_mp, (e_hi, d_lo, s_hi), digits)
    _, hi = interval_point(log_theta_mp, (e_lo, d_hi, s_lo), digits)
    hi = min(hi, mpmath.mpf(0))
    if mpmath.isinf(lo):
        raise BoundError("theta_eps(r): the enclosure reaches r = 0 (theta = 0, log = -inf)")
    return mpmath.iv.mpf([lo, hi])


class LogTheta(NumericFunction):
    """``log theta_eps(dist/scale)`` of eq. (9); ``scale = 0`` (no noise) gives ``log 1 = 0``.

    Arguments ``(eps, dist, scale)``. One implementation per precision, chosen by argument type.
    """

    nargs = 3
    _imp_ = staticmethod(by_precision(log_theta_float, log_theta_mp, log_theta_interval))
    _mp_impl = staticmethod(log_theta_mp)

    def _latex(self, printer: Any) -> str:
        e, d, s = (printer._print(x) for x in self.args)
        return rf"\log \theta_{{{e}}}\left(\frac{{{d}}}{{{s}}}\right)"


def _theta_float(eps: Any, r: Any) -> float:
    """theta_eps(r) rounded to the nearest float from a 30-digit evaluation: the float log-space
    form loses up to ~1e-10 relative where theta is tiny (eq. 9 is an exact value)."""
    if not (r > 0 and math.isfinite(r)):
        return 1.0 if r == math.inf else 0.0
    with mpmath.workdps(30):
        return float(mpmath.exp(log_theta_mp(mpmath.mpf(eps), mpmath.mpf(r), mpmath.mpf(1))))


class Theta(sp.Function):
    """``theta_eps(r)`` of eq. (9), arguments ``(eps, r)``; float values come from mpmath."""

    nargs = 2
    _imp_ = staticmethod(by_precision(
        np.vectorize(_theta_float, otypes=[float]),
        lambda e, r: mpmath.exp(log_theta_mp(e, r, mpmath.mpf(1))),
        lambda e, r: mpmath.iv.exp(log_theta_interval(e, r, mpmath.mpf(1))),
    ))

    def _latex(self, printer: Any) -> str:
        e, r = (printer._print(x) for x in self.args)
        return rf"\theta_{{{e}}}\left({r}\right)"


def log_theta(*, epsilon: Any, r: Any, precision: str = "float", digits: int = 50) -> Any:
    """log theta_epsilon(r) of eq. (9) (Theorem 4.2); ``r = inf`` gives 0.

    ``"interval"`` returns an enclosure from the exact inputs (a float ``r`` is taken at its
    exact binary value); for a Gaussian mechanism prefer :func:`log_gaussian_delta`, which
    never forms r = sensitivity/sigma in floating point.
    """
    if precision == "float":
        return log_theta_float(epsilon, 1.0 if math.isinf(float(r)) else r,
                             0.0 if math.isinf(float(r)) else 1.0)
    if precision == "interval":
        if math.isinf(float(r)):
            return mpmath.iv.mpf(0)
        return log_gaussian_delta(epsilon=epsilon, sensitivity=r, sigma=1, digits=digits)
    with mpmath.workdps(digits):
        if mpmath.isinf(mpmath.mpf(r)):
            return mpmath.mpf(0)
        return log_theta_mp(mpmath.mpf(epsilon), mpmath.mpf(r), mpmath.mpf(1))


def log_gaussian_delta(*, epsilon: Any, sensitivity: Any, sigma: Any, digits: int = 30) -> Any:
    """Interval enclosure of log delta(epsilon) = log theta_eps(sensitivity/sigma) of the Gaussian
    mechanism (Lemma A.3), from the exact inputs (numbers, Fractions or exact strings)."""
    with iv_precision(digits):
        return log_theta_interval(exact_interval(epsilon), exact_interval(sensitivity),
                             exact_interval(sigma))


def log_upper_end(value: Any, digits: int = 30) -> Any:
    """The lower end of an enclosure of log(value) for an exact input: the largest log delta
    a certificate may reach."""
    with iv_precision(digits):
        return interval_endpoints(mpmath.iv.log(exact_interval(value)))[0]


def theta(*, epsilon: Any, r: Any, precision: str = "float", digits: int = 50) -> Any:
    """theta_epsilon(r) of eq. (9): the hockey-stick divergence E_eps(N(0,1) || N(r,1))."""
    value = log_theta(epsilon=epsilon, r=r, precision=precision, digits=digits)
    if precision == "float":
        return np.exp(value)
    with mpmath.workdps(digits):
        return mpmath.exp(value)


# ----------------------------------------------------------------------------------------------
# Model-clipping accountants (Theorem 4.2 and the adaptive one of docs/improved-koloskova2025.md)
# ----------------------------------------------------------------------------------------------


def _initial_log_delta(eps: Any, C0: Any, sigma0: Any, log_fn: Any) -> Any:
    return log_fn(eps, 2 * C0, sigma0)


def model_clipping_log_deltas(*, epsilon: float, C0: float, C2: float, sigma0: float, sigma: float,
                              T: int, adaptive: bool = False) -> list[float]:
    """log delta_t, t = 0..T, of Theorem 4.2's recursion (float, not certified).

    ``adaptive=False``: delta_{t+1} = theta_eps(2 C2/sigma) delta_t (Theorem 4.2). ``True``:
    delta_{t+1} = delta_t theta_{eps_t}(2 C2/sigma) with eps_t = log(1 + (e^eps - 1)/delta_t)
    (docs/improved-koloskova2025.md).
    """
    logs = [float(log_theta_float(epsilon, 2 * C0, sigma0))]
    step = float(log_theta_float(epsilon, 2 * C2, sigma))
    for _ in range(int(T)):
        cur = logs[-1]
        if cur < _FLOAT_LOG_FLOOR:
            # theta <= 1, so delta_t never increases: holding it is an upper bound, and it avoids
            # the inf - inf of theta at eps_t ~ 1e300 in float
            logs.append(cur)
            continue
        if adaptive:
            eps_t = adaptive_epsilon_float(epsilon, cur)
            step = float(log_theta_float(eps_t, 2 * C2, sigma))
        logs.append(cur + step)
    return logs


_FLOAT_LOG_FLOOR = -700.0  # log delta below which float iterations hold delta (safe side)


def adaptive_epsilon_float(eps: float, log_delta: float) -> float:
    """eps_t = log(1 + (e^eps - 1)/delta_t) of the adaptive accountant, from log delta_t."""
    # log(1 + (e^eps - 1)/delta) = logaddexp(0, log(expm1(eps)) - log delta)
    return float(np.logaddexp(0.0, math.log(math.expm1(eps)) - log_delta))


def adaptive_epsilon_mp(eps: Any, log_delta: Any) -> Any:
    """eps_t = log(1 + (e^eps - 1)/delta_t) in mpmath, from log delta_t."""
    return mpmath.log1p(mpmath.expm1(eps) * mpmath.exp(-log_delta))


# Past this many exact steps the adaptive recursion advances in blocks: k steps at once, each as
# long as the block's first step. Later steps are never shorter (log delta_{t+1} is
# nondecreasing in log delta_t, docs/improved-koloskova2025.md), so a block can only overstate
# delta and the count stays on the safe side. A block covers at most _BLOCK_FRACTION of the
# remaining distance to log delta and is halved until its last step differs from its first by
# at most STEP_TOLERANCE (relative), so it overstates the count by about that much. The work
# is at most ADAPTIVE_EVALUATIONS evaluations of theta however large T is (about a second at
# 60 digits); where they run out, the rest is counted at the last step's length, a looser upper
# end.
ADAPTIVE_EXACT_STEPS = 500
_BLOCK_FRACTION = 0.1
STEP_TOLERANCE = 1e-2
ADAPTIVE_EVALUATIONS = 1_500  # then the rest is counted at the current step's length (upper end)


def _adaptive_count(cur: Any, log_target: Any, step_at: Any, rounded: Any,
                    blocks: bool) -> tuple[int, Any, Any]:
    """Steps of the adaptive recursion from log delta_0 = ``cur`` until log delta_t <= log_target.

    Returns ``(t, None, step)`` when the count ended, or ``(t, cur, step)`` when it stopped early
    (the exact phase ended and ``blocks`` is false, no progress at this precision, or the
    evaluation budget ran out), with log delta_t = ``cur`` after ``t`` steps and ``step`` the
    step from there.
    """
    t, evaluations, last = 0, 0, 1
    step = step_at(cur)
    while cur > log_target:
        k = 1
        if t >= ADAPTIVE_EXACT_STEPS:
            if not blocks:
                return t, cur, step
            # at most twice the last accepted block, so that halving stays cheap
            k = max(1, min(2 * last, int(_BLOCK_FRACTION * (cur - log_target) / -step)))
        while True:
            after = rounded(cur + k * step)
            if after >= cur or evaluations >= ADAPTIVE_EVALUATIONS:
                return t, cur, step
            evaluations += 1
            following = step_at(after)
            if k == 1 or abs(following - step) <= STEP_TOLERANCE * abs(step):
                break
            k //= 2
        cur, step, t, last = after, following, t + k, k
    return t, None, step


def _steps_float(eps: float, delta: float, C0: float, C2: float, sigma0: float, sigma: float,
                 adaptive: bool) -> float:
    log_target = math.log(delta)
    cur = float(log_theta_float(eps, 2 * C0, sigma0))
    step = float(log_theta_float(eps, 2 * C2, sigma))
    closed = max(1.0, math.ceil((cur - log_target) / -step)) if step < 0 else math.inf
    if not math.isfinite(closed):
        raise BoundError("model clipping: theta rounds to 1, no finite step count in float")
    if not adaptive:  # eq. (10) rounded up, O(1) even when theta is close to 1
        return float(closed)

    def step_at(log_delta: float) -> float:
        if log_delta < _FLOAT_LOG_FLOOR:  # delta_t ~ 0: eps_t overflows; the count has ended
            return -math.inf
        return float(log_theta_float(adaptive_epsilon_float(eps, log_delta), 2 * C2, sigma))

    t, stopped, step = _adaptive_count(cur, log_target, step_at, lambda x: x, blocks=True)
    if stopped is not None:  # later steps are never shorter than this one
        t += math.ceil((stopped - log_target) / -step)
    # the adaptive count never exceeds Theorem 4.2's
    return float(min(max(t, 1), closed))


def _steps_mp(eps: Any, delta: Any, C0: Any, C2: Any, sigma0: Any, sigma: Any, adaptive: bool,
              direction: int = 0) -> Any:
    """Least T >= 1 with delta_T <= delta. ``direction`` +1 rounds every log delta_t up (safe
    side: never fewer steps than the exact recursion), -1 down, 0 nearest. The adaptive recursion
    is counted step by step for ``ADAPTIVE_EXACT_STEPS`` steps; past that, +1 and 0 continue in
    blocks (an upper end, within about ``STEP_TOLERANCE`` of the count) and -1 returns a lower
    end (every later step is at most as long as the step at delta_t = delta). Where blocks stop
    (no progress at this precision, or ``ADAPTIVE_EVALUATIONS`` spent) the rest is counted at
    the last step's length, an upper end."""
    slack = mpmath.mpf(10) ** (-(mpmath.mp.dps - 5))
    log_target = mpmath.log(delta)

    def rounded(x: Any) -> Any:
        return x + direction * (abs(x) * slack + slack)

    cur = rounded(log_theta_mp(eps, 2 * C0, sigma0))
    step = log_theta_mp(eps, 2 * C2, sigma)
    if step >= 0:
        raise BoundError("model clipping: theta = 1, no finite step count")
    ratio = (cur - log_target) / -step
    closed = max(mpmath.mpf(1), mpmath.ceil(ratio + direction * (abs(ratio) * slack + slack)))
    if not adaptive:  # eq. (10) rounded up: O(1) even when theta is close to 1
        return closed

    def step_at(log_delta: Any) -> Any:
        # g(d) = d theta_{log(1 + (e^eps - 1)/d)}(r) is nondecreasing in d, so an upper
        # bound on delta_t yields an upper bound on delta_{t+1}
        return log_theta_mp(adaptive_epsilon_mp(eps, log_delta), 2 * C2, sigma)

    t, stopped, step = _adaptive_count(cur, log_target, step_at, rounded, blocks=direction >= 0)
    if stopped is None:  # the adaptive count never exceeds Theorem 4.2's
        return min(mpmath.mpf(max(t, 1)), closed) if direction >= 0 else mpmath.mpf(max(t, 1))
    if direction >= 0:  # later steps are never shorter than this one
        rest = (stopped - log_target) / -step
        return min(closed, mpmath.mpf(t) + mpmath.ceil(rest + abs(rest) * slack + slack))
    # steps lengthen as delta_t falls, and delta_t > delta until the count ends
    longest = step_at(log_target)
    longest -= abs(longest) * slack + slack
    rest = (stopped - log_target) / -longest
    return mpmath.mpf(t) + max(1, mpmath.ceil(rest - (abs(rest) * slack + slack)))


def _steps_iv(adaptive: bool) -> Any:
    def run(eps: Any, delta: Any, C0: Any, C2: Any, sigma0: Any, sigma: Any) -> Any:
        digits = mpmath.iv.dps
        ends = [endpoints(x) for x in (eps, delta, C0, C2, sigma0, sigma)]
        # the count decreases in eps, delta, sigma0, sigma and increases in C0, C2
        worst = [ends[0][0], ends[1][0], ends[2][1], ends[3][1], ends[4][0], ends[5][0]]
        best = [ends[0][1], ends[1][1], ends[2][0], ends[3][0], ends[4][1], ends[5][1]]
        with mpmath.workdps(digits + EXTRA_DIGITS):
            hi = _steps_mp(*worst, adaptive, direction=+1)
            lo = _steps_mp(*best, adaptive, direction=-1)
        return mpmath.iv.mpf([lo, hi])

    return run


class ModelClippingSteps(NumericFunction):
    """Least T >= 1 with theta_eps(2C2/sigma)^T theta_eps(2C0/sigma0) <= delta (Theorem 4.2).

    Arguments ``(eps, delta, C0, C2, sigma0, sigma)``. Integer-valued: eq. (10) rounded up.
    """

    nargs = 6
    _imp_ = staticmethod(by_precision(
        np.vectorize(lambda *a: _steps_float(*a, adaptive=False)),
        lambda *a: _steps_mp(*a, adaptive=False, direction=+1),
        _steps_iv(adaptive=False),
    ))
    _mp_impl = staticmethod(lambda *a: _steps_mp(*a, adaptive=False, direction=+1))


class AdaptiveModelClippingSteps(NumericFunction):
    """Least T >= 1 of the adaptive recursion delta_{t+1} = delta_t theta_{eps_t}(2C2/sigma),
    eps_t = log(1 + (e^eps - 1)/delta_t), delta_0 = theta_eps(2C0/sigma0).

    Arguments ``(eps, delta, C0, C2, sigma0, sigma)``; see docs/improved-koloskova2025.md.
    """

    nargs = 6
    _imp_ = staticmethod(by_precision(
        np.vectorize(lambda *a: _steps_float(*a, adaptive=True)),
        lambda *a: _steps_mp(*a, adaptive=True, direction=+1),
        _steps_iv(adaptive=True),
    ))
    _mp_impl = staticmethod(lambda *a: _steps_mp(*a, adaptive=True, direction=+1))

    def _latex(self, printer: Any) -> str:
        args = ", ".join(printer._print(x) for x in self.args)
        return rf"T_{{\mathrm{{adaptive}}}}\left({args}\right)"


# ----------------------------------------------------------------------------------------------
# Exact (analytic) Gaussian mechanism: the least sigma with theta_eps(sensitivity/sigma) <= delta
# ----------------------------------------------------------------------------------------------


def _analytic_sigma_float(eps: float, delta: float, sens: float) -> float:
    log_target = math.log(delta)

    def ok(log_s: float) -> bool:
        return float(log_theta_float(eps, sens, math.exp(log_s))) <= log_target

    lo, hi = math.log(sens) - 1.0, math.log(sens) + 1.0
    while ok(lo):
        lo -= 1.0
    while not ok(hi):
        hi += 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    # A noise level rounds up: the float log theta is accurate to ~1e-12 only, so the answer is
    # re-checked at 30 digits from the exact binary inputs and raised until it passes.
    sigma = math.exp(hi)
    with mpmath.workdps(30):
        target = mpmath.log(mpmath.mpf(delta))
        e, d = mpmath.mpf(eps), mpmath.mpf(sens)
        for _ in range(10_000):
            if log_theta_mp(e, d, mpmath.mpf(sigma)) <= target:
                return sigma
            sigma = math.nextafter(sigma * (1 + 2.0**-44), math.inf)
    raise BoundError("analytic Gaussian sigma: the 30-digit re-check failed")  # pragma: no cover


def _analytic_sigma_mp(eps: Any, delta: Any, sens: Any, direction: int = +1) -> Any:
    """Bisection in mp; ``direction`` +1 returns a sigma on the safe (large) side."""
    if mpmath.mp.dps < 20:  # the margin 10^-(dps - 8) would exceed 1 and no sigma pass
        with mpmath.workdps(20):
            return _analytic_sigma_mp(eps, delta, sens, direction)
    log_target = mpmath.log(delta)
    margin = mpmath.mpf(10) ** (-(mpmath.mp.dps - 8))

    def ok(s: Any) -> bool:
        value = log_theta_mp(eps, sens, s)
        return value + margin * (abs(value) + 1) <= log_target if direction > 0 else value <= log_target

    lo, hi = sens / 4, sens * 4
    while ok(lo):
        lo /= 4
    while not ok(hi):
        hi *= 4
    tol = mpmath.mpf(10) ** (-(mpmath.mp.dps - 10))
    while hi - lo > tol * hi:
        mid = (lo + hi) / 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi if direction > 0 else lo


def _analytic_sigma_iv(eps: Any, delta: Any, sens: Any) -> Any:
    digits = mpmath.iv.dps
    (e_lo, e_hi), (d_lo, d_hi), (s_lo, s_hi) = endpoints(eps), endpoints(delta), endpoints(sens)
    with mpmath.workdps(digits + EXTRA_DIGITS):
        hi = _analytic_sigma_mp(e_lo, d_lo, s_hi, direction=+1)
        lo = _analytic_sigma_mp(e_hi, d_hi, s_lo, direction=-1)
    return mpmath.iv.mpf([lo, hi])


class AnalyticGaussianSigma(NumericFunction):
    """Least sigma with theta_eps(sensitivity/sigma) <= delta (exact Gaussian mechanism,
    Balle and Wang 2018, Theorem 8). Arguments ``(eps, delta, sensitivity)``."""

    nargs = 3
    _imp_ = staticmethod(by_precision(
        np.vectorize(_analytic_sigma_float),
        lambda *a: _analytic_sigma_mp(*a, direction=+1),
        _analytic_sigma_iv,
    ))
    _mp_impl = staticmethod(lambda *a: _analytic_sigma_mp(*a, direction=+1))

    def _latex(self, printer: Any) -> str:
        e, d, s = (printer._print(x) for x in self.args)
        return rf"\sigma_{{\mathrm{{aG}}}}\left({e}, {d}, {s}\right)"
