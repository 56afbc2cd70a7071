"""Audit-power measurements on the Gaussian ground truth (behind ``unlearn bench power``).

Every measurement draws attack scores directly: world P ~ N(mu, 1) and world Q ~ N(0, 1), the
law of the optimal score of a Gaussian mechanism with sensitivity 1 and noise sigma = 1 / mu
(Neyman-Pearson: the likelihood ratio is monotone in the score). Exact truths are closed forms:
D_alpha = alpha mu^2 / 2 (Mironov 2017, Proposition 7) and the hockey-stick curve of Balle and
Wang 2018, Theorem 8 (:func:`empirical.statistics.gaussian_delta`). A mechanism certified at
sigma_cert = 1 that secretly uses sigma_cert / factor has mu = factor.

All functions return plain dicts and lists (JSON-ready); rates are fractions of ``runs``.
Nothing here imports :mod:`bounds` (the empirical floor); the certified curves of the Gaussian
mechanism are written out in closed form.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from empirical.divergences import estimators as divergence
from empirical.divergences.renyi_tests import renyi_audit
from empirical.statistics import epsilon_lower_bound
from empirical.statistics import gaussian_delta as _gaussian_delta
from empirical.statistics.gdp import gaussian_epsilon
from empirical.statistics.pilot import pilot_epsilon_lower_bound, single_threshold_limit
from empirical.statistics.pilot_regions import pilot_regions_epsilon_lower_bound

__all__ = ["DETECTION_FACTORS", "PARTS", "detection_power", "epsilon_bound_power",
           "estimator_coverage", "peer_comparison", "peer_epsilon", "power_benchmark"]


PARTS: tuple[str, ...] = ("epsilon", "detection", "coverage", "peer")


def _scores(rng: np.random.Generator, mu: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


def epsilon_bound_power(
    *,
    mus: Sequence[float] = (0.5, 1.0, 2.0),
    deltas: Sequence[float] = (1e-5, 1 / 256),
    n: int = 10_000,
    runs: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """(epsilon, delta) lower bounds against the exact epsilon and the single-threshold limit.

    For each (mu, delta): the exact epsilon, the limit (:func:`single_threshold_limit`), and per
    method the mean lower bound, its ratios to exact and limit, and the coverage failure rate
    (fraction of runs whose "lower bound" exceeds the exact epsilon; nominal <= alpha).
    ``default`` is :func:`pilot_regions_epsilon_lower_bound` (the audits' default statistic, both
    orientations in one test); ``pilot`` is :func:`pilot_epsilon_lower_bound`; ``current`` is
    :func:`empirical.statistics.epsilon_lower_bound` (Bonferroni over the Pareto thresholds, one
    orientation); ``peer`` is jax-privacy's Clopper-Pearson auditor (:func:`peer_epsilon`), left
    out when jax-privacy is not installed.
    """
    rows = []
    for mu in mus:
        for delta in deltas:
            exact = gaussian_epsilon(mu=mu, delta=delta)
            limit = single_threshold_limit(mu=mu, delta=delta, n=n, alpha=alpha)
            values: dict[str, list[float]] = {"default": [], "pilot": [], "current": [], "peer": []}
            for run in range(runs):
                rng = np.random.default_rng([seed, run, int(mu * 1000)])
                p, q = _scores(rng, mu, n)
                values["default"].append(pilot_regions_epsilon_lower_bound(
                    p, q, delta=delta, alpha=alpha, seed=run).epsilon)
                peer = peer_epsilon(p, q, delta=delta, alpha=alpha)
                if peer is not None:
                    values["peer"].append(peer)
                values["pilot"].append(
                    pilot_epsilon_lower_bound(p, q, delta=delta, alpha=alpha, seed=run).epsilon)
                values["current"].append(epsilon_lower_bound(p, q, delta=delta, alpha=alpha).epsilon)
            row: dict[str, Any] = {"mu": mu, "delta": delta, "n_per_side": n, "exact": exact,
                                   "limit": limit, "limit_over_exact": limit / exact}
            for name, vals in values.items():
                arr = np.asarray(vals)
                if arr.size == 0:
                    continue
                row[name] = {
                    "runs": int(arr.size),
                    "mean": float(arr.mean()),
                    "min": float(arr.min()),
                    "mean_over_exact": float(arr.mean() / exact),
                    "mean_over_limit": float(arr.mean() / limit),
                    "coverage_failure_rate": float(np.mean(arr > exact)),
                }
            rows.append(row)
    return rows


def peer_epsilon(scores_positive, scores_negative, *, delta: float,
                 alpha: float = 0.05) -> float | None:
    """jax-privacy 2.0's (epsilon, delta) lower bound on the same scores: ``CanaryScoreAuditor(
    positive, negative).epsilon_clopper_pearson(alpha, delta, one_sided=False,
    threshold_strategy=Bonferroni())``; None when jax-privacy is not installed. Its level is
    split over the thresholds of the empirical ROC's convex hull, a number read off the data."""
    try:
        from jax_privacy import auditing
    except ImportError:
        return None
    auditor = auditing.CanaryScoreAuditor(np.asarray(scores_positive), np.asarray(scores_negative))
    return float(auditor.epsilon_clopper_pearson(alpha, delta, one_sided=False,
                                                 threshold_strategy=auditing.Bonferroni()))


# The peer comparison's cases: mu from 0.5 to 3 in 20 steps, two deltas (40 cases).
PEER_MUS: tuple[float, ...] = tuple(float(m) for m in np.linspace(0.5, 3.0, 20))
PEER_DELTAS: tuple[float, ...] = (1e-5, 1e-3)


def peer_comparison(*, mus: Sequence[float] = PEER_MUS, deltas: Sequence[float] = PEER_DELTAS,
                    n: int = 10_000, runs: int = 5, alpha: float = 0.05,
                    seed: int = 0) -> list[dict[str, Any]]:
    """The default statistic against jax-privacy on identical Gaussian scores, per (mu, delta):
    both bounds on each of ``runs`` seeded draws (N(mu, 1) vs N(0, 1), ``n`` per side), their
    means and the ratio of means, the single-draw ratios, and the single-threshold limit.
    Empty when jax-privacy is not installed."""
    rows = []
    for mu in mus:
        for delta in deltas:
            ours, peer = [], []
            for run in range(runs):
                rng = np.random.default_rng([seed, run, int(round(mu * 1000)),
                                             int(round(-np.log10(delta)))])
                p, q = _scores(rng, mu, n)
                value = peer_epsilon(p, q, delta=delta, alpha=alpha)
                if value is None:
                    return []
                peer.append(value)
                ours.append(pilot_regions_epsilon_lower_bound(p, q, delta=delta, alpha=alpha,
                                                             seed=run).epsilon)
            o, r = np.asarray(ours), np.asarray(peer)
            limit = single_threshold_limit(mu=mu, delta=delta, n=n, alpha=alpha)
            rows.append({"mu": float(mu), "delta": delta, "n_per_side": n, "runs": runs,
                         "default_mean": float(o.mean()), "peer_mean": float(r.mean()),
                         "ratio_of_means": float(o.mean() / r.mean()),
                         "single_draw_ratios": (o / r).tolist(), "limit": limit,
                         "default_mean_over_limit": float(o.mean() / limit)})
    return rows


# The shortfall factors of the detection table (factor 1: honest noise).
DETECTION_FACTORS: tuple[float, ...] = (1.0, 1.05, 1.08, 1.1, 1.15, 1.2, 1.25, 1.3, 1.5)

# A whole-audit verdict on one draw: (unlearned scores, retrained scores, run) -> VIOLATION?
Verdict = Callable[[np.ndarray, np.ndarray, int], bool]


def detection_power(
    *,
    factors: Sequence[float] = DETECTION_FACTORS,
    n: int = 10_000,
    runs: int = 100,
    delta: float = 1e-5,
    level: float = 0.05,
    seed: int = 1,
    verdict: Verdict | None = None,
    eps_delta: bool = True,
) -> list[dict[str, Any]]:
    """Violation-detection rate against the noise shortfall factor, for each test.

    Certificate: Gaussian mechanism with sensitivity 1 and sigma_cert = 1, two-sided; the truth
    uses sigma_cert / factor (factor 1: honest, so its rate is the false-violation rate).
    Tests: ``verdict`` (when given: the whole audit with its default settings, a callable the
    caller supplies, since this module does not know the audit), ``renyi``
    (:func:`empirical.divergences.renyi_tests.renyi_audit`, the directed test, against eps(alpha) =
    alpha/2 at the whole ``level``), and with ``eps_delta`` ``eps_delta_pilot`` (pilot lower
    bound above the exact certified epsilon at ``delta``) and ``eps_delta_current`` (the
    Bonferroni-Pareto bound).
    """
    certified_eps = gaussian_epsilon(mu=1.0, delta=delta)
    rows = []
    for factor in factors:
        hits = {"verdict": 0, "renyi": 0, "eps_delta_pilot": 0, "eps_delta_current": 0}
        for run in range(runs):
            rng = np.random.default_rng([seed, run, int(factor * 1000)])
            p, q = _scores(rng, factor, n)
            if verdict is not None:
                hits["verdict"] += bool(verdict(p, q, run))
            audit = renyi_audit(p, q, certified=lambda a: a / 2.0, two_sided=True, beta=level,
                                seed=run)
            hits["renyi"] += audit.violation
            if eps_delta:
                pilot = pilot_epsilon_lower_bound(p, q, delta=delta, alpha=level, seed=run)
                hits["eps_delta_pilot"] += pilot.epsilon > certified_eps
                current = epsilon_lower_bound(p, q, delta=delta, alpha=level)
                hits["eps_delta_current"] += current.epsilon > certified_eps
        row: dict[str, Any] = {
            "factor": factor,
            "n_per_side": n,
            "delta": delta,
            "runs": runs,
            "verdict_rate": hits["verdict"] / runs if verdict is not None else None,
            "renyi_rate": hits["renyi"] / runs,
        }
        if eps_delta:
            row["eps_delta_pilot_rate"] = hits["eps_delta_pilot"] / runs
            row["eps_delta_current_rate"] = hits["eps_delta_current"] / runs
        rows.append(row)
    return rows


def estimator_coverage(
    *,
    dims: Sequence[int] = (1, 10),
    n: int = 1000,
    mu: float = 1.0,
    orders: Sequence[float] = (2.0, 5.0),
    epsilon: float = 0.5,
    covariances: Sequence[str] = ("shared-isotropic", "full"),
    runs: int = 100,
    runs_hockey_full: int = 20,
    n_bootstrap: int = 1000,
    n_bootstrap_hockey: int = 200,
    level: float = 0.95,
    seed: int = 2,
) -> list[dict[str, Any]]:
    """Coverage of the nominal ``level`` intervals of the Gaussian-fit estimators.

    Test bed: P = N(mu e_1, I_d), Q = N(0, I_d), n samples per side; truths alpha mu^2 / 2,
    mu^2 / 2 and the Gaussian hockey-stick at ``epsilon``. Per estimator and covariance
    structure: coverage rate, rate of infinite values, mean estimate over truth. The hockey-stick
    with ``"full"`` covariance evaluates a Fourier inversion per bootstrap replicate, so it runs
    on the first ``runs_hockey_full`` draws only, with ``n_bootstrap_hockey`` replicates (the
    Renyi and KL estimates use ``n_bootstrap``, their default; with 200 the 1-D order-2 full
    cell covered 87% of the same 100 draws instead of 91%: 2.5% tails need about a thousand
    replicates, Efron and Tibshirani 1993, Sec. 19.3).
    """
    rows = []
    for d in dims:
        truths: dict[str, float] = {f"renyi_{a:g}": a * mu**2 / 2 for a in orders}
        truths["kl"] = mu**2 / 2
        truths[f"hockey_stick_{epsilon:g}"] = _gaussian_delta(mu=mu, epsilon=epsilon)
        for covariance in covariances:
            stats: dict[str, dict[str, list[float]]] = {k: {"cover": [], "inf": [], "ratio": []}
                                                       for k in truths}
            # The full-covariance Renyi estimate refuses outside its stated valid range (a rule
            # on n, d and the order only): such cells are reported as out of range, not run.
            out_of_range = {f"renyi_{a:g}": _full_renyi_refusal(n=n, d=d, order=a)
                            for a in orders if covariance == "full"}
            out_of_range = {k: v for k, v in out_of_range.items() if v is not None}
            for run in range(runs):
                rng = np.random.default_rng([seed, run, d])
                shift = np.zeros(d)
                shift[0] = mu
                p = rng.normal(size=(n, d)) + shift
                q = rng.normal(size=(n, d))
                kwargs = {"covariance": covariance, "n_bootstrap": n_bootstrap,
                          "interval_level": level, "seed": run}
                estimates = {f"renyi_{a:g}": divergence.gaussian_renyi_divergence(p, q, order=a, **kwargs)
                             for a in orders if f"renyi_{a:g}" not in out_of_range}
                estimates["kl"] = divergence.gaussian_kl_divergence(p, q, **kwargs)
                if covariance != "full" or run < runs_hockey_full:
                    estimates[f"hockey_stick_{epsilon:g}"] = divergence.gaussian_hockey_stick_divergence(
                        p, q, epsilon=epsilon, **{**kwargs, "n_bootstrap": n_bootstrap_hockey})
                for name, est in estimates.items():
                    lo, hi = est.interval
                    stats[name]["cover"].append(float(lo <= truths[name] <= hi))
                    stats[name]["inf"].append(float(not np.isfinite(est.value)))
                    stats[name]["ratio"].append(est.value / truths[name])
            for name, vals in stats.items():
                if not vals["cover"] and name not in out_of_range:
                    continue  # not run (runs_hockey_full = 0)
                row = {"estimator": name, "dimension": d, "covariance": covariance,
                       "n_per_side": n, "runs": len(vals["cover"]), "truth": truths[name]}
                if name in out_of_range:
                    row.update(coverage=None, infinite_rate=None, mean_estimate_over_truth=None,
                               out_of_range=out_of_range[name])
                else:
                    row.update(coverage=float(np.mean(vals["cover"])),
                               infinite_rate=float(np.mean(vals["inf"])),
                               mean_estimate_over_truth=float(np.mean(vals["ratio"])))
                rows.append(row)
    return rows


def _full_renyi_refusal(*, n: int, d: int, order: float) -> str | None:
    """Why the full-covariance Renyi estimate refuses this test bed (None: in its range)."""
    tau = divergence.full_renyi_noise_scale(n_p=n, n_q=n, dimension=d, order=order)
    if order > 1 and tau > divergence.FULL_RENYI_MAX_NOISE:
        return f"out of range: tau = {tau:.3g} > {divergence.FULL_RENYI_MAX_NOISE}"
    return None


def power_benchmark(*, quick: bool = False, seed: int = 0, epsilon_runs: int | None = None,
                    detection_runs: int | None = None, coverage_runs: int | None = None,
                    hockey_full_runs: int | None = None, peer_runs: int | None = None,
                    parts: Sequence[str] = PARTS,
                    verdict: Verdict | None = None) -> dict[str, Any]:
    """All power measurements in one dict; ``quick`` uses few runs (a smoke test, not a study).

    The ``*_runs`` arguments override the number of runs of each part (defaults: 200, 100, 100,
    20 and 5 for the peer comparison, :func:`peer_comparison`; with ``quick``: 10, 5, 5, 1 and
    1), so that a study can be scaled to the time at hand;
    ``parts`` picks some of ``PARTS`` (the others come back as empty lists), so that the parts
    can run as separate processes: each part's draws depend only on ``seed``, not on the others.
    ``verdict`` is passed to :func:`detection_power` (the whole audit's decision on a draw).
    """
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        raise ValueError(f"parts must be a non-empty selection of {PARTS}, got {list(parts)!r}")
    start = time.perf_counter()
    runs = {"epsilon": 10, "detection": 5, "coverage": 5, "hockey_full": 1, "peer": 1} if quick else {
        "epsilon": 200, "detection": 100, "coverage": 100, "hockey_full": 20, "peer": 5}
    for key, value in (("epsilon", epsilon_runs), ("detection", detection_runs),
                       ("coverage", coverage_runs), ("hockey_full", hockey_full_runs),
                       ("peer", peer_runs)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}_runs must be a positive integer, got {value!r}")
            runs[key] = value
    eps_rows = epsilon_bound_power(runs=runs["epsilon"], seed=seed) if "epsilon" in parts else []
    # --quick: the two ends of the table only (each verdict is a whole audit).
    factors = (DETECTION_FACTORS[0], DETECTION_FACTORS[-1]) if quick else DETECTION_FACTORS
    det_rows = (detection_power(factors=factors, runs=runs["detection"], seed=seed + 1,
                                verdict=verdict)
                if "detection" in parts else [])
    cov_rows = estimator_coverage(runs=runs["coverage"], runs_hockey_full=runs["hockey_full"],
                                  n_bootstrap=50 if quick else 1000,
                                  n_bootstrap_hockey=50 if quick else 200,
                                  seed=seed + 2) if "coverage" in parts else []
    peer_rows = peer_comparison(runs=runs["peer"], seed=seed + 3) if "peer" in parts else []
    return {
        "ground_truth": "scores N(mu, 1) vs N(0, 1); Gaussian mechanism, sensitivity 1",
        "epsilon_bounds": eps_rows,
        "peer_comparison": peer_rows,
        "detection": det_rows,
        "estimator_coverage": cov_rows,
        "runs": runs,
        "parts": [part for part in PARTS if part in parts],
        "seed": seed,
        "seconds": time.perf_counter() - start,
        "quick": quick,
        "note": "rates are fractions of runs; 'limit' is a typical value, not a bound",
    }
