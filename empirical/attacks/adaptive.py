"""The counterexamples of Section 3 of Chourasia & Shah 2023 (seed 001), as seeded simulations.

* :func:`median_attack`: Theorem 3.1. The median curator, A(D) = med(D) and
  Abar(D, u, theta) = med(D o u), satisfies (0, 0)-adaptive unlearning (Definition 2.7), yet a
  1-adaptive requester that sees only phi_0 = med(D_0) and re-inserts it in i - 1 random slots
  lets an adversary read the deleted median off the single release phi_i. The exact success
  probability is :func:`median_success_exact`, 1 - C((n+1)/2, i-1)/C(n, i-1), checked against
  full enumeration by :func:`median_success_enumerated`; the paper proves the weaker
  1 - 2 C((n-1)/2, i-2)/C(n, i-2) >= 1 - (1/2)^(i-3) for i > 3.
* :func:`secret_state_attack`: Theorem 3.2. Each release is a count plus del_j/j plus Laplace
  noise, so every single release is (epsilon, 0)-close to retraining; the paper argues the
  deleted record's bit can then be "correctly inferred" from the releases after the deletion.
  The adversary's best test (the sum of per-release log-likelihood ratios) is simulated; its
  success stays below 1/2 + TV/2 where the total KL divergence over all releases is finite
  (:func:`secret_state_kl`), so the claim does not hold as written for a fixed epsilon: the
  max-divergence diverges (:func:`secret_state_max_divergence`), the success does not reach 1.
* :func:`sum_example`: the {-2, -1, 1, 2} sum example (eqs. 7-8): A = sum, Abar = sum of the
  remaining records satisfies Guo et al.'s certified removal and Sekhari et al.'s unlearning with
  epsilon = delta = 0, and a deletion request chosen from the model reveals the deleted record.

Trials run through :func:`empirical.engine.trials.run_trials` (per-trial random streams: trial k sees
the same numbers whatever the batch size or mode). Outputs are plain NumPy arrays and dicts.
Estimates are labelled as such; the only bounds reported are exact or proved ones.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import torch

from empirical.engine.trials import TrialRandom, run_trials
from empirical.statistics import clopper_pearson

__all__ = [
    "median_attack",
    "median_success_enumerated",
    "median_success_exact",
    "median_success_paper_bound",
    "secret_state_attack",
    "secret_state_kl",
    "secret_state_max_divergence",
    "secret_state_success_ceiling",
    "sum_example",
]

Side = Literal["above", "below"]

# --------------------------------------------------------------------------------------------
# Theorem 3.1: the median curator and the 1-adaptive requester
# --------------------------------------------------------------------------------------------


def _check_median_setting(n: int, i: int) -> None:
    if not (isinstance(n, int) and n >= 3 and n % 2 == 1):
        raise ValueError(f"Theorem 3.1 needs an odd database size n >= 3, got n={n!r}")
    if not (isinstance(i, int) and 2 <= i <= n + 1):
        raise ValueError(f"Theorem 3.1 needs 2 <= i <= n + 1 (i - 1 requests), got i={i!r}")


def median_success_exact(*, n: int, i: int) -> Fraction:
    """P[med(D_i) = med(D_0)] = 1 - C((n+1)/2, i-1)/C(n, i-1) (either side of the new value).

    The attack fails exactly when none of the i - 1 re-encoded slots held a record on the side
    of the median where the replacement y lands; (n+1)/2 slots (those on the other side and the
    median's own) are safe to hit.
    """
    _check_median_setting(n, i)
    return 1 - Fraction(math.comb((n + 1) // 2, i - 1), math.comb(n, i - 1))


def median_success_paper_bound(*, n: int, i: int) -> dict[str, Fraction]:
    """The paper's bounds (Appendix C): 1 - 2 C(h, i-2)/C(n, i-2) and 1 - (1/2)^(i-3), h = (n-1)/2."""
    _check_median_setting(n, i)
    if i <= 3:
        raise ValueError("the paper's bounds are stated for steps i > 3")
    h = (n - 1) // 2
    return {"combinatorial": 1 - 2 * Fraction(math.comb(h, i - 2), math.comb(n, i - 2)),
            "geometric": 1 - Fraction(1, 2 ** (i - 3))}


def _median_after(ranks: list[int], replaced: tuple[int, ...], target: int, y: float) -> float:
    data = [float(v) for v in ranks]
    m = float(ranks[target])
    for slot in replaced:
        data[slot] = m
    data[target] = y
    return sorted(data)[len(data) // 2]


def median_success_enumerated(*, n: int, i: int, side: Side = "above") -> Fraction:
    """Exact success probability by enumerating every set of re-encoded slots (small n only).

    The data are the ranks 0..n-1 (only the order matters); the requester's i - 1 slots are a
    uniform (i-1)-subset of the n slots, and the target (the median) is deleted at step i by
    replacing it with a value above (or below) every record.
    """
    _check_median_setting(n, i)
    if n > 15:
        raise ValueError("enumeration is for small n (n <= 15)")
    ranks = list(range(n))
    target = (n - 1) // 2  # the slot holding the median rank
    y = n + 0.5 if side == "above" else -1.5
    hits = total = 0
    for replaced in itertools.combinations(range(n), i - 1):
        total += 1
        hits += _median_after(ranks, replaced, target, y) == float(ranks[target])
    return Fraction(hits, total)


def _median_pipeline(n: int, i: int, side: Side):  # noqa: ANN202 - returns a trial pipeline
    y = float(n) + 0.5 if side == "above" else -1.5

    def pipeline(rand: TrialRandom) -> dict[str, torch.Tensor]:
        # D_0: distinct values (a random arrangement of the ranks 0..n-1); median value h.
        data = rand.permutation("database", n).to(rand.dtype)
        median = float((n - 1) // 2)
        phi_0 = data.median(dim=1).values  # the curator publishes A(D_0) = med(D_0)
        target_slot = (data == median).to(torch.int64).argmax(dim=1)
        # The 1-adaptive requester: i - 1 distinct uniform slots, each replaced by phi_0.
        slots = rand.permutation("requests", n)[:, : i - 1]
        edited = data.scatter(1, slots, phi_0.unsqueeze(1).expand(-1, i - 1).contiguous())
        # Step i: the target's owner replaces the median record with y (non-adaptive request).
        edited = edited.scatter(1, target_slot.unsqueeze(1),
                                torch.full_like(phi_0.unsqueeze(1), y))
        phi_i = edited.median(dim=1).values  # Abar(D_{i-1}, u_i, .) = med(D_{i-1} o u_i)
        retrained = torch.sort(edited, dim=1).values[:, n // 2]  # A(D_i), computed afresh
        return {"phi_0": phi_0, "phi_i": phi_i, "retrained": retrained,
                "identified": (phi_i == phi_0).to(torch.int64)}

    return pipeline


def median_attack(*, n: int, i: int, trials: int, seed: int, side: Side = "above",
                  mode: Literal["batched", "loop"] = "batched",
                  confidence: float = 0.99) -> dict[str, Any]:
    """Simulate Theorem 3.1's attack: how often the adversary's guess phi_i equals the deleted
    median. Returns the estimate with a Clopper-Pearson interval, the exact probability and the
    paper's bounds (for i > 3), and whether the curator's release always equals retraining
    ((0, 0)-adaptive unlearning holds exactly)."""
    _check_median_setting(n, i)
    out = run_trials(_median_pipeline(n, i, side), n_trials=trials, seed=seed, mode=mode)
    successes = int(out["identified"].sum())
    interval = clopper_pearson(successes=successes, trials=trials, confidence=confidence)
    result: dict[str, Any] = {
        "n": n, "i": i, "side": side, "trials": trials, "seed": seed,
        "success_estimate": successes / trials,
        "success_interval": (interval.lower, interval.upper),
        "confidence": confidence,
        "success_exact": float(median_success_exact(n=n, i=i)),
        "unlearning_exact": bool(np.array_equal(out["phi_i"], out["retrained"])),
        "identified": out["identified"],
        "kind": "estimate",
    }
    if i > 3:
        result["paper_bounds"] = {k: float(v) for k, v in median_success_paper_bound(n=n, i=i).items()}
    return result


# --------------------------------------------------------------------------------------------
# Theorem 3.2: secret states with Laplace releases
# --------------------------------------------------------------------------------------------


def secret_state_kl(*, epsilon: float, first: int, releases: int | None) -> float:
    """KL divergence between the adversary's views under the two values of the deleted bit.

    Release j >= first carries the bit as a shift 1/j under Laplace(1/epsilon) noise; a Laplace
    shift mu at scale 1/epsilon has KL = epsilon mu + exp(-epsilon mu) - 1 <= (epsilon mu)^2/2.
    ``releases=None`` gives an upper bound on the infinite sum (tail at most
    epsilon^2/(2 (first + 10^6 - 1))).
    """
    _check_laplace_setting(epsilon, first)
    count = 10**6 if releases is None else int(releases)
    j = np.arange(first, first + count, dtype=np.float64)
    terms = np.expm1(-epsilon / j) + epsilon / j  # epsilon mu + e^(-epsilon mu) - 1, no cancellation
    total = float(np.sum(terms[::-1]))  # small terms first
    if releases is None:
        total += epsilon**2 / (2 * (first + count - 1))
    return total


def secret_state_max_divergence(*, epsilon: float, first: int, releases: int) -> float:
    """Max-divergence of the same pair: sum_j epsilon/j, which grows like epsilon log(releases)."""
    _check_laplace_setting(epsilon, first)
    j = np.arange(first, first + int(releases), dtype=np.float64)
    return float(np.sum(epsilon / j))


def secret_state_success_ceiling(*, epsilon: float, first: int, releases: int | None) -> float:
    """Ceiling on the success probability of any test (uniform prior on the bit): 1/2 + TV/2
    with TV bounded from :func:`secret_state_kl` by Pinsker's inequality sqrt(KL/2) (or
    Bretagnolle-Huber where tighter; at epsilon = 1, i = 1 Pinsker gives 0.787). It is a bound,
    not the optimum: :func:`secret_state_optimal_success` computes that."""
    kl = secret_state_kl(epsilon=epsilon, first=first, releases=releases)
    tv = min(1.0, math.sqrt(kl / 2), math.sqrt(-math.expm1(-kl)))
    return 0.5 + tv / 2


def secret_state_optimal_success(*, epsilon: float, first: int, releases: int,
                                 step: float = 5e-4) -> float:
    """Success probability of the optimal (likelihood-ratio) adversary, computed, not bounded.

    With L the log-likelihood ratio of the releases, L under the bit 1 has the law of -L under
    the bit 0 (the Laplace noise is symmetric), so the optimal success with a uniform prior and
    ties broken at random is P_0(L < 0) + P_0(L = 0)/2. Each release's term
    l = epsilon(|x| - |x - mu|), x ~ Laplace(0, 1/epsilon), has atoms at -epsilon mu (mass 1/2)
    and +epsilon mu (mass e^(-epsilon mu)/2) and a density between; each law is put on a
    lattice of ``step`` (continuous mass by cell, atoms split between neighbours so that the
    mean is kept) and the sum's law is their FFT convolution. At step 5e-4 the values agree
    with step 1e-3 to 1e-5 (1000 releases) and with the closed form 1 - e^(-epsilon/2)/2 at
    one release to 1e-8.
    """
    _check_laplace_setting(epsilon, first)
    mus = 1.0 / np.arange(first, first + int(releases), dtype=np.float64)
    half = int(math.ceil(epsilon * mus.sum() / step)) + 4
    size = 1 << int(math.ceil(math.log2(2 * half + 1)))
    shift = np.exp(2j * np.pi * np.arange(size // 2 + 1) / size)
    spectrum = np.ones(size // 2 + 1, dtype=complex)
    for mu in mus:
        a = epsilon * mu
        k = int(math.ceil(a / step)) + 1
        edges = (np.arange(-k, k + 2) - 0.5) * step
        inside = (np.clip(edges, -a, a) / epsilon + mu) / 2
        mass = np.diff(0.5 * -np.expm1(-epsilon * inside))  # the density part, cell by cell
        for atom, weight in ((-a, 0.5), (a, 0.5 * math.exp(-a))):
            position = atom / step
            low = math.floor(position)
            mass[low + k] += weight * (1 - (position - low))
            mass[low + 1 + k] += weight * (position - low)
        pmf = np.zeros(size)
        pmf[:2 * k + 1] = mass
        spectrum *= np.fft.rfft(pmf) * shift**k  # centre the term at 0
    law = np.fft.irfft(spectrum, size)
    return float(law[size // 2:].sum() + law[0] / 2)  # negative lattice points wrap to the top


def _check_laplace_setting(epsilon: float, first: int) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"Theorem 3.2 needs epsilon > 0, got {epsilon!r}")
    if not (isinstance(first, int) and first >= 1):
        raise ValueError(f"the deletion step i must be an integer >= 1, got {first!r}")


def _laplace_pipeline(epsilon: float, first: int, checkpoints: tuple[int, ...], block: int):  # noqa: ANN202
    def pipeline(rand: TrialRandom) -> dict[str, torch.Tensor]:
        size = rand.size
        bit = torch.empty((size, 1), dtype=rand.dtype)
        for row, generator in zip(bit, rand.generators("secret"), strict=True):
            row.uniform_(generator=generator)
        bit = (bit[:, 0] < 0.5).to(rand.dtype)  # the deleted record's h-value, uniform
        llr = torch.zeros(size, dtype=rand.dtype)
        correct = torch.zeros((size, len(checkpoints)), dtype=torch.int64)
        done = 0
        for start in range(0, checkpoints[-1], block):
            width = min(block, checkpoints[-1] - start)
            u = torch.empty((size, width), dtype=rand.dtype)
            for row, generator in zip(u, rand.generators("noise"), strict=True):
                row.uniform_(generator=generator)
            u = u - 0.5
            noise = -torch.sign(u) * torch.log1p(-2 * u.abs()) / epsilon  # Laplace(0, 1/epsilon)
            j = torch.arange(first + start, first + start + width, dtype=rand.dtype)
            shift = 1 / j
            x = bit.unsqueeze(1) * shift + noise  # what the adversary isolates from phi_j
            steps = epsilon * (x.abs() - (x - shift).abs())  # log p1(x_j)/p0(x_j)
            running = llr.unsqueeze(1) + torch.cumsum(steps, dim=1)
            for c, k in enumerate(checkpoints):
                if start < k <= start + width:
                    guess = (running[:, k - start - 1] > 0).to(rand.dtype)
                    correct[:, c] = (guess == bit).to(torch.int64)
                    done += 1
            llr = running[:, -1]
        assert done == len(checkpoints)
        return {"bit": bit, "correct": correct, "llr": llr}

    return pipeline


def secret_state_attack(*, epsilon: float, first: int, checkpoints: tuple[int, ...] | list[int],
                        trials: int, seed: int, mode: Literal["batched", "loop"] = "batched",
                        confidence: float = 0.99, block: int = 256) -> dict[str, Any]:
    """Simulate Theorem 3.2's construction against the optimal (likelihood-ratio) adversary.

    The adversary knows every record but the deleted one's bit b and every edit, so from
    phi_j = count_j + del_j/j + Laplace(1/epsilon) it isolates x_j = b/j + Laplace(1/epsilon)
    for the releases j = first, first + 1, ...; it guesses b = 1 when the summed log-likelihood
    ratio is positive. For each number of observed releases in ``checkpoints`` the result gives
    the estimated success (with a Clopper-Pearson interval), the exact optimal success
    (:func:`secret_state_optimal_success`), the ceiling 1/2 + TV/2 that Pinsker's inequality
    gives from the exact KL divergence, and the max-divergence the paper computes.
    """
    _check_laplace_setting(epsilon, first)
    points = tuple(sorted({int(k) for k in checkpoints}))
    if not points or points[0] < 1:
        raise ValueError("checkpoints must be positive numbers of releases")
    out = run_trials(_laplace_pipeline(float(epsilon), first, points, block), n_trials=trials,
                     seed=seed, mode=mode)
    rows = []
    for c, k in enumerate(points):
        successes = int(out["correct"][:, c].sum())
        interval = clopper_pearson(successes=successes, trials=trials, confidence=confidence)
        rows.append({
            "releases": k,
            "success_estimate": successes / trials,
            "success_interval": (interval.lower, interval.upper),
            "success_ceiling": secret_state_success_ceiling(epsilon=epsilon, first=first,
                                                            releases=k),
            "success_exact": secret_state_optimal_success(epsilon=epsilon, first=first,
                                                          releases=k),
            "kl": secret_state_kl(epsilon=epsilon, first=first, releases=k),
            "max_divergence": secret_state_max_divergence(epsilon=epsilon, first=first,
                                                          releases=k),
        })
    return {
        "epsilon": epsilon, "first": first, "trials": trials, "seed": seed,
        "confidence": confidence, "rows": rows,
        "success_ceiling_all_releases": secret_state_success_ceiling(epsilon=epsilon,
                                                                     first=first, releases=None),
        "kind": "estimate",
        "finding": "the max-divergence grows without bound but the KL divergence over all "
                   "releases is finite, so no adversary identifies the bit with probability "
                   "tending to 1 (Theorem 3.2's 'correctly infer' does not follow)",
    }


# --------------------------------------------------------------------------------------------
# The {-2, -1, 1, 2} sum example (eqs. 7-8) against Guo's and Sekhari's definitions
# --------------------------------------------------------------------------------------------


UNIVERSE = (-2, -1, 1, 2)


def _sum_learn(data: tuple[int, ...]) -> int:
    return sum(data)


def _sum_delete(data: tuple[int, ...], deleted: tuple[int, ...], _model: int) -> int:
    remaining = list(data)
    for x in deleted:
        remaining.remove(x)
    return sum(remaining)


def _adaptive_request(data: tuple[int, ...], model: int) -> tuple[int, ...]:
    """Eq. (8): delete the negative records if the model is negative, else the positive ones."""
    keep = (lambda x: x < 0) if model < 0 else (lambda x: x > 0)
    return tuple(x for x in data if keep(x))


def sum_example() -> dict[str, Any]:
    """Run the example and check both definitions exhaustively over the universe.

    Guo et al. (Definition C.1) ask Abar(D, S, A(D)) ~ A(D \\ S); Sekhari et al. (Definition
    C.2, with T(D) = D) ask Abar(D, S, A(D)) ~ Abar(D \\ S, {}, A(D \\ S)). Both hold with
    equality (epsilon = delta = 0) for every D and every S, yet the model-dependent request of
    eq. (8) makes the post-deletion output reveal which neighbour was used.
    """
    guo = sekhari = True
    for size in range(len(UNIVERSE) + 1):
        for data in itertools.combinations(UNIVERSE, size):
            for k in range(len(data) + 1):
                for deleted in itertools.combinations(data, k):
                    rest = list(data)
                    for x in deleted:
                        rest.remove(x)
                    after = _sum_delete(data, deleted, _sum_learn(data))
                    guo &= after == _sum_learn(tuple(rest))
                    sekhari &= after == _sum_delete(tuple(rest), (), _sum_learn(tuple(rest)))
    outcomes = {}
    for name, data in (("D", (-2, -1, 2)), ("D_prime", (-2, 1, 2))):
        model = _sum_learn(data)
        request = _adaptive_request(data, model)
        outcomes[name] = {"data": data, "model": model, "request": request,
                          "released": _sum_delete(data, request, model)}
    # The adversary maps the release back to the differing record (-1 in D, +1 in D').
    decode = {outcomes["D"]["released"]: -1, outcomes["D_prime"]["released"]: 1}
    identified = (decode.get(outcomes["D"]["released"]) == -1
                  and decode.get(outcomes["D_prime"]["released"]) == 1
                  and outcomes["D"]["released"] != outcomes["D_prime"]["released"])
    return {"guo_certified_removal_0_0": guo, "sekhari_unlearning_0_0": sekhari,
            "outcomes": outcomes, "success_probability": 1.0 if identified else 0.0,
            "requests_delete": {k: len(v["request"]) for k, v in outcomes.items()}}
