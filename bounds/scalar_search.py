"""One-dimensional float searches: Brent's bracketed root and Brent's bounded minimum.

Both follow, step for step and in the same floating-point operations, the versions in SciPy
(``scipy.optimize.brentq``, from R. P. Brent, *Algorithms for Minimization without
Derivatives*, 1973, chapter 4; ``scipy.optimize.minimize_scalar(method="bounded")``, Brent's
``fmin``, chapter 5), so a search gives the same float as SciPy's. They live here because
importing ``scipy.optimize`` pulls in ``scipy.linalg``, ``scipy.sparse`` and ``numpy.testing``
(about 23 MB resident), which an audit process that also holds torch cannot afford.

Neither search is certified: callers re-check their answer (the calibration re-evaluates the
safe side in interval arithmetic, the conversion re-evaluates the optimal order).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["BoundedMinimum", "bounded_minimum", "brent_root"]

_EPS = 2.220446049250313e-16
_RTOL_MIN = 4 * _EPS
_GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))
_SQRT_EPS = math.sqrt(2.2e-16)  # SciPy's constant (not the exact machine epsilon)


def _value(f: Callable[[float], float], x: float) -> float:
    fx = float(f(x))
    if math.isnan(fx):
        raise ValueError(f"the function value at x={x} is NaN; the root search cannot continue")
    return fx


def brent_root(f: Callable[[float], float], a: float, b: float, *, xtol: float = 2e-12,
               rtol: float = _RTOL_MIN, maxiter: int = 100) -> float:
    """A root of ``f`` in [a, b] where f(a) and f(b) differ in sign (Brent 1973, ch. 4).

    Converges when the bracket's half-width is below (xtol + rtol |x|) / 2. Raises ValueError
    when the signs agree or f returns NaN, RuntimeError after ``maxiter`` steps.
    """
    if not xtol > 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if not rtol >= _RTOL_MIN:
        raise ValueError(f"rtol too small ({rtol:g} < {_RTOL_MIN:g})")
    xpre, xcur = float(a), float(b)
    fpre, fcur = _value(f, xpre), _value(f, xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    xblk = fblk = spre = scur = 0.0
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # secant step
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # inverse quadratic interpolation
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry  # a good short step
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        if abs(scur) > delta:
            xcur += scur
        else:
            xcur += delta if sbis > 0 else -delta
        fcur = _value(f, xcur)
    raise RuntimeError(f"the root search did not converge after {maxiter} steps (at x={xcur})")


@dataclass(frozen=True)
class BoundedMinimum:
    """Where :func:`bounded_minimum` stopped: the best point ``x``, its value ``fun``, the
    number of evaluations, and whether it met the tolerance (False: ``maxiter`` or a NaN)."""

    x: float
    fun: float
    evaluations: int
    converged: bool


def _sign(x: float) -> float:
    # numpy.sign on a float: -1, 0 or 1, NaN for NaN
    return x if math.isnan(x) else float((x > 0) - (x < 0))


def bounded_minimum(f: Callable[[float], float], lo: float, hi: float, *, xatol: float = 1e-5,
                    maxiter: int = 500) -> BoundedMinimum:
    """A local minimum of ``f`` on [lo, hi] by golden sections and parabolic steps (Brent
    1973, ch. 5, as ``scipy.optimize.minimize_scalar(method="bounded")``)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("the bounds of a bounded minimum must be finite")
    if lo > hi:
        raise ValueError("the lower bound exceeds the upper bound")
    a, b = float(lo), float(hi)
    fulc = a + _GOLDEN * (b - a)
    nfc = xf = fulc
    rat = e = 0.0
    fx = float(f(xf))
    evaluations = 1
    fu = math.inf
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    converged = True
    while abs(xf - xm) > tol2 - 0.5 * (b - a):
        golden = True
        if abs(e) > tol1:  # try a parabola through the three best points
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r, e = e, rat
            if abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf):
                rat = (p + 0.0) / q
                x = xf + rat
                if (x - a) < tol2 or (b - x) < tol2:
                    rat = tol1 * (_sign(xm - xf) + ((xm - xf) == 0))
            else:
                golden = True
        if golden:
            e = (a - xf) if xf >= xm else (b - xf)
            rat = _GOLDEN * e
        # numpy.maximum's rule: NaN when either is NaN
        step = math.nan if math.isnan(rat) or math.isnan(tol1) else max(abs(rat), tol1)
        x = xf + (_sign(rat) + (rat == 0)) * step
        fu = float(f(x))
        evaluations += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if fu <= fnfc or nfc == xf:
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = _SQRT_EPS * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if evaluations >= maxiter:
            converged = False
            break
    if math.isnan(xf) or math.isnan(fx) or math.isnan(fu):
        converged = False
    return BoundedMinimum(x=xf, fun=fx, evaluations=evaluations, converged=converged)
