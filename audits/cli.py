"""The ``unlearn`` command line (also ``python -m audits``).

Every command prints a short human summary, or one JSON object with ``--json``. Bad input
gives a one-line error on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import mpmath

import bounds
from audits.cli_common import (
    CommandError,
    emit,
    parse_assignments,
    positive_number,
    probability,
    with_json,
)
from bounds.calibration import calibrate
from bounds.conversions import CONVERSIONS, best_epsilon
from bounds.engine import BoundError, get_reproduction, list_reproductions

# ------------------------------------------------------------------------------------------
# bounds
# ------------------------------------------------------------------------------------------


def cmd_bounds_list(args: argparse.Namespace) -> None:
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
    b = bounds.get(args.id)
    params = parse_assignments(args.params)
    ev = b.evaluate(precision=args.precision, digits=args.digits, **params)
    out = ev.to_dict()
    if args.precision == "interval":
        summary = (f"{b.id} = [{mpmath.nstr(ev.lower, 17)}, {mpmath.nstr(ev.upper, 17)}]"
                   f"  (certified upper {ev.certified_upper!r})")
    elif args.precision == "mp":
        summary = f"{b.id} = {mpmath.nstr(ev.value, args.digits)}"
    else:
        summary = f"{b.id} = {ev.value!r}"
    summary += f"\n  {b.guarantee.kind}: {b.guarantee.description}"
    for note in ev.notes:
        summary += f"\n  note: {note}"
    emit(out, args.json, summary)


def cmd_bounds_epsilon(args: argparse.Namespace) -> None:
    params = parse_assignments(args.params)
    conv = best_epsilon(args.id, delta=args.delta, conversion=args.conversion,
                        alpha_min=args.alpha_min, alpha_max=args.alpha_max, **params)
    label = "certified" if conv.certified else "NOT certified"
    summary = (f"{args.id}: ({conv.epsilon:.6g}, {conv.delta:.3g})-unlearning at alpha = "
               f"{conv.alpha:.6g} ({conv.conversion} conversion; {label})")
    summary += "".join(f"\n  note: {note}" for note in conv.notes)
    emit(conv.to_dict(), args.json, summary)


def cmd_calibrate(args: argparse.Namespace) -> None:
    params = parse_assignments(args.params)
    cal = calibrate(args.id, solve=args.solve, epsilon=args.epsilon, delta=args.delta,
                    conversion=args.conversion, alpha_min=args.alpha_min,
                    alpha_max=args.alpha_max, **params)
    if cal.value is None:
        summary = f"{args.id}: {'; '.join(cal.notes)}"
    else:
        label = "certified" if cal.certified else "NOT certified"
        summary = (f"{cal.parameter} = {cal.value!r}  ({label} epsilon {cal.certified_epsilon:.10g}"
                   f" <= {cal.target_epsilon:g}"
                   + (f" at alpha {cal.alpha:.6g}" if cal.alpha else "") + ")")
        if cal.neighbour is not None:
            summary += (f"\n  check: {cal.parameter} = {cal.neighbour!r} gives epsilon "
                        f"{cal.neighbour_epsilon:.10g} > target")
        summary += "".join(f"\n  note: {note}" for note in cal.notes)
    emit(cal.to_dict(), args.json, summary)


def _adapter_reproductions() -> dict[str, tuple[object, str]]:
    """Reproductions that need a mechanism: adapters list them in ``reproductions`` (id ->
    title) and run them with ``reproduce(id, dataset=, path=)``."""
    from audits.registry import adapters

    return {rid: (adapter, title) for adapter in adapters().values()
            for rid, title in getattr(adapter, "reproductions", {}).items()}


def _cmd_adapter_reproduce(args: argparse.Namespace, adapter: object) -> None:
    result = adapter.reproduce(args.id, dataset=args.dataset, path=args.path)
    out = {"reproduction": args.id, **result}
    lines = [f"{args.id}: {result['title']}", f"rule: {result['rule']}"]
    for row in result["rows"]:
        label = ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in row.items() if k not in ("published", "computed", "match"))
        lines.append(f"  {label}: published {row['published']}, computed {row['computed']}"
                     f"  {'ok' if row['match'] else 'MISMATCH'}")
    lines.append(f"{result['matches']}/{result['total']} match")
    emit(out, args.json, "\n".join(lines))
    if result["matches"] != result["total"]:
        raise SystemExit(1)


def cmd_reproduce(args: argparse.Namespace) -> None:
    from_adapters = _adapter_reproductions()
    if args.id is None:
        rows = [{"id": r.id, "title": r.title} for r in list_reproductions()]
        rows += [{"id": rid, "title": title} for rid, (_, title) in from_adapters.items()]
        emit({"reproductions": rows}, args.json, "\n".join(f"{r['id']}  {r['title']}" for r in rows))
        return
    if args.id in from_adapters:
        _cmd_adapter_reproduce(args, from_adapters[args.id][0])
        return
    if args.dataset is not None or args.path is not None:
        raise CommandError(f"{args.id} recomputes published numbers from the bounds alone; "
                           "--dataset and --path apply to reproductions that run a mechanism")
    repro = get_reproduction(args.id)
    result = repro.run()
    out = {"reproduction": repro.id, "title": repro.title, "citation": repro.citation.describe(),
           "rule": repro.rule, **result}
    lines = [f"{repro.id}: {repro.title}", f"rule: {repro.rule}"]
    for row in result["rows"]:
        label = ", ".join(f"{k}={v}" for k, v in row.items()
                          if k not in ("published", "computed", "match", "truncated", "alpha",
                                       "certified_epsilon", "delta", "first_request_epochs"))
        lines.append(f"  {label}: published {row['published']}, computed {row['computed']:.6g}"
                     f"  {'ok' if row['match'] else 'MISMATCH'}")
    lines.append(f"{result['matches']}/{result['total']} match")
    emit(out, args.json, "\n".join(lines))
    if result["matches"] != result["total"]:
        raise SystemExit(1)


# ------------------------------------------------------------------------------------------
# bench
# ------------------------------------------------------------------------------------------


def cmd_bench_bounds(args: argparse.Namespace) -> None:
    from audits.bench import bounds_benchmark

    res = bounds_benchmark(points=args.points, algorithm=args.algorithm)
    summary = "\n".join([
        f"{res['bound']}, {res['points']} points:",
        f"  float, vectorised : {res['float_vectorised_evals_per_s']:.3g} evals/s",
        f"  float, scalar loop: {res['float_scalar_loop_evals_per_s']:.3g} evals/s",
        f"  ratio             : {res['vectorised_over_loop']:.1f}x",
        f"  mpmath (50 digits): {res['mp50_evals_per_s']:.3g} evals/s",
        f"  interval (50 dig.): {res['interval50_evals_per_s']:.3g} evals/s",
        f"{res['reproduction']}: {res['table3_seconds']:.3f} s ({res['table3_matches']} match)",
    ])
    emit(res, args.json, summary)


def cmd_bench_trials(args: argparse.Namespace) -> None:
    from audits.bench import trials_benchmark

    try:
        res = trials_benchmark(algorithm=args.algorithm, n_trials=args.n, device=args.device,
                               dataset=args.dataset, model=args.model)
    except ImportError as exc:  # torch is an optional extra
        raise CommandError(f"the trial benchmark needs the torch extra: {exc}") from None
    keys = ", ".join(f"{k}={v}" for k, v in res.items() if not isinstance(v, (dict, list)))
    emit(res, args.json, keys)


# ------------------------------------------------------------------------------------------
# parser
# ------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="unlearn",
        description="Certified machine unlearning: bounds, calibration, reproduction and audits.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

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
    p.add_argument("--digits", type=int, default=50)
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
    p.add_argument("--epsilon", type=positive_number, required=True)
    p.add_argument("--delta", type=probability)
    with_conversion(p)
    p.set_defaults(func=cmd_calibrate)

    p = with_json(sub.add_parser("reproduce", help="recompute a published table or figure"))
    p.add_argument("id", nargs="?", help="a reproduction id (omit to list)")
    p.add_argument("--dataset", help="data of a reproduction that runs a mechanism (e.g. digits)")
    p.add_argument("--path", help="file data (e.g. MNIST) for such a reproduction")
    p.set_defaults(func=cmd_reproduce)

    p_bench = sub.add_parser("bench", help="benchmarks (ratios measured in one run)")
    bench = p_bench.add_subparsers(dest="bench_command", required=True)
    p = with_json(bench.add_parser("bounds", help="bound evaluation rates and Table 3 time"))
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--algorithm", help="whose bound (default: the default algorithm's)")
    p.set_defaults(func=cmd_bench_bounds)
    p = with_json(bench.add_parser("trials", help="batched vs per-trial trials of an algorithm"))
    p.add_argument("--algorithm", help="a registered algorithm (default: the default one)")
    p.add_argument("--n", type=int, default=1000, help="number of trials")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dataset", help="dataset (default: the algorithm's benchmark data)")
    p.add_argument("--model", help="model, for algorithms with several (e.g. mlp, cnn)")
    p.set_defaults(func=cmd_bench_trials)

    try:
        from audits.audit_cli import add_audit_commands
    except ImportError:
        pass
    else:
        add_audit_commands(sub, with_json)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # key=value pairs may follow options; anything else is an error
        if not hasattr(args, "params") or any("=" not in e or e.startswith("-") for e in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.params = [*args.params, *extra]
    try:
        args.func(args)
    except (CommandError, BoundError, ValueError, KeyError, OverflowError, ZeroDivisionError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"unlearn: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("unlearn: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. head
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 0
    return 0
