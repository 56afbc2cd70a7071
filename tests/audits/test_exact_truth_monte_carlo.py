"""The exact laws of every bench instance against simulations of the mechanism: each side's law
by a Kolmogorov-Smirnov distance, and the Rényi divergence against the project's Monte Carlo
estimator (empirical.divergences.estimators.knn_renyi_divergence) on the simulated runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.special import logsumexp

from audits.adapters import exact_cases as cases
from empirical.divergences.estimators import knn_renyi_divergence
from empirical.exact_laws.divergences import renyi_divergence
from empirical.exact_laws.noisy_gradient import Records, StepRule, ordered_partitions

RUNS = 20_000


def law_cdf(law, points: np.ndarray) -> np.ndarray:
    """The distribution function of a grid law at ``points`` (the density's spline integrated,
    the atoms added; a law of nodes only by the mid-point cumulative)."""
    x, lm = law.log_masses()
    lm = lm - logsumexp(lm[np.isfinite(lm)])
    if np.all(np.isfinite(law.log_density)):
        norm = logsumexp(law.grid.log_weights + law.log_density)
        spline = CubicSpline(law.grid.points, np.exp(law.log_density - norm))
        out = np.array([float(spline.integrate(law.grid.lo, min(max(v, law.grid.lo),
                                                                 law.grid.hi)))
                        for v in points])
        atoms = np.exp(law.atom_log_masses - logsumexp(np.concatenate(
            [law.grid.log_weights + law.log_density, law.atom_log_masses])))
        scale = 1 - atoms.sum()
        out = out * scale
        for position, mass in zip(law.atom_positions, atoms, strict=True):
            out = out + mass * (points >= position)
        return out
    order = np.argsort(x)
    nodes, masses = x[order], np.exp(lm[order])
    mid = np.cumsum(masses) - masses / 2
    return np.interp(points, nodes, mid)


def _records(inst) -> tuple[Records, Records]:
    learn = Records(tuple(inst["x"]), tuple(inst["y"]), (1.0,) * len(inst["x"]))
    return learn, learn.without(inst["forget"])


def _epochs(x, rule, records, batches, epochs, noise, radius, rng):
    for _ in range(epochs):
        for batch in batches:
            x = rule.drift(records, batch)(x) + noise * rng.standard_normal(x.size)
            if radius is not None:
                x = np.clip(x, -radius, radius)
    return x


def simulate(case, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(unlearned, retrained) outputs of RUNS independent runs of the case's mechanism."""
    inst, name = case.instance, case.algorithm
    if name in ("pnsgd", "langevin", "noisy-gd", "d2d"):
        learn, final = _records(inst)
        rule = StepRule(eta=inst["eta"], l2=inst["lambda"], clip=inst.get("M", inst.get("L")))
    if name == "pnsgd" and "T" in inst:
        noise = math.sqrt(2 * inst["eta"]) * inst["sigma"]
        parts = list(ordered_partitions(4, inst["b"]))
        out = []
        for world in (0, 1):
            pick = rng.integers(len(parts), size=RUNS)
            x = np.zeros(RUNS)
            for k, part in enumerate(parts):
                sel = pick == k
                y = np.zeros(int(sel.sum()))
                if world == 0:
                    y = _epochs(y, rule, learn, part, inst["T"], noise, inst["R"], rng)
                    y = _epochs(y, rule, final, part, inst["K"], noise, inst["R"], rng)
                else:
                    y = _epochs(y, rule, final, part, inst["T"], noise, inst["R"], rng)
                x[sel] = y
            out.append(x)
        return out[0], out[1]
    if name in ("pnsgd", "langevin"):
        noise = math.sqrt(2 * inst["eta"]) * inst["sigma"]
        batches = inst.get("partition", [list(range(4))])
        start = _epochs(np.zeros(RUNS), rule, learn, batches, 200, noise, inst["R"], rng)
        unlearned = _epochs(start, rule, final, batches, inst["K"], noise, inst["R"], rng)
        retrained = _epochs(np.zeros(RUNS), rule, final, batches, 200, noise, inst["R"], rng)
        return unlearned, retrained
    if name == "noisy-gd":
        noise = math.sqrt(2 * inst["eta"]) * inst["sigma"]
        sd = inst["sigma"] / math.sqrt(inst["lambda"] * (1 - inst["eta"] * inst["lambda"] / 2))
        full = [list(range(4))]
        x = _epochs(sd * rng.standard_normal(RUNS), rule, learn, full, inst["K_A"], noise, None,
                    rng)
        unlearned = _epochs(x, rule, final, full, inst["K_Abar"], noise, None, rng)
        retrained = _epochs(sd * rng.standard_normal(RUNS), rule, final, full,
                            inst["K_A"] + inst["K_Abar"], noise, None, rng)
        return unlearned, retrained
    if name == "d2d":
        full = [list(range(4))]
        learned = _epochs(np.zeros(1), rule, learn, full, inst["T"], 0.0, inst["R"], rng)
        centre_u = _epochs(learned, rule, final, full, inst["I"], 0.0, inst["R"], rng)
        centre_r = _epochs(np.zeros(1), rule, final, full, inst["T"], 0.0, inst["R"], rng)
        return (centre_u + inst["sigma"] * rng.standard_normal(RUNS),
                centre_r + inst["sigma"] * rng.standard_normal(RUNS))
    if name == "output-perturbation":
        clip = [min(max(v, -inst["C0"]), inst["C0"]) for v in (inst["x_hat"], inst["x_hat_r"])]
        return tuple(c + inst["sigma"] * rng.standard_normal(RUNS) for c in clip)
    if name in ("koloskova-gradient-clipping", "koloskova-model-clipping"):
        _, retain = _records(inst)
        gradient = name.endswith("gradient-clipping")
        rule = (StepRule(eta=inst["gamma"], l2=inst["lambda"], clip=inst["C1"], clip_total=True)
                if gradient else
                StepRule(eta=inst["gamma"], l2=0.0, clip=None, clip_model=inst["C2"]))
        out = []
        for start in (inst["x_hat"], inst["x_hat_r"]):
            x = np.full(RUNS, min(max(start, -inst["C0"]), inst["C0"]))
            if not gradient and inst["sigma0"] > 0:
                x = x + inst["sigma0"] * rng.standard_normal(RUNS)
            out.append(_epochs(x, rule, retain, [list(range(4))], inst["T"], inst["sigma"],
                               None, rng))
        return out[0], out[1]
    if name == "guo2020-newton":
        from empirical.exact_laws.guo2020 import NewtonRemoval

        law = NewtonRemoval(tuple(inst["x"]), tuple(inst["y"]), inst["forget"], inst["lambda"],
                            inst["sigma"], math.inf)
        table = np.linspace(-300.0, 300.0, 600_001)
        b_train, b_retrain = law.b_of_trained(table)[0], law.b_of_retrained(table)[0]
        w = np.interp(-inst["sigma"] * rng.standard_normal(RUNS), -b_train, table)
        return (law.newton(w)[0],
                np.interp(-inst["sigma"] * rng.standard_normal(RUNS), -b_retrain, table))
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(cases.DEFAULT_CASES))
def test_the_exact_laws_match_simulated_runs_and_the_monte_carlo_estimator(name: str) -> None:
    case = cases.DEFAULT_CASES[name][0]()
    unlearned, retrained = case.build(case.size)
    samples = simulate(case, np.random.default_rng(11))
    # Kolmogorov-Smirnov at level 1e-4 per side (c = 2.15 / sqrt(n))
    for law, runs in zip((unlearned, retrained), samples, strict=True):
        runs = np.sort(runs)
        cdf = law_cdf(law, runs)
        upper = np.arange(1, RUNS + 1) / RUNS
        distance = max(np.max(upper - cdf), np.max(cdf - (upper - 1 / RUNS)))
        assert distance < 2.15 / math.sqrt(RUNS), (name, distance)
    exact = renyi_divergence(unlearned, retrained, 2.0)
    estimate = knn_renyi_divergence(samples[0], samples[1], order=2.0).value
    assert abs(estimate - exact) < 0.03 + 0.3 * exact, (name, estimate, exact)
