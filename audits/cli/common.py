"""Helpers shared by the ``unlearn`` command modules (:mod:`audits.cli`, :mod:`audits.cli.audit`).

Both command modules import this one and neither imports the other's helpers, so the CLI has
no import circle: :mod:`audits.cli` builds the parser and adds the audit commands from
:mod:`audits.cli.audit`, which needs only what is here.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np

__all__ = ["MESSAGE_CHARS", "CommandError", "Parser", "UsageError", "add_descriptions", "emit",
           "error_payload", "integer_in", "one_line", "parse_assignments", "positive_number",
           "probability", "with_json"]

_EXPONENT = re.compile(r"[0-9.][eE][+-]?(\d+)")
MESSAGE_CHARS = 500  # an error line never grows with the input that caused it


class CommandError(Exception):
    """A user-facing error: printed as one line ``error: ...``, exit status 1."""


class UsageError(Exception):
    """The command line itself is malformed (argparse's errors): exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises :class:`UsageError` instead of printing the usage
    block and exiting, so that :func:`audits.cli.main` reports it in the one-line (or JSON)
    error format like every other failure. Subparsers inherit the class.

    Abbreviated options are refused: ``--rep`` must not silently mean ``--replace`` (which
    deletes stored audits), and a new option must not change what an old abbreviation means."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        """A malformed command line: one line on stderr (and JSON under --json), exit 2."""
        raise UsageError(f"{message} (see '{self.prog} --help')")


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as one printable line of at most ``limit`` characters: newlines and control
    characters escaped, so that an echoed input cannot span lines or drive a terminal."""
    flat = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in " ".join(str(text).split("\n")))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def error_payload(kind: str, message: str) -> dict[str, dict[str, str]]:
    """The ``--json`` form of an error: ``{"error": {"type": ..., "message": ...}}``."""
    return {"error": {"type": kind, "message": message}}


_NOT_ASCII = ("numbers and expressions are read in ASCII only: a digit of another script "
              "such as '\u0663' or '\uff13' is refused, not read as 3")


def _non_ascii(text: str) -> str | None:
    """The first non-ASCII character of ``text`` (escaped), or None.

    Python's ``int``/``float``/``re`` read any Unicode decimal digit as a number; the command
    line does not, so that a number means what it shows."""
    for ch in text:
        if not ch.isascii():
            return ch.encode("unicode_escape").decode("ascii") if not ch.isprintable() \
                or ch.isspace() else ch
    return None


def integer_in(low: int, high: int):
    """An argparse type: an integer in [low, high] (refused at parse time, before any work)."""

    def parse(text: str) -> int:
        if _non_ascii(text) is not None:
            raise argparse.ArgumentTypeError(
                f"not an integer: {one_line(repr(text), 60)} ({_NOT_ASCII})")
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not an integer: {one_line(repr(text), 60)}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}], got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def add_descriptions(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand without a description its one-line help as description, so that
    ``unlearn X --help`` says what X does (recursively)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                if sub.description is None and helps.get(name):
                    text = helps[name]
                    sub.description = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
                add_descriptions(sub)


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
    """Print ``obj`` as one JSON object when ``as_json``, else the human ``summary``."""
    if as_json:
        print(json.dumps(_jsonable(obj), indent=2, allow_nan=False))
    else:
        print(summary)


def _exact_number(text: str):
    """A decimal or fraction, exactly; refused before sympy sees it when its exponent or length
    would make the exact value huge (``1e999999999`` is a billion-digit integer)."""
    from bounds.values import parse_exact

    stripped = text.strip()
    if _non_ascii(stripped) is not None:
        raise argparse.ArgumentTypeError(f"not a number: {one_line(repr(text), 60)} ({_NOT_ASCII})")
    if len(stripped) > 100 or any(_above_400(m.group(1)) for m in _EXPONENT.finditer(stripped)):
        raise argparse.ArgumentTypeError(
            f"number too long or too large: {one_line(repr(text), 60)} (at most 100 characters "
            "and an exponent within +-400)")
    return parse_exact(stripped)


def probability(text: str) -> float:
    """A number in (0, 1), given as a decimal or a fraction such as 1/11264."""
    value = _exact_number(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"not a number: {one_line(repr(text), 60)}")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"not in (0, 1): {one_line(repr(text), 60)}")
    if float(value) == 0:  # exactly positive, but it would reach the bounds as 0.0
        raise argparse.ArgumentTypeError(
            f"below the smallest positive float (about 4.9e-324): {one_line(repr(text), 60)}")
    return float(value)


def positive_number(text: str) -> float:
    """argparse type: a finite number > 0, read exactly."""
    value = _exact_number(text)
    if value is None or not value > 0:
        raise argparse.ArgumentTypeError(f"not a positive number: {one_line(repr(text), 60)}")
    number = float(value)
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"too large: {one_line(repr(text), 60)}")
    if number == 0:
        raise argparse.ArgumentTypeError(
            f"below the smallest positive float (about 4.9e-324): {one_line(repr(text), 60)}")
    return number


def _above_400(digits: str) -> bool:
    digits = digits.lstrip("0")
    return len(digits) > 3 or (digits != "" and int(digits) > 400)


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """``key=value`` pairs; values stay strings and are resolved exactly by the engine."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise CommandError(f"expected key=value, got {one_line(repr(item), 60)}")
        key, value = item.split("=", 1)
        key, value = key.strip(), value.strip()
        if not key or not value:
            raise CommandError(f"expected key=value, got {one_line(repr(item), 60)}")
        if key in out:
            raise CommandError(f"{one_line(key, 60)} given twice")
        if _non_ascii(value) is not None:
            raise CommandError(f"{one_line(key, 60)}: {one_line(repr(value), 60)} holds the "
                               f"non-ASCII character {_non_ascii(value)!r}; {_NOT_ASCII}")
        # bounds.values.parse_exact turns 1e99999999 into an exact integer (minutes, gigabytes);
        # the expression parser's limits do not see plain decimals, so refuse them here.
        if any(_above_400(m.group(1)) for m in _EXPONENT.finditer(value)):
            raise CommandError(f"{one_line(key, 60)}: a decimal exponent above 400 in "
                               f"{one_line(repr(value), 60)} (max_exponent)")
        out[key] = value
    return out


def with_json(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``--json`` flag every command has."""
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p

