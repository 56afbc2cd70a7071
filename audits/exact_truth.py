"""Certificates against the exact privacy loss of the mechanism as run, on small instances.

An :class:`ExactCase` is one small instance of one algorithm (a one-dimensional linear model,
a handful of records): a builder of its two output laws on a grid
(:mod:`empirical.exact_laws`), the delta, and the certificates to hold against them, each
evaluated through the bound engine (:class:`Certified`). :func:`evaluate_case` computes the
exact Rényi divergences at every certificate's order and the exact epsilon at delta
(:func:`empirical.exact_laws.truth.exact_truth`, with the grid-refinement error) and gives the
row of ``unlearn bench exact``: certified epsilon, exact epsilon, their error, and the ratio of
certified to exact Rényi divergence at the certificate's order. A certificate below the exact
value plus its error is a wrong theorem or a wrong implementation (:func:`violations`).

The cases themselves live with the adapters (:mod:`audits.adapters.exact_cases`); this module
names no algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audits.attacks import LIKELIHOOD_RATIO

__all__ = ["Certified", "ExactCase", "audit_lower_bound", "certified_renyi", "evaluate_case",
           "renyi_certificate", "violations"]


@dataclass(frozen=True)
class Certified:
    """One certificate of a case: ``bound`` id, certified ``epsilon`` at the case's delta, the
    Rényi ``alpha`` it was converted at (None for a bound that is not a Rényi bound) and its
    certified divergence ``renyi`` there (interval upper end); ``how`` says how it was got."""

    bound: str
    epsilon: float
    alpha: float | None
    renyi: float | None
    how: str


@dataclass(frozen=True)
class ExactCase:
    """A small instance: ``algorithm``, its parameters ``instance`` (JSON-able), ``build``
    (grid size -> (unlearned, retrained) laws), the grid ``size``, ``delta``, the
    certificates (the first is the one the algorithm's adapter issues) and a short ``label``
    that tells the algorithm's instances apart in the table."""

    algorithm: str
    instance: Mapping[str, Any]
    build: Callable[[int], Any]
    size: int
    delta: float
    certified: tuple[Certified, ...]
    notes: tuple[str, ...] = field(default=())
    label: str = ""


def certified_renyi(bound_id: str, alpha: float, inputs: Mapping[str, Any]) -> float:
    """The bound's Rényi divergence at order ``alpha`` (interval upper end)."""
    import bounds

    bound = bounds.get(bound_id)
    order = bound.guarantee.renyi_order
    if order is None:
        raise ValueError(f"{bound_id} is not a Rényi bound")
    return bound.evaluate(precision="interval", **{**inputs, order: alpha}).certified_upper


def renyi_certificate(bound_id: str, *, inputs: Mapping[str, Any], delta: float,
                      alpha: float | None = None, conversion: str = "mironov") -> Certified:
    """A Rényi bound's certificate: epsilon at ``delta`` at its best order (or ``alpha``), the
    order, and its divergence there (:func:`bounds.conversions.best_epsilon`)."""
    import bounds
    from bounds.conversions import best_epsilon

    bound = bounds.get(bound_id)
    order = bound.guarantee.renyi_order
    params = dict(inputs) if alpha is None else {**inputs, order: alpha}
    conv = best_epsilon(bound, delta=delta, conversion=conversion, **params)
    return Certified(bound_id, float(conv.epsilon), float(conv.alpha), float(conv.renyi_epsilon),
                     f"best order of {bound_id}, {conversion} conversion (interval upper end)")


def evaluate_case(case: ExactCase) -> dict[str, Any]:
    """The row of one case: the exact truth at every certificate's order and at delta, and the
    adapter's certificate against it (the others in ``certificates``)."""
    from empirical.exact_laws.truth import exact_truth

    orders = sorted({c.alpha for c in case.certified if c.alpha is not None})
    truth = exact_truth(case.build, size=case.size, orders=orders, delta=case.delta)
    rows = []
    for cert in case.certified:
        exact, error = (truth.renyi_at(cert.alpha) if cert.alpha is not None
                        else (None, None))
        rows.append({
            "bound": cert.bound, "certified_epsilon": cert.epsilon, "alpha": cert.alpha,
            "certified_renyi": cert.renyi, "exact_renyi": exact, "exact_renyi_error": error,
            "renyi_ratio": _ratio(cert.renyi, exact),
            "epsilon_ratio": _ratio(cert.epsilon, truth.epsilon), "how": cert.how,
        })
    main = rows[0]
    return {
        "algorithm": case.algorithm,
        "label": case.label,
        "instance": dict(case.instance),
        "delta": case.delta,
        "bound": main["bound"],
        "certified_epsilon": main["certified_epsilon"],
        "exact_epsilon": truth.epsilon,
        "exact_error": truth.epsilon_error,
        "alpha": main["alpha"],
        "certified_renyi": main["certified_renyi"],
        "exact_renyi": main["exact_renyi"],
        "exact_renyi_error": main["exact_renyi_error"],
        "renyi_ratio": main["renyi_ratio"],
        "certificates": rows,
        "grid_sizes": list(truth.sizes),
        "lost_mass": truth.lost,
        "notes": list(case.notes),
    }


def audit_lower_bound(case: ExactCase, row: Mapping[str, Any], *, trials: int,
                      seed: int = 0) -> dict[str, Any]:
    """The audit of ``row``'s certificate on ``trials`` draws per side from the exact laws,
    scored by their exact log-likelihood ratio (the most powerful test): its largest lower
    bound on epsilon and its verdict (:func:`audits.runner.audit_scores`, defaults)."""
    import numpy as np

    from audits.protocols import Certificate
    from audits.runner import audit_scores
    from empirical.exact_laws.divergences import aligned_log_masses

    p, q = case.build(case.size)
    lp, lq = aligned_log_masses(p, q)
    rng = np.random.default_rng(seed)

    def draw(log_masses: np.ndarray) -> np.ndarray:
        masses = np.where(np.isfinite(log_masses), np.exp(log_masses), 0.0)
        return rng.choice(masses.size, size=trials, p=masses / masses.sum())

    with np.errstate(invalid="ignore"):
        ratio = np.nan_to_num(lp - lq, nan=0.0, posinf=1e6, neginf=-1e6)
    certificate = Certificate(epsilon=float(row["certified_epsilon"]), delta=float(row["delta"]),
                              bound=str(row["bound"]))
    result = audit_scores(unlearned={LIKELIHOOD_RATIO.name: ratio[draw(lp)]},
                          retrained={LIKELIHOOD_RATIO.name: ratio[draw(lq)]},
                          certificate=certificate, seed=seed, estimators=[])
    return {"trials": trials, "lower_bound": result.max_lower_bound, "status": result.status}


def _ratio(certified: float | None, exact: float | None) -> float | None:
    if certified is None or exact is None:
        return None
    if exact == 0:
        return math.inf if certified > 0 else None
    return certified / exact


def violations(row: Mapping[str, Any]) -> list[str]:
    """Every certificate of ``row`` not shown to hold: below the exact value plus its error
    (empty: every one holds with room for the numerical error)."""
    out = []
    eps, eps_err = row["exact_epsilon"], row["exact_error"]
    for cert in row["certificates"]:
        if not cert["certified_epsilon"] >= eps + eps_err:
            out.append(f"{row['algorithm']} ({row['label']}) {cert['bound']}: certified epsilon "
                       f"{cert['certified_epsilon']!r} < exact "
                       f"{eps!r} (error {eps_err!r}) at delta {row['delta']!r}")
        exact = cert["exact_renyi"]
        if exact is not None and not cert["certified_renyi"] >= exact + cert["exact_renyi_error"]:
            out.append(f"{row['algorithm']} ({row['label']}) {cert['bound']}: certified D_{cert['alpha']:g} "
                       f"{cert['certified_renyi']!r} < exact {exact!r} "
                       f"(error {cert['exact_renyi_error']!r})")
    return out


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The text table of ``unlearn bench exact``."""
    head = ("algorithm", "instance", "bound", "delta", "certified eps", "exact eps", "error", "alpha",
            "cert/exact D_alpha", "audit lower bound")
    lines = [" | ".join(head)]
    for r in rows:
        ratio = r["renyi_ratio"]
        lines.append(" | ".join([
            r["algorithm"], r.get("label", ""), r["bound"], f"{r['delta']:.3g}",
            f"{r['certified_epsilon']:.6g}",
            f"{r['exact_epsilon']:.6g}", f"{r['exact_error']:.2g}",
            "-" if r["alpha"] is None else f"{r['alpha']:.4g}",
            "-" if ratio is None else f"{ratio:.6g}",
            "-" if "audit" not in r else f"{r['audit']['lower_bound']:.4g} "
                                         f"({r['audit']['status']}, N = {r['audit']['trials']})"]))
    return "\n".join(lines)
