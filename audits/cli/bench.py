"""Benchmarks behind ``unlearn bench``: rates measured side by side in one run, reported as ratios.

Which bound, reproduction and trials are timed comes from an algorithm's adapter
(:mod:`audits.registry`); this module names no algorithm.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import bounds
from audits import progress
from audits.adapters.mechanism import time_batched_and_loop
from audits.registry import adapter_names, default_adapter, get_adapter
from bounds.registry import get_reproduction

__all__ = ["ALL_ALGORITHMS", "add_exact_command", "add_laws_command", "add_leaks_command",
           "add_power_command", "add_tightness_command", "bounds_benchmark", "power_summary",
           "trials_benchmark", "trials_table"]


def _rate(fn: Callable[[], Any], count: int, *, min_seconds: float = 0.3) -> tuple[float, float]:
    """Calls of ``fn`` (each doing ``count`` evaluations) per second, repeated for min_seconds."""
    fn()  # warm-up: compilation and caches
    reps, start = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return reps * count / elapsed, elapsed / reps


# The time budget of the vectorised float timing of a bound that evaluates slowly (seconds).
SLOW_BOUND_SECONDS = 5


def bounds_benchmark(*, points: int = 1_000_000, loop_points: int = 20_000, seed: int = 0,
                     algorithm: str | None = None) -> dict[str, Any]:
    """Evaluation rates of an algorithm's main bound and the time of its reference reproduction.

    Where the adapter (``algorithm``, default: the default one) names a published-table
    reproduction (``bench_reproduction``), the bound is ``bench_bound`` at ``bench_point`` with
    sigma, K and T drawn at random, and the reproduction is timed. Otherwise the bound is the
    one certifying the adapter's demo, at the demo's own inputs (the same point repeated), and
    there is no reproduction to time.

    * vectorised float: one checked ``evaluate`` call over ``points`` points;
    * scalar loop: the same compiled formula called once per point in a Python loop;
    * mp (50 digits) and interval (50 digits): checked ``evaluate`` per point;
    * the reproduction, each of its rows certified as the reproduction does.
    """
    adapter = default_adapter() if algorithm is None else get_adapter(algorithm,
                                                                      path="--algorithm")
    published = bool(adapter.bench_bound and adapter.bench_point and adapter.bench_reproduction)
    if published:
        bound = bounds.get(adapter.bench_bound)
        point = dict(adapter.bench_point)
        rng = np.random.default_rng(seed)
        drawn = {"sigma": rng.uniform(0.01, 2.0, points),
                 "K": rng.integers(1, 50, points).astype(float),
                 "T": rng.integers(1, 100, points).astype(float)}
    else:
        bound, point = _demo_point(adapter)
        drawn = {}
    notes = [
        "vectorised rate includes domain and precondition checks; the scalar loop calls the "
        "compiled formula without checks, so the ratio understates the speed-up",
        "mp and interval rates include input resolution and precondition checks per call",
    ]
    if not published:
        # A bound evaluated by a solver per point (an exact Gaussian mechanism, an accountant)
        # runs at a few hundred points a second: the repeated demo point is timed over as many
        # points as about SLOW_BOUND_SECONDS allow.
        probe = min(points, 200)
        start = time.perf_counter()
        bound.evaluate(precision="float", **{n: np.full(probe, float(v)) for n, v in point.items()})
        affordable = int(SLOW_BOUND_SECONDS * probe / max(time.perf_counter() - start, 1e-9))
        if affordable < points:
            points, loop_points = max(probe, affordable), min(loop_points, max(probe, affordable))
            notes.append(f"{bound.id} evaluates slowly (about {affordable // SLOW_BOUND_SECONDS} "
                         f"points a second): timed over {points} points")
    loop_points = min(loop_points, points)
    arrays = {**{n: np.full(points, float(v)) for n, v in point.items()}, **drawn}
    names = bound.parameter_names

    def vectorised() -> Any:
        return bound.evaluate(precision="float", **arrays).value

    progress.phase(f"timing {bound.id}: vectorised float over {points} points")
    float_rate, _ = _rate(vectorised, points)
    progress.phase(f"timing {bound.id}: scalar loop over {loop_points} points")

    fn = bound.float_function
    rows = [[float(arrays[n][i]) for n in names] for i in range(loop_points)]

    def scalar_loop() -> None:
        for row in rows:
            fn(*row)

    loop_rate, _ = _rate(scalar_loop, loop_points)
    vec = np.broadcast_to(vectorised(), (points,))[:loop_points]
    looped = np.array([fn(*row) for row in rows])
    agree = bool(np.allclose(vec, looped, rtol=1e-12, atol=0))

    few = [{**point, **{n: int(v[i]) if n in ("K", "T") else float(v[i]) for n, v in drawn.items()}}
           for i in range(50 if drawn else 1)]

    def mp_eval() -> None:
        for p in few:
            bound.evaluate(precision="mp", digits=50, **p)

    def iv_eval() -> None:
        for p in few:
            bound.evaluate(precision="interval", digits=50, **p)

    progress.phase(f"timing {bound.id}: mp and interval evaluation")
    mp_rate, _ = _rate(mp_eval, len(few))
    iv_rate, _ = _rate(iv_eval, len(few))

    reproduction: dict[str, Any] = {"reproduction": None, "table3_seconds": None,
                                    "table3_matches": None}
    if published:
        repro = get_reproduction(adapter.bench_reproduction)
        progress.phase(f"timing the reproduction {repro.id}")
        start = time.perf_counter()
        result = repro.run()
        reproduction = {"reproduction": repro.id,
                        "table3_seconds": time.perf_counter() - start,
                        "table3_matches": f"{result['matches']}/{result['total']}"}
    if not published:
        notes.append(f"no published-table reproduction for {adapter.name}: the point is the "
                     "inputs of its demo's certificate, repeated")
    return {
        "benchmark": "bounds",
        "algorithm": adapter.name,
        "bound": bound.id,
        "point": "published" if published else "demo",
        "float_vectorised_evals_per_s": float_rate,
        "float_scalar_loop_evals_per_s": loop_rate,
        "vectorised_over_loop": float_rate / loop_rate,
        "vectorised_matches_loop": agree,
        "mp50_evals_per_s": mp_rate,
        "interval50_evals_per_s": iv_rate,
        **reproduction,
        "points": points,
        "loop_points": loop_points,
        "notes": notes,
    }


def _demo_point(adapter: Any) -> tuple[Any, dict[str, Any]]:
    """The bound certifying ``adapter``'s demo and its inputs there (exact where the adapter
    kept them exact; the Rényi order at the certificate's)."""
    certificate = adapter.prepare(adapter.demo_spec(), device="cpu").certificate
    try:
        bound = bounds.get(certificate.bound)
    except bounds.UnknownBoundError:
        raise ValueError(f"the {adapter.name} demo's certificate names no declared bound "
                         f"({certificate.bound!r}), so there is no bound to benchmark") from None
    inputs = dict(certificate.inputs)
    order = bound.guarantee.renyi_order
    if order is not None and order not in inputs and certificate.alpha is not None:
        inputs[order] = certificate.alpha
    missing = [n for n in bound.parameter_names if n not in inputs]
    if missing:
        raise ValueError(f"the {adapter.name} demo's certificate does not record {bound.id}'s "
                         f"inputs {missing}, so there is no point to benchmark")
    return bound, {n: inputs[n] for n in bound.parameter_names}


ALL_ALGORITHMS = "all"


def trials_benchmark(*, algorithm: str | None = None, n_trials: int = 1000, device: str = "cpu",
                     dataset: str | None = None, path: str | None = None,
                     model: str | None = None,
                     progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Batched against per-trial trials of an algorithm (its adapter's ``benchmark_trials``).

    An adapter without its own benchmark is timed generically on its demo spec (see
    :func:`_generic_trials_benchmark`). ``algorithm`` ``"all"`` runs every registered
    algorithm in turn (``progress`` is told each name as it starts) and returns their rows.
    """
    if path is not None and dataset is None:
        raise ValueError("--path names the files of a --dataset (mnist, cifar10 or npz); give "
                         "--dataset too")
    if algorithm == ALL_ALGORITHMS:
        if dataset is not None or model is not None:
            raise ValueError("--algorithm all runs each algorithm on its own benchmark data and "
                             "model; leave --dataset, --path and --model out")
        rows = []
        for name in adapter_names():
            if progress is not None:
                progress(f"bench trials: {name} ({n_trials} trials)")
            rows.append(trials_benchmark(algorithm=name, n_trials=n_trials, device=device))
        return {"benchmark": "trials", "n_trials": n_trials, "device": device, "rows": rows}
    adapter = default_adapter() if algorithm is None else get_adapter(algorithm,
                                                                      path="--algorithm")
    options = {} if dataset is None else {"dataset": dataset}
    if path is not None:
        options["path"] = path
    if model is not None:  # adapters with several models take model= (e.g. mlp, cnn)
        if "model" not in inspect.signature(adapter.benchmark_trials).parameters:
            raise ValueError(f"the {adapter.name} benchmark has one model; leave --model out")
        options["model"] = model
    own = adapter.benchmark_trials(n_trials=n_trials, device=device, **options)
    if own is not None:
        return {"algorithm": adapter.name, **own}
    if options:
        raise ValueError(f"the {adapter.name} benchmark runs on its demo data and model; leave "
                         "--dataset, --path and --model out")
    return {"algorithm": adapter.name, **_generic_trials_benchmark(adapter, n_trials, device)}


def _rate_and_unit(row: dict[str, Any], side: str) -> tuple[float, str]:
    for unit in ("trials", "models"):
        if f"{side}_{unit}_per_s" in row:
            return float(row[f"{side}_{unit}_per_s"]), unit
    raise KeyError(f"benchmark row of {row.get('algorithm')} has no {side} rate")


def trials_table(res: dict[str, Any]) -> str:
    """The rows of ``bench trials --algorithm all`` side by side: rates, ratio, identity."""
    lines = [f"batched against per-trial loop, {res['n_trials']} trials, device {res['device']}",
             f"  {'algorithm':<28} {'batched/s':>10} {'loop/s':>9} {'unit':<6} {'ratio':>7} "
             f"{'identical':>9}"]
    for row in res["rows"]:
        batched, unit = _rate_and_unit(row, "batched")
        loop, _ = _rate_and_unit(row, "loop")
        same = row.get("loop_matches_batched")
        lines.append(f"  {row['algorithm']:<28} {batched:>10.1f} {loop:>9.1f} {unit:<6} "
                     f"{batched / loop:>6.1f}x {('-' if same is None else 'yes' if same else 'NO'):>9}")
    return "\n".join(lines)


def _generic_trials_benchmark(adapter: Any, n_trials: int, device: str) -> dict[str, Any]:
    """One ``run_trials`` call for all trials against the first trials one at a time: in the
    mechanism's own loop mode where ``run_trials`` takes ``mode`` (the per-trial baseline
    without the per-call preparation), else one ``run_trials`` call per trial."""
    from audits.attacks import DEFAULT_ATTACKS
    from audits.loader import load_spec
    from audits.runner import prepare_audit

    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    # The trials are timed, not the scoring: a demo that adds an attack on exact laws (which
    # wraps its mechanism) is benchmarked with the attacks every mechanism gives.
    demo = adapter.demo_spec(trials=max(4, n_trials), device=device)  # a spec holds >= 4 trials
    spec = load_spec(demo.replace(attacks=DEFAULT_ATTACKS))
    progress.phase("preparing the demo mechanism")
    mechanism = prepare_audit(spec).mechanism
    progress.phase(f"timing {n_trials} batched trials, then up to 32 one at a time")
    has_loop = "mode" in inspect.signature(mechanism.run_trials).parameters

    def run(*, seed: int, first_trial: int, n_trials: int, mode: str = "batched") -> Any:
        if mode == "batched":
            return mechanism.run_trials(seed=seed, first_trial=first_trial,
                                        n_trials=n_trials).to_arrays()
        if has_loop:
            whole = mechanism.run_trials(seed=seed, first_trial=first_trial, n_trials=n_trials,
                                         mode="loop").to_arrays()
            return [{key: value[i:i + 1] for key, value in whole.items()} for i in range(n_trials)]
        return [mechanism.run_trials(seed=seed, first_trial=first_trial + i, n_trials=1).to_arrays()
                for i in range(n_trials)]

    timing = time_batched_and_loop(run, n_trials=n_trials, loop_trials=32)
    matches = all(np.array_equal(timing.batched[key][i], row[key][0])
                  for i, row in enumerate(timing.looped) for key in row)
    how = ("run_trials(mode='loop')" if has_loop
           else "one run_trials call per trial, its preparation included")
    return {"device": device, **timing.rates(), "loop_matches_batched": matches,
            "note": f"generic benchmark on the adapter's demo spec; loop: {how}; each path's "
                    "fastest run"}


# ----------------------------------------------------------------------------------------------
# unlearn bench power: audit power on the Gaussian ground truth (empirical.benchmarks.power).


def power_summary(res: dict[str, Any]) -> str:
    """The power benchmark side by side: (epsilon, delta) bounds, detection rates, coverage."""
    lines = [f"Gaussian ground truth: {res['ground_truth']}"
             + (" (--quick: few runs, a smoke test)" if res["quick"] else "")]
    if res["epsilon_bounds"]:  # each part's table only where that part ran
        lines += ["", "(epsilon, delta) lower bounds, N per side "
                  f"{res['epsilon_bounds'][0]['n_per_side'] if res['epsilon_bounds'] else '-'}:",
                  f"  {'mu':>4} {'delta':>9} {'exact':>7} {'limit':>7} {'default/limit':>13} "
                  f"{'peer/limit':>10} {'default/peer':>12} {'pilot/limit':>11} {'current/limit':>13} "
                  f"{'default misses':>14}"]
        for row in res["epsilon_bounds"]:
            default, pilot, current = row["default"], row["pilot"], row["current"]
            peer = row.get("peer")
            peer_cols = (f"{peer['mean_over_limit']:>10.3f} {default['mean'] / peer['mean']:>12.3f}"
                         if peer and peer["mean"] > 0 else f"{'-':>10} {'-':>12}")
            lines.append(f"  {row['mu']:>4g} {row['delta']:>9.3g} {row['exact']:>7.3f} "
                         f"{row['limit']:>7.3f} {default['mean_over_limit']:>13.3f} {peer_cols} "
                         f"{pilot['mean_over_limit']:>11.3f} {current['mean_over_limit']:>13.3f} "
                         f"{default['coverage_failure_rate']:>14.3f}")
        lines += ["  default: the audits' default statistic; peer: jax-privacy 2.0's "
                  "Clopper-Pearson auditor (one_sided=False, Bonferroni); pilot: pilot-threshold; "
                  "current: bonferroni-pareto, one orientation"]
    if "peer" in res.get("parts", []):
        rows = res.get("peer_comparison") or []
        lines += ["", "default statistic vs jax-privacy on identical scores (mean over runs per "
                  "case" + (f", {rows[0]['runs']} runs, N per side {rows[0]['n_per_side']}):"
                            if rows else "): jax-privacy is not installed")]
        if rows:
            lines.append(f"  {'mu':>6} {'delta':>7} {'default':>8} {'peer':>8} {'ratio':>6} "
                         f"{'worst draw':>10} {'default/limit':>13}")
            for row in rows:
                lines.append(f"  {row['mu']:>6.3f} {row['delta']:>7.0e} {row['default_mean']:>8.3f} "
                             f"{row['peer_mean']:>8.3f} {row['ratio_of_means']:>6.3f} "
                             f"{min(row['single_draw_ratios']):>10.3f} "
                             f"{row['default_mean_over_limit']:>13.3f}")
            ratios = [row["ratio_of_means"] for row in rows]
            lines.append(f"  cases with default >= peer: {sum(r >= 1 for r in ratios)} of "
                         f"{len(ratios)}; worst ratio {min(ratios):.3f}")
    if res["detection"]:
        lines += ["", "violation-detection rate against the noise shortfall factor (factor 1 = honest "
                  "noise: the false-violation rate):",
                  f"  {'factor':>6} {'N':>6} {'runs':>5} {'verdict':>7} {'renyi':>6} "
                  f"{'pilot (e,d)':>11} {'current (e,d)':>13}"]
        for row in res["detection"]:
            verdict = row.get("verdict_rate")
            lines.append(f"  {row['factor']:>6g} {row['n_per_side']:>6} {row['runs']:>5} "
                         f"{'-' if verdict is None else f'{verdict:.2f}':>7} "
                         f"{row['renyi_rate']:>6.2f} {row['eps_delta_pilot_rate']:>11.2f} "
                         f"{row['eps_delta_current_rate']:>13.2f}")
        lines.append("  (verdict: audit_scores with default settings, Rényi test and (epsilon, delta) "
                     "tests together at overall level 0.05; renyi: the Rényi test alone at 0.05)")
    if res["estimator_coverage"]:
        lines += ["", "interval coverage of the estimators (nominal 95%; estimates, not bounds):",
                  f"  {'estimator':<22} {'dim':>3} {'covariance':<17} {'n':>5} {'runs':>4} "
                  f"{'coverage':>8} {'inf rate':>8} {'est/truth':>9}"]
        for row in res["estimator_coverage"]:
            head = (f"  {row['estimator']:<22} {row['dimension']:>3} {row['covariance']:<17} "
                    f"{row['n_per_side']:>5} {row['runs']:>4} ")
            if row["coverage"] is None:  # the estimator refuses this test bed (its valid range)
                lines.append(head + row.get("out_of_range", "out of range"))
                continue
            lines.append(head + f"{row['coverage']:>8.2f} {row['infinite_rate']:>8.2f} "
                         f"{float(row['mean_estimate_over_truth']):>9.3f}")
    lines += ["", f"{res['note']}; {res['seconds']:.1f} s"]
    return "\n".join(lines)


def gaussian_verdict(unlearned: np.ndarray, retrained: np.ndarray, run: int) -> bool:
    """Whether :func:`audits.runner.audit_scores` with default settings finds a VIOLATION of
    the Gaussian mechanism's certificate (sensitivity 1, sigma 1, delta 1e-5, its whole Rényi
    curve) on these scores, seeded by ``run``."""
    from audits.protocols import Certificate
    from audits.runner import audit_scores

    certificate = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=1)
    result = audit_scores(unlearned={"score": unlearned}, retrained={"score": retrained},
                          certificate=certificate, seed=run, estimators=[])
    return result.status == "VIOLATION"


def _cmd_bench_power(args: Any) -> None:
    from audits.cli.common import emit
    from empirical.benchmarks.power import power_benchmark

    res = power_benchmark(quick=args.quick, seed=args.seed, epsilon_runs=args.epsilon_runs,
                          detection_runs=args.detection_runs, coverage_runs=args.coverage_runs,
                          hockey_full_runs=args.hockey_full_runs, peer_runs=args.peer_runs,
                          parts=tuple(args.parts.split(",")), verdict=gaussian_verdict)
    emit(res, args.json, power_summary(res))


def add_power_command(bench_subparsers: Any) -> None:
    """Register ``unlearn bench power`` under the ``bench`` subcommands."""
    p = bench_subparsers.add_parser(
        "power", help="audit power on the Gaussian ground truth: bounds, detection, coverage",
        description="Side by side on the Gaussian mechanism: epsilon lower bound / exact and / "
                    "limit per delta (the default statistic beside jax-privacy's auditor), "
                    "violation-detection rate per noise shortfall factor for "
                    "each test, the false-violation rate, and interval coverage per estimator.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quick", action="store_true", help="few runs (a smoke test, ~30 s)")
    p.add_argument("--seed", type=int, default=0, help="master seed")
    for part, default in (("epsilon", 200), ("detection", 100), ("coverage", 100),
                          ("hockey-full", 20), ("peer", 5)):
        p.add_argument(f"--{part}-runs", type=int, default=None, metavar="N",
                       help=f"runs of the {part} part (default {default}; fewer with --quick)")
    p.add_argument("--parts", default="epsilon,detection,coverage,peer", metavar="LIST",
                   help="comma-separated parts to run (epsilon, detection, coverage, peer: the "
                        "default statistic against jax-privacy on 40 Gaussian cases; default all)")
    p.set_defaults(func=_cmd_bench_power)


def _study_parser(bench_subparsers: Any, name: str, *, help: str, description: str) -> Any:
    """A ``bench`` study's parser with the options every study takes: ``--json`` (one JSON
    object on stdout) and ``--quiet`` (no progress lines on stderr)."""
    p = bench_subparsers.add_parser(name, help=help, description=description)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


# ----------------------------------------------------------------------------------------------
# unlearn bench tightness: how loose each certificate is in practice (audits.tightness).


def _cmd_bench_tightness(args: Any) -> None:
    from audits.cli.common import emit
    from audits.tightness import settings_from_options, tightness_benchmark, tightness_table

    settings = settings_from_options(algorithm=args.algorithm, trials=args.trials, seeds=args.seeds,
                                     factors=args.factors, required=args.required,
                                     early_stop=not args.all_seeds)
    # Progress goes to stderr under --json too (the command runs for minutes to hours).
    with progress.reporting("bench tightness", enabled=not args.quiet, as_json=args.json):
        res = tightness_benchmark(settings, progress=progress.line)
    emit(res, args.json, tightness_table(res))


def add_tightness_command(bench_subparsers: Any) -> None:
    """Register ``unlearn bench tightness`` under the ``bench`` subcommands."""
    from audits.cli.common import integer_in
    from audits.tightness import DEFAULT_FACTORS, DEFAULT_SEEDS, DEFAULT_SIZES

    p = _study_parser(
        bench_subparsers, "tightness",
        help="how loose each certificate is: certified, exact and audited epsilon, "
             "and the smallest noise reduction the audit flags",
        description="For each algorithm at its demo settings and each N: the certified epsilon, "
                    "the exact epsilon where the report computes one, the audit's largest lower "
                    "bound, and the smallest factor f on a grid such that the mechanism run with "
                    "its noise divided by f (certificate unchanged) is flagged VIOLATION in at "
                    "least REQUIRED of SEEDS audits. Progress lines go to stderr (--quiet: none).")
    p.add_argument("--algorithm", default="all", metavar="NAMES",
                   help="a registered algorithm, a comma-separated list, or 'all' (default)")
    p.add_argument("--trials", default=None, metavar="LIST",
                   help="trials per side, comma-separated (default "
                        f"{','.join(str(n) for n in DEFAULT_SIZES)})")
    p.add_argument("--seeds", type=integer_in(1, 1000), default=DEFAULT_SEEDS,
                   help=f"audits (seeds 0, 1, ...) per factor (default {DEFAULT_SEEDS})")
    p.add_argument("--required", type=integer_in(1, 1000), default=None,
                   help="VIOLATIONs among the seeds that flag a factor (default ceil(0.8 "
                        "seeds): 8 of 10)")
    p.add_argument("--factors", default=None, metavar="LIST",
                   help="noise reduction factors >= 1, comma-separated (default "
                        f"{','.join(f'{f:g}' for f in DEFAULT_FACTORS)})")
    p.add_argument("--all-seeds", action="store_true",
                   help="run every seed of a factor even once its count is decided")
    p.set_defaults(func=_cmd_bench_tightness, own_progress=True)


# ----------------------------------------------------------------------------------------------
# unlearn bench exact: certificates against the exact loss of small instances (audits.exact_truth).


def _cmd_bench_exact(args: Any) -> None:
    import time

    from audits.adapters.exact_cases import case_makers, default_cases
    from audits.cli.common import CommandError, emit
    from audits.exact_truth import audit_lower_bound, evaluate_case, format_table, violations

    makers = case_makers()
    names = (list(makers) if args.algorithm == "all"
             else [a.strip() for a in args.algorithm.split(",") if a.strip()])
    unknown = [n for n in names if n not in makers]
    if unknown or not names:
        raise CommandError(f"--algorithm: no exact instance for {', '.join(unknown) or '(none)'}; "
                           f"choose from {', '.join(makers)} or 'all'")
    rows = []
    started = time.perf_counter()
    with progress.reporting("bench exact", enabled=not args.quiet):
        for case in default_cases(names):
            row = evaluate_case(case)
            row["violations"] = violations(row)
            if args.audit:
                row["audit"] = audit_lower_bound(case, row, trials=args.audit)
            rows.append(row)
            progress.line(f"{case.algorithm}: {row['bound']} certified {row['certified_epsilon']:.6g}, exact "
                          f"{row['exact_epsilon']:.6g} +- {row['exact_error']:.2g} "
                          f"({time.perf_counter() - started:.1f} s)")
    result = {"rows": rows, "seconds": time.perf_counter() - started}
    bad = [v for r in rows for v in r["violations"]]
    summary = format_table(rows) + ("\n\nCERTIFICATES BELOW THE EXACT LOSS:\n" + "\n".join(bad)
                                    if bad else "\n\nevery certificate holds above exact + error")
    emit(result, args.json, summary)


def add_exact_command(bench_subparsers: Any) -> None:
    """Register ``unlearn bench exact`` under the ``bench`` subcommands."""
    from audits.cli.common import integer_in

    p = _study_parser(
        bench_subparsers, "exact",
        help="certified against exact epsilon and Rényi divergence on small instances",
        description="For each algorithm, one small one-dimensional instance inside its "
                    "theorem's assumptions: the exact laws of the mechanism as run (density "
                    "propagation on a grid, refined once for the error), the exact epsilon at "
                    "delta and Rényi divergence at the certificate's order, against the "
                    "certificate. Progress lines go to stderr (--quiet: none).")
    p.add_argument("--algorithm", default="all", metavar="NAMES",
                   help="an algorithm, a comma-separated list, or 'all' (default)")
    p.add_argument("--audit", type=integer_in(0, 1_000_000), default=0, metavar="N",
                   help="also audit each certificate on N draws per side from the exact laws, "
                        "scored by their log-likelihood ratio (default 0: no audit)")
    p.set_defaults(func=_cmd_bench_exact, own_progress=True)


# ----------------------------------------------------------------------------------------------
# unlearn bench laws / leaks: the default statistic beside jax-privacy and a truth-chosen ceiling
# on score laws beyond the Gaussian; the verdict on leaks a shift does not describe.


def _list_option(text: str | None, kind: Callable[[str], Any], what: str,
                 default: tuple[Any, ...]) -> tuple[Any, ...]:
    from audits.cli.common import CommandError
    from audits.tightness import parse_list

    if text is None:
        return default
    try:
        return parse_list(text, kind, what)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _trial_sizes(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    from audits.cli.common import CommandError

    sizes = _list_option(text, int, "--trials", default)
    if any(not 2 <= n <= MAX_SUITE_TRIALS for n in sizes):
        raise CommandError(f"--trials: every value must be between 2 and {MAX_SUITE_TRIALS}")
    return sizes


def _deltas(text: str | None, default: tuple[float, ...]) -> tuple[float, ...]:
    from audits.cli.common import CommandError

    deltas = _list_option(text, float, "--deltas", default)
    if any(not 0.0 < d < 1.0 for d in deltas):
        raise CommandError("--deltas: every value must lie strictly between 0 and 1")
    return deltas


# Trials per side of one cell: above it the score arrays alone take tens of MB per draw and the
# runs take hours; refused before any array is drawn.
MAX_SUITE_TRIALS = 1_000_000


def _cmd_bench_laws(args: Any) -> None:
    from audits.cli.common import CommandError, emit
    from empirical.benchmarks.score_laws import SCORE_LAWS, law_table, peer_suite

    laws = _list_option(args.laws, str, "--laws", tuple(sorted(SCORE_LAWS)))
    unknown = [law for law in laws if law not in SCORE_LAWS]
    if unknown:
        raise CommandError(f"--laws: unknown {', '.join(unknown)}; choose from "
                           f"{', '.join(sorted(SCORE_LAWS))}")
    sizes = _trial_sizes(args.trials, (1_000, 10_000))
    deltas = _deltas(args.deltas, (1e-5, 1e-3))
    started = time.perf_counter()
    with progress.reporting("bench laws", enabled=not args.quiet, as_json=args.json):
        rows = peer_suite(laws=laws, sizes=sizes, deltas=deltas, runs=args.runs, seed=args.seed,
                          progress=progress.line)
    result = {"rows": [row.to_dict() for row in rows], "seed": args.seed,
              "seconds": time.perf_counter() - started}
    emit(result, args.json, law_table(rows))


def add_laws_command(bench_subparsers: Any) -> None:
    """Register ``unlearn bench laws`` under the ``bench`` subcommands."""
    from audits.cli.common import integer_in

    p = _study_parser(
        bench_subparsers, "laws",
        help="the default (epsilon, delta) statistic beside jax-privacy and a "
             "truth-chosen ceiling, on seven score laws",
        description="Unlearned scores shifted by one unit against retrained ones under seven "
                    "laws (Gaussian, Laplace, logistic, exponential, Student-t 3, a two-mode "
                    "mixture, binomial): per law, N and delta, the mean lower bound of the "
                    "default statistic and of jax-privacy's two-sided Bonferroni auditor "
                    "(when installed) over seeded draws, and the exact mean bound of the best "
                    "threshold fixed knowing the law. Progress lines go to stderr.")
    p.add_argument("--laws", default=None, metavar="LIST", help="comma-separated (default all)")
    p.add_argument("--trials", default=None, metavar="LIST",
                   help="trials per side, comma-separated (default 1000,10000)")
    p.add_argument("--deltas", default=None, metavar="LIST",
                   help="deltas, comma-separated (default 1e-5,1e-3)")
    p.add_argument("--runs", type=integer_in(1, 10_000), default=20,
                   help="seeded draws per cell (default 20)")
    p.add_argument("--seed", type=integer_in(0, 2**63 - 1), default=4242,
                   help="master seed (default 4242, the draws of docs/audits.md)")
    p.set_defaults(func=_cmd_bench_laws, own_progress=True)


def _cmd_bench_leaks(args: Any) -> None:
    from audits.cli.common import CommandError, emit
    from audits.leak_suite import DEFAULT_SEED, DEFAULT_SIZES, leak_suite, leak_table, select_leaks

    sizes = _trial_sizes(args.trials, DEFAULT_SIZES)
    names = None if args.leaks is None else _list_option(args.leaks, str, "--leaks", ())
    seed = DEFAULT_SEED if args.seed is None else args.seed
    try:
        select_leaks(names)
    except ValueError as exc:
        raise CommandError(f"--leaks: {exc}") from None
    started = time.perf_counter()
    with progress.reporting("bench leaks", enabled=not args.quiet, as_json=args.json):
        rows = leak_suite(sizes=sizes, runs=args.runs, seed=seed, leaks=names,
                          progress=progress.line)
    result = {"rows": [row.to_dict() for row in rows], "seed": seed,
              "seconds": time.perf_counter() - started}
    emit(result, args.json, leak_table(rows))


def add_leaks_command(bench_subparsers: Any) -> None:
    """Register ``unlearn bench leaks`` under the ``bench`` subcommands."""
    from audits.cli.common import integer_in

    p = _study_parser(
        bench_subparsers, "leaks",
        help="the verdict on leaks a shift does not describe, beside a set chosen "
             "with the truth",
        description="Rare outputs, an atom inside the bulk, a one-tail leak, a spread, two-mode "
                    "bands and an interleaved mechanism with no privacy, around the Gaussian "
                    "mechanism at sigma 2: per leak and N, the VIOLATIONs of seeded audits "
                    "with the (epsilon, delta) pair alone and with its Rényi curve, and the "
                    "exact refutation rate of the best set fixed knowing the laws. Set "
                    "UNLEARN_DETECTABLE=0 to skip what each CONSISTENT audit could have seen "
                    "(a few seconds per design). Progress lines go to stderr.")
    p.add_argument("--leaks", default=None, metavar="LIST",
                   help="comma-separated starts of leak names, e.g. scale,rare (default all)")
    p.add_argument("--trials", default=None, metavar="LIST",
                   help="trials per side, comma-separated (default 2000,20000)")
    p.add_argument("--runs", type=integer_in(1, 10_000), default=20,
                   help="audits per cell and statement (default 20)")
    # the default seed is read when the command runs: importing the suite here would load
    # scipy into every command's process
    p.add_argument("--seed", type=integer_in(0, 2**63 - 1), default=None,
                   help="master seed (default: the draws of docs/audits.md)")
    p.set_defaults(func=_cmd_bench_leaks, own_progress=True)
