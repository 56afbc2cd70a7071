"""Audit report data: schema constants, validation and reading of ``report.json`` (version 2).

The audit runner produces a plain JSON-able dict (documented in ``docs/report-schema.md``).
Validation is strict on the fields a reader relies on (numbers, labels, the verdict's
arithmetic) because a report is evidence: a lower bound labelled as an estimate, an estimate
labelled as a bound, or a CONSISTENT verdict next to a lower bound above the certificate would
mislead a reviewer, so each raises a ValueError naming the field. Rendering (HTML, figures,
terminal summary) is in :mod:`audits.report`.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from audits.statistics import ScoreOrientation
from empirical.statistics import KIND_ESTIMATE, KIND_LOWER_BOUND, PrivacyDirection

__all__ = [
    "HTML_NAME",
    "atomic_write",
    "json_pieces",
    "JSON_NAME",
    "KIND_ESTIMATE",
    "KIND_LOWER_BOUND",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "STATUSES",
    "EXIT_CODES",
    "ReportPaths",
    "load_report",
    "to_json",
    "validate_report",
]

SCHEMA_ID = "unlearn-verify/audit-report"
SCHEMA_VERSION = 2
STATUSES = ("CONSISTENT", "VIOLATION", "INCONCLUSIVE")
# Exit status of `unlearn audit run/demo` per verdict (documented in docs/audits.md, "Verdicts
# and statuses"): 0 only when the audit could have seen a violation and saw none; 1 and 2 stay
# the CLI's own error and usage statuses.
EXIT_CODES: dict[str, int] = {"CONSISTENT": 0, "VIOLATION": 3, "INCONCLUSIVE": 4}
# The statistic-kind labels are the empirical side's own (one definition for both floors).
JSON_NAME = "report.json"
HTML_NAME = "report.html"

# Floats that are equal up to rounding in a JSON round trip or a max() over the same list.
_REL_TOL = 1e-9
_ABS_TOL = 1e-12


@dataclass(frozen=True)
class ReportPaths:
    """Where :func:`audits.report.write_report` put the two files."""

    json_path: Path
    html_path: Path


# -- validation --------------------------------------------------------------------------------


def _invalid(path: str, problem: str) -> ValueError:
    return ValueError(f"invalid audit report: field '{path}' {problem}")


def _to_plain(value: Any, path: str) -> Any:
    """Deep copy into JSON types; numpy scalars and arrays become floats, ints and lists."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _invalid(path or "<root>", f"has a non-string key {key!r}")
            out[key] = _to_plain(item, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        out = list(value)
        for i, item in enumerate(out):
            # a finite float is kept as it is (the per-trial lists of a report are 10^5 of
            # them); anything else is converted or refused, its path named
            if type(item) is not float or not math.isfinite(item):
                out[i] = _to_plain(item, f"{path}[{i}]")
        return out
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _invalid(path, f"is {value!r}; JSON reports use null or the string 'inf'")
        return float(value)
    if value is None or isinstance(value, str | bool | int):
        return value
    raise _invalid(path, f"has a value of type {type(value).__name__}, which is not JSON")


def _get(mapping: Mapping, key: str, path: str) -> Any:
    if key not in mapping:
        raise _invalid(f"{path}.{key}" if path else key, "is missing")
    return mapping[key]


def _mapping(value: Any, path: str, *, allow_null: bool = False) -> Mapping | None:
    if value is None and allow_null:
        return None
    if not isinstance(value, Mapping):
        expected = "an object or null" if allow_null else "an object"
        raise _invalid(path, f"must be {expected}, got {type(value).__name__}")
    return value


def _string(value: Any, path: str, *, allow_null: bool = False, nonempty: bool = True):
    if value is None and allow_null:
        return None
    if not isinstance(value, str):
        raise _invalid(path, f"must be a string, got {type(value).__name__}")
    if nonempty and not value.strip():
        raise _invalid(path, "must be a non-empty string")
    return value


def _number(
    value: Any,
    path: str,
    *,
    allow_null: bool = False,
    allow_inf: bool = False,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
) -> float | None:
    """A finite number (or 'inf' where the schema allows it) within [low, high]."""
    if value is None and allow_null:
        return None
    if allow_inf and value == "inf":
        number = math.inf
    elif isinstance(value, bool) or not isinstance(value, int | float):
        extra = " or 'inf'" if allow_inf else ""
        extra += " or null" if allow_null else ""
        raise _invalid(path, f"must be a number{extra}, got {value!r}")
    else:
        number = float(value)
    if low is not None and (number < low or (open_low and number == low)):
        raise _invalid(path, f"must be {'>' if open_low else '>='} {low}, got {value!r}")
    if high is not None and (number > high or (open_high and number == high)):
        raise _invalid(path, f"must be {'<' if open_high else '<='} {high}, got {value!r}")
    return number


def _integer(value: Any, path: str, *, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(path, f"must be an integer, got {value!r}")
    if low is not None and value < low:
        raise _invalid(path, f"must be >= {low}, got {value!r}")
    return value


def _list(value: Any, path: str) -> list:
    if not isinstance(value, list):
        raise _invalid(path, f"must be a list, got {type(value).__name__}")
    return value


def _numbers(value: Any, path: str, *, low=None, high=None, min_length: int = 0) -> list[float]:
    items = _list(value, path)
    if len(items) < min_length:
        raise _invalid(path, f"must hold at least {min_length} numbers, got {len(items)}")
    numbers = list(items)
    for i, x in enumerate(numbers):
        # a float within the bounds is its own number; anything else goes through _number,
        # which converts it or names it (no path string per element of a per-trial list)
        if not (type(x) is float and (low is None or x >= low) and (high is None or x <= high)):
            numbers[i] = _number(x, f"{path}[{i}]", low=low, high=high)
    return numbers


def _same(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=_ABS_TOL)


def _check_lower_bound(entry: Any, path: str) -> float:
    entry = _mapping(entry, path)
    for key in ("attack", "statistic", "method"):
        _string(_get(entry, key, path), f"{path}.{key}")
    kind = _get(entry, "kind", path)
    if kind != KIND_LOWER_BOUND:
        raise _invalid(f"{path}.kind", f"must be '{KIND_LOWER_BOUND}', got {kind!r}")
    _number(_get(entry, "confidence", path), f"{path}.confidence", low=0, high=1,
            open_low=True, open_high=True)
    _mapping(_get(entry, "details", path), f"{path}.details")
    # A lower bound from finitely many trials is always finite; 'inf' here would be a bug.
    return _number(_get(entry, "epsilon", path), f"{path}.epsilon", low=0)


def _check_estimate(entry: Any, path: str) -> None:
    entry = _mapping(entry, path)
    _string(_get(entry, "name", path), f"{path}.name")
    _string(_get(entry, "attack", path), f"{path}.attack", allow_null=True)
    _string(_get(entry, "method", path), f"{path}.method")
    kind = _get(entry, "kind", path)
    if kind != KIND_ESTIMATE:
        raise _invalid(f"{path}.kind", f"must be '{KIND_ESTIMATE}', got {kind!r}")
    # Plug-in epsilons are +inf under perfect separation, hence 'inf' is allowed.
    _number(_get(entry, "value", path), f"{path}.value", allow_inf=True)
    interval = _get(entry, "interval", path)
    if interval is not None:
        items = _list(interval, f"{path}.interval")
        if len(items) != 2:
            raise _invalid(f"{path}.interval", f"must be [low, high] or null, got {interval!r}")
        lo = _number(items[0], f"{path}.interval[0]", allow_inf=True)
        hi = _number(items[1], f"{path}.interval[1]", allow_inf=True)
        if lo > hi:
            raise _invalid(f"{path}.interval", f"has low > high: {interval!r}")


def _check_header(report: Mapping) -> None:
    schema = _get(report, "schema", "")
    if schema != SCHEMA_ID:
        raise _invalid("schema", f"must be {SCHEMA_ID!r}, got {schema!r}")
    version = _get(report, "schema_version", "")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _invalid("schema_version", f"must be the integer {SCHEMA_VERSION}, got {version!r}")
    if version != SCHEMA_VERSION:
        raise _invalid(
            "schema_version",
            f"is {version}; this reader understands schema version {SCHEMA_VERSION} only",
        )
    created = _string(_get(report, "created", ""), "created")
    try:
        datetime.fromisoformat(created)
    except ValueError:
        raise _invalid("created", f"must be an ISO-8601 date-time, got {created!r}") from None
    for key in ("code_version", "toolkit_version", "spec_hash"):
        _string(_get(report, key, ""), key)
    _mapping(_get(report, "spec", ""), "spec")


def _check_certificate(report: Mapping) -> float:
    cert = _mapping(_get(report, "certificate", ""), "certificate")
    _string(_get(cert, "bound", "certificate"), "certificate.bound")
    epsilon = _number(_get(cert, "epsilon", "certificate"), "certificate.epsilon",
                      allow_inf=True, low=0)
    _number(_get(cert, "delta", "certificate"), "certificate.delta", low=0, high=1, open_high=True)
    _number(_get(cert, "alpha", "certificate"), "certificate.alpha", allow_null=True,
            allow_inf=True, low=1, open_low=True)
    _string(_get(cert, "conversion", "certificate"), "certificate.conversion", allow_null=True)
    calibration = _mapping(_get(cert, "calibration", "certificate"), "certificate.calibration",
                           allow_null=True)
    if calibration is not None:
        path = "certificate.calibration"
        _string(_get(calibration, "parameter", path), f"{path}.parameter")
        _number(_get(calibration, "value", path), f"{path}.value")
        _number(_get(calibration, "target_epsilon", path), f"{path}.target_epsilon", low=0)
    _mapping(_get(cert, "inputs", "certificate"), "certificate.inputs")
    _mapping(_get(cert, "provenance", "certificate"), "certificate.provenance")
    return epsilon


def _check_empirical(report: Mapping) -> list[float]:
    emp = _mapping(_get(report, "empirical", ""), "empirical")
    _integer(_get(emp, "n_trials", "empirical"), "empirical.n_trials", low=1)
    _number(_get(emp, "confidence", "empirical"), "empirical.confidence", low=0, high=1,
            open_low=True, open_high=True)
    _string(_get(emp, "device", "empirical"), "empirical.device")
    _number(_get(emp, "max_certifiable_epsilon", "empirical"), "empirical.max_certifiable_epsilon",
            allow_inf=True, low=0)
    lower = _list(_get(emp, "lower_bounds", "empirical"), "empirical.lower_bounds")
    epsilons = [_check_lower_bound(e, f"empirical.lower_bounds[{i}]") for i, e in enumerate(lower)]
    estimates = _list(_get(emp, "estimates", "empirical"), "empirical.estimates")
    for i, entry in enumerate(estimates):
        _check_estimate(entry, f"empirical.estimates[{i}]")
    direction = _get(emp, "direction", "empirical")
    if direction not in tuple(ScoreOrientation):
        raise _invalid("empirical.direction", f"must be both, greater or less, got {direction!r}")
    if "attacks" in emp:  # the attacks run, as resolved (absent from reports of older code)
        for i, name in enumerate(_list(emp["attacks"], "empirical.attacks")):
            _string(name, f"empirical.attacks[{i}]")
        _string(_get(emp, "attacks_rule", "empirical"), "empirical.attacks_rule")
    return epsilons


def _check_renyi(report: Mapping) -> list[Mapping]:
    """empirical.renyi: per attack, the Rényi lower-bound curve against the certified curve."""
    tests = _list(_get(report["empirical"], "renyi", "empirical"), "empirical.renyi")
    for i, entry in enumerate(tests):
        path = f"empirical.renyi[{i}]"
        entry = _mapping(entry, path)
        _string(_get(entry, "attack", path), f"{path}.attack")
        if _get(entry, "kind", path) != KIND_LOWER_BOUND:
            raise _invalid(f"{path}.kind", f"must be {KIND_LOWER_BOUND!r}")
        _number(_get(entry, "confidence", path), f"{path}.confidence", low=0, high=1,
                open_low=True, open_high=True)
        orders = _numbers(_get(entry, "orders", path), f"{path}.orders", min_length=1)
        if any(a <= 1 for a in orders):
            raise _invalid(f"{path}.orders", "must all exceed 1")
        lengths = {len(orders)}
        certified = [_number(x, f"{path}.certified[{j}]", low=0, allow_inf=True)
                     for j, x in enumerate(_list(_get(entry, "certified", path),
                                                 f"{path}.certified"))]
        lengths.add(len(certified))
        lower = {}
        for key in ("lower_forward", "lower_backward", "ceiling"):
            lower[key] = _numbers(_get(entry, key, path), f"{path}.{key}", low=0)
            lengths.add(len(lower[key]))
        if len(lengths) != 1:
            raise _invalid(path, "has curves of different lengths")
        direction = _get(entry, "direction", path)
        if direction not in tuple(PrivacyDirection):
            raise _invalid(f"{path}.direction", f"must be both or forward, got {direction!r}")
        above = [a for a, c, f, b in zip(orders, certified, lower["lower_forward"],
                                         lower["lower_backward"], strict=True)
                 if f > c or (direction == PrivacyDirection.BOTH and b > c)]
        claimed = _numbers(_get(entry, "violating_orders", path), f"{path}.violating_orders")
        if sorted(claimed) != sorted(above) or bool(_get(entry, "violation", path)) != bool(above):
            raise _invalid(f"{path}.violating_orders",
                           f"is {claimed!r} but the lower bounds exceed the certified curve at "
                           f"{above!r}")
    return tests


def _tested_epsilon(report: Mapping, verdict: Mapping, stated: float) -> float:
    """The certified epsilon at the delta the verdict's (epsilon, delta) tests ran at: the stated
    one, or the point of the certificate's Rényi curve's privacy profile recomputed from the
    curve the report holds (absent from reports of older code: the stated point)."""
    cert = report["certificate"]
    stated_delta = cert["delta"]
    if "certified_delta" not in verdict:
        return stated
    delta = _number(verdict["certified_delta"], "verdict.certified_delta", low=0, high=1,
                    open_low=True, open_high=True)
    if delta == stated_delta:
        return stated
    curve = cert.get("renyi_curve")
    if not isinstance(curve, Mapping):
        raise _invalid("verdict.certified_delta",
                       f"is {delta!r}, not the certificate's delta {stated_delta!r}, and the "
                       "certificate has no Rényi curve whose privacy profile reaches it")
    from audits.protocols import Certificate

    orders = _numbers(_get(curve, "orders", "certificate.renyi_curve"),
                      "certificate.renyi_curve.orders", min_length=1)
    values = [_number(v, f"certificate.renyi_curve.epsilon[{i}]", allow_inf=True, low=0)
              for i, v in enumerate(_list(_get(curve, "epsilon", "certificate.renyi_curve"),
                                          "certificate.renyi_curve.epsilon"))]
    try:
        certificate = Certificate(epsilon=stated, delta=stated_delta,
                                  renyi_curve=tuple(zip(orders, values, strict=True)),
                                  renyi_direction=curve.get("direction"))
    except ValueError as exc:
        raise _invalid("certificate.renyi_curve", str(exc)) from None
    return certificate.profile_epsilon(delta)


def _check_verdict(report: Mapping, certified: float, lower_epsilons: list[float],
                   renyi_tests: list[Mapping]) -> None:
    verdict = _mapping(_get(report, "verdict", ""), "verdict")
    status = _get(verdict, "status", "verdict")
    if status not in STATUSES:
        raise _invalid("verdict.status", f"must be one of {', '.join(STATUSES)}, got {status!r}")
    claimed = _number(_get(verdict, "certified_epsilon", "verdict"), "verdict.certified_epsilon",
                      allow_inf=True, low=0)
    tested = _tested_epsilon(report, verdict, certified)
    if not _same(claimed, tested):
        where = ("certificate.epsilon" if tested == certified else
                 "the certificate's epsilon at verdict.certified_delta")
        raise _invalid("verdict.certified_epsilon", f"is {claimed!r} but {where} is {tested!r}")
    certified = tested
    best_value = _number(_get(verdict, "max_lower_bound", "verdict"), "verdict.max_lower_bound",
                         low=0)
    if lower_epsilons and not _same(best_value, max(lower_epsilons)):
        raise _invalid("verdict.max_lower_bound",
                       f"is {best_value!r} but the largest empirical lower bound is "
                       f"{max(lower_epsilons)!r}")
    best = _get(verdict, "best_lower_bound", "verdict")
    if best is not None:
        eps = _check_lower_bound(best, "verdict.best_lower_bound")
        if not _same(eps, best_value):
            raise _invalid("verdict.best_lower_bound.epsilon",
                           f"is {eps!r} but verdict.max_lower_bound is {best_value!r}")
    _number(_get(verdict, "tightness", "verdict"), "verdict.tightness", allow_inf=True, low=0)
    _string(_get(verdict, "explanation", "verdict"), "verdict.explanation")
    violations = _list(_get(verdict, "violations", "verdict"), "verdict.violations")
    tested_delta = verdict.get("certified_delta")
    for i, entry in enumerate(violations):
        path = f"verdict.violations[{i}]"
        eps = _check_lower_bound(entry, path)
        details = entry.get("details")
        if (tested_delta is not None and isinstance(details, Mapping) and "delta" in details
                and details["delta"] != tested_delta):
            raise _invalid(f"{path}.details.delta",
                           f"is {details['delta']!r} but verdict.certified_delta is "
                           f"{tested_delta!r}")
        if not eps > certified:
            raise _invalid(f"{path}.epsilon",
                           f"is {eps!r}, which does not exceed the certified {certified!r}")
    renyi_violations = _list(_get(verdict, "renyi_violations", "verdict"),
                             "verdict.renyi_violations")
    flagged = [e["attack"] for e in renyi_tests if e.get("violation")]
    if sorted(_mapping(v, "verdict.renyi_violations[]").get("attack", "") for v in
              renyi_violations) != sorted(flagged):
        raise _invalid("verdict.renyi_violations",
                       f"does not match the Rényi tests that found a violation ({flagged})")
    code = _integer(_get(verdict, "exit_code", "verdict"), "verdict.exit_code", low=0)
    if code != EXIT_CODES[status]:
        raise _invalid("verdict.exit_code", f"is {code} but {status} exits {EXIT_CODES[status]}")
    if status == "VIOLATION" and not violations and not renyi_violations:
        raise _invalid("verdict.violations", "is empty but verdict.status is VIOLATION")
    if status != "VIOLATION" and (violations or renyi_violations):
        raise _invalid("verdict.status", f"is {status} but verdict.violations is not empty")
    if status != "VIOLATION" and best_value > certified:
        raise _invalid("verdict.status",
                       f"is {status} but max_lower_bound {best_value!r} exceeds the certified "
                       f"epsilon {certified!r}")
    causes = _list(_get(verdict, "possible_causes", "verdict"), "verdict.possible_causes")
    if status == "VIOLATION" and not causes:
        raise _invalid("verdict.possible_causes", "must list the possible causes of a VIOLATION")
    if status == "INCONCLUSIVE":
        needed = _get(verdict, "trials_needed", "verdict")
        if needed is not None:
            _integer(needed, "verdict.trials_needed", low=1)


def _check_utility(report: Mapping) -> None:
    utility = _mapping(_get(report, "utility", ""), "utility", allow_null=True)
    if utility is None:
        return
    for side in ("unlearned_accuracy", "retrained_accuracy"):
        path = f"utility.{side}"
        summary = _mapping(_get(utility, side, "utility"), path)
        _number(_get(summary, "mean", path), f"{path}.mean", low=0, high=1)
        _number(_get(summary, "std", path), f"{path}.std", low=0)
    accuracies = _mapping(_get(utility, "accuracies", "utility"), "utility.accuracies")
    for side in ("unlearned", "retrained"):
        _numbers(_get(accuracies, side, "utility.accuracies"), f"utility.accuracies.{side}",
                 low=0, high=1)


def _check_plots(report: Mapping) -> None:
    plots = _mapping(_get(report, "plots", ""), "plots")
    scores = _mapping(_get(plots, "scores", "plots"), "plots.scores")
    for attack, pair in scores.items():
        path = f"plots.scores.{attack}"
        pair = _mapping(pair, path)
        for side in ("unlearned", "retrained"):
            _numbers(_get(pair, side, path), f"{path}.{side}", min_length=1)
    roc = _mapping(_get(plots, "roc", "plots"), "plots.roc")
    for attack, curve in roc.items():
        path = f"plots.roc.{attack}"
        curve = _mapping(curve, path)
        fpr = _numbers(_get(curve, "fpr", path), f"{path}.fpr", low=0, high=1, min_length=2)
        tpr = _numbers(_get(curve, "tpr", path), f"{path}.tpr", low=0, high=1, min_length=2)
        if len(fpr) != len(tpr):
            raise _invalid(path, f"has {len(fpr)} fpr values but {len(tpr)} tpr values")
        _number(_get(curve, "auc", path), f"{path}.auc", low=0, high=1)
    per_example = _mapping(_get(plots, "per_example_epsilon", "plots"),
                           "plots.per_example_epsilon", allow_null=True)
    if per_example is not None:
        path = "plots.per_example_epsilon"
        values = _numbers(_get(per_example, "values", path), f"{path}.values", min_length=1)
        _string(_get(per_example, "label", path), f"{path}.label")
        # optional: each estimate's interval; without one the estimates are not drawn
        for end in ("lower", "upper"):
            if per_example.get(end) is not None:
                ends = _numbers(per_example[end], f"{path}.{end}", min_length=1)
                if len(ends) != len(values):
                    raise _invalid(f"{path}.{end}", f"has {len(ends)} values for "
                                   f"{len(values)} estimates")
        if (per_example.get("lower") is None) != (per_example.get("upper") is None):
            raise _invalid(path, "has only one of lower and upper")
    for index, plot in enumerate(_list(plots.get("extra", []), "plots.extra")):
        _check_line_plot(plot, f"plots.extra[{index}]")


def _check_line_plot(plot: Any, path: str) -> None:
    """An adapter's line plot: id, title, caption, axis labels, log flags, named series."""
    plot = _mapping(plot, path)
    for key in ("id", "title", "caption", "x_label", "y_label"):
        _string(_get(plot, key, path), f"{path}.{key}")
    for key in ("log_x", "log_y"):
        if not isinstance(_get(plot, key, path), bool):
            raise _invalid(f"{path}.{key}", "must be true or false")
    series = _list(_get(plot, "series", path), f"{path}.series")
    if not series:
        raise _invalid(f"{path}.series", "must list at least one series")
    for index, line in enumerate(series):
        where = f"{path}.series[{index}]"
        line = _mapping(line, where)
        _string(_get(line, "label", where), f"{where}.label")
        x = _numbers(_get(line, "x", where), f"{where}.x", min_length=1)
        y = _numbers(_get(line, "y", where), f"{where}.y", min_length=1)
        if len(x) != len(y):
            raise _invalid(where, f"has {len(x)} x values but {len(y)} y values")


def _check_exact_loss(report: Mapping) -> None:
    """``exact_privacy_loss``: null (or absent), or the exact loss of known Gaussian laws."""
    loss = _mapping(report.get("exact_privacy_loss"), "exact_privacy_loss", allow_null=True)
    if loss is None:
        return
    path = "exact_privacy_loss"
    _number(_get(loss, "epsilon", path), f"{path}.epsilon", low=0, allow_inf=True)
    _number(_get(loss, "delta", path), f"{path}.delta", low=0, high=1, open_high=True)
    _number(_get(loss, "gaussian_mu", path), f"{path}.gaussian_mu", low=0)
    for i, pair in enumerate(_list(_get(loss, "renyi", path), f"{path}.renyi")):
        _numbers(pair, f"{path}.renyi[{i}]", low=0, min_length=2)
        if len(pair) != 2 or not pair[0] > 1:
            raise _invalid(f"{path}.renyi[{i}]", f"must be [order > 1, value], got {pair!r}")
    _string(_get(loss, "method", path), f"{path}.method")
    for i, item in enumerate(_list(_get(loss, "assumptions", path), f"{path}.assumptions")):
        _string(item, f"{path}.assumptions[{i}]")


def _check_run(report: Mapping) -> None:
    seeds = _mapping(_get(report, "seeds", ""), "seeds")
    _integer(_get(seeds, "seed", "seeds"), "seeds.seed")
    timing = _mapping(_get(report, "timing", ""), "timing")
    _number(_get(timing, "wall_seconds", "timing"), "timing.wall_seconds", low=0)
    chunks = _integer(_get(timing, "chunks", "timing"), "timing.chunks", low=0)
    resumed = _integer(_get(timing, "chunks_resumed", "timing"), "timing.chunks_resumed", low=0)
    if resumed > chunks:
        raise _invalid("timing.chunks_resumed", f"is {resumed}, more than timing.chunks {chunks}")


def validate_report(report: Mapping) -> dict[str, Any]:
    """Check ``report`` against schema version 2; return a plain JSON-type deep copy.

    numpy scalars and arrays are accepted and converted. Raises ValueError naming the first
    missing or invalid field (a dotted path such as ``empirical.lower_bounds[2].epsilon``).
    """
    if not isinstance(report, Mapping):
        raise ValueError(f"invalid audit report: expected a mapping, got {type(report).__name__}")
    plain = _to_plain(report, "")
    _check_header(plain)
    certified = _check_certificate(plain)
    lower_epsilons = _check_empirical(plain)
    renyi_tests = _check_renyi(plain)
    _check_verdict(plain, certified, lower_epsilons, renyi_tests)
    _check_utility(plain)
    _check_plots(plain)
    _check_exact_loss(plain)
    _check_run(plain)
    return plain


# -- files -------------------------------------------------------------------------------------


def _current_umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (a string, or its pieces in order) to ``path`` through a temporary file
    and a rename (never half-written)."""
    # A killed audit must never leave a half-written report next to a complete store.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines([text] if isinstance(text, str) else text)
        # mkstemp creates 0600 files; a report is an ordinary file, so it follows the umask.
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_ENCODER = json.JSONEncoder(sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False)


def json_pieces(plain: Mapping) -> Iterator[str]:
    """The text of ``report.json`` of a validated report (:func:`validate_report`): sorted keys,
    indent 2, no NaN, in the encoder's pieces. Written piece by piece, the text of a report
    with every trial's accuracy (megabytes, and several times that as the list of pieces
    ``json.dumps`` joins) never sits in memory whole."""
    yield from _ENCODER.iterencode(plain)
    yield "\n"


def to_json(report: Mapping) -> str:
    """The exact text of ``report.json``: validated, sorted keys, indent 2, no NaN."""
    return "".join(json_pieces(validate_report(report)))


def _reject_constant(name: str) -> None:
    raise ValueError(f"invalid audit report: JSON contains {name}; reports use null or 'inf'")


def load_report(dir_or_file: str | Path) -> dict[str, Any]:
    """Read and validate ``report.json`` (an audit directory or the file itself)."""
    path = Path(dir_or_file)
    if path.is_dir():
        path = path / JSON_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no audit report at {path}")
    try:
        report = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ValueError(f"invalid audit report: {path} is not valid JSON ({error})") from None
    return validate_report(report)
