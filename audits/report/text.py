"""Audit report numbers as text, and the terminal summary of a report.

The small formatting rules shared by :func:`summary_text`, the figures
(:mod:`audits.report.figures`) and the HTML page (:mod:`audits.report.html`): how a number, a
confidence split over a family of bounds, or an exact float is written. A leaf module of the
report package: it imports only :mod:`audits.report.schema`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from audits.report.schema import validate_report

# -- numbers as text ---------------------------------------------------------------------------


def number_value(x: Any) -> float:
    """A report number as a float (the schema writes infinity as the string ``"inf"``)."""
    return math.inf if x == "inf" else float(x)


def fmt(x: Any, digits: int = 4) -> str:
    """A report value as short text: ``digits`` significant digits, ``n/a`` for None."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    value = number_value(x)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


# Calibration fields printed exactly (repr), since a rounded epsilon can read as the target.
EXACT_CALIBRATION_KEYS = ("certified_epsilon", "neighbour", "neighbour_epsilon", "value")


def exact_text(x: Any) -> str:
    """A float as the shortest text that reads back as the same float."""
    return repr(float(x)) if isinstance(x, float) else fmt(x)


def exact_ratio(lower: Any, exact: Any) -> str:
    """A lower bound over the exact epsilon as text (``n/a`` when the exact epsilon is 0 or
    infinite)."""
    value = number_value(exact)
    if not (0 < value < math.inf):
        return "n/a"
    return fmt(number_value(lower) / value, 3)


def percent_text(x: float) -> str:
    """A fraction as a percentage with four significant digits."""
    return f"{float(x) * 100:.4g}%"


def bound_confidence(entry: Mapping) -> str:
    """The confidence of one lower bound: where the level was split over a family of bounds
    (Bonferroni), each holds at the per-bound level and all of them jointly at the stated one."""
    details = entry.get("details") or {}
    each = details.get("confidence_each")
    family = details.get("family_size")
    if each is None or not family or int(family) <= 1:
        return f"{percent_text(entry['confidence'])} confidence"
    joint = details.get("overall_confidence", entry["confidence"])
    return f"{percent_text(each)} confidence each ({percent_text(joint)} jointly over {int(family)} bounds)"


def each_level(report: Mapping) -> float | None:
    """The per-bound confidence when the level was split over several bounds, else None."""
    levels = {float(e["details"]["confidence_each"]) for e in lower_bound_entries(report)
              if (e.get("details") or {}).get("confidence_each") is not None
              and int(e["details"].get("family_size", 1)) > 1}
    return min(levels) if levels else None


def score_direction(entry: Mapping) -> str | None:
    """Which way a lower bound read the scores ("higher score = unlearned", ...): the one thing
    that tells apart the bounds of an (attack, statistic) pair run in both orientations."""
    return (entry.get("details") or {}).get("score_direction")


def describe_bound(entry: Mapping) -> str:
    """One lower bound's attack, statistic, score direction, method and confidence, as one line."""
    direction = f", {score_direction(entry)}" if score_direction(entry) else ""
    return (f"attack {entry['attack']}, statistic {entry['statistic']}{direction}; "
            f"{entry['method']}; {bound_confidence(entry)}")


def lower_bound_entries(report: Mapping) -> list[Mapping]:
    """The report's empirical lower bounds, in report order."""
    return list(report["empirical"]["lower_bounds"])


def tested_point(report: Mapping) -> tuple[Any, Any]:
    """(certified epsilon, delta) the verdict's (epsilon, delta) tests ran against: the stated
    pair, or the point of the Rényi curve's privacy profile the allocation pilot chose (reports
    of older code carry the stated pair only)."""
    cert, verdict = report["certificate"], report["verdict"]
    if "certified_delta" not in verdict:
        return cert["epsilon"], cert["delta"]
    return verdict["certified_epsilon"], verdict["certified_delta"]


def blind_spot(report: Mapping) -> bool:
    """True when N trials cannot show a lower bound above the certificate at all."""
    cert = number_value(tested_point(report)[0])
    ceiling = number_value(report["empirical"]["max_certifiable_epsilon"])
    return ceiling <= cert


def summary_text(report: Mapping) -> str:
    """A few lines for the terminal: verdict, certificate, best lower bound, tightness, utility."""
    report = validate_report(report)
    cert = report["certificate"]
    emp = report["empirical"]
    verdict = report["verdict"]
    conversion = cert["conversion"] or "none (bound is already (epsilon, delta))"
    alpha = "" if cert["alpha"] is None else f", alpha {fmt(cert['alpha'])}"
    lines = [
        f"Audit verdict: {verdict['status']}",
        f"  certified epsilon   {fmt(cert['epsilon'])} at delta {fmt(cert['delta'])} from "
        f"{cert['bound']}, conversion {conversion}{alpha}",
    ]
    tested_epsilon, tested_delta = tested_point(report)
    if tested_delta != cert["delta"]:
        lines.append(f"  tested at           epsilon {fmt(tested_epsilon)} at delta "
                     f"{fmt(tested_delta)}: the point of the privacy profile its Rényi curve "
                     "certifies that the allocation pilot chose")
    if emp.get("attacks") is not None:
        lines.append(f"  attacks             {', '.join(emp['attacks']) or 'none'} "
                     f"({emp['attacks_rule']})")
    best = verdict["best_lower_bound"]
    if best is None:
        lines.append("  best lower bound    none (no attack produced a lower bound)")
    else:
        lines.append(f"  best lower bound    epsilon >= {fmt(best['epsilon'])} "
                     f"({describe_bound(best)})")
    lines.append(f"  tightness           {fmt(verdict['tightness'], 3)} "
                 "(best lower bound / certified epsilon)")
    exact = report.get("exact_privacy_loss")
    if exact is not None:
        lines.append(f"  exact epsilon       {fmt(exact['epsilon'])} at delta {fmt(exact['delta'])} "
                     f"(the mechanism's Gaussian laws, mu {fmt(exact['gaussian_mu'])}); best lower "
                     f"bound / exact {exact_ratio(verdict['max_lower_bound'], exact['epsilon'])}")
    lines.append(f"  largest showable    epsilon {fmt(emp['max_certifiable_epsilon'])}: the largest "
                 f"lower bound N = {emp['n_trials']} trials could show (perfectly separated "
                 "scores)")
    seen = verdict.get("detectable")
    if isinstance(seen, dict) and isinstance(seen.get("summary"), str):
        lines.append(f"  could have seen     {seen['summary']} (simulated, "
                     "verdict.detectable)")
    if blind_spot(report):
        lines.append("  warning             N trials cannot show a lower bound above the "
                     "certificate: this audit cannot detect a violation")
    utility = report["utility"]
    if utility is None:
        lines.append("  utility             not measured")
    else:
        u, r = utility["unlearned_accuracy"], utility["retrained_accuracy"]
        lines.append(f"  utility             accuracy unlearned {fmt(u['mean'], 3)} +/- "
                     f"{fmt(u['std'], 2)}, retrained {fmt(r['mean'], 3)} +/- "
                     f"{fmt(r['std'], 2)}")
    for test in emp["renyi"]:
        gaps = [lo - c for lo, c in zip(renyi_lower(test), test["certified"], strict=True)
                if number_value(c) != math.inf]
        lines.append(f"  Rényi test          attack {test['attack']}: largest lower bound minus "
                     f"certified eps(alpha) {fmt(max(gaps, default=-math.inf), 3)} over "
                     f"{len(test['orders'])} orders (confidence {fmt(test['confidence'], 6)})")
    tests = verdict["tests"]
    n_renyi = len(emp["renyi"])
    levels = f"{tests['family_size'] - n_renyi} (epsilon, delta) test(s) at confidence " \
             f"{fmt(tests['confidence_each'], 6)} each"
    if n_renyi and tests.get("alpha_renyi") is not None:
        levels += f", {n_renyi} Rényi test(s) at {fmt(1.0 - tests['alpha_renyi'], 6)} each"
    rule = (tests.get("allocation") or {}).get("rule")
    weights = ", weights from the 5% allocation pilot" if rule == "pilot" else ""
    lines.append(f"  levels              {levels} (weighted Bonferroni{weights}), "
                 f"{fmt(tests['overall_confidence'])} together")
    for entry in verdict["violations"]:
        lines.append(f"  VIOLATION           epsilon >= {fmt(entry['epsilon'])} > certified "
                     f"{fmt(tested_epsilon)} at delta {fmt(tested_delta)} "
                     f"({describe_bound(entry)})")
    for entry in verdict["renyi_violations"]:
        lines.append(f"  VIOLATION           Rényi lower bound above the certified curve, attack "
                     f"{entry['attack']}, orders {', '.join(fmt(a, 3) for a in entry['orders'])}")
    if verdict["status"] == "VIOLATION":
        lines.append("  the mechanism as run does not meet its certificate; possible causes:")
        lines.extend(f"    - {cause}" for cause in verdict["possible_causes"])
    if verdict["status"] == "INCONCLUSIVE":
        needed = verdict["trials_needed"]
        lines.append("  INCONCLUSIVE        these trials could not show a violation"
                     + (f"; about {needed} trials per side needed" if needed else ""))
    return "\n".join(lines)


def renyi_lower(test: Mapping) -> list[float]:
    """Per order, the larger of the tested directions' lower bounds."""
    if test["direction"] == "both":
        return [max(f, b) for f, b in zip(test["lower_forward"], test["lower_backward"],
                                          strict=True)]
    return list(test["lower_forward"])
