"""Figure 3 of seed 000 (Chien et al. 2024, Section 4) reproduced by running and auditing the
three methods: PNSGD, Delete-to-Descent (D2D) and Langevin unlearning (LU).

``unlearn reproduce chien2024:fig3a|fig3b|fig3c|fig3d --dataset digits|mnist PATH|cifar-features
PATH [--trials N] [--device D] [--out DIR] [--reduced]`` writes ``<id>.png``, ``<id>.json`` and
``<id>.html`` (the PNG inline). Every point:

* gets its noise and iterations from the bound engine through the method's adapter (PNSGD:
  Theorem 3.2 / Theorem 3.11 schedules; D2D: Theorems O.1/O.2; LU: eq. (98) / the derived
  sequence chain), and
* is an audit (:func:`audits.runner.run_audit`) of that certificate on ``trials`` pairs of
  (unlearned, retrained) models, whose verdict and test accuracies are reported;
* its unlearning cost is the number of per-example gradient evaluations the mechanism counted
  (a one-trial run with the same schedule and no learning phase), divided by n for epochs.

Panels: (a) accuracy vs epsilon, one removal, K = 1 (D2D with internal state, I = 1 and 5);
(b) accumulated epochs over sequential removals at (1, 1/n) (D2D without internal state, LU with
batches of S); (c)/(d) accuracy and accumulated epochs vs sigma for b in {32, 128, 512, n} at
(0.01, 1/n), with the retraining cost. The headline claim (PNSGD needs about 2% (b = 128) and
10% (b = n) of the gradient computations of the best baseline, Section 4) is evaluated on panel
(b)'s counted evaluations.

``chien2024:fig3X/long-burn-in`` runs the same panel with the least burn-in T at which Theorem
3.2's burn-in term alone meets (0.001, 1/n) at sigma = 0.03 (:func:`burn_in_epochs_long`): with
Table 2's T and lambda = 1e-6 n on a small data set no PNSGD point of (b)-(d) is certifiable
(docs/errata.md E16). Panels (c) and (d) share their runs: either writes both.

Deviations from the paper, stated in every report: requests are removals served as null records
(the theorems of all three methods cover them; D2D's do not cover replacement); a point whose
planned gradient evaluations exceed the audit budget is not audited (its unlearning is still run
once and counted when it fits the count budget, otherwise its planned count is reported, labelled
as planned); CIFAR-10 features are read from a user-supplied file only.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from audits.reproductions.registry import EmpiricalReproduction, register_empirical_reproduction
from audits.spec import CertificateSpec, DatasetSpec, RequestSpec

__all__ = ["Fig3Setting", "HEADLINE_CLAIMS", "fig3_setting", "run_panel"]

PAPER_EPSILONS = (0.05, 0.1, 0.5, 1.0, 2.0, 5.0)   # App. N.4
PAPER_SIGMAS = (0.05, 0.1, 0.2, 0.5, 1.0)           # App. N.6
PAPER_BATCHES = (32, 128, 512, "full")              # Section 4
PAPER_BURN_IN = {32: 10, 128: 20, 512: 50, "full": 1000}  # Table 2 (epochs)
PAPER_BASELINE_T = 10000                            # App. N.3: T for D2D and LU
HEADLINE_CLAIMS = {128: 0.02, "full": 0.10}         # Section 4, Figure 3b
CIFAR_NOTE = ("CIFAR-10: the paper's features come from a pretrained ResNet-18 that this toolkit "
              "does not download; pass --dataset cifar-features PATH with your own feature file. "
              "No stand-in is used.")


@dataclass(frozen=True)
class Fig3Setting:
    """The constants of one reproduction run (App. N.3 unless ``reduced``)."""

    dataset: DatasetSpec
    trials: int
    device: str
    reduced: bool
    l2: float | None          # lambda; None: the paper's 1e-6 n
    clip: float = 1.0         # M
    radius: float = 100.0     # R
    burn_in: tuple[tuple[Any, int], ...] = tuple(PAPER_BURN_IN.items())
    baseline_learn_iterations: int = PAPER_BASELINE_T
    epsilons: tuple[float, ...] = PAPER_EPSILONS
    sigmas: tuple[float, ...] = PAPER_SIGMAS
    batches: tuple[Any, ...] = PAPER_BATCHES
    removals: int = 100       # sequential single-point removals (b, c, d)
    lu_batch: int = 10        # S of LU in panel (b)
    sequence_sigma: float = 0.03  # sigma of PNSGD and LU in panel (b) (LU's, App. N.5)
    budget: float = 5e8       # most per-example gradient evaluations one audited point may run
    # Over the audit budget, a point whose unlearning (one trial, no learning) fits this budget is
    # still run once to count its gradient evaluations (status COUNTED, no audit).
    count_budget: float = 2.5e8
    seed: int = 0
    burn_in_rule: str = "paper"   # "paper": Table 2's T; "long": least T of burn_in_epochs_long


def fig3_setting(*, dataset: tuple[str, str | None] = ("digits", None), trials: int = 100,
                 device: str = "cpu", reduced: bool = False, l2: float | None = None,
                 burn_in_rule: str = "paper") -> Fig3Setting:
    """The paper's setting, or a reduced one for CI (one or two points per panel, short runs).

    ``burn_in_rule="long"`` replaces Table 2's T by :func:`burn_in_epochs_long` for each batch
    size (erratum E16: at Table 2's T the burn-in term of Theorem 3.2 can exceed the targets).
    """
    if burn_in_rule not in BURN_IN_RULES:
        raise ValueError(f"burn_in_rule must be one of {BURN_IN_RULES}, got {burn_in_rule!r}")
    name, path = dataset
    if name == "cifar-features":
        if path is None:
            raise ValueError(CIFAR_NOTE)
        spec = DatasetSpec(name="cifar10", path=path)
    elif name == "mnist":
        if path is None:
            raise ValueError("--dataset mnist needs the path of your MNIST files")
        spec = DatasetSpec(name="mnist", path=path)
    else:
        if path is not None:
            raise ValueError(f"dataset {name!r} is built in and takes no path")
        spec = DatasetSpec(name=name)
    setting = Fig3Setting(dataset=spec, trials=trials, device=device, reduced=reduced, l2=l2,
                          burn_in_rule=burn_in_rule)
    if reduced:
        setting = dataclasses.replace(
            setting, l2=0.1 if l2 is None else l2,
            burn_in=((32, 10), (128, 40), (512, 80), ("full", 40)), baseline_learn_iterations=10,
            epsilons=(1.0,), sigmas=(0.5,), batches=(128, "full"), removals=4, lu_batch=2,
            budget=2e7)
    if burn_in_rule == "long":
        longer = []
        n_full, _ = _n_and_dim(setting)
        for batch, paper_t in setting.burn_in:
            if batch != "full" and int(batch) > n_full:  # not applicable: no batch fits
                longer.append((batch, paper_t))
                continue
            n, _ = _n_and_dim(setting, batch)
            longer.append((batch, burn_in_epochs_long(
                n=n, b=n if batch == "full" else int(batch), l2=_lambda(setting, n),
                clip=setting.clip, radius=setting.radius)))
        setting = dataclasses.replace(setting, burn_in=tuple(longer))
    return setting


BURN_IN_RULES = ("paper", "long")
LONG_BURN_IN_SIGMA = 0.03     # the smallest sigma of panels (b)-(d)
LONG_BURN_IN_EPSILON = 0.001  # a tenth of the smallest target of panels (b)-(d)


def burn_in_epochs_long(*, n: int, b: int, l2: float, clip: float, radius: float) -> int:
    """Least burn-in T (epochs) at which Theorem 3.2's burn-in term alone certifies
    (LONG_BURN_IN_EPSILON, 1/n) at sigma = LONG_BURN_IN_SIGMA.

    The burn-in term is chien2024:thm3.2+thm3.11/sequence with start distance Z = 0 (the
    sequence bound's other term vanishes); it decreases in T, so the least T is found by
    :func:`bounds.calibration.least_integer` on the engine's certified epsilon. The choice of T
    is a knob, not a certificate: every point is still certified by the bound engine at this T.
    """
    import bounds
    from bounds.calibration import least_integer
    from bounds.conversions import best_epsilon
    from bounds.numerics import float_down
    from empirical.models import logistic_constants

    bound = bounds.get("chien2024:thm3.2+thm3.11/sequence")
    m, L, max_step = logistic_constants(Fraction(l2))
    fixed = {"sigma": Fraction(LONG_BURN_IN_SIGMA), "eta": float_down(max_step),
             "m": m, "L": L, "M": Fraction(clip), "n": n, "b": b, "K": 1, "R": Fraction(radius),
             "Z": 0}

    def meets(epochs: int) -> bool:
        return best_epsilon(bound, delta=1.0 / n, T=epochs, **fixed).epsilon <= LONG_BURN_IN_EPSILON

    return least_integer(meets, start=1, limit=10**7)


# ----------------------------------------------------------------------------------------------
# One point: a spec through the method's adapter, its audit, its counted cost.


def _base_spec(setting: Fig3Setting, name: str) -> Any:
    from audits.registry import get_adapter

    # The audit statistics need at least 4 trials (sample split).
    spec = get_adapter(name).demo_spec(trials=max(4, setting.trials), device=setting.device)
    return spec.replace(dataset=setting.dataset, seed=setting.seed,
                        pilot_trials=max(2, setting.trials // 10), chunk_size=max(4, setting.trials),
                        name=f"fig3-{name}")


def _removals(setting: Fig3Setting, n: int, count: int, size: int = 1) -> RequestSpec:
    rng = np.random.default_rng(setting.seed)
    rows = tuple(int(i) for i in rng.choice(n, size=count * size, replace=False))
    return RequestSpec(kind="remove", size=size, requests=count, indices=rows)


def _n_and_dim(setting: Fig3Setting, batch: Any = "full") -> tuple[int, int]:
    from audits.datasets import load_dataset

    dataset = load_dataset(setting.dataset)
    n = dataset.n if batch == "full" else dataset.n - dataset.n % int(batch)
    return n, dataset.dim


def _lambda(setting: Fig3Setting, n: int) -> float:
    return 1e-6 * n if setting.l2 is None else setting.l2


def _audit(spec: Any) -> dict[str, Any]:
    from audits.runner import prepare_audit, run_audit

    prepared = prepare_audit(spec)
    start = time.perf_counter()
    result = run_audit(spec)
    utility = result.report.get("utility") or {}
    return {
        "verdict": result.status,
        "certified_epsilon": result.certified_epsilon,
        "max_lower_bound": result.max_lower_bound,
        "certificate_bound": prepared.certificate.bound,
        "certificate_inputs": {k: (v if isinstance(v, int | float | str | list) else float(v))
                               for k, v in prepared.certificate.inputs.items()},
        "accuracy_mean": (utility.get("unlearned_accuracy") or {}).get("mean"),
        "accuracy_std": (utility.get("unlearned_accuracy") or {}).get("std"),
        "retrained_accuracy_mean": (utility.get("retrained_accuracy") or {}).get("mean"),
        "audit_seconds": time.perf_counter() - start,
        "trials": spec.trials,
    }, prepared


def _count_unlearning(method: str, prepared: Any) -> int:
    """Per-example gradient evaluations of the unlearning phase, counted by the mechanism."""
    import torch

    from empirical.mechanisms.common import TrialOptions

    mechanism = prepared.mechanism
    config = mechanism.config
    if method == "pnsgd":
        from empirical.mechanisms.chien2024 import run_pnsgd
        from empirical.mechanisms.counting import CountingModel
        from empirical.models import LogisticRegression

        data = mechanism.data()
        counter = CountingModel(LogisticRegression(data.dataset.dim))
        # No learning and no retraining: every counted gradient belongs to unlearning.
        run_pnsgd(data.dataset, data.request, config=dataclasses.replace(config, learn_epochs=0),
                  options=TrialOptions(n_trials=1, seed=0, model=counter, dtype=torch.float64,
                                       retain_scores=1))
        return counter.evaluations
    if method == "d2d":
        from empirical.mechanisms.neel2021 import run_d2d as run
    else:
        from empirical.mechanisms.chien2024lu import run_langevin as run
    data = mechanism.data()
    result = run(data.dataset, data.request,
                 config=dataclasses.replace(config, learn_iterations=0),
                 options=TrialOptions(n_trials=1, seed=0, retain_scores=1))
    return int(sum(result.gradient_evaluations["unlearn"]))


def _planned(method: str, prepared: Any, n: int) -> tuple[int, int]:
    """(unlearning, whole run) per-example gradients one trial will evaluate, from the schedule."""
    c = prepared.mechanism.config
    if method == "pnsgd":
        epochs = c.unlearn_epochs if isinstance(c.unlearn_epochs, tuple) else (c.unlearn_epochs,)
        unlearn = sum(epochs) * n
        return unlearn, unlearn + 2 * c.learn_epochs * n
    its = c.unlearn_iterations if isinstance(c.unlearn_iterations, tuple) else \
        (c.unlearn_iterations,)
    unlearn = sum(its) * n
    return unlearn, unlearn + 2 * c.learn_iterations * n


def _point(setting: Fig3Setting, method: str, spec: Any, n: int, **labels: Any) -> dict[str, Any]:
    from audits.runner import prepare_audit

    row: dict[str, Any] = {"method": method, **labels}
    try:
        prepared = prepare_audit(spec)
    except Exception as error:  # a refusal of the bound engine is part of the figure
        row.update(status="not certifiable", reason=str(error))
        return row
    planned_unlearn, planned_total = _planned(method, prepared, n)
    row["planned_unlearning_gradients"] = planned_unlearn
    if planned_total * setting.trials > setting.budget:
        reason = (f"planned {planned_total * setting.trials:.3g} per-example gradients for the "
                  f"audit exceed the budget {setting.budget:.3g}")
        row.update(unlearning_epochs_planned=planned_unlearn / n,
                   certificate_bound=prepared.certificate.bound,
                   certificate_inputs={k: (v if isinstance(v, int | float | str | list) else float(v))
                                       for k, v in prepared.certificate.inputs.items()},
                   certified_epsilon=prepared.certificate.epsilon)
        if planned_unlearn <= setting.count_budget:
            # Still counted by the mechanism (one trial, no learning), so cost comparisons use
            # counted evaluations; the certificate is the engine's, but nothing is audited.
            counted = _count_unlearning(method, prepared)
            row.update(status=COUNTED, reason=reason + "; unlearning run once to count it",
                       unlearning_gradients=counted, unlearning_epochs=counted / n,
                       counted_equals_schedule=counted == planned_unlearn)
        else:
            row.update(status="not run", reason=reason + f"; counting it alone ({planned_unlearn:.3g})"
                       f" exceeds {setting.count_budget:.3g}")
        return row
    audit, prepared = _audit(spec)
    counted = _count_unlearning(method, prepared)
    row.update(status="run", **audit, unlearning_gradients=counted,
               unlearning_epochs=counted / n, counted_equals_schedule=counted == planned_unlearn)
    return row


# ----------------------------------------------------------------------------------------------
# The panels.


def _pnsgd_spec(setting: Fig3Setting, batch: Any, *, removals: int, certificate: Any,
                **algorithm: Any) -> Any:
    from audits.adapters.pnsgd import PNSGDParams

    spec = _base_spec(setting, "pnsgd")
    n, _ = _n_and_dim(setting, batch)
    params = PNSGDParams(batch_size=batch, learn_epochs=dict(setting.burn_in)[batch],
                         l2=_lambda(setting, n), clip=setting.clip, radius=setting.radius,
                         **algorithm)
    return spec.replace(algorithm=params, request=_removals(setting, n, removals),
                        certificate=certificate), n


def panel_a(setting: Fig3Setting) -> list[dict[str, Any]]:
    """Accuracy vs epsilon for one removal with one unlearning epoch (Figure 3a)."""
    from audits.adapters.d2d import D2DParams
    from audits.adapters.langevin import LangevinParams

    rows = []
    n_full, _ = _n_and_dim(setting)
    for eps in setting.epsilons:
        cert = CertificateSpec(target_epsilon=eps, delta="1/n", calibrate="sigma")
        for batch in [b for b in (128, "full") if b in setting.batches or setting.reduced]:
            spec, n = _pnsgd_spec(setting, batch, removals=1, certificate=cert, unlearn_epochs=1)
            rows.append(_point(setting, "pnsgd", spec, n, epsilon=eps,
                               label=f"PNSGD b={'n' if batch == 'full' else batch}"))
        lam = _lambda(setting, n_full)
        spec = _base_spec(setting, "langevin").replace(
            algorithm=LangevinParams(unlearn_iterations=1, l2=lam, clip=setting.clip,
                                     radius=setting.radius,
                                     learn_iterations=setting.baseline_learn_iterations),
            request=_removals(setting, n_full, 1), certificate=cert)
        rows.append(_point(setting, "langevin", spec, n_full, epsilon=eps, label="LU K=1"))
        for iterations in (1, 5):
            spec = _base_spec(setting, "d2d").replace(
                algorithm=D2DParams(variant="internal-state", unlearn_iterations=iterations,
                                    l2=lam, clip=setting.clip, radius=setting.radius),
                request=_removals(setting, n_full, 1), certificate=cert)
            rows.append(_point(setting, "d2d", spec, n_full, epsilon=eps,
                               label=f"D2D K={iterations} (internal state)"))
    return rows


def pnsgd_sequence_epochs(*, epsilon: float, sigma: float, eta: float, l2: float, clip: float,
                          n: int, b: int, T: int, R: float, removals: int) -> tuple[int, ...]:
    """Least K per request (greedy, as Algorithm 6) under the certificate the pnsgd adapter
    issues: chien2024:thm3.2+thm3.11/sequence with its start distance Z (finite burn-in T),
    each K checked with the engine's certified epsilon (interval upper end)."""
    import bounds
    from bounds.calibration import least_integer
    from bounds.conversions import best_epsilon
    from bounds.papers.chien2024 import sequence_start_distance
    from empirical.models import logistic_constants

    bound = bounds.get("chien2024:thm3.2+thm3.11/sequence")
    m, L, _ = logistic_constants(Fraction(l2))
    fixed = {"sigma": Fraction(sigma), "eta": Fraction(eta), "m": m, "L": L, "M": Fraction(clip),
             "n": n, "b": b, "T": T, "R": Fraction(R)}
    epochs: list[int] = []
    for position in range(removals):
        z = sequence_start_distance(eta=Fraction(eta), m=m, M=Fraction(clip), n=n, b=b, T=T,
                                    R=Fraction(R), sizes=[1] * (position + 1),
                                    epochs=[*epochs, 1])
        start = Fraction(int(z.man)) * Fraction(2) ** int(z.exp) if z else Fraction(0)

        def meets(k: int, start: Fraction = start) -> bool:
            conv = best_epsilon(bound, delta=1.0 / n, K=k, Z=start, **fixed)
            return conv.epsilon <= epsilon

        # Warm start at the previous request's K: consecutive requests need similar K.
        epochs.append(least_integer(meets, hint=epochs[-1] if epochs else 1, limit=10**6))
    return tuple(epochs)


def _pnsgd_sequence(setting: Fig3Setting, batch: Any, *, epsilon: float, sigma: float,
                    removals: int) -> tuple[Any, int, tuple[int, ...]]:
    """PNSGD spec whose K per request is the least the adapter's sequence certificate allows."""
    from bounds.numerics import float_down
    from empirical.models import logistic_constants

    n, _ = _n_and_dim(setting, batch)
    lam = _lambda(setting, n)
    _, _, max_step = logistic_constants(Fraction(lam))
    b = n if batch == "full" else int(batch)
    epochs = pnsgd_sequence_epochs(epsilon=epsilon, sigma=sigma,
                                   eta=float_down(max_step), l2=lam, clip=setting.clip,
                                   n=n, b=b, T=dict(setting.burn_in)[batch], R=setting.radius,
                                   removals=removals)
    spec, n = _pnsgd_spec(setting, batch, removals=removals,
                          certificate=CertificateSpec(target_epsilon=None, delta="1/n"),
                          sigma=sigma, unlearn_epochs=epochs)
    return spec, n, epochs


def _burn_in_floor_note(setting: Fig3Setting, batch: Any, sigma: float, target: float) -> str:
    """Why no K certifies: the burn-in term alone (the sequence bound at Z = 0), by the engine."""
    import bounds
    from bounds.conversions import best_epsilon
    from bounds.numerics import float_down
    from empirical.models import logistic_constants

    n, _ = _n_and_dim(setting, batch)
    m, L, max_step = logistic_constants(Fraction(_lambda(setting, n)))
    T = dict(setting.burn_in)[batch]
    try:
        floor = best_epsilon(bounds.get("chien2024:thm3.2+thm3.11/sequence"), delta=1.0 / n,
                             sigma=Fraction(sigma), eta=float_down(max_step), m=m, L=L,
                             M=Fraction(setting.clip), n=n, b=n if batch == "full" else int(batch),
                             T=T, K=1, R=Fraction(setting.radius), Z=0).epsilon
    except Exception:  # the note is an explanation only; the refusal stands without it
        return ""
    if floor <= target:
        return ""
    return (f"; Theorem 3.2's burn-in term alone certifies only epsilon = {floor:.4g} > {target} "
            f"at T = {T} epochs, whatever K (erratum E16)")


def panel_b(setting: Fig3Setting) -> list[dict[str, Any]]:
    """Accumulated unlearning epochs over sequential removals at (1, 1/n) (Figure 3b)."""
    from audits.adapters.d2d import D2DParams
    from audits.adapters.langevin import LangevinParams

    rows = []
    sigma, removals = setting.sequence_sigma, setting.removals
    for batch in (128, "full"):
        try:
            spec, n, epochs = _pnsgd_sequence(setting, batch, epsilon=1.0, sigma=sigma,
                                              removals=removals)
        except Exception as error:  # e.g. the burn-in term alone exceeds the target
            rows.append({"method": "pnsgd", "batch": batch, "status": "not certifiable",
                         "label": f"PNSGD b={'n' if batch == 'full' else batch}",
                         "reason": str(error) + _burn_in_floor_note(setting, batch, sigma, 1.0)})
            continue
        row = _point(setting, "pnsgd", spec, n, label=f"PNSGD b={'n' if batch == 'full' else batch}",
                     batch=batch)
        row["epochs_per_request"] = list(epochs)
        rows.append(row)
    n_full, _ = _n_and_dim(setting)
    lam = _lambda(setting, n_full)
    cert = CertificateSpec(target_epsilon=1.0, delta="1/n", calibrate="sigma")
    spec = _base_spec(setting, "d2d").replace(
        algorithm=D2DParams(variant="no-internal-state", l2=lam, clip=setting.clip,
                            radius=setting.radius),
        request=_removals(setting, n_full, removals), certificate=cert)
    rows.append(_point(setting, "d2d", spec, n_full, label="D2D (no internal state)"))
    size = setting.lu_batch
    spec = _base_spec(setting, "langevin").replace(
        algorithm=LangevinParams(sigma=sigma, l2=lam, clip=setting.clip, radius=setting.radius,
                                 learn_iterations=setting.baseline_learn_iterations),
        request=_removals(setting, n_full, removals // size, size=size), certificate=cert)
    rows.append(_point(setting, "langevin", spec, n_full, label=f"LU (S={size})"))
    return rows


COUNTED = "counted, not audited"


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PNSGD's counted unlearning gradients over the best baseline's, against the claims.

    Uses every point whose unlearning the mechanism counted (audited or COUNTED); says which.
    """
    counted = ("run", COUNTED)
    baselines = [r for r in rows if r["method"] != "pnsgd" and r.get("status") in counted]
    out = []
    for batch, claimed in HEADLINE_CLAIMS.items():
        ours = next((r for r in rows if r["method"] == "pnsgd" and r.get("batch") == batch), None)
        entry: dict[str, Any] = {"batch": "n" if batch == "full" else batch, "claimed": claimed,
                                 "rule": "holds when the counted ratio is at most 1.5 x the "
                                 "claimed fraction ('about')"}
        if ours is None or ours.get("status") not in counted or not baselines:
            entry.update(status="not evaluated",
                         reason="PNSGD or every baseline was not counted"
                         + (f" (PNSGD: {ours.get('status')}: {ours.get('reason')})" if ours else ""))
        else:
            best = min(baselines, key=lambda r: r["unlearning_gradients"])
            ratio = ours["unlearning_gradients"] / best["unlearning_gradients"]
            entry.update(ratio=ratio, best_baseline=best["label"],
                         pnsgd_gradients=ours["unlearning_gradients"],
                         baseline_gradients=best["unlearning_gradients"],
                         audited={"pnsgd": ours["status"] == "run", "baseline": best["status"] == "run"},
                         status="holds" if ratio <= 1.5 * claimed else "does not hold")
        out.append(entry)
    return out


def panel_cd(setting: Fig3Setting) -> list[dict[str, Any]]:
    """Accuracy and accumulated epochs vs sigma per batch size at (0.01, 1/n) (Figures 3c, 3d)."""
    from empirical.mechanisms.chien2024 import run_pnsgd
    from empirical.mechanisms.common import TrialOptions
    from empirical.mechanisms.counting import CountingModel
    from empirical.models import LogisticRegression

    rows = []
    n_full, _ = _n_and_dim(setting)
    for batch in setting.batches:
        if batch != "full" and int(batch) > n_full:
            rows.append({"method": "pnsgd", "batch": batch, "status": "not applicable",
                         "reason": f"b = {batch} exceeds the {n_full} training records"})
            continue
        for sigma in setting.sigmas:
            try:
                spec, n, epochs = _pnsgd_sequence(setting, batch, epsilon=0.01, sigma=sigma,
                                                  removals=setting.removals)
            except Exception as error:
                rows.append({"method": "pnsgd", "batch": batch, "sigma": sigma,
                             "status": "not certifiable",
                             "reason": str(error) + _burn_in_floor_note(setting, batch, sigma, 0.01)})
                continue
            row = _point(setting, "pnsgd", spec, n, batch=batch, sigma=sigma,
                         label=f"b={'n' if batch == 'full' else batch}")
            row["epochs_per_request"] = list(epochs)
            if row.get("status") in ("run", COUNTED):
                # Retraining from scratch after every request: T epochs each, counted.
                from audits.runner import prepare_audit

                mechanism = prepare_audit(spec).mechanism
                config, data = mechanism.config, mechanism.data()
                counter = CountingModel(LogisticRegression(data.dataset.dim))
                zero = tuple(0 for _ in epochs)
                run_pnsgd(data.dataset, data.request, config=dataclasses.replace(config, unlearn_epochs=zero),
                          options=TrialOptions(n_trials=1, seed=0, model=counter, retain_scores=1))
                per_retrain = counter.evaluations // 2  # learning and retraining, T epochs each
                row["retraining_epochs"] = per_retrain * setting.removals / n
            rows.append(row)
    return rows


# ----------------------------------------------------------------------------------------------
# Figures and files.


def _figure(panel: str, rows: list[dict[str, Any]]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot(1, 1, 1)
    # Cost panels also draw the points counted without an audit (COUNTED).
    ran = [r for r in rows if r.get("status") == "run"
           or (panel in "bd" and r.get("status") == COUNTED)]
    if panel == "a":
        for label in dict.fromkeys(r["label"] for r in ran):
            pts = sorted((r["epsilon"], r["accuracy_mean"], r["accuracy_std"] or 0.0)
                         for r in ran if r["label"] == label)
            x, y, e = zip(*pts, strict=True)
            ax.errorbar(x, y, yerr=e, marker="o", label=label, capsize=2)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy (unlearned)")
        ax.set_title("(a) one removal, one unlearning epoch")
    elif panel == "b":
        for r in ran:
            per = np.array(_per_request_epochs(r), dtype=float)
            size = 1 if r["method"] != "langevin" else int(r["label"].split("S=")[1].rstrip(")"))
            ax.step(np.arange(1, per.size + 1) * size, np.cumsum(per), where="post", label=r["label"])
        ax.set_yscale("log")
        ax.set_xlabel("points removed")
        ax.set_ylabel("accumulated unlearning epochs")
        ax.set_title("(b) sequential removals at (1, 1/n)")
    else:
        for batch in dict.fromkeys(r["batch"] for r in ran):
            pts = sorted((r["sigma"], r["accuracy_mean"] if panel == "c" else
                          r["unlearning_epochs"], r.get("retraining_epochs"))
                         for r in ran if r["batch"] == batch)
            x, y, retrain = zip(*pts, strict=True)
            line = ax.plot(x, y, marker="o", label=f"b={'n' if batch == 'full' else batch}")
            if panel == "d":
                ax.plot(x, retrain, linestyle="--", color=line[0].get_color(),
                        label=f"retrain, b={'n' if batch == 'full' else batch}")
        ax.set_xscale("log")
        if panel == "d":
            ax.set_yscale("log")
        ax.set_xlabel("sigma")
        ax.set_ylabel("test accuracy" if panel == "c" else "accumulated unlearning epochs")
        ax.set_title(f"({panel}) {len(ran)} runs at (0.01, 1/n)")
    if ran:
        ax.legend(fontsize=7)
    return figure


def _per_request_epochs(row: dict[str, Any]) -> list[float]:
    if "epochs_per_request" in row:
        return row["epochs_per_request"]
    its = row["certificate_inputs"].get("iterations_per_request")
    return list(its) if its is not None else [row["unlearning_epochs"]]


def _write(panel_id: str, result: dict[str, Any], rows: list[dict[str, Any]], panel: str,
           out_dir: Path) -> dict[str, str]:
    import base64
    import html

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = panel_id.replace(":", "_").replace("/", "_")
    figure = _figure(panel, rows)
    png = out_dir / f"{stem}.png"
    figure.savefig(png, format="png", metadata={"Software": None})
    data = out_dir / f"{stem}.json"
    data.write_text(json.dumps(result, indent=2, default=str))
    encoded = base64.b64encode(png.read_bytes()).decode("ascii")
    table = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(k, '')))}</td>" for k in _COLUMNS) + "</tr>"
        for r in rows)
    notes = "".join(f"<li>{html.escape(str(x))}</li>" for x in result["notes"])
    heads = "".join(f"<th>{html.escape(k)}</th>" for k in _COLUMNS)
    extra = ""
    if result.get("headline"):
        extra = "<h2>Headline claim</h2><ul>" + "".join(
            f"<li>{html.escape(json.dumps(h, default=str))}</li>" for h in result["headline"]) + "</ul>"
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(panel_id)}"
            f"</title></head><body><h1>{html.escape(result['title'])}</h1>"
            f"<img alt='{html.escape(panel_id)}' src='data:image/png;base64,{encoded}'>"
            f"{extra}<h2>Points (each an audit)</h2><table border='1'><tr>{heads}</tr>{table}"
            f"</table><h2>Notes</h2><ul>{notes}</ul></body></html>")
    report = out_dir / f"{stem}.html"
    report.write_text(page)
    return {"png": str(png), "json": str(data), "html": str(report)}


_COLUMNS = ("label", "epsilon", "sigma", "batch", "status", "verdict", "certified_epsilon",
            "max_lower_bound", "accuracy_mean", "unlearning_epochs", "retraining_epochs",
            "certificate_bound", "reason")

TITLES = {
    "a": "Figure 3a: accuracy vs epsilon, one removal, K = 1",
    "b": "Figure 3b: accumulated unlearning epochs over sequential removals at (1, 1/n)",
    "c": "Figure 3c: accuracy vs sigma per batch size at (0.01, 1/n)",
    "d": "Figure 3d: accumulated unlearning epochs vs sigma per batch size at (0.01, 1/n)",
}


def run_panel(panel: str, *, dataset: tuple[str, str | None] = ("digits", None),
              trials: int = 100, device: str = "cpu", out_dir: str | Path | None = None,
              reduced: bool = False, l2: float | None = None,
              burn_in_rule: str = "paper", budget: float | None = None,
              count_budget: float | None = None) -> dict[str, Any]:
    """Run one panel of Figure 3 and write its PNG, JSON and HTML report.

    Panels (c) and (d) plot two columns of the same runs, so either one runs them once and
    writes both panels' files (the result lists them under ``files`` and ``also_written``).
    """
    setting = fig3_setting(dataset=dataset, trials=trials, device=device, reduced=reduced, l2=l2,
                           burn_in_rule=burn_in_rule)
    # Budgets cap the work only (which points are audited or counted), never a certificate.
    if budget is not None:
        setting = dataclasses.replace(setting, budget=budget)
    if count_budget is not None:
        setting = dataclasses.replace(setting, count_budget=count_budget)
    start = time.perf_counter()
    rows = {"a": panel_a, "b": panel_b, "c": panel_cd, "d": panel_cd}[panel](setting)
    seconds = time.perf_counter() - start
    result = _panel_result(panel, setting, rows, seconds=seconds, out_dir=out_dir)
    if panel in "cd":
        other = "d" if panel == "c" else "c"
        twin = _panel_result(other, setting, rows, seconds=seconds, out_dir=out_dir)
        result["also_written"] = twin["files"]
        result["summary"].append("also written (same runs): " + ", ".join(twin["files"].values()))
    return result


def _panel_result(panel: str, setting: Fig3Setting, rows: list[dict[str, Any]], *,
                  seconds: float, out_dir: str | Path | None) -> dict[str, Any]:
    """The JSON-ready result of one panel, with its files written."""
    trials, device, reduced = setting.trials, setting.device, setting.reduced
    suffix = "" if setting.burn_in_rule == "paper" else f"/{setting.burn_in_rule}-burn-in"
    panel_id = f"chien2024:fig3{panel}{suffix}"
    n_full, _ = _n_and_dim(setting)
    result: dict[str, Any] = {
        "reproduction": panel_id, "title": TITLES[panel], "rows": rows,
        "setting": {"dataset": setting.dataset.to_dict(), "trials": trials, "device": device,
                    "reduced": reduced, "n": n_full, "lambda": _lambda(setting, n_full),
                    "M": setting.clip, "R": setting.radius,
                    "burn_in_epochs": {str(k): v for k, v in setting.burn_in},
                    "burn_in_rule": setting.burn_in_rule,
                    "baseline_learn_iterations": setting.baseline_learn_iterations,
                    "budget": setting.budget},
        "notes": [
            "requests are removals served as null records (all three methods' theorems cover "
            "them; D2D's do not cover replacement); the paper replaces by a random point",
            "noise and iterations of every point come from the bound engine via the method's "
            "adapter; each point's certificate is audited on the given trials (verdict, lower "
            "bound); a CONSISTENT verdict at few trials is weak evidence",
            "unlearning cost = per-example gradient evaluations counted by the mechanism (a "
            "one-trial run of the same schedule without learning), in epochs of n",
            "LU's sequential accounting is DERIVED (chien2024lu:thm3.2+thm3.3/sequence-step)",
            "PNSGD's K per request is the least the pnsgd adapter's certificate allows "
            "(chien2024:thm3.2+thm3.11/sequence, finite burn-in T); the paper's Algorithms 6-7 "
            "drop the burn-in term (convergence assumed), so at short T or small lambda our K is "
            "larger or no K certifies",
            CIFAR_NOTE,
            "burn-in T per batch size: " + (
                "Table 2 of the paper" if setting.burn_in_rule == "paper" else
                "LONG (erratum E16): least T at which Theorem 3.2's burn-in term alone meets "
                f"({LONG_BURN_IN_EPSILON}, 1/n) at sigma = {LONG_BURN_IN_SIGMA}; not the paper's T"),
            f"a point whose audit would exceed {setting.budget:.3g} per-example gradients is not "
            f"audited; if its unlearning fits {setting.count_budget:.3g} it is run once to count "
            f"its gradients (status '{COUNTED}'), otherwise only its planned count is given",
        ],
        "seconds": None,
    }
    if panel == "b":
        result["headline"] = headline(rows)
    if reduced:
        result["notes"].append("REDUCED run (CI): few points, short learning, lambda "
                               f"{_lambda(setting, n_full)}; not the paper's setting")
    result["seconds"] = seconds
    out = Path(out_dir) if out_dir is not None else Path("reproduce-out")
    result["files"] = _write(panel_id, result, rows, panel, out)
    summary = [f"{panel_id}: {TITLES[panel]}"]
    for r in rows:
        summary.append(
            f"  {r.get('label', r.get('batch'))}"
            + (f" eps={r['epsilon']}" if "epsilon" in r else "")
            + (f" sigma={r['sigma']}" if "sigma" in r else "")
            + f": {r.get('status')}"
            + (f", audit {r['verdict']} (certified {r['certified_epsilon']:.4g}, lower bound "
               f"{r['max_lower_bound']:.3g}), accuracy {r['accuracy_mean']:.3f}, unlearning "
               f"epochs {r['unlearning_epochs']:.4g}" if r.get("status") == "run" else
               f" ({r.get('reason', '')})"))
    for h in result.get("headline", []):
        summary.append(f"  headline b={h['batch']}: {h['status']}"
                       + (f" (ratio {h['ratio']:.3g} vs claimed {h['claimed']})" if "ratio" in h
                          else ""))
    summary.append("files: " + ", ".join(result["files"].values()))
    result["summary"] = summary
    return result


def _runner(panel: str, burn_in_rule: str = "paper"):
    def run(*, dataset: tuple[str, str | None], trials: int, device: str,
            out_dir: str | Path | None, reduced: bool = False) -> dict[str, Any]:
        return run_panel(panel, dataset=dataset, trials=trials, device=device, out_dir=out_dir,
                         reduced=reduced, burn_in_rule=burn_in_rule)
    return run


for _panel in "abcd":
    register_empirical_reproduction(EmpiricalReproduction(
        id=f"chien2024:fig3{_panel}", title=TITLES[_panel] + " (PNSGD vs D2D vs LU, audited)",
        run=_runner(_panel)))
    # Erratum E16: Table 2's burn-in can leave Theorem 3.2 above every target; these variants
    # learn until the burn-in term alone is below a tenth of the smallest target.
    register_empirical_reproduction(EmpiricalReproduction(
        id=f"chien2024:fig3{_panel}/long-burn-in",
        title=TITLES[_panel] + " (PNSGD burn-in T long enough for Theorem 3.2, erratum E16)",
        run=_runner(_panel, "long")))
