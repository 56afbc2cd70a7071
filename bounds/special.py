"""Special functions of the declarations, with one implementation per backend.

:class:`GeometricLogMeanExp` is the batch-position average of Chien et al. 2024, Corollary 3.8.
:class:`NumericFunction` is the base of special functions given by one numeric implementation
per precision (float, mp, interval), chosen by :func:`by_precision`; :func:`interval_point`
encloses an mp evaluation at extra digits (the hockey-stick functions of
:mod:`bounds.hockey_stick` are built this way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np
import sympy as sp

from bounds.numerics import interval_endpoints, iv_expm1, iv_log1p, midpoint, min2

EXTRA_DIGITS = 20  # digits an mp evaluation adds before it is rounded outward


class GeometricLogMeanExp(sp.Function):
    """``log( (1/P) * sum_{k=0}^{P-1} exp(q * min(r**k * A, cap)**2) )``.

    The log-mean-exp over the batch positions of the replaced point that appears when the
    Rényi bound is averaged over a uniformly random cyclic batch order (Chien et al. 2024,
    Corollary 3.8). Evaluated with a max-shift so that large exponents cannot overflow.
    Arguments: ``(q, A, r, P, cap)``.
    """

    nargs = 5

    def _latex(self, printer: Any) -> str:
        q, a, r, p, cap = (printer._print(x) for x in self.args)
        return (
            rf"\log\left(\frac{{1}}{{{p}}}\sum_{{k=0}}^{{{p}-1}} "
            rf"e^{{{q}\,\min\left(\left({r}\right)^{{k}} {a},\ {cap}\right)^{{2}}}}\right)"
        )

    def _sympystr(self, printer: Any) -> str:
        q, a, r, p, cap = (printer._print(x) for x in self.args)
        return f"log((1/({p}))*Sum(exp({q}*min(({r})**k*{a}, {cap})**2), (k, 0, {p} - 1)))"


def glme_float(q: Any, a: Any, r: Any, p: Any, cap: Any) -> Any:
    """GeometricLogMeanExp in numpy, element by element over broadcast inputs."""
    q, a, r, p, cap = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, a, r, p, cap)))
    # r is the contraction factor c >= 0; at c = 0 the float c can be a hair below 0 (see
    # bounds.numerics._snap_float), which is snapped to 0.
    r = np.where((r < 0) & (r >= -(2.0**-40)), 0.0, r)
    out = np.empty(q.shape)
    for idx in np.ndindex(q.shape):
        k = np.arange(int(p[idx]), dtype=float)
        with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
            powers = np.where(k == 0, 1.0, np.exp(k * np.log(r[idx])))
            z = np.minimum(powers * a[idx], cap[idx])
        terms = q[idx] * z * z
        # The k = 0 term is the largest (r <= 1, q >= 0): log-mean-exp as
        # shift + log1p(mean(expm1(t - shift))) keeps full relative accuracy for small values.
        out[idx] = terms[0] + np.log1p(np.mean(np.expm1(terms - terms[0])))
    return out if out.shape else float(out)


def glme_generic(ctx: Any, q: Any, a: Any, r: Any, p: Any, cap: Any) -> Any:
    """GeometricLogMeanExp in the mpmath context ``ctx`` (mp or rigorous interval)."""
    count = int(mpmath.nint(midpoint(p)))
    terms = []
    rk = ctx.mpf(1)
    for _ in range(count):
        z = min2(ctx, rk * a, cap)
        terms.append(q * z * z)
        rk = rk * r
    shift = terms[0]  # k = 0 gives the largest term: r <= 1 and q >= 0
    if ctx is mpmath.iv:
        # The same log1p/expm1 form with series enclosures keeps the interval tight relative to
        # the value, also when the value is tiny (c near 0).
        total = ctx.mpf(0)
        for t in terms:
            total += iv_expm1(t - shift)
        return shift + iv_log1p(total / count)
    mean = ctx.fsum(ctx.expm1(t - shift) for t in terms) / count
    return shift + ctx.log1p(mean)


def by_precision(float_fn: Any, mp_fn: Any, iv_fn: Any) -> Any:
    """One function that calls the interval, mp or float implementation by its arguments' type."""
    def apply(*args: Any) -> Any:
        if any(type(a).__name__ == "ivmpf" for a in args):
            return iv_fn(*args)
        if any(isinstance(a, mpmath.mpf) for a in args):
            return mp_fn(*args)
        return float_fn(*args)

    return apply


class NumericFunction(sp.Function):
    """A special function with one implementation per precision (``_imp_``); sympy's ``evalf``
    uses the mp implementation at the requested precision."""

    _mp_impl: Any = None

    def _eval_evalf(self, prec: int) -> Any:
        if not all(arg.is_number for arg in self.args):
            return None
        with mpmath.workprec(prec + 20):
            args = [mpmath.mpf(sp.Float(arg.evalf(prec + 20), prec + 20)._mpf_) for arg in self.args]
            value = type(self)._mp_impl(*args)
        return sp.Float(value, dps=mpmath.libmp.prec_to_dps(prec))


def interval_point(fn: Any, args: Sequence[Any], digits: int) -> tuple[Any, Any]:
    """Outward enclosure [lo, hi] of fn at a point, from an evaluation at ``digits`` + 20 digits."""
    with mpmath.workdps(digits + EXTRA_DIGITS):
        value = fn(*args)
        if mpmath.isinf(value):
            return value, value
        # Relative slack only: an absolute floor would swallow values such as log theta ~ -1e-2180
        # (1 - theta is a Gaussian tail far below any fixed floor), whose enclosure must not
        # reach 0. log_theta_mp returns 0 only where theta = 1 exactly (no noise).
        slack = abs(value) * mpmath.mpf(10) ** (-(digits + 5))
        return value - slack, value + slack


def endpoints(x: Any) -> tuple[Any, Any]:
    """(lower, upper) of an mpmath interval; (x, x) for a number."""
    if type(x).__name__ == "ivmpf":
        return interval_endpoints(x)
    v = mpmath.mpf(x)
    return v, v
