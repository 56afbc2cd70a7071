"""Audit report numbers as text, and the terminal summary of a report.

The small formatting rules shared by :func:`summary_text`, the figures
(:mod:`audits.report_figures`) and the HTML page (:mod:`audits.report_html`): how a number, a
confidence split over a family of bounds, or an exact float is written. A leaf module of the
report package: it imports only :mod:`audits.report_schema`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from audits.report_schema import validate_report

# -- numbers as text ---------------------------------------------------------------------------


def _value(x: Any) -> float:
    return math.inf if x == "inf" else float(x)


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    value = _value(x)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


_EXACT_CALIBRATION_KEYS = ("certified_epsilon", "neighbour", "neighbour_epsilon", "value")


def _exact(x: Any) -> str:
    """A float as the shortest text that reads back as the same float."""
    return repr(float(x)) if isinstance(x, float) else _fmt(x)


def _percent(x: float) -> str:
    return f"{float(x) * 100:.4g}%"


def _bound_confidence(entry: Mapping) -> str:
    """The confidence of one lower bound: where the level was split over a family of bounds
    (Bonferroni), each holds at the per-bound level and all of them jointly at the stated one."""
    details = entry.get("details") or {}
    each = details.get("confidence_each")
    family = details.get("family_size")
    if each is None or not family or int(family) <= 1:
        return f"{_percent(entry['confidence'])} confidence"
    joint = details.get("overall_confidence", entry["confidence"])
    return f"{_percent(each)} confidence each ({_percent(joint)} jointly over {int(family)} bounds)"


def _each_level(report: Mapping) -> float | None:
    """The per-bound confidence when the level was split over several bounds, else None."""
    levels = {float(e["details"]["confidence_each"]) for e in _lower_bounds(report)
              if (e.get("details") or {}).get("confidence_each") is not None
              and int(e["details"].get("family_size", 1)) > 1}
    return min(levels) if levels else None


def score_direction(entry: Mapping) -> str | None:
    """Which way a lower bound read the scores ("higher score = unlearned", ...): the one thing
    that tells apart the bounds of an (attack, statistic) pair run in both orientations."""
    return (entry.get("details") or {}).get("score_direction")


def _describe_bound(entry: Mapping) -> str:
    direction = f", {score_direction(entry)}" if score_direction(entry) else ""
    return (f"attack {entry['attack']}, statistic {entry['statistic']}{direction}; "
            f"{entry['method']}; {_bound_confidence(entry)}")


def _lower_bounds(report: Mapping) -> list[Mapping]:
    return list(report["empirical"]["lower_bounds"])


def _blind_spot(report: Mapping) -> bool:
    """True when N trials cannot show a lower bound above the certificate at all."""
    cert = _value(report["certificate"]["epsilon"])
    ceiling = _value(report["empirical"]["max_certifiable_epsilon"])
    return ceiling <= cert


def summary_text(report: Mapping) -> str:
    """A few lines for the terminal: verdict, certificate, best lower bound, tightness, utility."""
    report = validate_report(report)
    cert = report["certificate"]
    emp = report["empirical"]
    verdict = report["verdict"]
    conversion = cert["conversion"] or "none (bound is already (epsilon, delta))"
    alpha = "" if cert["alpha"] is None else f", alpha {_fmt(cert['alpha'])}"
    lines = [
        f"Audit verdict: {verdict['status']}",
        f"  certified epsilon   {_fmt(cert['epsilon'])} at delta {_fmt(cert['delta'])} from "
        f"{cert['bound']}, conversion {conversion}{alpha}",
    ]
    best = verdict["best_lower_bound"]
    if best is None:
        lines.append("  best lower bound    none (no attack produced a lower bound)")
    else:
        lines.append(f"  best lower bound    epsilon >= {_fmt(best['epsilon'])} "
                     f"({_describe_bound(best)})")
    lines.append(f"  tightness           {_fmt(verdict['tightness'], 3)} "
                 "(best lower bound / certified epsilon)")
    lines.append(f"  largest showable    epsilon {_fmt(emp['max_certifiable_epsilon'])}: the largest "
                 f"lower bound N = {emp['n_trials']} trials could show")
    if _blind_spot(report):
        lines.append("  warning             N trials cannot show a lower bound above the "
                     "certificate: this audit cannot detect a violation")
    utility = report["utility"]
    if utility is None:
        lines.append("  utility             not measured")
    else:
        u, r = utility["unlearned_accuracy"], utility["retrained_accuracy"]
        lines.append(f"  utility             accuracy unlearned {_fmt(u['mean'], 3)} +/- "
                     f"{_fmt(u['std'], 2)}, retrained {_fmt(r['mean'], 3)} +/- "
                     f"{_fmt(r['std'], 2)}")
    for test in emp["renyi"]:
        gaps = [lo - c for lo, c in zip(_renyi_lower(test), test["certified"], strict=True)
                if _value(c) != math.inf]
        lines.append(f"  Rényi test          attack {test['attack']}: largest lower bound minus "
                     f"certified eps(alpha) {_fmt(max(gaps, default=-math.inf), 3)} over "
                     f"{len(test['orders'])} orders (confidence {_fmt(test['confidence'], 6)})")
    tests = verdict["tests"]
    lines.append(f"  levels              {tests['family_size']} test(s) at confidence "
                 f"{_fmt(tests['confidence_each'], 6)} each (Bonferroni), "
                 f"{_fmt(tests['overall_confidence'])} together")
    for entry in verdict["violations"]:
        lines.append(f"  VIOLATION           epsilon >= {_fmt(entry['epsilon'])} > certified "
                     f"{_fmt(cert['epsilon'])} ({_describe_bound(entry)})")
    for entry in verdict["renyi_violations"]:
        lines.append(f"  VIOLATION           Rényi lower bound above the certified curve, attack "
                     f"{entry['attack']}, orders {', '.join(_fmt(a, 3) for a in entry['orders'])}")
    if verdict["status"] == "VIOLATION":
        lines.append("  the mechanism as run does not meet its certificate; possible causes:")
        lines.extend(f"    - {cause}" for cause in verdict["possible_causes"])
    if verdict["status"] == "INCONCLUSIVE":
        needed = verdict["trials_needed"]
        lines.append("  INCONCLUSIVE        these trials could not show a violation"
                     + (f"; about {needed} trials per side needed" if needed else ""))
    return "\n".join(lines)


def _renyi_lower(test: Mapping) -> list[float]:
    """Per order, the larger of the tested directions' lower bounds."""
    if test["direction"] == "both":
        return [max(f, b) for f, b in zip(test["lower_forward"], test["lower_backward"],
                                          strict=True)]
    return list(test["lower_forward"])
