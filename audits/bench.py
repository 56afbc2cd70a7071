"""Benchmarks behind ``unlearn bench``: rates measured side by side in one run, reported as ratios."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import bounds
from bounds.engine import get_reproduction

THM32_POINT = {
    "alpha": 10.0, "sigma": 0.05, "eta": 3.8, "m": 0.011264, "L": 0.261264, "M": 1.0,
    "n": 11264, "b": 128, "T": 20, "K": 1, "R": 100.0,
}


def _rate(fn: Callable[[], Any], count: int, *, min_seconds: float = 0.3) -> tuple[float, float]:
    """Calls of ``fn`` (each doing ``count`` evaluations) per second, repeated for min_seconds."""
    fn()  # warm-up: compilation and caches
    reps, start = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return reps * count / elapsed, elapsed / reps


def bounds_benchmark(*, points: int = 1_000_000, loop_points: int = 20_000, seed: int = 0) -> dict[str, Any]:
    """Evaluation rates of Chien et al. Theorem 3.2 and the time of the Table 3 reproduction.

    * vectorised float: one checked ``evaluate`` call over ``points`` random (sigma, K, T);
    * scalar loop: the same compiled formula called once per point in a Python loop;
    * mp (50 digits) and interval (50 digits): checked ``evaluate`` per point;
    * Table 3: the 24 calibrations, each certified in interval arithmetic.
    """
    bound = bounds.get("chien2024:thm3.2")
    rng = np.random.default_rng(seed)
    sigma = rng.uniform(0.01, 2.0, points)
    k_epochs = rng.integers(1, 50, points).astype(float)
    burn_in = rng.integers(1, 100, points).astype(float)
    arrays = {**THM32_POINT, "sigma": sigma, "K": k_epochs, "T": burn_in}

    def vectorised() -> Any:
        return bound.evaluate(precision="float", **arrays).value

    float_rate, _ = _rate(vectorised, points)

    fn = bound.float_function
    names = bound.parameter_names
    rows = [
        [float(sigma[i]) if n == "sigma" else float(k_epochs[i]) if n == "K"
         else float(burn_in[i]) if n == "T" else float(THM32_POINT[n]) for n in names]
        for i in range(loop_points)
    ]

    def scalar_loop() -> None:
        for row in rows:
            fn(*row)

    loop_rate, _ = _rate(scalar_loop, loop_points)
    vec = vectorised()[:loop_points]
    looped = np.array([fn(*row) for row in rows])
    agree = bool(np.allclose(vec, looped, rtol=1e-12, atol=0))

    few = [{**THM32_POINT, "sigma": float(sigma[i]), "K": int(k_epochs[i]), "T": int(burn_in[i])}
           for i in range(50)]

    def mp_eval() -> None:
        for p in few:
            bound.evaluate(precision="mp", digits=50, **p)

    def iv_eval() -> None:
        for p in few:
            bound.evaluate(precision="interval", digits=50, **p)

    mp_rate, _ = _rate(mp_eval, len(few))
    iv_rate, _ = _rate(iv_eval, len(few))

    repro = get_reproduction("chien2024:table3")
    start = time.perf_counter()
    result = repro.run()
    table_seconds = time.perf_counter() - start
    return {
        "benchmark": "bounds",
        "bound": bound.id,
        "float_vectorised_evals_per_s": float_rate,
        "float_scalar_loop_evals_per_s": loop_rate,
        "vectorised_over_loop": float_rate / loop_rate,
        "vectorised_matches_loop": agree,
        "mp50_evals_per_s": mp_rate,
        "interval50_evals_per_s": iv_rate,
        "table3_seconds": table_seconds,
        "table3_matches": f"{result['matches']}/{result['total']}",
        "points": points,
        "loop_points": loop_points,
        "notes": [
            "vectorised rate includes domain and precondition checks; the scalar loop calls the "
            "compiled formula without checks, so the ratio understates the speed-up",
            "mp and interval rates include input resolution and precondition checks per call",
        ],
    }
