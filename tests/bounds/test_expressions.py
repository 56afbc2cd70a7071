"""The safe expression language for parameter values: exact values, every refused
construct, every limit, and a fuzzer over hostile text that checks nothing runs."""

from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bounds.expressions import (
    DEFAULT_LIMITS,
    ECHO_CHARS,
    ExpressionError,
    ExpressionLimits,
    parse_expression,
    real_symbol,
)

NAMES = ("L", "delta", "sigma", "eta", "alpha", "n")
L, DELTA, SIGMA = (sp.Symbol(name, real=True) for name in ("L", "delta", "sigma"))


def parse(text: str, **kwargs) -> sp.Expr:
    return parse_expression(text, names=NAMES, **kwargs)


# --------------------------------------------------------------------------------------------
# Exact values
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("1/L", 1 / L),
    ("0.1+0.2", sp.Rational(3, 10)),
    ("0.1", sp.Rational(1, 10)),
    ("1e-5", sp.Rational(1, 100_000)),
    ("2.5E+3", sp.Integer(2500)),
    ("1_000.25", sp.Rational(4001, 4)),
    (".5", sp.Rational(1, 2)),
    ("7.", sp.Integer(7)),
    ("0.000", sp.Integer(0)),
    ("2**-3", sp.Rational(1, 8)),
    ("-2**2", sp.Integer(-4)),
    ("(-2)**2", sp.Integer(4)),
    ("2**3**2", sp.Integer(512)),  # right associative, as in Python and in papers
    ("1 + 2*3", sp.Integer(7)),
    ("(1 + 2)*3", sp.Integer(9)),
    ("-+-3", sp.Integer(3)),
    ("7/2 - 1/2", sp.Integer(3)),
    ("sqrt(2)", sp.sqrt(2)),
    ("sqrt(8)", 2 * sp.sqrt(2)),
    ("log(1/delta)", sp.log(1 / DELTA)),
    ("ln(2)", sp.log(2)),
    ("log(8, 2)", sp.Integer(3)),
    ("exp(1)", sp.E),
    ("abs(-3/4)", sp.Rational(3, 4)),
    ("min(1, 2/3, 5)", sp.Rational(2, 3)),
    ("max(1, 2/3, 5)", sp.Integer(5)),
    ("2*pi", 2 * sp.pi),
    ("E", sp.E),
    ("e**2", sp.exp(2)),
    ("sigma*sqrt(2*log(1.25/delta))", SIGMA * sp.sqrt(2 * sp.log(sp.Rational(5, 4) / DELTA))),
    ("  (1/L)  ", 1 / L),
    ("(1 +\n 2)", sp.Integer(3)),  # newlines inside brackets are allowed, as in Python
])
def test_exact_values(text, expected):
    value = parse(text)
    assert sp.simplify(value - expected) == 0
    assert value.is_Rational == expected.is_Rational


def test_decimals_never_go_through_binary_floats():
    """0.1 + 0.2 is 3/10 exactly, while the binary floats sum to 0.30000000000000004."""
    assert parse("0.1+0.2") == sp.Rational(3, 10)
    assert Fraction(0.1 + 0.2) != Fraction(3, 10)
    assert parse("0.3") - parse("0.1") - parse("0.2") == 0
    assert parse("123456789.123456789e-30") == sp.Rational(123456789123456789, 10**39)


def test_symbols_are_the_engine_symbols():
    """Values substitute into the engine's expressions: same name, real=True."""
    value = parse("1/L + eta")
    assert value.free_symbols == {real_symbol("L"), real_symbol("eta")}
    assert value.subs({real_symbol("L"): 4, real_symbol("eta"): sp.Rational(1, 4)}) == sp.Rational(1, 2)
    from bounds.values import symbols
    (engine_l,) = symbols("L")
    assert value.subs(engine_l, 2).free_symbols == {real_symbol("eta")}


def test_symbol_factory_and_names_win_over_constants():
    made = []

    def factory(name: str) -> sp.Symbol:
        made.append(name)
        return sp.Symbol(name, positive=True)

    value = parse_expression("e*x", names={"e", "x"}, symbol_factory=factory)
    assert value == sp.Symbol("e", positive=True) * sp.Symbol("x", positive=True)
    assert sorted(made) == ["e", "x"]


# --------------------------------------------------------------------------------------------
# Refused constructs: one line, the rule named, the text shortened
# --------------------------------------------------------------------------------------------


def refusal(text: str, *, names=NAMES, limits: ExpressionLimits = DEFAULT_LIMITS) -> ExpressionError:
    with pytest.raises(ExpressionError) as info:
        parse_expression(text, names=names, limits=limits)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert isinstance(info.value, ValueError)
    return info.value


@pytest.mark.parametrize(("text", "rule", "words"), [
    ("__import__('os').system('touch pwned')", "call", "attribute access"),
    ("__import__('os')", "call", "function '__import__' is not allowed"),
    ("L.__class__", "construct", "attribute access"),
    ("().__class__.__bases__[0].__subclasses__()", "call", "attribute access"),
    ("L[0]", "construct", "subscripts"),
    ("lambda: 1", "construct", "lambda"),
    ("[x for x in ()]", "construct", "comprehensions"),
    ("(x for x in ())", "construct", "comprehensions"),
    ("{x: 1 for x in ()}", "construct", "comprehensions"),
    ("f'{L}'", "construct", "f-strings"),
    ("'abc'", "literal", "strings"),
    ("b'abc'", "literal", "bytes"),
    ("1j", "literal", "complex numbers"),
    ("True", "literal", "booleans"),
    ("None", "literal", "NoneType"),
    ("...", "literal", "ellipsis"),
    ("0x10", "literal", "only decimal numbers"),
    ("0o17", "literal", "only decimal numbers"),
    ("0b101", "literal", "only decimal numbers"),
    ("max(*L)", "construct", "starred"),
    ("(L := 1)", "construct", "assignment expressions"),
    ("L < 2", "construct", "comparisons"),
    ("L and 1", "construct", "boolean operators"),
    ("1 if L else 2", "construct", "conditional expressions"),
    ("(1, 2)", "construct", "tuples"),
    ("[1]", "construct", "lists"),
    ("{1}", "construct", "sets"),
    ("{1: 2}", "construct", "dicts"),
    ("7 // 2", "operator", "//"),
    ("7 % 2", "operator", "%"),
    ("1 << 3", "operator", "<<"),
    ("1 ^ 3", "operator", "^"),
    ("~1", "operator", "~"),
    ("not 1", "operator", "not"),
    ("x", "unknown-name", "unknown name 'x'"),
    ("__builtins__", "unknown-name", "unknown name"),
    ("sqrt", "unknown-name", "must be called"),
    ("factorial(5)", "call", "'factorial' is not allowed"),
    ("eval('1')", "call", "'eval' is not allowed"),
    ("L(2)", "call", "'L' is not allowed"),
    ("sqrt(2)(3)", "call", "only calls by plain name"),
    ("sqrt(x=2)", "call", "keyword arguments"),
    ("sqrt(**{})", "call", "keyword arguments"),
    ("sqrt(1, 2)", "call", "sqrt takes 1 argument(s), got 2"),
    ("log()", "call", "log takes 1 or 2 argument(s), got 0"),
    ("min(1)", "call", "two or more"),
    ("1 +", "syntax", "not a valid expression"),
    ("", "syntax", "empty expression"),
    ("1\x002", "syntax", "not a valid expression"),
    ("import os", "syntax", "not a valid expression"),
    ("1; 2", "syntax", "not a valid expression"),
    ("1/0", "undefined", "division by zero"),
    ("0**-1", "undefined", "division by zero"),
    ("log(0)", "undefined", "undefined or infinite"),
    ("L/(1 - 1)", "undefined", "division by zero"),
    ("sqrt(-1)", "not-real", "not a real number"),
    ("log(-2)", "not-real", "not a real number"),
    ("log(8, 0)", "undefined", "log base"),
    ("log(8, 1)", "undefined", "log base"),
    ("log(8, -2)", "undefined", "log base"),
])
def test_refused_constructs(text, rule, words):
    error = refusal(text)
    assert error.rule == rule, str(error)
    assert words in str(error)


def test_refuses_non_text():
    with pytest.raises(ExpressionError, match="must be text"):
        parse_expression(0.1, names=NAMES)  # type: ignore[arg-type]


def test_messages_echo_at_most_sixty_characters_on_one_line():
    hostile = "__import__('os').system('" + "x" * 500 + "\n\x1b[31mred')"
    message = str(refusal(hostile))
    assert len(message) < 200 and "x" * ECHO_CHARS not in message
    assert "\x1b" not in message  # escaped: cannot drive a terminal
    unknown = str(refusal("y" * 1500))
    assert "y" * (ECHO_CHARS + 1) not in unknown


# --------------------------------------------------------------------------------------------
# Limits: each refusal names its limit and is immediate
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "limit"), [
    ("1+" * 1100 + "1", "max_length"),
    ("(" * 100_000 + "1" + ")" * 100_000, "max_length"),
    ("(" * 31 + "1" + ")" * 31, "max_depth"),
    ("-" * 1999 + "1", "max_depth"),
    ("+".join(["1"] * 40), "max_depth"),  # a + b + c ... nests to the left
    ("max(" + ", ".join(["1"] * 250) + ")", "max_nodes"),
    ("9**9**9**9", "max_exponent"),
    ("2**2**2**2**2**2", "max_exponent"),
    ("10**100000", "max_exponent"),
    ("2**-10001", "max_exponent"),
    ("L**20000", "max_exponent"),
    ("2**(10**4*sqrt(2))", "max_exponent"),
    ("max(10**300, exp(7**999))", "max_exponent"),
    ("exp(exp(exp(5)))", "max_exponent"),
    ("10**3000 * 10**3000", "max_digits"),
    ("(10*L)**9000", "max_digits"),
    ("(sqrt(2)**9999)**9999", "max_digits"),
    ("(1 + sqrt(2))**9999", "max_digits"),
    ("1e5000", "max_digits"),
    ("1e-5000", "max_digits"),
    ("1e99999999999999999", "max_digits"),
    ("(10**2000 + 1) * (10**2001 + 1)", "max_digits"),
    ("1/(10**3000 + 1) + 1/(10**3000 + 3)", "max_digits"),
    ("sqrt(10**400 + 1)", "max_root_digits"),
    ("(3**1000)**(1/3)", "max_root_digits"),
])
def test_limits_are_named_and_immediate(text, limit):
    start = time.perf_counter()
    error = refusal(text)
    assert time.perf_counter() - start < 1
    assert error.rule == limit, str(error)
    assert f"({limit})" in str(error)


def test_values_just_inside_the_limits_are_exact():
    assert parse("2**10000") == sp.Integer(2) ** 10000
    assert parse("10**3999") == sp.Integer(10) ** 3999
    assert parse("(" * 29 + "1" + ")" * 29) == 1
    assert parse("sqrt(10**300)") == sp.Integer(10) ** 150


def test_limits_are_configurable():
    tight = ExpressionLimits(max_length=10, max_nodes=5, max_depth=3, max_exponent=4, max_digits=3,
                             max_root_digits=1)
    assert refusal("1" * 11, limits=tight).rule == "max_length"
    assert refusal("max(1,1,1,1,1)", limits=replace(tight, max_length=100)).rule == "max_nodes"
    assert refusal("-(-(-1))", limits=tight).rule == "max_depth"
    assert refusal("2**5", limits=tight).rule == "max_exponent"
    assert refusal("99*99", limits=tight).rule == "max_digits"
    assert refusal("sqrt(99)", limits=tight).rule == "max_root_digits"
    assert parse_expression("2**4", names=(), limits=tight) == 16
    with pytest.raises(AttributeError):
        tight.max_depth = 100  # type: ignore[misc]  # frozen


# --------------------------------------------------------------------------------------------
# The fuzzer: hostile text never executes, and every call is an Expr or an ExpressionError
# --------------------------------------------------------------------------------------------

CANARY_NAME = "expression-canary"

PAYLOADS = (
    "__import__('pathlib').Path({canary!r}).touch()",
    "__import__('os').system('touch ' + {canary!r})",
    "open({canary!r}, 'w').write('x')",
    "exec(\"open({canary!r}, 'w')\")",
    "eval(\"__import__('pathlib').Path({canary!r}).touch()\")",
    "(lambda: __import__('pathlib').Path({canary!r}).touch())()",
    "[__import__('pathlib').Path({canary!r}).touch() for _ in (1,)]",
    "f\"{{__import__('pathlib').Path({canary!r}).touch()}}\"",
    "().__class__.__base__.__subclasses__()[0].__init__.__globals__['__builtins__']['open']({canary!r}, 'w')",
    "L.__class__.__init__.__globals__['__builtins__']['__import__']('pathlib').Path({canary!r}).touch()",
    "sqrt(__import__('pathlib').Path({canary!r}).touch())",
    "(p := __import__('pathlib')).Path({canary!r}).touch()",
    "getattr(__import__('pathlib'), 'Path')({canary!r}).touch()",
    "Symbol('x').__init__.__globals__['os'].system('touch ' + {canary!r})",
)

FRAGMENTS = ("__import__", "__class__", "__globals__", "__builtins__", "__subclasses__", "lambda",
             "import os", "for x in", "f'", "'", '"', "(", ")", "[", "]", "{", "}", ".", ",", ":=",
             "**", "*", "/", "+", "-", "9", "1e99999", "0.1", "sqrt", "log", "exp", "min", "max",
             "abs", "L", "delta", "eval", "exec", "open", "os", "system", "\\", "\n", "\x00", "#",
             " if ", " else ", " and ", " not ", "yield", "await", "@", "%", "~", ";", "e", "pi",
             "1j", "0x1f", "..."," ", "9**9**9**9", "(" * 40, ")" * 40, "2**" * 8)


def hostile_texts(canary: str):
    payloads = st.sampled_from(PAYLOADS).map(lambda p: p.format(canary=canary))
    spliced = st.tuples(payloads, st.lists(st.sampled_from(FRAGMENTS), max_size=6)).map(
        lambda pair: "".join(pair[1][:3]) + pair[0] + "".join(pair[1][3:]))
    fragments = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
    towers = st.tuples(st.integers(2, 99), st.integers(2, 12)).map(
        lambda pair: "**".join([str(pair[0])] * pair[1]))
    nesting = st.tuples(st.sampled_from(("(", "[", "-", "sqrt(", "log(", "+")), st.integers(1, 3000)).map(
        lambda pair: pair[0] * pair[1] + "2" + (")" * pair[1] if pair[0].endswith("(") else ""))
    printable = st.text(st.characters(min_codepoint=1, max_codepoint=0x2FF), max_size=120)
    return st.one_of(payloads, spliced, fragments, towers, nesting, printable)


def test_the_canary_would_catch_an_attack(tmp_path):
    """The check can fail: the first payload, given to sympify, runs."""
    canary = tmp_path / CANARY_NAME
    try:
        sp.sympify(PAYLOADS[0].format(canary=str(canary)))  # our own constant text, never user input
    except sp.SympifyError:
        pass  # touch() returns None, which sympify refuses, but only after running it
    assert canary.exists()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_hostile_text_never_runs_and_is_refused_quickly(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    canary = folder / CANARY_NAME
    text = data.draw(hostile_texts(str(canary)))
    start = time.perf_counter()
    try:
        value = parse_expression(text, names=NAMES)
    except ExpressionError as error:
        assert "\n" not in str(error)
    else:
        assert isinstance(value, sp.Expr)
        assert not (value.free_symbols - {real_symbol(n) for n in NAMES})
    assert time.perf_counter() - start < 1, text[:200]
    assert not canary.exists(), text[:200]
    assert not any(folder.iterdir())


@settings(max_examples=200, deadline=None)
@given(st.recursive(
    st.one_of(st.integers(-10**6, 10**6).map(str), st.sampled_from(("L", "delta", "0.25", "1e-3"))),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from("+-*/"), inner).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(inner, st.integers(-3, 3)).map(lambda t: f"({t[0]})**{t[1]}"),
        inner.map(lambda t: f"-{t}"),
    ),
    max_leaves=12,
))
def test_arithmetic_agrees_with_exact_fractions(text):
    """Independent check: substitute L and delta and compare with Python's Fraction arithmetic
    on the same text (Fraction is exact; our own code is not used for the expected value)."""
    values = {"L": Fraction(3, 7), "delta": Fraction(-5, 2)}
    substitution = {real_symbol(k): sp.Rational(v.numerator, v.denominator) for k, v in values.items()}
    try:
        parsed = parse(text)
    except ExpressionError as error:
        # Only a size limit or a zero division that sympy sees before substitution may refuse.
        assume(error.rule not in ("max_depth", "max_nodes"))
        assert error.rule == "undefined", str(error)
        with pytest.raises(ZeroDivisionError):
            _fraction_eval(text, values)
        return
    try:
        expected = _fraction_eval(text, values)
    except ZeroDivisionError:
        assert parsed.subs(substitution).has(sp.zoo, sp.nan, sp.oo, -sp.oo)
        return
    assert parsed.subs(substitution) == sp.Rational(expected.numerator, expected.denominator)


def _fraction_eval(text: str, values: dict[str, Fraction]) -> Fraction:
    """A second, independent evaluator for the generated arithmetic (tokens: numbers, L, delta,
    + - * / ** and brackets), by recursive descent over Fractions."""
    import re

    tokens = re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?|\*\*|[-+*/()]|L|delta", text)
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def expression() -> Fraction:
        value = term()
        while peek() in ("+", "-"):
            value = value + term() if take() == "+" else value - term()
        return value

    def term() -> Fraction:
        value = unary()
        while peek() in ("*", "/"):
            value = value * unary() if take() == "*" else value / unary()
        return value

    def unary() -> Fraction:
        if peek() == "-":
            take()
            return -unary()
        return power()

    def power() -> Fraction:
        base = atom()
        if peek() == "**":
            take()
            exponent = unary()
            assert exponent.denominator == 1
            return base ** int(exponent)
        return base

    def atom() -> Fraction:
        token = take()
        if token == "(":
            value = expression()
            assert take() == ")"
            return value
        return values[token] if token in values else Fraction(token)

    result = expression()
    assert position == len(tokens)
    return result
