"""The function tables handed to ``sympy.lambdify`` for the float, mp and interval evaluators."""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from bounds.numerics import (
    _log_ratio_float,
    _log_ratio_iv,
    _log_ratio_mp,
    _max2,
    _min2,
    _one_minus_pow1p_float,
    _one_minus_pow1p_mp,
    _pow1p_float,
    _pow1p_iv,
    _pow1p_mp,
    _reduce,
    interval_endpoints,
    iv_expm1,
    iv_log1p,
)
from bounds.special import _glme_float, _glme_generic

_NUMPY_FUNCS: dict[str, Any] = {
    "Pow1p": _pow1p_float,
    "LogRatio": _log_ratio_float,
    "OneMinusPow1p": _one_minus_pow1p_float,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "GeometricLogMeanExp": _glme_float,
}
_MP_FUNCS: dict[str, Any] = {
    "Pow1p": _pow1p_mp,
    "LogRatio": _log_ratio_mp,
    "OneMinusPow1p": _one_minus_pow1p_mp,
    "log1p": mpmath.log1p,
    "expm1": mpmath.expm1,
    "Min": _reduce(lambda x, y: _min2(mpmath.mp, x, y)),
    "Max": _reduce(lambda x, y: _max2(mpmath.mp, x, y)),
    "GeometricLogMeanExp": lambda *a: _glme_generic(mpmath.mp, *a),
}
_IV_FUNCS: dict[str, Any] = {
    "Pow1p": lambda y, x: _pow1p_iv(y, x),
    "LogRatio": _log_ratio_iv,
    "OneMinusPow1p": lambda y, x: 1 - _pow1p_iv(y, x),
    "exp": mpmath.iv.exp,
    "log": mpmath.iv.log,
    "sqrt": mpmath.iv.sqrt,
    "log1p": iv_log1p,
    "expm1": iv_expm1,
    "Min": _reduce(lambda x, y: _min2(mpmath.iv, x, y)),
    "Max": _reduce(lambda x, y: _max2(mpmath.iv, x, y)),
    "floor": lambda x: mpmath.iv.mpf([mpmath.floor(e) for e in interval_endpoints(x)]),
    "ceiling": lambda x: mpmath.iv.mpf([mpmath.ceil(e) for e in interval_endpoints(x)]),
    "pi": mpmath.iv.pi,
    "E": mpmath.iv.e,
    "GeometricLogMeanExp": lambda *a: _glme_generic(mpmath.iv, *a),
    "ExactRational": lambda p, q: mpmath.iv.mpf(int(p)) / int(q),
}
