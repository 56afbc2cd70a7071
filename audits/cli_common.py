"""Helpers shared by the ``unlearn`` command modules (:mod:`audits.cli`, :mod:`audits.audit_cli`).

Both command modules import this one and neither imports the other's helpers, so the CLI has
no import circle: :mod:`audits.cli` builds the parser and adds the audit commands from
:mod:`audits.audit_cli`, which needs only what is here.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np

__all__ = ["CommandError", "emit", "parse_assignments", "positive_number", "probability",
           "with_json"]


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, mpmath.mpf):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "nan"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def emit(obj: dict[str, Any], as_json: bool, summary: str) -> None:
    if as_json:
        print(json.dumps(_jsonable(obj), indent=2, allow_nan=False))
    else:
        print(summary)


def probability(text: str) -> float:
    """A number in (0, 1), given as a decimal or a fraction such as 1/11264."""
    from bounds.engine import parse_exact

    value = parse_exact(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    return float(value)


def positive_number(text: str) -> float:
    from bounds.engine import parse_exact

    value = parse_exact(text)
    if value is None or not value > 0:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return float(value)


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """``key=value`` pairs; values stay strings and are resolved exactly by the engine."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise CommandError(f"expected key=value, got {item!r}")
        key, value = item.split("=", 1)
        key, value = key.strip(), value.strip()
        if not key or not value:
            raise CommandError(f"expected key=value, got {item!r}")
        if key in out:
            raise CommandError(f"{key} given twice")
        out[key] = value
    return out


def with_json(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``--json`` flag every command has."""
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p

