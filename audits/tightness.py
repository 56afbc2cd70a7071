"""How loose a certificate is in practice (``unlearn bench tightness``).

For each algorithm at its demo settings (its adapter's ``demo_spec``) and each number N of
trials per side, one row:

* the certified epsilon (and its delta and bound) of the honest mechanism;
* the exact epsilon of the mechanism as run, where the report computes one
  (``report["exact_privacy_loss"]``; None when the mechanism's law is not one the toolkit
  can compute exactly);
* the audit's largest lower bound on the honest mechanism (seed 0): a valid lower bound at the
  audit's confidence, so certified minus it is the most the audit can say about the slack;
* the smallest noise-scale reduction factor f on a grid that the audit flags as VIOLATION in at
  least ``required`` of ``seeds`` independent audits (seeds 0, 1, ...). Reduction f runs the
  mechanism with every noise divided by f (its adapter's noise-scale hook,
  ``with_noise_reduced``) while the certificate stays the one certified for the undivided
  noise: for f > 1 the certificate claims more privacy than the mechanism has, and the
  factor the audit needs to catch it measures the certificate's slack as seen through the
  audit's attacks.

The grid is scanned upwards and stops at the first flagged factor; within a factor the seeds
stop as soon as the count is decided (``required`` flags reached, or no longer reachable)
unless ``early_stop`` is off, so an unflagged factor costs ``seeds - required + 1`` audits.
Smaller factors are all run, so the answer is the smallest flagged factor of the grid without
assuming that detection grows with f. Factor 1 (when on the grid) is the honest mechanism: it
should never be flagged, and a flag there is a refuted certificate.

This module names no algorithm: it reads the registry and the adapters' hooks.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from audits.registry import adapter_names, get_adapter

__all__ = [
    "DEFAULT_FACTORS",
    "DEFAULT_SEEDS",
    "DEFAULT_SIZES",
    "TightnessSettings",
    "parse_list",
    "settings_from_options",
    "tightness_benchmark",
    "tightness_table",
]

DEFAULT_FACTORS = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)
DEFAULT_SIZES = (1000, 10000)
DEFAULT_SEEDS = 10
MAX_FACTOR = 1e6
FLAG = "VIOLATION"


@dataclass(frozen=True)
class TightnessSettings:
    """What ``unlearn bench tightness`` runs: algorithms, trial counts N, seeds per factor, the
    flag rule (``required`` VIOLATIONs of ``seeds``; None: ceil(0.8 seeds), i.e. 8 of 10) and
    the factor grid."""

    algorithms: tuple[str, ...] = ()  # empty: every registered algorithm
    sizes: tuple[int, ...] = DEFAULT_SIZES
    seeds: int = DEFAULT_SEEDS
    required: int | None = None
    factors: tuple[float, ...] = DEFAULT_FACTORS
    early_stop: bool = True

    def __post_init__(self) -> None:
        algorithms = tuple(self.algorithms) or adapter_names()
        for name in algorithms:
            get_adapter(name, path="--algorithm")
        object.__setattr__(self, "algorithms", algorithms)
        sizes = tuple(self.sizes)
        if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in sizes):
            raise ValueError(f"trial counts must be integers >= 2, got {list(sizes)}")
        object.__setattr__(self, "sizes", sizes)
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise ValueError(f"seeds must be a positive integer, got {self.seeds!r}")
        required = math.ceil(0.8 * self.seeds) if self.required is None else self.required
        if (isinstance(required, bool) or not isinstance(required, int)
                or not 1 <= required <= self.seeds):
            raise ValueError(f"required must be an integer from 1 to seeds = {self.seeds}, got "
                             f"{required!r}")
        object.__setattr__(self, "required", required)
        factors = tuple(self.factors)
        if not factors or any(isinstance(f, bool) or not isinstance(f, int | float)
                              or not math.isfinite(f) or not 1 <= f <= MAX_FACTOR
                              for f in factors):
            raise ValueError(f"factors must be finite numbers from 1 to {MAX_FACTOR:g}, got "
                             f"{list(factors)}")
        object.__setattr__(self, "factors", tuple(sorted({float(f) for f in factors})))


def _audit(adapter: Any, *, n: int, factor: float, seed: int) -> dict[str, Any]:
    """One audit of the demo spec with N trials, noise divided by ``factor``, audit seed ``seed``."""
    from audits.runner import run_audit

    spec = adapter.demo_spec(trials=n)
    if factor != 1.0:
        spec = adapter.with_noise_reduced(spec, factor=factor)
    spec = dataclasses.replace(spec, seed=seed)
    start = time.perf_counter()
    report = run_audit(spec, extra_figures=False).report
    verdict = report["verdict"]
    return {"seed": seed, "status": verdict["status"],
            "max_lower_bound": float(verdict["max_lower_bound"]),
            # a VIOLATION shown by the Rényi test alone has no (epsilon, delta) bound above
            # the certificate
            "renyi_only": (verdict["status"] == FLAG and not verdict["violations"]
                           and bool(verdict["renyi_violations"])),
            "seconds": time.perf_counter() - start, "report": report}


def _certificate(report: dict[str, Any]) -> dict[str, Any]:
    cert = report["certificate"]
    return {"epsilon": float(cert["epsilon"]), "delta": float(cert["delta"]), "bound": cert["bound"]}


def _exact(report: dict[str, Any]) -> dict[str, Any]:
    """The exact privacy loss the report computed, or why there is none."""
    if "exact_privacy_loss" not in report:
        return {"epsilon": None, "note": "not computed: this version of the report has no exact "
                                         "privacy loss"}
    exact = report["exact_privacy_loss"]
    if exact is None:
        return {"epsilon": None, "note": "not computable: the mechanism's output law is not one "
                                         "whose privacy loss the toolkit computes exactly"}
    return {"epsilon": float(exact["epsilon"]), "delta": float(exact["delta"]),
            "method": exact.get("method"), "note": "exact privacy loss of the mechanism as run"}


def _check_certificates(adapter: Any, *, n: int, factors: Sequence[float]) -> None:
    """Before any trial: every reduced spec must keep the honest spec's certificate."""
    from audits.runner import prepare_audit

    spec = adapter.demo_spec(trials=n)
    honest = prepare_audit(spec).certificate
    for factor in factors:
        if factor == 1.0:
            continue
        reduced = prepare_audit(adapter.with_noise_reduced(spec, factor=factor)).certificate
        if (reduced.epsilon, reduced.delta, reduced.bound) != (honest.epsilon, honest.delta,
                                                               honest.bound):
            raise RuntimeError(f"{adapter.name}: reducing the noise by {factor:g} changed the "
                               "certificate; its noise-scale hook must leave it as certified")


def _row(adapter: Any, *, n: int, settings: TightnessSettings,
         progress: Callable[[str], None]) -> dict[str, Any]:
    """One (algorithm, N) row: certificate, exact epsilon, lower bound, factor scan."""
    start = time.perf_counter()
    where = f"{adapter.name} N={n}"

    def run(factor: float, seed: int) -> dict[str, Any]:
        done = _audit(adapter, n=n, factor=factor, seed=seed)
        progress(f"{where} factor {factor:g} seed {seed}: {done['status']} "
                 f"(lower bound {done['max_lower_bound']:.4g}, {done['seconds']:.1f} s)")
        return done

    _check_certificates(adapter, n=n, factors=settings.factors)
    honest = run(1.0, 0)
    certificate = _certificate(honest["report"])
    row: dict[str, Any] = {
        "algorithm": adapter.name, "n_trials": n, "scaled_noise": adapter.scaled_noise,
        "certificate": certificate, "exact": _exact(honest["report"]),
        "lower_bound": honest["max_lower_bound"], "honest_status": honest["status"],
        "largest_showable_epsilon": float(
            honest["report"]["empirical"]["max_certifiable_epsilon"]),
    }
    scans: list[dict[str, Any]] = []
    smallest = None
    limit = settings.seeds - settings.required  # non-flags a factor may have and still flag
    for factor in settings.factors:
        audits: list[dict[str, Any]] = []
        for seed in range(settings.seeds):
            done = honest if (factor == 1.0 and seed == 0) else run(factor, seed)
            if _certificate(done["report"]) != certificate:
                raise RuntimeError(f"{adapter.name}: reducing the noise by {factor:g} changed the "
                                   "certificate; its noise-scale hook must leave it as certified")
            audits.append(done)
            flags = sum(a["status"] == FLAG for a in audits)
            if settings.early_stop and (flags >= settings.required
                                        or len(audits) - flags > limit):
                break
        flags = sum(a["status"] == FLAG for a in audits)
        flagged = flags >= settings.required
        scans.append({
            "factor": factor, "seeds_run": len(audits), "violations": flags,
            "flagged": flagged,
            "renyi_only_violations": sum(a["renyi_only"] for a in audits),
            "statuses": [a["status"] for a in audits],
            "lower_bounds": [a["max_lower_bound"] for a in audits],
            "seconds": sum(a["seconds"] for a in audits),
            # the exact loss of the mechanism with noise divided by the factor (the same for
            # every seed): how far above the certificate it was when flagged or not
            "exact": _exact(audits[0]["report"]),
        })
        progress(f"{where} factor {factor:g}: {flags} VIOLATION of {len(audits)} "
                 f"run ({'flagged' if flagged else 'not flagged'})")
        if flagged:
            smallest = factor
            break
    unflagged = [scan["factor"] for scan in scans if not scan["flagged"]]
    row.update({"factors": scans, "smallest_flagged_factor": smallest,
                # every factor of the grid up to this one was run and not flagged
                "largest_unflagged_factor": unflagged[-1] if unflagged else None,
                "largest_factor_run": scans[-1]["factor"],
                "seconds": time.perf_counter() - start})
    return row


def tightness_benchmark(settings: TightnessSettings | None = None, *,
                        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The tightness table: one row per (algorithm, N) in ``settings`` (see the module docstring).

    ``progress`` is told one line per audit and per factor (stderr in the CLI).
    """
    settings = TightnessSettings() if settings is None else settings
    say = progress if progress is not None else (lambda _line: None)
    start = time.perf_counter()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    rows = []
    for name in settings.algorithms:
        adapter = get_adapter(name, path="--algorithm")
        for n in settings.sizes:
            say(f"{name} N={n}")
            rows.append(_row(adapter, n=n, settings=settings, progress=say))
    return {
        "benchmark": "tightness",
        "settings": {"algorithms": list(settings.algorithms), "sizes": list(settings.sizes),
                     "seeds": settings.seeds, "required": settings.required,
                     "factors": list(settings.factors), "early_stop": settings.early_stop},
        "rows": rows,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_start": None if load is None else list(load)},
        "seconds": time.perf_counter() - start,
        "notes": [
            "factor f: the mechanism runs with every noise divided by f, the certificate stays the "
            "one certified for the undivided noise",
            f"flagged: VIOLATION in at least {settings.required} of {settings.seeds} audits "
            "(seeds 0, 1, ...); the grid is scanned upwards and stops at the first flagged factor"
            + ("; a factor's seeds stop once its count is decided" if settings.early_stop else ""),
            "lower bound: the largest valid lower bound of the honest mechanism's audit (seed 0), "
            "at the audit's confidence",
        ],
    }


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def tightness_table(res: dict[str, Any]) -> str:
    """The rows of :func:`tightness_benchmark` as a terminal table."""
    s = res["settings"]
    grid = ", ".join(f"{f:g}" for f in s["factors"])
    lines = [f"certificate tightness: noise reduced until the audit flags VIOLATION in "
             f">= {s['required']} of {s['seeds']} seeds (factors {grid})",
             f"  {'algorithm':<28} {'N':>6} {'certified':>9} {'exact':>8} {'lower bd':>8} "
             f"{'showable':>8} {'honest':<12} {'smallest flagged factor':<34}"]
    for row in res["rows"]:
        last = row["factors"][-1]
        below = row["largest_unflagged_factor"]
        if row["smallest_flagged_factor"] is not None:
            flagged = (f"{row['smallest_flagged_factor']:g} ({last['violations']}/"
                       f"{last['seeds_run']} VIOLATION)"
                       + ("" if below is None else f"; {below:g} not"))
        else:
            flagged = f"none up to {row['largest_factor_run']:g}"
        lines.append(
            f"  {row['algorithm']:<28} {row['n_trials']:>6} {row['certificate']['epsilon']:>9.4g} "
            f"{_number(row['exact']['epsilon']):>8} {row['lower_bound']:>8.4g} "
            f"{row['largest_showable_epsilon']:>8.4g} {row['honest_status']:<12} {flagged:<34}")
    lines += ["", *(f"note: {note}" for note in res["notes"]),
              f"{len(res['rows'])} row(s) in {res['seconds']:.0f} s on {res['machine']['cpus']} "
              f"CPU(s)"]
    return "\n".join(lines)


def parse_list(text: str, kind: Callable[[str], Any], what: str) -> tuple[Any, ...]:
    """A comma-separated list from the command line (ASCII digits only; no expressions)."""
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items):
        raise ValueError(f"{what}: expected a comma-separated list, got {text!r}")
    out = []
    for item in items:
        if not item.isascii():
            raise ValueError(f"{what}: {item!r} is not ASCII")
        try:
            out.append(kind(item))
        except ValueError:
            raise ValueError(f"{what}: cannot read {item!r}") from None
    return tuple(out)


def settings_from_options(*, algorithm: str | None, trials: str | None, seeds: int,
                          factors: str | None, required: int | None,
                          early_stop: bool = True) -> TightnessSettings:
    """:class:`TightnessSettings` from the command line's options (lists comma-separated)."""
    algorithms: Sequence[str] = () if algorithm in (None, "all") else parse_list(
        algorithm, str, "--algorithm")
    sizes = DEFAULT_SIZES if trials is None else parse_list(trials, int, "--trials")
    grid = DEFAULT_FACTORS if factors is None else parse_list(factors, float, "--factors")
    return TightnessSettings(algorithms=tuple(algorithms), sizes=tuple(sizes), seeds=seeds,
                             required=required, factors=tuple(grid), early_stop=early_stop)
