"""The leak suite (``unlearn bench leaks``): audits of leaks a shift does not describe, beside
the best set one could fix knowing the truth.

For each leak of :data:`empirical.benchmarks.leaks.LEAKS` (rare outputs, an atom inside the
bulk, a one-tail leak, a spread, two-mode bands, and a mechanism with no privacy whose worlds
interleave) and each number N of trials per side, ``runs`` audits of precomputed scores
(:func:`audits.runner.audit_scores`, the default statistics, no estimators), draw ``s`` from
``default_rng([seed, N, s])`` and audit seed ``s``, under two statements of the same
guarantee around the Gaussian mechanism at sensitivity 1 and sigma 2:

* ``plain``: the pair (epsilon, delta) alone, epsilon 2.524 at delta 1e-5;
* ``curve``: the same pair with the mechanism's Rényi curve (``gaussian:rdp``), which the
  audit may test at another point of its privacy profile (:mod:`audits.allocation`).

Each row gives both statements' verdict counts, how many ``curve`` audits were tested at a
profile point, and the exact rate at which the truth-chosen set refutes the pair with one
Clopper-Pearson test at the whole level on all N rows
(:func:`empirical.benchmarks.leaks.truth_chosen_power`; none for the no-privacy mechanism,
whose refutation does not depend on a set's power).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audits.protocols import Certificate
from audits.report.schema import STATUSES
from audits.runner import audit_scores
from empirical.benchmarks.leaks import LEAKS, Leak, truth_chosen_power

__all__ = ["DEFAULT_SEED", "DEFAULT_SIZES", "LeakRow", "leak_certificates", "leak_suite",
           "leak_table", "select_leaks"]

DEFAULT_SIZES = (2_000, 20_000)
# The draws of the measurements in docs/audits.md; the slow test uses its own.
DEFAULT_SEED = 9_000


def leak_certificates() -> tuple[Certificate, Certificate]:
    """(plain, curve): the Gaussian mechanism's guarantee at sensitivity 1, sigma 2 and delta
    1e-5, as its (epsilon, delta) pair alone and with its Rényi curve."""
    curve = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=2)
    return Certificate(epsilon=curve.epsilon, delta=curve.delta), curve


@dataclass(frozen=True)
class LeakRow:
    """One leak at one N: verdict counts per statement, the audits tested at a profile point,
    and the truth-chosen set's exact refutation rate (None for the no-privacy mechanism)."""

    leak: str
    n_per_side: int
    runs: int
    plain: Mapping[str, int]
    curve: Mapping[str, int]
    curve_at_profile_point: int
    truth_chosen: float | None
    truth_chosen_set: str | None

    def to_dict(self) -> dict[str, Any]:
        """The row at the JSON boundary."""
        return {"leak": self.leak, "n_per_side": self.n_per_side, "runs": self.runs,
                "plain": dict(self.plain), "curve": dict(self.curve),
                "curve_at_profile_point": self.curve_at_profile_point,
                "truth_chosen": self.truth_chosen, "truth_chosen_set": self.truth_chosen_set}


def _audit(leak: Leak, n: int, *, seed: int, run: int,
           certificate: Certificate) -> tuple[str, bool]:
    unlearned, retrained = leak.draw(np.random.default_rng([seed, n, run]), n)
    result = audit_scores(unlearned={"score": unlearned}, retrained={"score": retrained},
                          certificate=certificate, seed=run, estimators=[])
    return result.status, result.certified_delta != certificate.delta


def select_leaks(names: Sequence[str] | None) -> tuple[Leak, ...]:
    """The leaks whose names start with one of ``names`` (all for None); an unknown name is
    refused with the known ones."""
    if names is None:
        return tuple(LEAKS)
    missing = [name for name in names if not any(leak.name.startswith(name) for leak in LEAKS)]
    if missing:
        raise ValueError(f"unknown leak(s) {', '.join(missing)}; known: "
                         f"{', '.join(leak.name for leak in LEAKS)}")
    return tuple(leak for leak in LEAKS if any(leak.name.startswith(name) for name in names))


def leak_suite(*, sizes: Sequence[int] = DEFAULT_SIZES, runs: int = 20, seed: int = DEFAULT_SEED,
               leaks: Sequence[str] | None = None,
               progress: Callable[[str], None] | None = None) -> tuple[LeakRow, ...]:
    """The suite's rows, leak by leak and N by N; ``leaks`` as in :func:`select_leaks`."""
    chosen = select_leaks(leaks)
    plain, curve = leak_certificates()
    rows = []
    for leak in chosen:
        for n in sizes:
            counts = {"plain": dict.fromkeys(STATUSES, 0), "curve": dict.fromkeys(STATUSES, 0)}
            moved = 0
            for run in range(runs):
                status, _ = _audit(leak, n, seed=seed, run=run, certificate=plain)
                counts["plain"][status] += 1
                status, at_profile = _audit(leak, n, seed=seed, run=run, certificate=curve)
                counts["curve"][status] += 1
                moved += at_profile
            truth, where = (None, None) if leak.no_privacy else truth_chosen_power(
                leak, n=n, epsilon=plain.epsilon, delta=plain.delta)
            rows.append(LeakRow(leak=leak.name, n_per_side=n, runs=runs, plain=counts["plain"],
                                curve=counts["curve"], curve_at_profile_point=moved,
                                truth_chosen=truth, truth_chosen_set=where))
            if progress is not None:
                progress(f"{leak.name} N={n}: VIOLATION {counts['plain']['VIOLATION']} (plain), "
                         f"{counts['curve']['VIOLATION']} (curve) of {runs}")
    return tuple(rows)


def leak_table(rows: Sequence[LeakRow]) -> str:
    """The suite as a text table: VIOLATIONs of the runs per statement beside the truth-chosen
    set's rate (a no-privacy row gives its CONSISTENT count too: it must be 0 where the design
    can resolve the leak)."""
    lines = [f"{'leak':28s} {'N':>6s} {'truth-chosen':>12s} {'plain':>8s} {'curve':>8s} "
             f"{'at profile':>10s}"]
    for row in rows:
        truth = f"{row.truth_chosen:12.2f}" if row.truth_chosen is not None else f"{'-':>12s}"
        plain = f"{row.plain['VIOLATION']}/{row.runs}"
        curve = f"{row.curve['VIOLATION']}/{row.runs}"
        line = (f"{row.leak:28s} {row.n_per_side:6d} {truth} {plain:>8s} {curve:>8s} "
                f"{row.curve_at_profile_point:10d}")
        if row.truth_chosen is None:
            line += (f"  (CONSISTENT {row.plain['CONSISTENT']} plain, {row.curve['CONSISTENT']} "
                     "curve)")
        lines.append(line)
    lines.append("plain: (epsilon, delta) alone; curve: with the Gaussian mechanism's Rényi curve "
                 "(sigma 2); truth-chosen: exact refutation rate of the best set fixed knowing "
                 "the laws, one test at the whole level on all rows")
    return "\n".join(lines)
