"""Audit reports: validate, write, read and render ``report.json`` (schema version 1).

The audit runner produces a plain JSON-able dict (documented in ``docs/report-schema.md``);
this module checks it against the schema, writes ``report.json`` and a self-contained
``report.html`` (inline CSS, figures as base64 PNG drawn with matplotlib's Agg canvas, no
scripts, no external resources), and prints a short terminal summary.

Validation is strict on the fields a reader relies on (numbers, labels, the verdict's
arithmetic) because a report is evidence: a lower bound labelled as an estimate, an estimate
labelled as a bound, or a CONSISTENT verdict next to a lower bound above the certificate would
mislead a reviewer, so each raises a ValueError naming the field.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA_ID = "unlearn-verify/audit-report"
SCHEMA_VERSION = 1
STATUSES = ("CONSISTENT", "VIOLATION")
KIND_LOWER_BOUND = "lower bound"
KIND_ESTIMATE = "estimate"
JSON_NAME = "report.json"
HTML_NAME = "report.html"

# Floats that are equal up to rounding in a JSON round trip or a max() over the same list.
_REL_TOL = 1e-9
_ABS_TOL = 1e-12

_COLOUR_UNLEARNED = "#d95f02"
_COLOUR_RETRAINED = "#1b9e77"
_COLOUR_CERTIFICATE = "#6a3d9a"
_COLOUR_BOUND = "#1f78b4"
_COLOUR_VIOLATION = "#b3261e"


@dataclass(frozen=True)
class ReportPaths:
    """Where :func:`write_report` put the two files."""

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
        return [_to_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
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
    return [_number(x, f"{path}[{i}]", low=low, high=high) for i, x in enumerate(items)]


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
    return epsilons


def _check_verdict(report: Mapping, certified: float, lower_epsilons: list[float]) -> None:
    verdict = _mapping(_get(report, "verdict", ""), "verdict")
    status = _get(verdict, "status", "verdict")
    if status not in STATUSES:
        raise _invalid("verdict.status", f"must be one of {', '.join(STATUSES)}, got {status!r}")
    claimed = _number(_get(verdict, "certified_epsilon", "verdict"), "verdict.certified_epsilon",
                      allow_inf=True, low=0)
    if not _same(claimed, certified):
        raise _invalid("verdict.certified_epsilon",
                       f"is {claimed!r} but certificate.epsilon is {certified!r}")
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
    for i, entry in enumerate(violations):
        path = f"verdict.violations[{i}]"
        eps = _check_lower_bound(entry, path)
        if not eps > certified:
            raise _invalid(f"{path}.epsilon",
                           f"is {eps!r}, which does not exceed the certified {certified!r}")
    if status == "VIOLATION" and not violations:
        raise _invalid("verdict.violations", "is empty but verdict.status is VIOLATION")
    if status == "CONSISTENT" and violations:
        raise _invalid("verdict.status", "is CONSISTENT but verdict.violations is not empty")
    if status == "CONSISTENT" and best_value > certified:
        raise _invalid("verdict.status",
                       f"is CONSISTENT but max_lower_bound {best_value!r} exceeds the certified "
                       f"epsilon {certified!r}")


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
        _numbers(_get(per_example, "values", path), f"{path}.values", min_length=1)
        _string(_get(per_example, "label", path), f"{path}.label")


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
    """Check ``report`` against schema version 1; return a plain JSON-type deep copy.

    numpy scalars and arrays are accepted and converted. Raises ValueError naming the first
    missing or invalid field (a dotted path such as ``empirical.lower_bounds[2].epsilon``).
    """
    if not isinstance(report, Mapping):
        raise ValueError(f"invalid audit report: expected a mapping, got {type(report).__name__}")
    plain = _to_plain(report, "")
    _check_header(plain)
    certified = _check_certificate(plain)
    lower_epsilons = _check_empirical(plain)
    _check_verdict(plain, certified, lower_epsilons)
    _check_utility(plain)
    _check_plots(plain)
    _check_run(plain)
    return plain


# -- files -------------------------------------------------------------------------------------


def _atomic_write(path: Path, text: str) -> None:
    # A killed audit must never leave a half-written report next to a complete store.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_json(report: Mapping) -> str:
    """The exact text of ``report.json``: validated, sorted keys, indent 2, no NaN."""
    plain = validate_report(report)
    return json.dumps(plain, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def write_report(report: Mapping, out_dir: str | Path) -> ReportPaths:
    """Validate ``report`` and write ``report.json`` and ``report.html`` into ``out_dir``.

    Nothing is written when validation fails.
    """
    plain = validate_report(report)
    text = json.dumps(plain, sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    page = render_html(plain)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(json_path=out / JSON_NAME, html_path=out / HTML_NAME)
    _atomic_write(paths.json_path, text)
    _atomic_write(paths.html_path, page)
    return paths


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


def _percent(x: float) -> str:
    return f"{float(x) * 100:.4g}%"


def _describe_bound(entry: Mapping) -> str:
    return (f"attack {entry['attack']}, statistic {entry['statistic']}; {entry['method']}; "
            f"{_percent(entry['confidence'])} confidence")


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
    lines.append(f"  max certifiable     epsilon {_fmt(emp['max_certifiable_epsilon'])} "
                 f"with N = {emp['n_trials']} trials")
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
    for entry in verdict["violations"]:
        lines.append(f"  VIOLATION           epsilon >= {_fmt(entry['epsilon'])} > certified "
                     f"{_fmt(cert['epsilon'])} ({_describe_bound(entry)})")
    return "\n".join(lines)


# -- figures -----------------------------------------------------------------------------------


def _mpl_text(text: Any) -> str:
    # '$' would start mathtext; a leading '_' hides a legend entry.
    out = str(text).replace("$", r"\$")
    return " " + out if out.startswith("_") else out


def _new_figure(width: float, height: float):
    # The Figure/Agg canvas pair avoids pyplot's global state and any GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png_base64(figure) -> str:
    buffer = io.BytesIO()
    # No Software tag: the same report renders to the same bytes on every matplotlib version.
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _certificate_tpr(fpr: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """Largest TPR any test can reach at ``fpr`` under an (epsilon, delta) guarantee."""
    with np.errstate(over="ignore"):
        first = np.exp(epsilon) * fpr + delta
    second = 1.0 - np.exp(-epsilon) * (1.0 - delta - fpr)
    return np.clip(np.minimum(np.minimum(first, second), 1.0), 0.0, 1.0)


def _figure_roc(report: Mapping, *, log_axes: bool):
    roc = report["plots"]["roc"]
    cert = report["certificate"]
    epsilon, delta = _value(cert["epsilon"]), float(cert["delta"])
    figure = _new_figure(6.4, 5.0)
    axes = figure.add_subplot()
    positive = [v for c in roc.values() for v in c["fpr"] if v > 0]
    floor = max(min(positive) / 2, 1e-7) if positive else 1e-4
    for attack, curve in roc.items():
        fpr, tpr = np.asarray(curve["fpr"]), np.asarray(curve["tpr"])
        if log_axes:
            keep = (fpr > 0) & (tpr > 0)
            fpr, tpr = fpr[keep], tpr[keep]
        axes.plot(fpr, tpr, drawstyle="steps-post", linewidth=1.6,
                  label=_mpl_text(f"{attack} (AUC {_fmt(curve['auc'], 3)})"))
    grid = np.logspace(math.log10(floor), 0, 400) if log_axes else np.linspace(0, 1, 401)
    if math.isfinite(epsilon):
        axes.plot(grid, _certificate_tpr(grid, epsilon, delta), color=_COLOUR_CERTIFICATE,
                  linestyle="--", linewidth=1.6,
                  label=f"certificate limit (ε={_fmt(epsilon, 3)}, δ={_fmt(delta, 2)})")
    axes.plot(grid, grid, color="0.6", linestyle=":", linewidth=1.0, label="chance")
    if log_axes:
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(floor, 1)
        axes.set_ylim(floor, 1.05)
        axes.set_title("ROC, log-log axes (low false-positive region)")
    else:
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1.01)
        axes.set_aspect("equal")
        axes.set_title("ROC, linear axes")
    axes.set_xlabel("false positive rate")
    axes.set_ylabel("true positive rate")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    return figure


def _figure_epsilon(report: Mapping):
    from matplotlib.patches import Patch

    bounds = _lower_bounds(report)
    certified = _value(report["certificate"]["epsilon"])
    ceiling = _value(report["empirical"]["max_certifiable_epsilon"])
    figure = _new_figure(7.5, 1.9 + 0.42 * max(len(bounds), 1))
    axes = figure.add_subplot()
    labels = [_mpl_text(f"{b['attack']} / {b['statistic']}") for b in bounds]
    values = [float(b["epsilon"]) for b in bounds]
    colours = [_COLOUR_VIOLATION if v > certified else _COLOUR_BOUND for v in values]
    positions = np.arange(len(bounds))
    handles = []
    if bounds:
        axes.barh(positions, values, color=colours, height=0.6)
        for colour, name in ((_COLOUR_BOUND, "lower bound within the certificate"),
                             (_COLOUR_VIOLATION, "lower bound above the certificate")):
            if colour in colours:
                handles.append(Patch(color=colour, label=name))
        for y, v in zip(positions, values, strict=True):
            axes.annotate(_fmt(v, 3), (v, y), xytext=(3, 0), textcoords="offset points",
                          va="center", fontsize=8)
        axes.set_yticks(positions, labels, fontsize=8)
        axes.set_ylim(-0.7, len(bounds) - 0.3)
        axes.invert_yaxis()
    else:
        axes.set_yticks([])
        axes.text(0.5, 0.5, "no empirical lower bounds", transform=axes.transAxes,
                  ha="center", va="center")
    finite = [v for v in [*values, certified, ceiling] if math.isfinite(v)]
    right = max(finite, default=1.0) * 1.18 or 1.0
    if math.isfinite(certified):
        handles.append(axes.axvline(certified, color=_COLOUR_CERTIFICATE, linewidth=2.2,
                                    label=f"certified ε = {_fmt(certified, 4)}"))
    if math.isfinite(ceiling):
        n_trials = report["empirical"]["n_trials"]
        handles.append(axes.axvline(
            ceiling, color="0.35", linestyle="--", linewidth=1.4,
            label=f"max certifiable ε with N = {n_trials}: {_fmt(ceiling, 3)}"))
    axes.set_xlim(0, right)
    axes.set_xlabel("ε")
    axes.set_title("Certified ε (upper bound) vs empirical lower bounds")
    axes.grid(True, axis="x", alpha=0.3)
    if handles:
        figure.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8,
                      frameon=False)
    return figure


def _figure_scores(report: Mapping):
    scores = report["plots"]["scores"]
    count = len(scores)
    columns = min(count, 2)
    rows = math.ceil(count / columns)
    figure = _new_figure(4.4 * columns + 0.6, 3.3 * rows)
    for index, (attack, pair) in enumerate(scores.items()):
        axes = figure.add_subplot(rows, columns, index + 1)
        unlearned = np.asarray(pair["unlearned"], dtype=float)
        retrained = np.asarray(pair["retrained"], dtype=float)
        both = np.concatenate([unlearned, retrained])
        bins = np.histogram_bin_edges(both, bins=min(60, max(10, int(np.sqrt(both.size)))))
        for values, colour, name in ((unlearned, _COLOUR_UNLEARNED, "unlearned"),
                                     (retrained, _COLOUR_RETRAINED, "retrained")):
            axes.hist(values, bins=bins, color=colour, alpha=0.45, histtype="stepfilled",
                      label=f"{name} (n={values.size})")
            axes.hist(values, bins=bins, color=colour, histtype="step", linewidth=1.2)
        axes.set_title(_mpl_text(f"attack: {attack}"), fontsize=10)
        axes.set_xlabel("attack score")
        axes.set_ylabel("models")
        axes.legend(fontsize=8)
    return figure


def _figure_per_example(report: Mapping):
    per_example = report["plots"]["per_example_epsilon"]
    values = np.asarray(per_example["values"], dtype=float)
    certified = _value(report["certificate"]["epsilon"])
    figure = _new_figure(6.4, 4.4)
    axes = figure.add_subplot()
    axes.hist(values, bins=min(50, max(10, int(np.sqrt(values.size)))), color=_COLOUR_BOUND,
              alpha=0.8)
    if math.isfinite(certified):
        axes.axvline(certified, color=_COLOUR_CERTIFICATE, linewidth=2.0,
                     label=f"certified ε = {_fmt(certified, 4)}")
        axes.legend(fontsize=8)
    axes.set_xlabel(_mpl_text(per_example["label"]))
    axes.set_ylabel("examples")
    axes.set_title(f"Per-example ε ({values.size} examples)")
    return figure


def _figure_utility(report: Mapping):
    utility = report["utility"]
    unlearned = np.asarray(utility["accuracies"]["unlearned"], dtype=float)
    retrained = np.asarray(utility["accuracies"]["retrained"], dtype=float)
    figure = _new_figure(6.4, 4.4)
    axes = figure.add_subplot()
    names = ["unlearned", "retrained"]
    colours = [_COLOUR_UNLEARNED, _COLOUR_RETRAINED]
    if unlearned.size and retrained.size:
        boxes = axes.boxplot([unlearned, retrained], widths=0.45, showfliers=False,
                             patch_artist=True, medianprops={"color": "black"})
        for patch, colour in zip(boxes["boxes"], colours, strict=True):
            patch.set_facecolor(colour)
            patch.set_alpha(0.35)
        # Fixed-seed jitter so the same report always renders to the same picture.
        jitter = np.random.default_rng(0)
        for position, values, colour in zip((1, 2), (unlearned, retrained), colours, strict=True):
            xs = position + jitter.uniform(-0.16, 0.16, size=values.size)
            axes.scatter(xs, values, s=7, color=colour, alpha=0.55, linewidths=0)
        axes.set_xticks([1, 2], [f"{n} (n={v.size})" for n, v in
                                 zip(names, (unlearned, retrained), strict=True)])
    else:
        means = [utility["unlearned_accuracy"]["mean"], utility["retrained_accuracy"]["mean"]]
        stds = [utility["unlearned_accuracy"]["std"], utility["retrained_accuracy"]["std"]]
        axes.bar([1, 2], means, yerr=stds, color=colours, alpha=0.7, capsize=6)
        axes.set_xticks([1, 2], names)
    axes.set_ylabel("test accuracy")
    axes.set_title("Utility: test accuracy of unlearned vs retrained models")
    axes.grid(True, axis="y", alpha=0.3)
    return figure


@dataclass(frozen=True)
class _Figure:
    id: str
    title: str
    alt: str
    caption: str
    png_base64: str
    half: bool = False


def _figures(report: Mapping) -> tuple[list[_Figure], list[str]]:
    """The figures the report has data for, and a note for each one it has not."""
    figures: list[_Figure] = []
    notes: list[str] = []
    plots = report["plots"]
    n_trials = report["empirical"]["n_trials"]

    def add(fig_id, title, alt, caption, build, *, half=False):
        figure = build()
        figures.append(_Figure(fig_id, title, alt, caption, _png_base64(figure), half))

    if plots["roc"]:
        attacks = ", ".join(plots["roc"])
        caption = ("Each curve is one attack telling unlearned from retrained models. The dashed "
                   "line is the most any test can achieve if the certificate holds; a curve far "
                   "above it is evidence against the certificate (up to sampling noise).")
        add("fig-roc-linear", "ROC curves (linear axes)",
            f"ROC curves on linear axes for attacks {attacks}, with the certificate's limit",
            caption, lambda: _figure_roc(report, log_axes=False), half=True)
        add("fig-roc-log", "ROC curves (log-log axes)",
            f"ROC curves on log-log axes for attacks {attacks}, with the certificate's limit",
            "The same curves on log-log axes, where attacks that are confident on a few "
            "models (low false-positive rate) show up.",
            lambda: _figure_roc(report, log_axes=True), half=True)
    else:
        notes.append("No ROC curves in this report (plots.roc is empty).")
    add("fig-epsilon", "Certified vs empirical ε",
        "Bar chart of every empirical lower bound on epsilon against the certified epsilon "
        "and the largest epsilon the trials could certify",
        f"Bars are lower bounds on ε (red if above the certificate). The solid line is the "
        f"certified ε; the dashed line is the largest lower bound {n_trials} trials could "
        f"ever show, however strong the attack.",
        lambda: _figure_epsilon(report))
    if plots["scores"]:
        add("fig-scores", "Attack scores",
            f"Histograms of the attack score for unlearned and retrained models, attacks "
            f"{', '.join(plots['scores'])}",
            "If unlearning works, the two histograms of each attack overlap; the more they "
            "separate, the more the unlearned model leaks about the deleted data.",
            lambda: _figure_scores(report))
    else:
        notes.append("No attack scores in this report (plots.scores is empty).")
    if plots["per_example_epsilon"] is not None:
        add("fig-per-example-epsilon", "Per-example ε",
            f"Histogram of per-example epsilon: {plots['per_example_epsilon']['label']}",
            f"One value per example ({plots['per_example_epsilon']['label']}); the vertical "
            "line is the certified ε.",
            lambda: _figure_per_example(report), half=True)
    else:
        notes.append("No per-example ε in this report (plots.per_example_epsilon is null).")
    if report["utility"] is not None:
        add("fig-utility", "Utility",
            "Box plot of the test accuracy of unlearned and retrained models",
            "Test accuracy of every unlearned model and every model retrained from scratch "
            "without the deleted data.",
            lambda: _figure_utility(report), half=True)
    else:
        notes.append("Utility was not measured (utility is null).")
    return figures, notes


# -- HTML --------------------------------------------------------------------------------------


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


_CSS = """
:root { --ok: #1b7f3b; --bad: #b3261e; --ink: #1d1d1f; --muted: #5f6368; --line: #d9dce1; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial,
       sans-serif; color: var(--ink); background: #f4f5f7; }
main { max-width: 1120px; margin: 0 auto; padding: 0 24px 48px; }
header.verdict { color: #fff; padding: 28px 32px; margin: 0 0 24px; }
header.verdict.consistent { background: var(--ok); }
header.verdict.violation { background: var(--bad); }
header.verdict .inner { max-width: 1072px; margin: 0 auto; }
header.verdict h1 { margin: 0 0 6px; font-size: 30px; letter-spacing: .02em; }
header.verdict p { margin: 6px 0; max-width: 900px; }
header.verdict .status { font-weight: 800; padding: 2px 10px; border: 2px solid #fff;
                         border-radius: 6px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
          padding: 18px 24px; margin: 0 0 20px; }
h2 { font-size: 20px; margin: 0 0 12px; }
h3 { font-size: 16px; margin: 18px 0 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { flex: 1 1 180px; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px;
        background: #fafbfc; }
.card .label { color: var(--muted); font-size: 13px; font-weight: 600; }
.card .number { font-size: 22px; font-weight: 700; }
.card .sub { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px;
         border-bottom: 1px solid var(--line); }
th { background: #f0f2f5; font-weight: 600; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.violation td { background: #fdecea; }
table.kv th { width: 230px; background: transparent; color: var(--muted); font-weight: 600; }
.estimates { border-left: 5px solid #e0a800; padding-left: 14px; }
.tag { display: inline-block; font-size: 12px; padding: 1px 8px; border-radius: 10px;
       background: #fff3cd; color: #7a5b00; font-weight: 600; }
.tag.bound { background: #e1eefb; color: #17508a; }
.warning { background: #fff3cd; border: 1px solid #e0a800; border-radius: 6px; padding: 8px 12px; }
.figures { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
figure { margin: 12px 0; flex: 1 1 100%; }
figure.half { flex: 1 1 460px; max-width: calc(50% - 12px); }
header.verdict ul { margin: 6px 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line);
             border-radius: 4px; background: #fff; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; max-width: 900px; }
figcaption strong { color: var(--ink); }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 10px;
      overflow-x: auto; font-size: 12.5px; white-space: pre-wrap; word-break: break-word; }
ul { margin: 0; padding-left: 20px; }
details summary { cursor: pointer; color: var(--muted); }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 12px; }
"""


def _render_value(value: Any) -> str:
    """Any JSON value as escaped HTML: scalars as text, lists as bullets, objects as tables."""
    if isinstance(value, Mapping):
        if not value:
            return "<em>none</em>"
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_render_value(v)}</td></tr>"
                       for k, v in value.items())
        return f'<table class="kv">{rows}</table>'
    if isinstance(value, list):
        if not value:
            return "<em>none</em>"
        if all(not isinstance(v, Mapping | list) for v in value) and len(value) > 12:
            return f"<code>{_e(json.dumps(value))}</code>"
        return "<ul>" + "".join(f"<li>{_render_value(v)}</li>" for v in value) + "</ul>"
    if value is None:
        return "<em>null</em>"
    if isinstance(value, float):
        return _e(_fmt(value, 6))
    return _e(value)


def _kv_table(rows: Sequence[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _plain_explanation(report: Mapping) -> list[str]:
    cert, emp, verdict = report["certificate"], report["empirical"], report["verdict"]
    eps, delta = _fmt(cert["epsilon"]), _fmt(cert["delta"])
    confidence = _percent(emp["confidence"])
    n = emp["n_trials"]
    intro = (f"The certificate ({cert['bound']}) promises that the unlearned model is "
             f"statistically almost indistinguishable from a model retrained without the deleted "
             f"data: privacy loss at most ε = {eps} with δ = {delta}. The audit ran {n} trials "
             f"and attacked the resulting models; each attack gives a lower bound on the true "
             f"ε that holds with the stated confidence ({confidence}).")
    best = verdict["best_lower_bound"]
    best_text = ("No attack produced a lower bound." if best is None else
                 f"The strongest attack shows ε ≥ {_fmt(best['epsilon'])} "
                 f"(tightness {_fmt(verdict['tightness'], 3)}: lower bound / certificate).")
    if verdict["status"] == "CONSISTENT":
        outcome = ("No lower bound exceeds the certificate, so this experiment found no evidence "
                   "against it. This does not prove the certificate; it means the attacks could "
                   "not refute it.")
    else:
        count = len(verdict["violations"])
        subject = "1 lower bound exceeds" if count == 1 else f"{count} lower bounds exceed"
        outcome = (f"{subject} the certified ε: the real privacy loss is larger than the "
                   "certificate allows. Either the implementation does not match the theorem's "
                   "assumptions, or the theorem (or its parameters) is wrong. The violating "
                   "numbers are listed below.")
    return [intro, f"{best_text} {outcome}"]


def _header(report: Mapping) -> str:
    verdict = report["verdict"]
    status = verdict["status"]
    certified = _fmt(report["certificate"]["epsilon"])
    violations = "".join(
        "<li>" + _e(f"ε ≥ {_fmt(v['epsilon'])} > certified ε = {certified}: ")
        + _e(_describe_bound(v)) + "</li>" for v in verdict["violations"])
    violations = f"<ul>{violations}</ul>" if violations else ""
    return (
        f'<header class="verdict {status.lower()}" id="verdict"><div class="inner">'
        f'<h1>Unlearning audit: <span class="status">{_e(status)}</span></h1>'
        + "".join(f"<p>{_e(p)}</p>" for p in _plain_explanation(report))
        + violations
        + f"<p><strong>Runner's explanation:</strong> {_e(verdict['explanation'])}</p>"
        + "</div></header>"
    )


def _cards(report: Mapping) -> str:
    cert, emp, verdict = report["certificate"], report["empirical"], report["verdict"]
    utility = report["utility"]
    cards = [
        ("certified ε (upper bound)", _fmt(cert["epsilon"]),
         f"δ = {_fmt(cert['delta'])}, {cert['bound']}"),
        ("best empirical lower bound", _fmt(verdict["max_lower_bound"]),
         f"{_percent(emp['confidence'])} confidence"),
        ("tightness", _fmt(verdict["tightness"], 3), "lower bound / certificate"),
        ("max certifiable ε", _fmt(emp["max_certifiable_epsilon"]),
         f"with N = {emp['n_trials']} trials"),
    ]
    if utility is not None:
        cards.append(("accuracy unlearned / retrained",
                      f"{_fmt(utility['unlearned_accuracy']['mean'], 3)} / "
                      f"{_fmt(utility['retrained_accuracy']['mean'], 3)}", "mean test accuracy"))
    body = "".join(
        f'<div class="card"><div class="label">{_e(label)}</div>'
        f'<div class="number">{_e(number)}</div><div class="sub">{_e(sub)}</div></div>'
        for label, number, sub in cards)
    warning = ""
    if _blind_spot(report):
        warning = ('<p class="warning">With this many trials no lower bound can exceed '
                   f"{_e(_fmt(emp['max_certifiable_epsilon']))}, which is not above the "
                   "certified ε: this audit could not have detected a violation. Run more "
                   "trials for a meaningful test.</p>")
    return (f'<section id="summary"><h2>Summary</h2><div class="cards">{body}</div>{warning}'
            "</section>")


_PROVENANCE_ORDER = ("bound", "title", "label", "citation", "paper", "guarantee",
                     "guarantee_description", "variant", "assumptions", "preconditions")


def _certificate_section(report: Mapping) -> str:
    cert = report["certificate"]
    rows = [
        ("bound (theorem id)", f"<code>{_e(cert['bound'])}</code>"),
        ("certified ε (interval upper end)", _e(_fmt(cert["epsilon"], 8))),
        ("δ", _e(_fmt(cert["delta"], 8))),
        ("Rényi order α", _e(_fmt(cert["alpha"], 8)) if cert["alpha"] is not None
         else "<em>not applicable</em>"),
        ("conversion", _e(cert["conversion"]) if cert["conversion"]
         else "<em>none: the bound is already an (ε, δ) guarantee</em>"),
    ]
    calibration = cert["calibration"]
    if calibration is None:
        rows.append(("calibration", "<em>none: parameters given by the spec</em>"))
    else:
        rows.append(("calibrated parameter",
                     f"<code>{_e(calibration['parameter'])}</code> = "
                     f"{_e(_fmt(calibration['value'], 8))} for target ε = "
                     f"{_e(_fmt(calibration['target_epsilon'], 6))}"))
        extra = {k: v for k, v in calibration.items()
                 if k not in ("parameter", "value", "target_epsilon")}
        if extra:
            rows.append(("calibration details", _render_value(extra)))
    provenance = cert["provenance"]
    ordered = [k for k in _PROVENANCE_ORDER if k in provenance]
    ordered += [k for k in provenance if k not in _PROVENANCE_ORDER]
    prov_rows = [(k, _render_value(provenance[k])) for k in ordered]
    return (
        '<section id="certificate"><h2>Certificate (upper bound)</h2>'
        + _kv_table(rows)
        + "<h3>Provenance</h3>" + _kv_table(prov_rows)
        + "<h3>Inputs to the bound</h3>" + _render_value(cert["inputs"])
        + "</section>"
    )


def _lower_bound_rows(entries: Sequence[Mapping], certified: float) -> str:
    rows = []
    for entry in entries:
        eps = float(entry["epsilon"])
        klass = ' class="violation"' if eps > certified else ""
        flag = " (exceeds certificate)" if eps > certified else ""
        details = (f"<details><summary>details</summary>"
                   f"<pre>{_e(json.dumps(entry['details'], indent=1, sort_keys=True))}</pre>"
                   "</details>") if entry["details"] else ""
        rows.append(
            f"<tr{klass}><td>{_e(entry['attack'])}</td><td>{_e(entry['statistic'])}</td>"
            f"<td>{_e(entry['method'])}{details}</td>"
            f'<td class="num">{_e(_percent(entry["confidence"]))}</td>'
            f'<td class="num"><strong>{_e(_fmt(eps, 6))}</strong>{_e(flag)}</td></tr>'
        )
    return "".join(rows)


def _empirical_section(report: Mapping) -> str:
    emp, verdict = report["empirical"], report["verdict"]
    certified = _value(report["certificate"]["epsilon"])
    head = ("<tr><th>attack</th><th>statistic</th><th>method</th><th>confidence</th>"
            "<th>ε (lower bound)</th></tr>")
    bounds = _lower_bounds(report)
    table = (f"<table>{head}{_lower_bound_rows(bounds, certified)}</table>" if bounds
             else "<p><em>No lower bounds.</em></p>")
    violations = ""
    if verdict["violations"]:
        violations = ('<h3 id="violations">Violations: lower bounds above the certificate</h3>'
                      f"<table>{head}{_lower_bound_rows(verdict['violations'], certified)}"
                      "</table>")
    estimate_rows = "".join(
        f"<tr><td>{_e(x['name'])}</td><td>{_e(x['attack'] if x['attack'] is not None else '—')}"
        f'</td><td class="num">{_e(_fmt(x["value"], 6))}</td><td class="num">'
        + (_e(f"[{_fmt(x['interval'][0])}, {_fmt(x['interval'][1])}]")
           if x["interval"] is not None else "—")
        + f"</td><td>{_e(x['method'])}</td></tr>"
        for x in emp["estimates"])
    estimates = (
        '<div class="estimates" id="estimates">'
        '<h3>Plug-in estimates (not bounds) <span class="tag">estimate</span></h3>'
        "<p>These numbers are computed directly from the observed rates, with no confidence "
        "correction. They are often biased (upwards, when maximised over thresholds) and are "
        "<strong>not bounds</strong>: they are never compared with the certificate.</p>"
        + (f"<table><tr><th>name</th><th>attack</th><th>estimate</th><th>interval</th>"
           f"<th>method</th></tr>{estimate_rows}</table>" if emp["estimates"]
           else "<p><em>No estimates.</em></p>")
        + "</div>"
    )
    facts = _kv_table([
        ("trials N", _e(emp["n_trials"])),
        ("confidence of each lower bound", _e(_percent(emp["confidence"]))),
        ("device", _e(emp["device"])),
        ("largest lower bound N trials could show", _e(_fmt(emp["max_certifiable_epsilon"], 6))),
    ])
    return (
        '<section id="empirical"><h2>Empirical evidence</h2>' + facts
        + '<h3 id="lower-bounds">Empirical lower bounds on ε '
        '<span class="tag bound">lower bound</span></h3>'
        "<p>Each row is a lower bound on the true ε that holds with at least the stated "
        "confidence. Any row above the certified ε is a violation.</p>"
        + table + violations + estimates + "</section>"
    )


def _figures_section(figures: Sequence[_Figure], notes: Sequence[str]) -> str:
    parts = ['<section id="figures"><h2>Figures</h2><div class="figures">']
    for fig in figures:
        klass = ' class="half"' if fig.half else ""
        parts.append(
            f'<figure id="{_e(fig.id)}"{klass}><img alt="{_e(fig.alt)}" '
            f'src="data:image/png;base64,{fig.png_base64}">'
            f"<figcaption><strong>{_e(fig.title)}.</strong> {_e(fig.caption)}</figcaption>"
            "</figure>"
        )
    parts.append("</div>")
    parts.extend(f'<p class="note">{_e(note)}</p>' for note in notes)
    parts.append("</section>")
    return "".join(parts)


def _utility_section(report: Mapping) -> str:
    utility = report["utility"]
    if utility is None:
        return ('<section id="utility"><h2>Utility</h2><p><em>Not measured.</em></p></section>')
    rows = []
    for name, key, side in (("unlearned", "unlearned_accuracy", "unlearned"),
                            ("retrained", "retrained_accuracy", "retrained")):
        summary = utility[key]
        rows.append((f"{name} models", _e(f"{_fmt(summary['mean'], 4)} ± {_fmt(summary['std'], 3)}"
                                          f" (n = {len(utility['accuracies'][side])})")))
    return '<section id="utility"><h2>Utility (test accuracy)</h2>' + _kv_table(rows) + "</section>"


def _inputs_section(report: Mapping) -> str:
    timing = report["timing"]
    rows = [
        ("created", _e(report["created"])),
        ("code version", f"<code>{_e(report['code_version'])}</code>"),
        ("toolkit version", _e(report["toolkit_version"])),
        ("spec hash", f"<code>{_e(report['spec_hash'])}</code>"),
        ("seeds", _render_value(report["seeds"])),
        ("wall time", _e(f"{_fmt(timing['wall_seconds'], 4)} s")),
        ("chunks (resumed from store)", _e(f"{timing['chunks']} ({timing['chunks_resumed']})")),
        ("schema", _e(f"{report['schema']} version {report['schema_version']}")),
    ]
    spec = json.dumps(report["spec"], indent=2, sort_keys=True, ensure_ascii=False)
    return ('<section id="inputs"><h2>Inputs, seeds and code version</h2>' + _kv_table(rows)
            + f"<h3>Audit spec</h3><pre>{_e(spec)}</pre></section>")


def render_html(report: Mapping) -> str:
    """A self-contained HTML page for ``report``: inline CSS, base64 PNG figures, no scripts."""
    report = validate_report(report)
    figures, notes = _figures(report)
    status = report["verdict"]["status"]
    title = f"Unlearning audit: {status} ({report['certificate']['bound']})"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        _header(report),
        "<main>",
        _cards(report),
        _certificate_section(report),
        _empirical_section(report),
        _figures_section(figures, notes),
        _utility_section(report),
        _inputs_section(report),
        "</main>",
        f"<footer>{_e(SCHEMA_ID)} v{SCHEMA_VERSION}, generated by unlearn-verify "
        f"{_e(report['toolkit_version'])}</footer>",
        "</body></html>",
        "",
    ])
