"""The ``unlearn`` command line (also ``python -m audits``).

Every command prints a short human summary, or one JSON object with ``--json``.

The error contract: every failure prints one line ``error: ...`` on stderr (the offending input
shortened), exits with status 1, or 2 for a malformed command line, and never shows a traceback
unless ``--debug`` is given. With ``--json`` the same error is also printed on stdout as
``{"error": {"type": ..., "message": ...}}``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sqlite3
import sys
import traceback
from collections.abc import Sequence

import mpmath

import bounds
from audits.cli.common import (
    CommandError,
    Parser,
    UsageError,
    add_descriptions,
    emit,
    error_payload,
    integer_in,
    one_line,
    parse_assignments,
    positive_number,
    probability,
    with_json,
)
from audits.progress import json_lines, reporting
from audits.progress import line as progress_line
from audits.versions import toolkit_version
from bounds.calibration import calibrate
from bounds.conversions import CONVERSIONS, best_epsilon
from bounds.errors import BoundError
from bounds.expressions import shorten
from bounds.numerics import g_directed, nstr_directed
from bounds.plugins import notes as plugin_notes
from bounds.registry import get_reproduction, list_reproductions

_ECHO_CHARS = 60  # how much of a long argument an error message quotes

# ------------------------------------------------------------------------------------------
# bounds
# ------------------------------------------------------------------------------------------


def cmd_bounds_list(args: argparse.Namespace) -> None:
    """``unlearn bounds list``: the declared bounds, optionally filtered."""
    items = bounds.list_bounds(args.paper)
    rows = [
        {"id": b.id, "aliases": list(b.aliases), "title": b.title, "label": b.citation.label,
         "guarantee": b.guarantee.kind, "variant": b.variant}
        for b in items
    ]
    width = max(len(r["id"]) for r in rows)
    summary = "\n".join(f"{r['id']:<{width}}  {r['guarantee']:<20} {r['title']}" for r in rows)
    emit({"bounds": rows, "count": len(rows)}, args.json, summary)


def cmd_bounds_show(args: argparse.Namespace) -> None:
    """``unlearn bounds show ID``: one declaration with its citation, conditions and expression."""
    b = bounds.get(args.id)
    info = {
        **b.provenance(),
        "formula": b.text(),
        "latex": b.latex(),
        "parameters": [
            {"name": p.name, "description": p.description, "domain": p.domain_text()}
            for p in b.parameters
        ],
        "monotone": dict(b.monotone),
        "notes": list(b.notes),
        "example": {k: str(v) for k, v in b.example.items()},
    }
    lines = [
        f"{b.id}  ({b.citation.label}; variant: {b.variant})",
        b.title,
        f"citation: {b.citation.describe()}",
        f"guarantee: {b.guarantee.description}",
        f"formula: {b.text()}",
        "parameters:",
        *[f"  {p.name}: {p.description} [{p.domain_text()}]" for p in b.parameters],
    ]
    if b.preconditions:
        lines += ["preconditions (checked):", *[f"  {p.text()}" for p in b.preconditions]]
    if b.assumptions:
        lines += ["assumptions (not checkable from numbers):", *[f"  {a}" for a in b.assumptions]]
    if b.notes:
        lines += ["notes:", *[f"  {n}" for n in b.notes]]
    if b.example:
        example = " ".join(f"{k}={v}" for k, v in b.example.items())
        lines += [f"example: unlearn bounds eval {b.id} {example}"]
    emit(info, args.json, "\n".join(lines))


def cmd_bounds_eval(args: argparse.Namespace) -> None:
    """``unlearn bounds evaluate ID``: one bound at the given parameters and precision."""
    b = bounds.get(args.id)
    params = parse_assignments(args.params)
    ev = b.evaluate(precision=args.precision, digits=args.digits, **params)
    out = ev.to_dict()
    if args.precision == "interval":
        # Outward: the printed lower end is rounded down and the upper end up.
        summary = (f"{b.id} = [{nstr_directed(ev.lower, 17, 'down')}, "
                   f"{nstr_directed(ev.upper, 17, 'up')}]")
        end = b.guarantee.safe_end
        if end == "both":  # an exact value or a cost: neither end is "the" certificate
            summary += (f"  (encloses the exact value: lower {ev.certified_lower!r}, "
                        f"upper {ev.certified_upper!r})")
        else:
            safe = ev.certified_upper if end == "upper" else ev.certified_lower
            shown = (repr(safe) if math.isfinite(safe) and (safe != 0 or ev.lower == ev.upper == 0)
                     else f"beyond the float range, the interval's {end} end")
            summary += f"  (certified {end} {shown}: the safe end for kind {b.guarantee.kind})"
    elif args.precision == "mp":
        summary = f"{b.id} = {mpmath.nstr(ev.value, args.digits)}"
    else:
        summary = f"{b.id} = {ev.value!r}"
    summary += f"\n  {b.guarantee.kind}: {b.guarantee.description}"
    for note in ev.notes:
        summary += f"\n  note: {note}"
    emit(out, args.json, summary)


def cmd_bounds_epsilon(args: argparse.Namespace) -> None:
    """``unlearn bounds epsilon ID``: the (epsilon, delta) certificate of a Rényi bound."""
    params = parse_assignments(args.params)
    conv = best_epsilon(args.id, delta=args.delta, conversion=args.conversion,
                        alpha_min=args.alpha_min, alpha_max=args.alpha_max, **params)
    label = "certified" if conv.certified else "NOT certified"
    # Rounded up: a larger epsilon or delta is implied by the certificate, a smaller one is not.
    # A delta whose short text reads back as the same float (the user's 1e-5) is shown as is.
    short = f"{conv.delta:.3g}"
    delta_text = short if float(short) == conv.delta else g_directed(conv.delta, 3, "up")
    summary = (f"{args.id}: ({g_directed(conv.epsilon, 6, 'up')}, "
               f"{delta_text})-unlearning at alpha = "
               f"{conv.alpha:.6g} ({conv.conversion} conversion; {label})")
    summary += "".join(f"\n  note: {note}" for note in conv.notes)
    emit(conv.to_dict(), args.json, summary)


def cmd_calibrate(args: argparse.Namespace) -> None:
    """``unlearn calibrate``: the least sigma/K/T (or most requests) for a target (epsilon, delta)."""
    params = parse_assignments(args.params)
    bound = bounds.get(args.id)
    if bound.guarantee.kind == "unlearning_delta":
        if args.epsilon is not None:
            raise UsageError(f"{bound.id} bounds a delta: give the target with --delta, not --epsilon")
        if args.delta is None:
            raise UsageError(f"{bound.id} bounds a delta: give the target with --delta")
    elif args.epsilon is None:
        raise UsageError("the following arguments are required: --epsilon")
    delta = args.delta
    if "delta" in params:  # a bound's own delta input, given as key=value
        if delta is not None:
            raise CommandError(f"{bound.id}: delta given twice (as --delta and as delta=...); "
                               "give it once")
        if "delta" in bound.parameter_names:
            delta = params.pop("delta")
    cal = calibrate(bound, solve=args.solve, epsilon=args.epsilon, delta=delta,
                    conversion=args.conversion, alpha_min=args.alpha_min,
                    alpha_max=args.alpha_max, **params)
    q = cal.quantity
    if cal.value is None:
        summary = f"{args.id}: {'; '.join(cal.notes)}"
    else:
        label = "certified" if cal.certified else "NOT certified"
        shown = g_directed(cal.certified_epsilon, 10, "up")  # a certified level: rounded up
        summary = (f"{cal.parameter} = {cal.value!r}  ({label} {q} {shown}"
                   f" <= {cal.target_epsilon:g}"
                   + (f" at alpha {cal.alpha:.6g}" if cal.alpha else "") + ")")
        if cal.neighbour is not None:
            summary += (f"\n  check: {cal.parameter} = {cal.neighbour!r} gives {q} "
                        # repr, the shortest text that reads back as the same float: at 10
                        # digits an epsilon just above the target printed as the target.
                        f"{cal.neighbour_epsilon!r} > target {cal.target_epsilon!r}")
        summary += "".join(f"\n  note: {note}" for note in cal.notes)
    emit(cal.to_dict(), args.json, summary)


def _dataset_choice(args: argparse.Namespace) -> tuple[str, str | None]:
    """``--dataset NAME [PATH]`` (or ``--path PATH``) as (name, path); digits by default."""
    dataset = args.dataset or ["digits"]
    if len(dataset) > 2:
        raise CommandError("--dataset takes a name and at most one path")
    path = dataset[1] if len(dataset) == 2 else args.path
    return dataset[0], path


def _empirical_options(args: argparse.Namespace) -> bool:
    return any(getattr(args, k, None) not in (None, False)
               for k in ("dataset", "path", "trials", "device", "out", "reduced", "setting"))


def cmd_reproduce(args: argparse.Namespace) -> None:
    """``unlearn reproduce [ID]``: list, or recompute a published table or figure (bound or mechanism)."""
    from audits.reproductions.registry import (
        empirical_reproductions,
        get_empirical_reproduction,
        table_summary,
    )
    from empirical.engine.trials import resolve_device as torch_device

    if args.id is None:
        rows = [{"id": r.id, "title": r.title} for r in list_reproductions()]
        known = {r["id"] for r in rows}
        rows += [{"id": r.id, "title": r.title, "runs_mechanisms": True,
                  **({"settings": list(r.settings)} if r.settings else {})}
                 for r in empirical_reproductions().values() if r.id not in known]
        emit({"reproductions": rows}, args.json, "\n".join(f"{r['id']}  {r['title']}" for r in rows))
        return
    empirical = get_empirical_reproduction(args.id)
    # An id the bound engine also reproduces runs there unless a mechanism option is given.
    bound_ids = {r.id for r in list_reproductions()}
    if empirical is not None and (args.id not in bound_ids or _empirical_options(args)):
        chosen = {}
        if args.setting is not None:
            if args.setting not in empirical.settings:
                offered = (f"one of {', '.join(empirical.settings)}" if empirical.settings
                           else "none (it has one setting)")
                raise CommandError(f"--setting {args.setting!r}: {args.id} offers {offered}")
            chosen = {"setting": args.setting}
        # checked once here: a device that cannot run is the user's error, not a figure's point
        device = str(torch_device(args.device or "cpu"))
        result = empirical.run(dataset=_dataset_choice(args), trials=args.trials or 100,
                               device=device, out_dir=args.out, reduced=args.reduced, **chosen)
        emit(result, args.json, empirical.summary(result))
        if not empirical.passed(result):
            raise SystemExit(1)
        return
    if _empirical_options(args):
        raise CommandError(f"{args.id} is a bound reproduction: it takes no --dataset, --path, "
                           "--trials, --device, --out, --reduced or --setting")
    repro = get_reproduction(args.id)
    result = repro.run()
    out = {"reproduction": repro.id, "title": repro.title, "citation": repro.citation.describe(),
           "rule": repro.rule, **result}
    emit(out, args.json, table_summary(out))
    if result["matches"] != result["total"]:
        raise SystemExit(1)


# ------------------------------------------------------------------------------------------
# bench
# ------------------------------------------------------------------------------------------


def cmd_bench_bounds(args: argparse.Namespace) -> None:
    """``unlearn bench bounds``: bound evaluation rates and the reference reproduction's time."""
    from audits.cli.bench import bounds_benchmark

    res = bounds_benchmark(points=args.points, algorithm=args.algorithm)
    summary = "\n".join([
        f"{res['bound']} ({res['algorithm']}), {res['points']} points:",
        f"  float, vectorised : {res['float_vectorised_evals_per_s']:.3g} evals/s",
        f"  float, scalar loop: {res['float_scalar_loop_evals_per_s']:.3g} evals/s",
        f"  ratio             : {res['vectorised_over_loop']:.1f}x",
        f"  mpmath (50 digits): {res['mp50_evals_per_s']:.3g} evals/s",
        f"  interval (50 dig.): {res['interval50_evals_per_s']:.3g} evals/s",
        (f"{res['reproduction']}: {res['table3_seconds']:.3f} s ({res['table3_matches']} match)"
         if res["reproduction"] else "no published-table reproduction: the demo's certificate "
         "inputs are the point"),
    ])
    emit(res, args.json, summary)


def cmd_bench_trials(args: argparse.Namespace) -> None:
    """``unlearn bench trials``: batched against per-trial trials of an algorithm."""
    from audits.cli.bench import ALL_ALGORITHMS, trials_benchmark, trials_table

    def progress(line: str) -> None:
        if json_lines():  # under --json, one JSON object a line like every progress line
            progress_line(line.removeprefix("bench trials: "))
        else:
            print(line, file=sys.stderr, flush=True)

    try:
        # Progress lines go to stderr under --json too (stdout keeps the one JSON object): a
        # network benchmark runs for minutes.
        with reporting("bench trials"):
            res = trials_benchmark(algorithm=args.algorithm, n_trials=args.trials,
                                   device=args.device, dataset=args.dataset, path=args.path,
                                   model=args.model, progress=progress)
    except ImportError as exc:  # torch is an optional extra
        raise CommandError(f"the trial benchmark needs the torch extra: {exc}") from None
    if args.algorithm == ALL_ALGORITHMS:
        emit(res, args.json, trials_table(res))
        return
    keys = ", ".join(f"{k}={v}" for k, v in res.items() if not isinstance(v, (dict, list)))
    emit(res, args.json, keys)


# ------------------------------------------------------------------------------------------
# parser
# ------------------------------------------------------------------------------------------


class _Version(argparse.Action):
    """``--version``: the version as text, or as a JSON object when ``--json`` is anywhere on
    the command line."""

    as_json = False

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        version = toolkit_version()
        emit({"program": "unlearn", "version": version}, _Version.as_json, f"unlearn {version}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The ``unlearn`` argument parser with every command."""
    parser = Parser(
        prog="unlearn",
        description="Certified machine unlearning: bounds, calibration, reproduction and audits.",
        epilog="Errors: one line 'error: ...' on stderr, exit 1 (2 for a malformed command line); "
               "with --json also {\"error\": {\"type\", \"message\"}} on stdout.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the version (a JSON object with --json) and exit")
    parser.add_argument("--json", action="store_true", dest="json_first", default=False,
                        help="print one JSON object (may be given before the command too)")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (may be given anywhere)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_conversion(p: argparse.ArgumentParser) -> None:
        p.add_argument("--conversion", choices=CONVERSIONS, default="mironov",
                       help="Rényi to (epsilon, delta) conversion (default: mironov, as the papers)")
        p.add_argument("--alpha-min", type=float, default=1.0, help="smallest Rényi order searched")
        p.add_argument("--alpha-max", type=float, default=1e8, help="largest Rényi order searched")

    p_bounds = sub.add_parser("bounds", help="declared theorems: list, show, evaluate")
    bsub = p_bounds.add_subparsers(dest="bounds_command", required=True)
    p = with_json(bsub.add_parser("list", help="list declared bounds"))
    p.add_argument("--paper", help="only this paper (a bound id's prefix)")
    p.set_defaults(func=cmd_bounds_list)
    p = with_json(bsub.add_parser("show", help="formula, assumptions and citation of a bound"))
    p.add_argument("id")
    p.set_defaults(func=cmd_bounds_show)
    p = with_json(bsub.add_parser("eval", help="evaluate a bound: unlearn bounds eval ID k=v ..."))
    p.add_argument("id")
    p.add_argument("params", nargs="*", metavar="key=value")
    p.add_argument("--precision", choices=["float", "mp", "interval"], default="float")
    p.add_argument("--digits", type=integer_in(5, 10_000), default=50,
                   help="significant digits of mp and interval evaluation (default 50)")
    p.set_defaults(func=cmd_bounds_eval)
    p = with_json(bsub.add_parser("epsilon", help="certified (epsilon, delta) at the best order"))
    p.add_argument("id")
    p.add_argument("params", nargs="*", metavar="key=value")
    p.add_argument("--delta", type=probability, required=True)
    with_conversion(p)
    p.set_defaults(func=cmd_bounds_epsilon)

    p = with_json(sub.add_parser("calibrate", help="least sigma/K/T or most requests for (eps, delta)"))
    p.add_argument("id")
    p.add_argument("params", nargs="*", metavar="key=value")
    p.add_argument("--solve", required=True, help="sigma, K, T, requests or another parameter")
    p.add_argument("--epsilon", type=positive_number,
                   help="target epsilon (required, except for a bound whose value is a delta)")
    p.add_argument("--delta", type=probability,
                   help="delta of the conversion, the bound's own delta input, or the target of a "
                        "bound whose value is a delta")
    with_conversion(p)
    p.set_defaults(func=cmd_calibrate)

    p = with_json(sub.add_parser("reproduce", help="recompute a published table or figure"))
    p.add_argument("id", nargs="?", help="a reproduction id (omit to list)")
    p.add_argument("--dataset", nargs="+", metavar="NAME [PATH]",
                   help="reproductions that run mechanisms: digits, mnist PATH, "
                        "cifar-features PATH, ...")
    p.add_argument("--path", help="file data (e.g. MNIST) for such a reproduction")
    p.add_argument("--trials", type=int, help="trials per point (default 100)")
    p.add_argument("--device", help="cpu (default), cuda or auto")
    p.add_argument("--out", help="output folder (default reproduce-out/<id as a folder name>, "
                   "':' and '/' of the id written '_')")
    p.add_argument("--reduced", action="store_true",
                   help="a few short points per panel (CI); not the paper's setting")
    p.add_argument("--setting", help="a named variant of the reproduction's constants (listed "
                   "by 'unlearn reproduce --json'; default the first)")
    p.set_defaults(func=cmd_reproduce)

    p_bench = sub.add_parser("bench", help="benchmarks (ratios measured in one run)")
    bench = p_bench.add_subparsers(dest="bench_command", required=True)
    p = with_json(bench.add_parser("bounds", help="bound evaluation rates and Table 3 time"))
    # At least the benchmark's scalar-loop sample (audits.cli.bench: loop_points = 20000), which is
    # compared point by point with the vectorised values; at most what fits in memory easily.
    p.add_argument("--points", type=integer_in(20_000, 10_000_000), default=1_000_000,
                   help="random parameter points evaluated (20000 to 10^7, default 10^6)")
    p.add_argument("--algorithm", help="whose bound (default: the default algorithm's)")
    p.set_defaults(func=cmd_bench_bounds)
    p = with_json(bench.add_parser("trials", help="batched vs per-trial trials of an algorithm"))
    p.add_argument("--algorithm", help="a registered algorithm, or 'all' for a table of every "
                   "one (default: the default algorithm)")
    p.add_argument("--trials", type=integer_in(2, 1_000_000), default=1000,
                   help="number of trials N (default 1000)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N or auto")
    p.add_argument("--dataset", help="dataset (default: the algorithm's benchmark data)")
    p.add_argument("--path", help="the file or folder of --dataset mnist, cifar10 or npz")
    p.add_argument("--model", help="model, for algorithms with several (e.g. mlp, cnn)")
    p.set_defaults(func=cmd_bench_trials)
    from audits.cli.bench import (
        add_exact_command,
        add_laws_command,
        add_leaks_command,
        add_power_command,
        add_tightness_command,
    )

    add_power_command(bench)  # unlearn bench power
    add_tightness_command(bench)  # unlearn bench tightness
    add_exact_command(bench)  # unlearn bench exact
    add_laws_command(bench)  # unlearn bench laws
    add_leaks_command(bench)  # unlearn bench leaks

    try:
        from audits.cli.audit import add_audit_commands
    except ImportError:
        pass
    else:
        add_audit_commands(sub, with_json)
    add_descriptions(parser)
    return parser


def _did_you_mean(parser: argparse.ArgumentParser, argv: Sequence[str], extra: Sequence[str]) -> str:
    """A hint naming the one option of the command that an unrecognised abbreviation
    (``--eps``) could stand for."""
    current, options = parser, set()
    for token in [None, *argv]:
        if token is not None:
            subparsers = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
            if not subparsers or token not in subparsers[0].choices:
                continue
            current = subparsers[0].choices[token]
        options = {o for a in current._actions for o in a.option_strings if o.startswith("--")}
    for token in extra:
        name = token.split("=", 1)[0]
        if name.startswith("--"):
            matches = sorted(o for o in options if o.startswith(name) and o != name)
            if len(matches) == 1:
                return f" (did you mean {matches[0]}?)"
    return ""


def _error_kind(error: BaseException) -> str:
    """The ``type`` of a JSON error: what went wrong, in words a script can branch on."""
    from audits.store import StoreError

    if isinstance(error, UsageError):
        return "usage"
    if isinstance(error, StoreError | sqlite3.Error):
        return "store"
    if isinstance(error, OSError):
        return "io"
    if isinstance(error, MemoryError | RecursionError):
        return "resource"
    if isinstance(error, CommandError | BoundError | ValueError | KeyError | OverflowError
                  | ZeroDivisionError):
        return "input"
    return "internal"


def _error_message(error: BaseException, *, debug: bool = False) -> str:
    if isinstance(error, KeyError) and error.args:
        message = str(error.args[0])
    elif isinstance(error, OSError) and error.strerror:
        where = f": {error.filename}" if error.filename else ""
        message = f"{error.strerror}{where}"
    elif isinstance(error, MemoryError):
        message = "out of memory (the input asks for more work than this machine can hold)"
    elif isinstance(error, RecursionError):
        message = "input nested too deeply (recursion limit)"
    else:
        message = str(error) or type(error).__name__
    if _error_kind(error) == "internal":
        hint = "the traceback is above on stderr" if debug else "rerun with --debug for the traceback"
        message = f"{type(error).__name__}: {message} (unexpected; {hint})"
    return one_line(message)


def _shorten_inputs(message: str, argv: Sequence[str]) -> str:
    """Replace every long command-line argument quoted in ``message`` by its first characters,
    so that an error line does not grow with the input that caused it."""
    for token in sorted({t for t in argv if len(t) > _ECHO_CHARS}, key=len, reverse=True):
        for form in (token, repr(token)[1:-1]):
            message = message.replace(form, shorten(form, _ECHO_CHARS))
    # An argument the command transformed before quoting it (stripped, lower-cased) is not
    # found above; no word of a message is that long otherwise.
    return re.sub(rf"\S{{{2 * _ECHO_CHARS},}}",
                  lambda m: m.group()[: _ECHO_CHARS - 3] + "...", message)


def _fail(error: BaseException, *, argv: Sequence[str], as_json: bool, debug: bool) -> int:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    kind = _error_kind(error)
    message = one_line(_shorten_inputs(_error_message(error, debug=debug), argv))
    print(f"error: {message}", file=sys.stderr)
    if as_json:
        emit(error_payload(kind, message), True, "")
    return 2 if kind == "usage" else 1


def _run(argv: list[str]) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # key=value pairs may follow options; anything else is an error
        if not hasattr(args, "params") or any("=" not in e or e.startswith("-") for e in extra):
            parser.error(f"unrecognized arguments: {one_line(' '.join(extra), 120)}"
                         + _did_you_mean(parser, argv, extra))
        args.params = [*args.params, *extra]
    with reporting(_progress_label(args), enabled=_long_running(args),
                   as_json=bool(getattr(args, "json", False))):
        args.func(args)
    return 0


def _long_running(args: argparse.Namespace) -> bool:
    """Audits, reproductions and benchmarks print progress on stderr (JSON lines with --json;
    nothing with --quiet)."""
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "own_progress", False):  # the command reports its progress itself
        return False
    if args.command == "audit":
        return args.audit_command in ("demo", "run")
    return args.command == "bench" or (args.command == "reproduce" and args.id is not None)


def _progress_label(args: argparse.Namespace) -> str:
    words = [args.command, *(getattr(args, f"{args.command}_command", None) or "").split()]
    if args.command == "reproduce" and args.id is not None:
        words.append(args.id)
    return one_line(" ".join(words), 80)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``unlearn`` command line; returns the exit status (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # --json and --debug are read before parsing, so that a malformed command line is still
    # reported in the requested form (they are real options too, listed in --help).
    head = argv[: argv.index("--")] if "--" in argv else argv
    as_json, debug = "--json" in head, "--debug" in head
    argv = [a for i, a in enumerate(argv) if not (a == "--debug" and i < len(head))]
    if argv and argv[0] == "--json":
        # ``unlearn --json bounds list``: the command's own flag, given before the command
        cut = argv.index("--") if "--" in argv else len(argv)
        argv = [*argv[1:cut], "--json", *argv[cut:]]
    _Version.as_json = as_json
    try:
        return _main(argv, as_json=as_json, debug=debug)
    finally:
        _print_plugin_notes()


def _print_plugin_notes() -> None:
    """A third-party entry point that failed to load is one ``note: ...`` line on stderr
    (stdout keeps the command's output or JSON object); the command ran without it."""
    notes = plugin_notes()
    for note in notes[_notes_printed[0]:]:
        print(f"note: {one_line(note)}", file=sys.stderr)
    _notes_printed[0] = len(notes)


_notes_printed = [0]  # main() may run many times in one process: each note is printed once


def _main(argv: list[str], *, as_json: bool, debug: bool) -> int:
    try:
        return _run(argv)
    except SystemExit as done:  # --help, --version, or a command's own status (VIOLATION)
        code = done.code
        return code if isinstance(code, int) else 0 if code is None else 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. head
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    except (Exception, MemoryError, RecursionError) as error:
        return _fail(error, argv=argv, as_json=as_json, debug=debug)
