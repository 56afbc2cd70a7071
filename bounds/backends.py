"""The function tables handed to ``sympy.lambdify`` for the float, mp and interval evaluators."""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from bounds.numerics import (
    interval_endpoints,
    iv_expm1,
    iv_log1p,
    log_ratio_float,
    log_ratio_iv,
    log_ratio_mp,
    max2,
    min2,
    one_minus_pow1p_float,
    one_minus_pow1p_mp,
    pairwise_reduce,
    pow1p_float,
    pow1p_iv,
    pow1p_mp,
)
from bounds.special import glme_float, glme_generic

NUMPY_FUNCS: dict[str, Any] = {
    "Pow1p": pow1p_float,
    "LogRatio": log_ratio_float,
    "OneMinusPow1p": one_minus_pow1p_float,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "GeometricLogMeanExp": glme_float,
}
MP_FUNCS: dict[str, Any] = {
    "Pow1p": pow1p_mp,
    "LogRatio": log_ratio_mp,
    "OneMinusPow1p": one_minus_pow1p_mp,
    "log1p": mpmath.log1p,
    "expm1": mpmath.expm1,
    "Min": pairwise_reduce(lambda x, y: min2(mpmath.mp, x, y)),
    "Max": pairwise_reduce(lambda x, y: max2(mpmath.mp, x, y)),
    "GeometricLogMeanExp": lambda *a: glme_generic(mpmath.mp, *a),
}
IV_FUNCS: dict[str, Any] = {
    "Pow1p": lambda y, x: pow1p_iv(y, x),
    "LogRatio": log_ratio_iv,
    "OneMinusPow1p": lambda y, x: 1 - pow1p_iv(y, x),
    "exp": mpmath.iv.exp,
    "log": mpmath.iv.log,
    "sqrt": mpmath.iv.sqrt,
    "log1p": iv_log1p,
    "expm1": iv_expm1,
    "Min": pairwise_reduce(lambda x, y: min2(mpmath.iv, x, y)),
    "Max": pairwise_reduce(lambda x, y: max2(mpmath.iv, x, y)),
    "floor": lambda x: mpmath.iv.mpf([mpmath.floor(e) for e in interval_endpoints(x)]),
    "ceiling": lambda x: mpmath.iv.mpf([mpmath.ceil(e) for e in interval_endpoints(x)]),
    "pi": mpmath.iv.pi,
    "E": mpmath.iv.e,
    "GeometricLogMeanExp": lambda *a: glme_generic(mpmath.iv, *a),
    "ExactRational": lambda p, q: mpmath.iv.mpf(int(p)) / int(q),
}
