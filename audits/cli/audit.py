"""``unlearn audit``: the demo, spec-driven audits and report re-rendering.

Registered by :func:`audits.cli.build_parser` through :func:`add_audit_commands`:

* ``unlearn audit demo [--algorithm NAME] [--out DIR] [--trials N] [--device D]``: the
  embedded demo audit of an algorithm (default: the default algorithm); see
  :func:`audits.loader.demo_spec` and each adapter's ``demo_spec``.
* ``unlearn audit algorithms``: the registered algorithms, one-line descriptions, parameters.
* ``unlearn audit run SPEC [--out DIR] [--device D] [--backend local|ray]``: a TOML spec.
  Rerunning with the same ``--out`` resumes from the chunk store. A folder holding another
  spec's audit is refused unless ``--replace``; stored chunks failing their checksum or checks are
  refused unless ``--resume``, which recomputes them.

Default folders: ``audit-out/demo-<algorithm>`` for a demo, ``audit-out/<spec file stem>`` for a
spec (:func:`default_out_dir`), so the demo of each algorithm and each example have their own.
* ``unlearn audit scores FILE.npz --unlearned A --retrained B (--epsilon E | --bound ID k=v ...)
  --delta D``: precomputed scores (:func:`audits.runner.audit_scores`), the same report and
  exit codes; written to ``audit-out/scores-<file stem>`` without ``--out``.
* ``unlearn audit report DIR``: re-render ``report.html`` and print the summary.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from audits.cli.common import (
    CommandError,
    UsageError,
    emit,
    integer_in,
    positive_number,
    probability,
)
from audits.options import Backend, ExecutionOptions
from audits.statistics import ScoreOrientation
from bounds.conversions import CONVERSIONS

__all__ = ["add_audit_commands", "default_out_dir"]

_DEFAULT_OUT = Path("audit-out")


def default_out_dir(*, algorithm: str | None = None, spec_path: str | Path | None = None) -> Path:
    """Where an audit writes without ``--out``: the demo of an algorithm (the default one when
    None) in ``audit-out/demo-<name>``, a spec file in ``audit-out/<its stem>``."""
    if spec_path is not None:
        return _DEFAULT_OUT / _folder_name(Path(spec_path).stem)
    if algorithm is None:
        from audits.registry import default_adapter

        algorithm = default_adapter().name
    return _DEFAULT_OUT / f"demo-{algorithm}"


def _folder_name(stem: str) -> str:
    """A spec file's stem as one folder name inside ``audit-out``: characters other than
    letters, digits (Unicode ones included), ``-``, ``_`` and ``.`` become ``_``, and so does a
    leading dot (``...toml``, whose stem is ``..``, never names the parent folder); at most 100
    characters."""
    safe = re.sub(r"[^\w.-]", "_", stem)[:100]
    safe = re.sub(r"^\.", "_", safe)
    return safe or "spec"


def _error(message: str) -> Exception:
    return CommandError(message)


def _outcome(result, out_dir: Path) -> dict[str, Any]:
    report = result.report
    return {
        "status": result.status,
        "certified_epsilon": report["certificate"]["epsilon"],
        "delta": report["certificate"]["delta"],
        "bound": report["certificate"]["bound"],
        "max_lower_bound": report["verdict"]["max_lower_bound"],
        "tightness": report["verdict"]["tightness"],
        "exact_epsilon": (None if report.get("exact_privacy_loss") is None
                          else report["exact_privacy_loss"]["epsilon"]),
        "max_certifiable_epsilon": report["empirical"]["max_certifiable_epsilon"],
        "n_trials": report["empirical"]["n_trials"],
        "explanation": report["verdict"]["explanation"],
        "out": str(out_dir),
        "report_json": str(result.paths.json_path) if result.paths else None,
        "report_html": str(result.paths.html_path) if result.paths else None,
        "timing": report["timing"],
    }


def execution_options(args: argparse.Namespace) -> ExecutionOptions:
    """The execution flags of an audit command (:func:`add_execution_flags`) as one object."""
    return ExecutionOptions(backend=args.backend, ray_address=args.ray_address,
                            device=args.device,
                            progress=not args.quiet,  # on stderr; JSON lines under --json
                            replace=args.replace, resume=args.resume,
                            keep_statistics=args.keep_statistics)


def _run(spec, args: argparse.Namespace, out_dir: Path) -> None:
    from audits.runner import run_audit

    result = run_audit(spec, out_dir=out_dir, options=execution_options(args))
    summary = result.summary()
    summary += f"\n  report              {result.paths.html_path}" if result.paths else ""
    emit(_outcome(result, out_dir), args.json, summary)
    if result.status != "CONSISTENT":  # per-status exit codes: audits.report.schema.EXIT_CODES
        raise SystemExit(result.report["verdict"]["exit_code"])


def cmd_audit_demo(args: argparse.Namespace) -> None:
    """``unlearn audit demo``: an algorithm's embedded demo audit."""
    from audits.loader import demo_spec

    spec = demo_spec(algorithm=args.algorithm, trials=args.trials)
    _run(spec, args, Path(args.out) if args.out else default_out_dir(algorithm=args.algorithm))


def cmd_audit_algorithms(args: argparse.Namespace) -> None:
    """``unlearn audit algorithms``: the registered algorithms with their parameters."""
    from audits.registry import adapters, default_adapter

    default = default_adapter().name
    rows = []
    for name, adapter in adapters().items():
        rows.append({
            "name": name,
            "description": adapter.description,
            "default": name == default,
            "models": list(adapter.models),
            "calibrate": list(adapter.calibratable),
            "parameters": [{"name": p.name, "default": p.default, "description": p.description}
                           for p in adapter.parameters()],
        })
    lines = []
    for row in rows:
        mark = " (default)" if row["default"] else ""
        lines.append(f"{row['name']}{mark}: {row['description']}")
        lines.append(f"  models: {', '.join(row['models'])}; calibrate: "
                     f"{', '.join(row['calibrate'])}")
        for p in row["parameters"]:
            lines.append(f"  {p['name']} = {p['default']!r}: {p['description']}")
    emit({"algorithms": rows, "count": len(rows)}, args.json, "\n".join(lines))


def cmd_audit_run(args: argparse.Namespace) -> None:
    """``unlearn audit run SPEC``: the audit of a spec file."""
    from audits.loader import spec_from_toml

    spec_path = Path(args.spec)
    spec = spec_from_toml(spec_path)
    if args.trials is not None:
        spec = spec.replace(trials=args.trials)
    _run(spec, args, Path(args.out) if args.out else default_out_dir(spec_path=spec_path))


def _scores_certificate(args: argparse.Namespace):
    """``--epsilon E --delta D`` (a certificate you vouch for) or ``--bound ID k=v ... --delta
    D`` (a declared bound, evaluated by the bound engine: interval upper end, a Rényi bound
    converted at its best order)."""
    from audits.cli.common import parse_assignments
    from audits.protocols import Certificate

    params = parse_assignments(getattr(args, "params", []) or [])
    if (args.epsilon is None) == (args.bound is None):
        raise UsageError("give the certificate as --epsilon E --delta D, or as --bound ID "
                         "key=value ... --delta D (one of the two)")
    if args.epsilon is not None:
        if params:
            raise UsageError(f"key=value parameters ({', '.join(params)}) go with --bound, not "
                             "with --epsilon")
        return Certificate(epsilon=args.epsilon, delta=args.delta, bound="user",
                           provenance={"source": "given on the command line (--epsilon, "
                                       "--delta); the user vouches for it"})
    import bounds
    from audits.certify import certify
    from audits.fields import SpecError

    bound = bounds.get(args.bound)
    if "delta" in bound.parameter_names:
        if "delta" in params:
            raise UsageError(f"{bound.id} takes delta as a parameter: give it once, as --delta")
        params["delta"] = args.delta
    try:
        return certify(bound, inputs=params, free={}, delta=args.delta, target_epsilon=None,
                       solve=None, conversion=args.conversion).certificate
    except SpecError as error:
        raise CommandError(str(error).removeprefix("spec.certificate: ")) from None


def cmd_audit_scores(args: argparse.Namespace) -> None:
    """``unlearn audit scores FILE.npz``: the audit of precomputed attack scores."""
    from audits.runner import audit_scores
    from empirical.data.npz import npz_arrays, read_npz

    path = Path(args.file)
    names = {"unlearned": args.unlearned, "retrained": args.retrained,
             "unlearned accuracy": args.unlearned_accuracy,
             "retrained accuracy": args.retrained_accuracy}
    wanted = [n for n in names.values() if n is not None]
    certificate = _scores_certificate(args)  # a usage error before the file is read
    arrays = read_npz(path, wanted)
    for role, name in names.items():
        if name is not None and name not in arrays:
            raise _error(f"{path} has no array {name!r} (the {role} scores); it holds "
                         f"{', '.join(sorted(npz_arrays(path))) or 'none'}")
    out_dir = Path(args.out) if args.out else _DEFAULT_OUT / f"scores-{_folder_name(path.stem)}"
    accuracy = {role: None if names[f"{role} accuracy"] is None
                else arrays[names[f"{role} accuracy"]] for role in ("unlearned", "retrained")}
    result = audit_scores(
        unlearned={args.attack: arrays[args.unlearned]},
        retrained={args.attack: arrays[args.retrained]},
        certificate=certificate, confidence=args.confidence, direction=args.direction,
        unlearned_accuracy=accuracy["unlearned"], retrained_accuracy=accuracy["retrained"],
        out_dir=out_dir, replace=args.replace, name=f"scores from {path.name}")
    summary = result.summary()
    summary += f"\n  report              {result.paths.html_path}" if result.paths else ""
    emit(_outcome(result, out_dir), args.json, summary)
    if result.status != "CONSISTENT":  # per-status exit codes: audits.report.schema.EXIT_CODES
        raise SystemExit(result.report["verdict"]["exit_code"])


def cmd_audit_report(args: argparse.Namespace) -> None:
    """``unlearn audit report DIR``: re-render and summarise a stored report."""
    from audits.report.schema import HTML_NAME, JSON_NAME, load_report
    from audits.report.text import summary_text
    from audits.report.write import write_report
    from audits.store import FolderLock, check_folder

    try:
        report = load_report(args.dir)
    except FileNotFoundError as error:
        raise _error(str(error)) from None
    target = Path(args.dir)
    folder = target if target.is_dir() else target.parent
    with FolderLock(folder):  # not while an audit writes there; never through a link
        check_folder(folder, names=(JSON_NAME, HTML_NAME))
        paths = write_report(report, folder)
    summary = summary_text(report) + f"\n  report              {paths.html_path}"
    emit({"status": report["verdict"]["status"], "report_json": str(paths.json_path),
          "report_html": str(paths.html_path), "summary": summary_text(report)},
         args.json, summary)


def add_audit_commands(subparsers: Any, with_json: Any) -> None:
    """Add ``unlearn audit {demo, algorithms, run, scores, report}`` to the ``unlearn`` parser."""
    p_audit = subparsers.add_parser(
        "audit", help="empirical audits: certified epsilon against empirical lower bounds")
    sub = p_audit.add_subparsers(dest="audit_command", required=True)

    def common(p: argparse.ArgumentParser, default_out: str) -> None:
        p.add_argument("--out", help=f"output directory (default: {default_out})")
        p.add_argument("--device", help="cpu, cuda, cuda:N or auto (default: the spec's)")
        p.add_argument("--trials", type=integer_in(2, 10_000_000),
                       help="number of trials N (default: the spec's)")
        p.add_argument("--backend", choices=tuple(Backend), default=Backend.LOCAL,
                       help="where chunks run (ray: a local instance or RAY_ADDRESS)")
        p.add_argument("--ray-address", help="address of a running Ray cluster")
        p.add_argument("--quiet", action="store_true", help="no progress line")
        p.add_argument("--replace", action="store_true",
                       help="the --out folder holds another spec's audit: delete it and start "
                            "afresh (without this flag such a folder is refused)")
        p.add_argument("--resume", action="store_true",
                       help="recompute stored chunks that fail their checksum or the store's "
                            "checks of their contents (without this flag they are named and the "
                            "run stops)")
        p.add_argument("--keep-statistics", action="store_true",
                       help="store every trial's statistics (e.g. parameter vectors) too; by "
                            "default the store keeps what the report needs (their projections)")

    p = with_json(sub.add_parser(
        "demo", help="an algorithm's embedded demo audit (see 'unlearn audit algorithms')"))
    p.add_argument("--algorithm", help="a registered algorithm (default: the default one)")
    common(p, "audit-out/demo-<algorithm>")
    p.set_defaults(func=cmd_audit_demo)

    p = with_json(sub.add_parser(
        "algorithms", help="registered algorithms: descriptions and parameters"))
    p.set_defaults(func=cmd_audit_algorithms)

    p = with_json(sub.add_parser("run", help="run (or resume) the audit of a TOML spec"))
    p.add_argument("spec", help="the spec file (see the examples/ folder)")
    common(p, "audit-out/<spec name>")
    p.set_defaults(func=cmd_audit_run)

    p = with_json(sub.add_parser(
        "scores", help="audit precomputed attack scores from a .npz file against a certificate"))
    p.add_argument("file", help="a .npz file (numpy.savez) holding the score arrays")
    p.add_argument("params", nargs="*", metavar="key=value", help="the bound's parameters")
    p.add_argument("--unlearned", required=True, metavar="ARRAY",
                   help="the array of the unlearned models' scores ([n] or [n, E])")
    p.add_argument("--retrained", required=True, metavar="ARRAY",
                   help="the array of the retrained models' scores (the same n trials)")
    p.add_argument("--attack", default="score", help="the attack's name in the report")
    p.add_argument("--epsilon", type=positive_number, help="certified epsilon (with --delta)")
    p.add_argument("--bound", metavar="ID", help="a declared bound certifying it (with "
                   "key=value parameters and --delta; see 'unlearn bounds list')")
    p.add_argument("--delta", type=probability, required=True, help="the certificate's delta")
    p.add_argument("--conversion", choices=CONVERSIONS, default="mironov",
                   help="Rényi to (epsilon, delta) conversion of a Rényi --bound")
    p.add_argument("--unlearned-accuracy", metavar="ARRAY", help="test accuracies, unlearned")
    p.add_argument("--retrained-accuracy", metavar="ARRAY", help="test accuracies, retrained")
    p.add_argument("--confidence", type=probability, default=0.95,
                   help="joint confidence of the lower bounds (default 0.95)")
    p.add_argument("--direction", choices=tuple(ScoreOrientation), default=ScoreOrientation.BOTH,
                   help="score orientation: both (default), greater (higher = unlearned), less")
    p.add_argument("--out", help="output directory (default: audit-out/scores-<file stem>)")
    p.add_argument("--replace", action="store_true",
                   help="the --out folder holds another audit of this toolkit: replace it")
    p.add_argument("--quiet", action="store_true", help="no progress line (accepted as the "
                   "other audit commands accept it; scores need no trials)")
    p.set_defaults(func=cmd_audit_scores)

    p = with_json(sub.add_parser("report", help="re-render report.html and print the summary"))
    p.add_argument("dir", help="an audit directory (or its report.json)")
    p.set_defaults(func=cmd_audit_report)
