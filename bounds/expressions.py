"""A small, safe expression language for parameter values given as text.

Users paste values such as ``"1/L"``, ``"0.1"`` or ``"sqrt(2*log(1.25/delta))"`` from papers and
configs. The text is untrusted: it is parsed with :func:`ast.parse` (``mode="eval"``), only a
whitelist of node types is accepted, and the exact sympy value is built from the tree here. The
text never reaches ``eval``, ``exec``, ``sympify`` or ``parse_expr``, so nothing in it can run.

Accepted: decimal numbers (``3``, ``0.1``, ``1e-5``, converted exactly: ``0.1`` is 1/10, never
the nearest binary float), the names the caller allows, unary ``+``/``-``, binary
``+ - * / **``, parentheses, the functions ``sqrt, log (1 or 2 arguments), ln, exp, min, max,
abs`` called by plain name with positional arguments, and the constants ``pi``, ``E``, ``e``
(a caller-allowed name of the same spelling wins over the constant).

Every refusal is an :class:`ExpressionError` (a ``ValueError``) whose message is one line, names
the rule or the limit, and echoes at most :data:`ECHO_CHARS` characters of the offending text.
Work is bounded before it is done (:class:`ExpressionLimits`): text length, node count and
nesting depth are checked before the tree is walked, and the size of every exact power, product
and sum is estimated with logarithms before sympy computes it.

This module is a leaf: it imports only the standard library and sympy (never anything from
:mod:`bounds`), so it can be imported from anywhere without an import circle.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass

import sympy as sp

__all__ = [
    "DEFAULT_LIMITS",
    "ECHO_CHARS",
    "shorten",
    "ExpressionError",
    "ExpressionLimits",
    "FUNCTIONS",
    "CONSTANTS",
    "parse_expression",
    "real_symbol",
]

ECHO_CHARS = 60
"""At most this many characters of user text are echoed in an error message."""

_LOG10_2 = math.log10(2)


class ExpressionError(ValueError):
    """A parameter expression was refused; the message is one line naming the rule.

    ``rule`` names what was broken, for programs: a limit (a field of :class:`ExpressionLimits`:
    ``"max_length"``, ``"max_nodes"``, ``"max_depth"``, ``"max_exponent"``, ``"max_digits"``,
    ``"max_root_digits"``) or a rule (``"type"``, ``"syntax"``, ``"construct"``, ``"literal"``,
    ``"operator"``, ``"call"``, ``"unknown-name"``, ``"undefined"``, ``"not-real"``,
    ``"evaluation"``)."""

    def __init__(self, message: str, rule: str = "invalid") -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class ExpressionLimits:
    """Bounds on the work one expression may cause; each refusal names the field it broke.

    ``max_exponent`` bounds |n| of every numeric exponent in ``a**n``; ``max_digits`` bounds the
    decimal digits of every exact number (numerators and denominators together), estimated with
    logarithms *before* the number is computed; ``max_root_digits`` bounds the digits of an exact
    number under a fractional power (``sqrt``, ``**0.5``)."""

    max_length: int = 2000
    max_nodes: int = 200
    max_depth: int = 30
    max_exponent: int = 10_000
    # 4000, under Python's 4300-digit limit on int -> str, so every accepted number can be printed.
    max_digits: int = 4000
    # sympy looks for exact roots of big integers; above ~300 digits that costs 10 ms to seconds.
    max_root_digits: int = 300


DEFAULT_LIMITS = ExpressionLimits()


def real_symbol(name: str) -> sp.Symbol:
    """The symbol the bound engine uses for a parameter: ``Symbol(name, real=True)``.

    sympy symbols with the same name and assumptions are equal, so values built with this
    factory substitute into the engine's expressions."""
    return sp.Symbol(name, real=True)


# name -> (allowed argument counts (None: two or more), builder)
FUNCTIONS: dict[str, tuple[tuple[int, ...] | None, Callable[..., sp.Expr]]] = {
    "sqrt": ((1,), sp.sqrt),
    "log": ((1, 2), sp.log),
    "ln": ((1,), sp.log),
    "exp": ((1,), sp.exp),
    "abs": ((1,), sp.Abs),
    "min": (None, sp.Min),
    "max": (None, sp.Max),
}

CONSTANTS: dict[str, sp.Expr] = {"pi": sp.pi, "E": sp.E, "e": sp.E}

_DECIMAL = re.compile(
    r"(?P<int>[0-9][0-9_]*)?(?:\.(?P<frac>[0-9][0-9_]*)?)?(?:[eE](?P<exp>[+-]?[0-9][0-9_]*))?")

# Friendly names for the constructs people (or attackers) try most often.
_REFUSED = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.JoinedStr: "f-strings",
    ast.FormattedValue: "f-strings",
    ast.Starred: "starred arguments",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.Compare: "comparisons",
    ast.BoolOp: "boolean operators",
    ast.IfExp: "conditional expressions",
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slices",
}

_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def shorten(text: str, limit: int = ECHO_CHARS) -> str:
    """At most ``limit`` characters of ``text`` on one printable line, for error messages."""
    flat = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _echo(text: str) -> str:
    """At most ECHO_CHARS characters of ``text`` on one printable line (control characters,
    newlines and non-ASCII escaped, so a message cannot span lines or drive a terminal)."""
    return f"'{shorten(text)}'"


def parse_expression(
    text: str,
    *,
    names: Collection[str],
    limits: ExpressionLimits = DEFAULT_LIMITS,
    symbol_factory: Callable[[str], sp.Symbol] = real_symbol,
) -> sp.Expr:
    """The exact sympy value of ``text``, which may use the parameter names in ``names``.

    Raises :class:`ExpressionError` (a ``ValueError``) for anything outside the language or
    beyond ``limits``; never any other exception, and nothing in ``text`` is executed."""
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be text, got {type(text).__name__}", "type")
    if len(text) > limits.max_length:
        raise ExpressionError(
            f"expression is {len(text)} characters long, above the limit of {limits.max_length} "
            f"(max_length): {_echo(text)}", "max_length")
    source = text.strip()
    if not source:
        raise ExpressionError("empty expression", "syntax")
    # ast.parse recurses on nesting and can itself overflow; refuse deep brackets from the text.
    _check_bracket_depth(source, limits)
    tree = _parse(source, text)
    _check_shape(tree, source, limits)
    builder = _Builder(source, frozenset(names), limits, symbol_factory)
    try:
        return builder.build(tree.body)
    except ExpressionError:
        raise
    except (ArithmeticError, TypeError, ValueError, RecursionError, MemoryError) as exc:
        # Defence in depth: sympy raising on an input the rules above let through is still a
        # refusal with one line, never a traceback.
        raise ExpressionError(f"expression cannot be evaluated ({type(exc).__name__}): "
                              f"{_echo(text)}", "evaluation") from None


def _check_bracket_depth(source: str, limits: ExpressionLimits) -> None:
    depth = deepest = 0
    for char in source:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    if deepest > limits.max_depth:
        raise ExpressionError(
            f"brackets nested {deepest} deep, above the limit of {limits.max_depth} (max_depth): "
            f"{_echo(source)}", "max_depth")


def _parse(source: str, text: str) -> ast.Expression:
    try:
        with warnings.catch_warnings():
            # Compile-time warnings (invalid escapes, "int is not callable") are not ours to show.
            warnings.simplefilter("ignore")
            return ast.parse(source, mode="eval")
    except SyntaxError as exc:
        reason = (exc.msg or "invalid syntax").splitlines()[0] if exc.msg else "invalid syntax"
        raise ExpressionError(f"not a valid expression ({_echo(reason)}): {_echo(text)}",
                              "syntax") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression nested too deeply to parse (max_depth): {_echo(text)}",
                              "max_depth") from None
    except (ValueError, OverflowError) as exc:  # e.g. null bytes in the source
        raise ExpressionError(f"not a valid expression ({_echo(str(exc))}): {_echo(text)}",
                              "syntax") from None


def _check_shape(tree: ast.Expression, source: str, limits: ExpressionLimits) -> None:
    """Node count and depth, both without recursion (the tree may be deeper than the stack)."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limits.max_nodes:
            raise ExpressionError(
                f"expression has more than {limits.max_nodes} parts (max_nodes): {_echo(source)}",
                "max_nodes")
        if depth > limits.max_depth:
            raise ExpressionError(
                f"expression nested more than {limits.max_depth} deep (max_depth): {_echo(source)}",
                "max_depth")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node)
                     if isinstance(child, ast.expr | ast.keyword))


def _digits(value: sp.Expr) -> float:
    """Estimate (up to one digit per number) of the decimal digits of the exact rationals inside
    ``value``, numerators and denominators together: logarithms only, no string conversion."""
    return sum(_log10(abs(int(atom.p))) + _log10(int(atom.q)) for atom in value.atoms(sp.Rational))


def _log10(n: int) -> float:
    """log10(n) for n >= 1 (0 for n <= 1), from the bit length when n is too big for a float."""
    if n <= 1:
        return 0.0
    if n.bit_length() < 1000:
        return math.log10(n)
    return n.bit_length() * _LOG10_2


class _Builder:
    """Turns an already size-checked tree into a sympy value, refusing what is not allowed."""

    def __init__(self, source: str, names: frozenset[str], limits: ExpressionLimits,
                 symbol_factory: Callable[[str], sp.Symbol]) -> None:
        self.source = source
        self.names = names
        self.limits = limits
        self.symbol_factory = symbol_factory

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or self.source

    def refuse(self, what: str, node: ast.AST, rule: str) -> ExpressionError:
        return ExpressionError(f"{what}: {_echo(self.segment(node))}", rule)

    def build(self, node: ast.expr) -> sp.Expr:
        value = self._build(node)
        # Refuse division by zero and the like where it happens, with the part that caused it.
        if value.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise self.refuse("undefined or infinite value (division by zero?)", node, "undefined")
        if value.is_number and value.is_extended_real is False:
            raise self.refuse("not a real number", node, "not-real")
        return value

    def _build(self, node: ast.expr) -> sp.Expr:
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return sp.Mul(sp.Integer(-1), self.build(node.operand))
            if isinstance(node.op, ast.UAdd):
                return self.build(node.operand)
            raise self.refuse(f"operator {_unary_name(node.op)} is not allowed (only unary + and -)",
                              node, "operator")
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        what = _REFUSED.get(type(node), type(node).__name__)
        raise self.refuse(f"{what} not allowed in an expression", node, "construct")

    def constant(self, node: ast.Constant) -> sp.Expr:
        value = node.value
        if type(value) not in (int, float):  # bool is an int subclass: refused here too
            kind = {str: "strings", bytes: "bytes", complex: "complex numbers",
                    bool: "booleans"}.get(type(value), f"{type(value).__name__} literals")
            raise self.refuse(f"{kind} not allowed in an expression", node, "literal")
        literal = self.segment(node)
        match = _DECIMAL.fullmatch(literal)
        if match is None or not (match["int"] or match["frac"]):
            raise self.refuse("only decimal numbers are allowed (no hex, octal or binary)", node,
                              "literal")
        whole = (match["int"] or "").replace("_", "")
        frac = (match["frac"] or "").replace("_", "")
        exponent_text = (match["exp"] or "0").replace("_", "")
        if len(exponent_text) > 12:
            raise self.refuse(f"number too large, above {self.limits.max_digits} digits (max_digits)",
                              node, "max_digits")
        mantissa = (whole + frac).lstrip("0") or "0"
        scale = int(exponent_text) - len(frac)
        if mantissa != "0" and len(mantissa) + abs(scale) > self.limits.max_digits:
            raise self.refuse(f"number has more than {self.limits.max_digits} digits (max_digits)",
                              node, "max_digits")
        if mantissa == "0":
            return sp.Integer(0)
        if scale >= 0:
            return sp.Integer(int(mantissa) * 10**scale)
        return sp.Rational(int(mantissa), 10**-scale)  # exact decimal: "0.1" is 1/10

    def name(self, node: ast.Name) -> sp.Expr:
        if node.id in self.names:
            return self.symbol_factory(node.id)
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise self.refuse(f"function {node.id} must be called, e.g. {node.id}(x)", node,
                              "unknown-name")
        allowed = ", ".join(sorted(self.names)) or "none"
        raise ExpressionError(
            f"unknown name {_echo(node.id)} (allowed names: {_echo(allowed)[1:-1]}; constants "
            f"{', '.join(CONSTANTS)})", "unknown-name")

    def binary(self, node: ast.BinOp) -> sp.Expr:
        symbol = _BINARY.get(type(node.op))
        if symbol is None:
            raise self.refuse(f"operator {_binary_name(node.op)} is not allowed (only + - * / **)",
                              node, "operator")
        left = self.build(node.left)
        right = self.build(node.right)
        if symbol == "**":
            return self.power(left, right, node)
        # Exact sums and products of rationals have at most the digits of both operands.
        if _digits(left) + _digits(right) > self.limits.max_digits:
            raise self.refuse(f"result would exceed {self.limits.max_digits} digits (max_digits)",
                              node, "max_digits")
        if symbol == "+":
            return sp.Add(left, right)
        if symbol == "-":
            return sp.Add(left, sp.Mul(sp.Integer(-1), right))
        if symbol == "*":
            return sp.Mul(left, right)
        if right.is_zero:
            raise self.refuse("division by zero", node, "undefined")
        return sp.Mul(left, sp.Pow(right, sp.Integer(-1)))

    def power(self, base: sp.Expr, exponent: sp.Expr, node: ast.AST) -> sp.Expr:
        if exponent.is_number:
            magnitude = self.magnitude(exponent, node)
            if magnitude > self.limits.max_exponent:
                raise self.refuse(
                    f"exponent above {self.limits.max_exponent} in absolute value (max_exponent)",
                    node, "max_exponent")
            # sympy expands numeric powers of exact parts (even under symbols: (2*L)**n has 2**n);
            # |n| times the digits of those parts bounds the digits it would compute.
            if magnitude * _digits(base) > self.limits.max_digits:
                raise self.refuse(f"result would exceed {self.limits.max_digits} digits (max_digits)",
                                  node, "max_digits")
            if not exponent.is_integer and any(
                    _log10(abs(int(a.p))) + _log10(int(a.q)) > self.limits.max_root_digits
                    for a in base.atoms(sp.Rational)):
                raise self.refuse(f"root of a number with more than {self.limits.max_root_digits} digits "
                                  "(max_root_digits)", node, "max_root_digits")
        if base.is_zero and exponent.is_number and exponent.is_extended_negative:
            raise self.refuse("division by zero", node, "undefined")
        return sp.Pow(base, exponent)

    def magnitude(self, number: sp.Expr, node: ast.AST) -> float:
        """|number| as a float (inf when huge), from exact parts where it can be exact."""
        if number.is_Rational:
            p, q = abs(int(number.p)), int(number.q)
            if p.bit_length() - q.bit_length() > 64:
                return math.inf
            return p / q
        try:
            approx = sp.N(number, 15)
            return float(abs(complex(approx)))
        except (TypeError, ValueError, OverflowError, ArithmeticError):
            raise self.refuse("exponent cannot be evaluated", node, "max_exponent") from None

    def call(self, node: ast.Call) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            what = _REFUSED.get(type(node.func), "calls on computed values")
            raise self.refuse(f"{what} not allowed in an expression (only calls by plain name)",
                              node, "call")
        name = node.func.id
        if name not in FUNCTIONS or name in self.names:
            raise self.refuse(f"function {_echo(name)} is not allowed (allowed: "
                              f"{', '.join(FUNCTIONS)})", node, "call")
        if node.keywords:
            raise self.refuse("keyword arguments not allowed in an expression", node, "call")
        arities, builder = FUNCTIONS[name]
        count = len(node.args)
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise self.refuse("starred arguments not allowed in an expression", node, "construct")
        if (arities is None and count < 2) or (arities is not None and count not in arities):
            wanted = "two or more" if arities is None else " or ".join(map(str, arities))
            raise self.refuse(f"{name} takes {wanted} argument(s), got {count}", node, "call")
        args = [self.build(arg) for arg in node.args]
        if name == "sqrt":  # a power: the same exponent and root limits apply
            return self.power(args[0], sp.Rational(1, 2), node)
        if name == "exp":  # e**x: comparing exp(7**999) with anything costs seconds of evalf
            return self.power(sp.E, args[0], node)
        if name == "log" and count == 2 and args[1].is_number and (
                args[1].is_positive is False or args[1] == 1):
            # sympy returns log(x)/log(0) = 0 for base 0; a base must be positive and not 1.
            raise self.refuse("log base must be positive and not 1", node, "undefined")
        return builder(*args)


def _unary_name(op: ast.unaryop) -> str:
    return {ast.Not: "not", ast.Invert: "~"}.get(type(op), type(op).__name__)


def _binary_name(op: ast.operator) -> str:
    return {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
            ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^"}.get(type(op), type(op).__name__)
