"""bounds.scalar_search: the same floats as SciPy's brentq and bounded minimize_scalar, and a
bounds package that never imports scipy.optimize."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import optimize

from bounds.scalar_search import bounded_minimum, brent_root

ROOT = Path(__file__).resolve().parents[2]


def _function(kind: int, c: list[float]):
    def f(x: float) -> float:
        if kind == 0:
            return c[0] * x**3 + c[1] * x**2 + c[2] * x + c[3]
        if kind == 1:
            return math.exp(c[0] * x) - abs(c[1]) - 0.1
        if kind == 2:
            return math.tanh(x - c[0]) * (1 + c[1] ** 2) + 0.01 * c[2]
        return math.log(max((x - c[0]) ** 2 + 1e-3, 1e-300)) - c[1]
    return f


def _cases(seed: int, count: int):
    rng = random.Random(seed)
    for index in range(count):
        c = [rng.uniform(-3, 3) for _ in range(4)]
        a, b = sorted((rng.uniform(-10, 10), rng.uniform(-10, 10)))
        yield index % 4, c, a, b, rng


def test_brent_root_gives_scipy_brentq_float_for_float():
    found = 0
    for kind, c, a, b, rng in _cases(1, 800):
        f = _function(kind, c)
        xtol = 10 ** rng.uniform(-14, -2)
        rtol = 4 * 2.220446049250313e-16 * rng.choice([1, 10, 1e6])
        try:
            expected = optimize.brentq(f, a, b, xtol=xtol, rtol=rtol)
        except ValueError:
            with pytest.raises(ValueError, match="different signs"):
                brent_root(f, a, b, xtol=xtol, rtol=rtol)
            continue
        found += 1
        assert brent_root(f, a, b, xtol=xtol, rtol=rtol) == expected
    assert found > 200  # the cases exercise the search, not only its refusal


def test_bounded_minimum_gives_scipy_bounded_minimize_scalar_float_for_float():
    for kind, c, a, b, rng in _cases(2, 800):
        f = _function(kind, c)

        def g(x, f=f, kind=kind, c=c):
            return f(x) ** 2 if kind != 1 else (x - c[0]) ** 4 + c[1] * math.sin(3 * x)

        xatol = 10 ** rng.uniform(-11, -3)
        expected = optimize.minimize_scalar(g, bounds=(a, b), method="bounded",
                                            options={"xatol": xatol})
        got = bounded_minimum(g, a, b, xatol=xatol)
        assert (got.x, got.fun, got.evaluations, got.converged) == \
            (float(expected.x), float(expected.fun), expected.nfev, expected.success)


def test_brent_root_finds_a_known_root_to_its_tolerance():
    root = brent_root(lambda x: x * x - 2.0, 0.0, 2.0, xtol=1e-14)
    assert abs(root - math.sqrt(2.0)) <= 1e-14


def test_brent_root_refuses_nan_and_bad_tolerances():
    with pytest.raises(ValueError, match="NaN"):
        brent_root(lambda x: math.nan if x > 0.5 else -1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="xtol"):
        brent_root(lambda x: x, -1.0, 1.0, xtol=0.0)
    with pytest.raises(ValueError, match="rtol"):
        brent_root(lambda x: x, -1.0, 1.0, rtol=1e-17)
    with pytest.raises(RuntimeError, match="did not converge"):
        brent_root(lambda x: x**3 - 0.3, 0.0, 1.0, xtol=1e-300, maxiter=3)


def test_bounded_minimum_refuses_inverted_or_infinite_bounds():
    with pytest.raises(ValueError, match="exceeds"):
        bounded_minimum(lambda x: x * x, 1.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        bounded_minimum(lambda x: x * x, 0.0, math.inf)


def test_bounds_calibration_and_conversion_do_not_import_scipy_optimize():
    probe = ("import json, sys; import bounds, bounds.calibration, bounds.conversions; "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('scipy.optimize'))))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == []
