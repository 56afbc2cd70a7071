"""Small instances of every registered algorithm for ``unlearn bench exact``: the mechanism as
its adapter runs it, on a one-dimensional linear model with a few records, inside its
certificate's assumptions, with the certificate evaluated through the bound engine.

Each ``*_case`` function takes the instance's numbers (keyword-only) and returns an
:class:`~audits.exact_truth.ExactCase`; :data:`DEFAULT_CASES` holds one instance per algorithm
(the bench's rows). Records are (x, y) with |x| <= 1 and y = +-1 (logistic loss, 1/4-smooth,
so L = 1/4 + lambda and m = lambda), the forgotten record is replaced by a null record (zero
loss), as the mechanisms serve a removal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from audits.exact_truth import Certified, ExactCase, renyi_certificate

__all__ = ["DEFAULT_CASES", "case_makers", "d2d_case", "default_cases", "guo_case", "langevin_case",
           "model_clipping_case",
           "gradient_clipping_case", "noisy_gd_case", "output_perturbation_case", "pnsgd_case",
           "pnsgd_sequence_case", "pnsgd_stationary_case", "pnsgd_stationary_sequence_case"]

PNSGD_IDS = ("chien2024:thm3.2", "chien2024:thm3.2/time-shift", "chien2024:thm3.2/capped",
             "chien2024:thm3.2/optimal-shift")
STATIONARY_IDS = ("chien2024:cor3.7", "chien2024:cor3.7/optimal-shift",
                  "chien2024:cor3.7/exact-noise", "chien2024:cor3.7/tight", "chien2024:cor3.8")


def _odd(value: float, *, low: int = 101, high: int = 1201) -> int:
    size = int(min(max(math.ceil(value), low), high))
    return size if size % 2 else size + 1


def _eta(fraction: float, L: Fraction) -> float:
    """fraction / L as a float never above 1/L."""
    from bounds.numerics import float_down

    return float_down(Fraction(fraction) / L)


def _records(x: Sequence[float], y: Sequence[float], forget: int) -> tuple[Any, Any]:
    from empirical.exact_laws.noisy_gradient import Records

    learn = Records(tuple(map(float, x)), tuple(map(float, y)), (1.0,) * len(x))
    return learn, learn.without(forget)


def pnsgd_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0, lam: float,
               clip: float, sigma: float, eta_fraction: float = 1.0, batch_size: int,
               learn_epochs: int, unlearn_epochs: int, radius: float, delta: float,
               partition: str | Sequence[Sequence[int]] = "random",
               ids: Sequence[str] = PNSGD_IDS) -> ExactCase:
    """PNSGD from the point 0 (learning T epochs, unlearning K, retraining T), certified by
    Theorem 3.2 and its improved forms."""
    from empirical.exact_laws.chien2024 import pnsgd_pair
    from empirical.exact_laws.noisy_gradient import StepRule

    L = Fraction(1, 4) + Fraction(lam)
    eta = _eta(eta_fraction, L)
    learn, final = _records(x, y, forget)
    rule = StepRule(eta=eta, l2=lam, clip=clip)
    inputs = {"sigma": sigma, "eta": eta, "m": lam, "L": L, "M": clip, "n": len(x),
              "b": batch_size, "T": learn_epochs, "K": unlearn_epochs, "R": radius}
    certified = tuple(renyi_certificate(i, inputs=inputs, delta=delta) for i in ids)
    noise = math.sqrt(2 * eta) * sigma

    def build(size: int) -> Any:
        return pnsgd_pair(size=size, learn=learn, final=final, rule=rule, sigma=sigma,
                          batch_size=batch_size, learn_epochs=learn_epochs,
                          unlearn_epochs=unlearn_epochs, radius=radius, partition=partition)

    instance = {"x": list(x), "y": list(y), "forget": forget, "lambda": lam, "M": clip,
                "sigma": sigma, "eta": eta, "b": batch_size, "T": learn_epochs,
                "K": unlearn_epochs, "R": radius, "partition": partition
                if isinstance(partition, str) else [list(b) for b in partition]}
    return ExactCase("pnsgd", instance, build, _odd(2 * radius / (noise / 12)), delta, certified,
                     label=f"T={learn_epochs} K={unlearn_epochs} from 0")


SEQUENCE_IDS = ("chien2024:thm3.2+thm3.11/sequence",
                "chien2024:thm3.2+thm3.11/sequence/time-shift")


def pnsgd_sequence_case(*, x: Sequence[float], y: Sequence[float], forget: Sequence[int],
                        epochs: Sequence[int], lam: float, clip: float, sigma: float,
                        batch_size: int, learn_epochs: int, radius: float, delta: float,
                        partition: str | Sequence[Sequence[int]] = "random",
                        ids: Sequence[str] = SEQUENCE_IDS) -> ExactCase:
    """PNSGD serving removals of ``forget`` one request at a time (K = ``epochs`` per request),
    certified for the last request by Theorem 3.2 with Theorem 3.11's start distance Z, as
    the adapter certifies a sequence."""
    from bounds.papers.chien2024 import sequence_start_distance
    from empirical.exact_laws.chien2024 import pnsgd_sequence_pair
    from empirical.exact_laws.noisy_gradient import StepRule

    if len(forget) != len(epochs) or len(set(forget)) != len(forget):
        raise ValueError("one K per request, each removing another record")
    L = Fraction(1, 4) + Fraction(lam)
    eta = _eta(1.0, L)
    learn, _ = _records(x, y, forget[0])
    requests, current = [], learn
    for index, k in zip(forget, epochs, strict=True):
        current = current.without(index)
        requests.append((current, k))
    rule = StepRule(eta=eta, l2=lam, clip=clip)
    n = len(x)
    z = sequence_start_distance(eta=eta, m=lam, M=clip, n=n, b=batch_size, T=learn_epochs,
                                R=radius, sizes=[1] * len(forget), epochs=list(epochs))
    from bounds.numerics import float_up

    inputs = {"sigma": sigma, "eta": eta, "m": lam, "L": L, "M": clip, "n": n,
              "b": batch_size, "T": learn_epochs, "K": epochs[-1], "R": radius,
              "Z": float_up(z)}
    import bounds

    # The time-shift sequence forms also read the earlier requests' unlearning epochs (their
    # floor on Z, docs/improved.md (e)); the weak-triangle form does not declare them.
    certified = tuple(renyi_certificate(
        i, inputs={**inputs, "Kprev": sum(epochs[:-1])}
        if "Kprev" in bounds.get(i).parameter_names else inputs, delta=delta) for i in ids)
    noise = math.sqrt(2 * eta) * sigma

    def build(size: int) -> Any:
        return pnsgd_sequence_pair(size=size, learn=learn, requests=requests, rule=rule,
                                   sigma=sigma, batch_size=batch_size, learn_epochs=learn_epochs,
                                   radius=radius, partition=partition)

    instance = {"x": list(x), "y": list(y), "forget": list(forget), "K": list(epochs),
                "lambda": lam, "M": clip, "sigma": sigma, "eta": eta, "b": batch_size,
                "T": learn_epochs, "R": radius, "Z": inputs["Z"], "partition": partition
                if isinstance(partition, str) else [list(b) for b in partition]}
    return ExactCase("pnsgd", instance, build, _odd(2 * radius / (noise / 12)), delta, certified,
                     label=f"{len(forget)} requests, K={list(epochs)}")


STATIONARY_SEQUENCE_IDS = ("chien2024:thm3.11+cor3.7", "chien2024:thm3.11+cor3.7/optimal-shift")


def pnsgd_stationary_sequence_case(*, x: Sequence[float], y: Sequence[float],
                                   forget: Sequence[int], lam: float, clip: float,
                                   sigma: float, batch_size: int, unlearn_epochs: int,
                                   radius: float, delta: float,
                                   ids: Sequence[str] = STATIONARY_SEQUENCE_IDS) -> ExactCase:
    """PNSGD from the stationary law on D, the s = len(``forget``) removals one request at a
    time with K epochs each (fixed consecutive partition), against the stationary law on the
    last dataset: Theorem 3.11 with Corollary 3.7."""
    from empirical.exact_laws.grid import Grid
    from empirical.exact_laws.noisy_gradient import StepRule, run_epochs, stationary_law

    n = len(x)
    batches = [tuple(range(i, i + batch_size)) for i in range(0, n, batch_size)]
    L = Fraction(1, 4) + Fraction(lam)
    eta = _eta(1.0, L)
    learn, _ = _records(x, y, forget[0])
    datasets, current = [], learn
    for index in forget:
        current = current.without(index)
        datasets.append(current)
    rule = StepRule(eta=eta, l2=lam, clip=clip)
    inputs = {"sigma": sigma, "eta": eta, "m": lam, "L": L, "M": clip, "n": n,
              "b": batch_size, "K": unlearn_epochs, "R": radius, "s": len(forget)}
    certified = tuple(renyi_certificate(i, inputs=inputs, delta=delta) for i in ids)
    noise = math.sqrt(2 * eta) * sigma

    def build(size: int) -> Any:
        grid = Grid(-radius, radius, size, True)
        law, _ = stationary_law(grid, rule, learn, noise_std=noise, radius=radius,
                                batches=batches)
        for records in datasets:
            law = run_epochs(law, rule, records, batches, epochs=unlearn_epochs,
                             noise_std=noise, radius=radius)
        target, _ = stationary_law(grid, rule, datasets[-1], noise_std=noise, radius=radius,
                                   batches=batches)
        return law, target

    instance = {"x": list(x), "y": list(y), "forget": list(forget), "lambda": lam, "M": clip,
                "sigma": sigma, "eta": eta, "b": batch_size, "K": unlearn_epochs,
                "R": radius, "start": "stationary law on D"}
    return ExactCase("pnsgd", instance, build, _odd(2 * radius / (noise / 12)), delta, certified,
                     label=f"{len(forget)} requests, K={unlearn_epochs} from the stationary law")


def pnsgd_stationary_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0,
                          lam: float, clip: float, sigma: float, eta_fraction: float = 1.0,
                          batch_size: int, unlearn_epochs: int, radius: float, delta: float,
                          partition: Sequence[Sequence[int]] | None = None,
                          ids: Sequence[str] = STATIONARY_IDS) -> ExactCase:
    """PNSGD unlearning from the stationary law on D (a fixed partition), against the
    stationary law on D': Corollaries 3.7 and 3.8 and their improved forms."""
    from empirical.exact_laws.chien2024 import pnsgd_stationary_pair
    from empirical.exact_laws.grid import Grid
    from empirical.exact_laws.noisy_gradient import StepRule

    n = len(x)
    batches = ([tuple(range(i, i + batch_size)) for i in range(0, n, batch_size)]
               if partition is None else [tuple(b) for b in partition])
    L = Fraction(1, 4) + Fraction(lam)
    eta = _eta(eta_fraction, L)
    learn, final = _records(x, y, forget)
    rule = StepRule(eta=eta, l2=lam, clip=clip)
    inputs = {"sigma": sigma, "eta": eta, "m": lam, "L": L, "M": clip, "n": n,
              "b": batch_size, "K": unlearn_epochs, "R": radius}
    certified = tuple(renyi_certificate(i, inputs=inputs, delta=delta) for i in ids)
    noise = math.sqrt(2 * eta) * sigma

    def build(size: int) -> Any:
        return pnsgd_stationary_pair(grid=Grid(-radius, radius, size, True), learn=learn,
                                     final=final, rule=rule, sigma=sigma, batches=batches,
                                     unlearn_epochs=unlearn_epochs, radius=radius)

    instance = {"x": list(x), "y": list(y), "forget": forget, "lambda": lam, "M": clip,
                "sigma": sigma, "eta": eta, "b": batch_size, "K": unlearn_epochs,
                "R": radius, "start": "stationary law on D",
                "partition": [list(b) for b in batches]}
    return ExactCase("pnsgd", instance, build, _odd(2 * radius / (noise / 12)), delta, certified,
                     label=f"K={unlearn_epochs} from the stationary law")


def langevin_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0, lam: float,
                  clip: float, sigma: float, unlearn_steps: int, radius: float,
                  delta: float) -> ExactCase:
    """Langevin unlearning from the limit law on D (Theorem P.1's start), eq. (98)."""
    from empirical.exact_laws.chien2024 import langevin_pair
    from empirical.exact_laws.noisy_gradient import StepRule

    L = Fraction(1, 4) + Fraction(lam)
    eta = _eta(1.0, L)
    learn, final = _records(x, y, forget)
    rule = StepRule(eta=eta, l2=lam, clip=clip)
    inputs = {"sigma": sigma, "eta": eta, "m": lam, "L": L, "M": clip, "n": len(x), "S": 1,
              "K": unlearn_steps}
    certified = (renyi_certificate("chien2024lu:eq98", inputs=inputs, delta=delta),)
    noise = math.sqrt(2 * eta) * sigma

    def build(size: int) -> Any:
        return langevin_pair(size=size, learn=learn, final=final, rule=rule, sigma=sigma,
                             unlearn_steps=unlearn_steps, radius=radius)

    instance = {"x": list(x), "y": list(y), "forget": forget, "lambda": lam, "M": clip,
                "sigma": sigma, "eta": eta, "K": unlearn_steps, "R": radius,
                "start": "limit law on D"}
    return ExactCase("langevin", instance, build, _odd(2 * radius / (noise / 12)), delta,
                     certified, label=f"K={unlearn_steps} from the limit law")


def noisy_gd_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0, lam: float,
                  clip: float, sigma: float, learn_steps: int, unlearn_steps: int,
                  delta: float) -> ExactCase:
    """Noisy-GD deletion (Theorem 5.1's step and initialisation), its Rényi deletion curve."""
    from bounds.numerics import float_down
    from empirical.exact_laws.chourasia2023 import noisy_gd_pair
    from empirical.exact_laws.noisy_gradient import StepRule

    beta = Fraction(1, 4)
    eta = float_down(1 / (2 * (Fraction(lam) + beta)))
    learn, final = _records(x, y, forget)
    rule = StepRule(eta=eta, l2=lam, clip=clip)
    inputs = {"sigma": sigma, "L": clip, "lam": lam, "beta": beta, "n": len(x),
              "K_Abar": unlearn_steps}
    certified = (renyi_certificate("chourasia2023:thm5.1/deletion-renyi", inputs=inputs,
                                   delta=delta),)
    init_sd = sigma / math.sqrt(lam * (1 - eta * lam / 2))
    width = 2 * (clip / lam + 16 * init_sd)

    def build(size: int) -> Any:
        return noisy_gd_pair(size=size, learn=learn, final=final, rule=rule, sigma=sigma,
                             learn_steps=learn_steps, unlearn_steps=unlearn_steps)

    instance = {"x": list(x), "y": list(y), "forget": forget, "lambda": lam, "L": clip,
                "sigma": sigma, "eta": eta, "K_A": learn_steps, "K_Abar": unlearn_steps}
    step_sd = math.sqrt(2 * eta) * sigma
    return ExactCase("noisy-gd", instance, build, _odd(width / (step_sd / 12), high=2001),
                     delta, certified, label=f"K_A={learn_steps} K_Abar={unlearn_steps}")


def d2d_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0, lam: float,
             clip: float, epsilon: float, delta: float, unlearn_steps: int, radius: float,
             learn_steps: int | None = None) -> ExactCase:
    """D2D with an internal state: sigma from Theorem 9 for (epsilon, delta); T the least
    learning length Theorem 9 allows unless given."""
    import bounds
    from empirical.exact_laws.neel2021 import d2d_pair
    from empirical.exact_laws.noisy_gradient import StepRule

    m, L = Fraction(lam), Fraction(1, 4) + Fraction(lam)
    n = len(x)
    if learn_steps is None:
        learn_steps = unlearn_steps + math.ceil(
            math.log(radius * lam * n / clip) / math.log(float((L + m) / (L - m)))) + 1
    bound = bounds.get("neel2021:thm9")
    sigma = bound.evaluate(precision="interval", epsilon=epsilon, delta=delta, M=clip, m=m, L=L,
                           n=n, I=unlearn_steps, T=learn_steps, R=radius).certified_upper
    eta = float(2 / (L + m))
    learn, final = _records(x, y, forget)
    rule = StepRule(eta=eta, l2=lam, clip=clip)

    def build(size: int) -> Any:
        return d2d_pair(size=size, learn=learn, final=final, rule=rule, sigma=sigma,
                        learn_steps=learn_steps, unlearn_steps=unlearn_steps, radius=radius)

    instance = {"x": list(x), "y": list(y), "forget": forget, "lambda": lam, "M": clip,
                "sigma": sigma, "eta": eta, "T": learn_steps, "I": unlearn_steps, "R": radius}
    cert = Certified("neel2021:thm9", float(epsilon), None, None,
                     "sigma = Theorem 9's noise scale for (epsilon, delta) (interval upper end)")
    return ExactCase("d2d", instance, build, 801, delta, (cert,),
                     label=f"T={learn_steps} I={unlearn_steps}")


def output_perturbation_case(*, x_hat: float, x_hat_r: float, c0: float, epsilon: float,
                             delta: float) -> ExactCase:
    """Output perturbation, sigma from eq. (1)'s exact Gaussian calibration."""
    import bounds
    from empirical.exact_laws.koloskova2025 import output_perturbation_pair

    sigma = bounds.get("koloskova2025:eq1/analytic").evaluate(
        precision="interval", epsilon=epsilon, delta=delta, C0=c0).certified_upper

    def build(size: int) -> Any:
        return output_perturbation_pair(size=size, x_hat=x_hat, x_hat_r=x_hat_r, c0=c0,
                                        sigma=sigma)

    cert = Certified("koloskova2025:eq1/analytic", float(epsilon), None, None,
                     "sigma = eq. (1)'s least sigma for (epsilon, delta) (interval upper end)")
    return ExactCase("output-perturbation", {"x_hat": x_hat, "x_hat_r": x_hat_r, "C0": c0,
                                             "sigma": sigma}, build, 801, delta, (cert,),
                     label=f"C0={c0}")


def gradient_clipping_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0,
                           x_hat: float, x_hat_r: float, c0: float, c1: float, gamma: float,
                           sigma: float, steps: int, delta: float, lam: float = 0.0) -> ExactCase:
    """Gradient clipping, eq. (3), certified by Theorem A.9 (lambda = 0 form when lam = 0)."""
    from empirical.exact_laws.koloskova2025 import gradient_clipping_pair

    _, retain = _records(x, y, forget)
    inputs: dict[str, Any] = {"T": steps, "gamma": gamma, "sigma": sigma, "C0": c0, "C1": c1}
    bound = "koloskova2025:thmA.9/lambda0"
    if lam:
        inputs["lam"] = lam
        bound = "koloskova2025:thmA.9"
    certified = (renyi_certificate(bound, inputs=inputs, delta=delta),)
    width = 2 * (c0 + steps * gamma * (c1 + lam * c0) + 16 * math.sqrt(steps) * sigma)

    def build(size: int) -> Any:
        return gradient_clipping_pair(size=size, x_hat=x_hat, x_hat_r=x_hat_r, retain=retain,
                                      gamma=gamma, l2=lam, c0=c0, c1=c1, sigma=sigma,
                                      steps=steps)

    instance = {"x": list(x), "y": list(y), "forget": forget, "x_hat": x_hat,
                "x_hat_r": x_hat_r, "C0": c0, "C1": c1, "gamma": gamma, "lambda": lam,
                "sigma": sigma, "T": steps}
    return ExactCase("koloskova-gradient-clipping", instance, build,
                     _odd(width / (sigma / 12), high=2001), delta, certified,
                     label=f"T={steps}")


def model_clipping_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0,
                        x_hat: float, x_hat_r: float, c0: float, c2: float, gamma: float,
                        sigma: float, epsilon: float, delta: float,
                        sigma0: float = 0.0) -> ExactCase:
    """Model clipping with T from the adaptive accountant (Theorem 4.2) for (epsilon, delta)."""
    import bounds
    from empirical.exact_laws.koloskova2025 import model_clipping_pair

    _, retain = _records(x, y, forget)
    # the least sufficient T, an integer; its interval upper end rounded up stays sufficient
    steps = max(1, math.ceil(bounds.get("koloskova2025:thm4.2/adaptive").evaluate(
        precision="interval", epsilon=epsilon, delta=delta, C0=c0, C2=c2, sigma0=sigma0,
        sigma=sigma).certified_upper))
    width = 2 * (max(c2, c0) + 16 * max(sigma, sigma0))

    def build(size: int) -> Any:
        return model_clipping_pair(size=size, x_hat=x_hat, x_hat_r=x_hat_r, retain=retain,
                                   gamma=gamma, l2=0.0, c0=c0, c2=c2, sigma0=sigma0,
                                   sigma=sigma, steps=steps)

    cert = Certified("koloskova2025:thm4.2/adaptive", float(epsilon), None, None,
                     f"T = {steps}, the adaptive accountant's least T for (epsilon, delta)")
    instance = {"x": list(x), "y": list(y), "forget": forget, "x_hat": x_hat,
                "x_hat_r": x_hat_r, "C0": c0, "C2": c2, "gamma": gamma, "sigma0": sigma0,
                "sigma": sigma, "T": steps}
    return ExactCase("koloskova-model-clipping", instance, build,
                     _odd(width / (min(sigma, sigma0 or sigma) / 32), high=2001), delta, (cert,),
                     label=f"T={steps}")


def guo_case(*, x: Sequence[float], y: Sequence[float], forget: int = 0, lam: float,
             delta: float, budget: float | None = None, sigma: float | None = None,
             epsilon: float | None = None) -> ExactCase:
    """Newton removal with loss perturbation, certified by Theorem 3 (ii) at eps'.

    ``budget`` given: Algorithm 2 as the adapter runs it (publish the Newton step when
    Corollary 2's bound is within eps' = ``budget``, else retrain with a fresh b). ``budget``
    None: Algorithm 1 (always publish) with eps' the largest residual the Newton step leaves
    over w* (computed on a fine grid, times 1 + 1e-6), so Theorem 3 (ii)'s hypothesis holds for
    every b. ``sigma`` given, or calibrated from ``epsilon`` = c eps' / sigma."""
    import bounds
    from bounds.numerics import float_up
    from empirical.exact_laws.guo2020 import NewtonRemoval, newton_removal_pair

    if (sigma is None) == (epsilon is None):
        raise ValueError("give sigma or epsilon")
    # the residual is a function of w* alone; sigma only sets the window searched (40 sd of
    # b, at least that of sigma = 1)
    probe = NewtonRemoval(tuple(map(float, x)), tuple(map(float, y)), forget, lam,
                          max(1.0, sigma or 0.0), math.inf)
    eps_prime = (float_up(Fraction(probe.largest_residual()) * Fraction(1_000_001, 1_000_000))
                 if budget is None else budget)
    if sigma is None:
        sigma = bounds.get("guo2020:thm3ii/sigma").evaluate(
            precision="interval", eps_prime=eps_prime, epsilon=epsilon,
            delta=delta).certified_upper
    instance = NewtonRemoval(probe.x, probe.y, forget, lam, sigma,
                             math.inf if budget is None else budget)
    value = bounds.get("guo2020:thm3ii").evaluate(
        precision="interval", eps_prime=eps_prime, sigma=sigma, delta=delta).certified_upper
    mode = ("Algorithm 2: retrain when Corollary 2's bound exceeds eps'" if budget is not None
            else "Algorithm 1: eps' = the largest residual over w*")

    def build(size: int) -> Any:
        return newton_removal_pair(size=size, instance=instance)[:2]

    retrain = newton_removal_pair(size=101, instance=instance)[2]
    cert = Certified("guo2020:thm3ii", float(value), None, None,
                     f"Theorem 3 (ii) at eps' = {eps_prime!r} (interval upper end); {mode}")
    inst = {"x": list(x), "y": list(y), "forget": forget, "lambda": lam, "sigma": sigma,
            "eps_prime": eps_prime, "mode": mode, "retrain_probability": retrain}
    label = ("Algorithm 1" if budget is None
             else f"Algorithm 2, P(retrain)={retrain:.2g}")
    return ExactCase("guo2020-newton", inst, build, 1601, delta, (cert,), label=label)


_X = (1.0, -0.5, 0.8, 0.3)
_Y = (1.0, -1.0, -1.0, 1.0)

DEFAULT_CASES: dict[str, tuple[Callable[[], ExactCase], ...]] = {
    "pnsgd": (
        lambda: pnsgd_case(x=_X, y=_Y, lam=0.5, clip=0.2, sigma=0.1, batch_size=2,
                           learn_epochs=3, unlearn_epochs=1, radius=1.0, delta=1e-3),
        lambda: pnsgd_stationary_case(x=_X, y=_Y, lam=0.5, clip=0.2, sigma=0.1, batch_size=2,
                                      unlearn_epochs=1, radius=1.0, delta=1e-3),
        lambda: pnsgd_sequence_case(x=_X, y=_Y, forget=(0, 2), epochs=(1, 1), lam=0.5,
                                    clip=0.2, sigma=0.1, batch_size=2, learn_epochs=3,
                                    radius=1.0, delta=1e-3),
    ),
    "noisy-gd": (lambda: noisy_gd_case(x=_X, y=_Y, lam=0.5, clip=0.2, sigma=0.1,
                                       learn_steps=6, unlearn_steps=2, delta=1e-3),),
    "langevin": (lambda: langevin_case(x=_X, y=_Y, lam=0.5, clip=0.2, sigma=0.1,
                                       unlearn_steps=2, radius=1.0, delta=1e-3),),
    "d2d": (lambda: d2d_case(x=_X, y=_Y, lam=0.5, clip=0.2, epsilon=1.0, delta=1e-3,
                             unlearn_steps=2, radius=1.0),),
    # Algorithm 1 (eps' = the largest residual), then Algorithm 2 as the adapter runs it with a
    # budget that Corollary 2's bound exceeds for about a quarter of the b drawn
    "guo2020-newton": (
        lambda: guo_case(x=_X, y=_Y, lam=0.1, delta=1e-3, epsilon=1.0),
        lambda: guo_case(x=_X, y=_Y, lam=0.1, delta=1e-3, epsilon=1.0, budget=0.2),
    ),
    "output-perturbation": (lambda: output_perturbation_case(
        x_hat=0.7, x_hat_r=-0.4, c0=0.5, epsilon=1.0, delta=1e-3),),
    "koloskova-gradient-clipping": (lambda: gradient_clipping_case(
        x=_X, y=_Y, x_hat=2.0, x_hat_r=-1.0, c0=1.0, c1=0.5, gamma=0.5, sigma=0.5, steps=4,
        delta=1e-3),),
    "koloskova-model-clipping": (lambda: model_clipping_case(
        x=_X, y=_Y, x_hat=2.0, x_hat_r=-1.0, c0=1.0, c2=0.5, gamma=0.5, sigma=0.5,
        epsilon=1.0, delta=1e-3),),
}


def case_makers() -> dict[str, tuple[Callable[[], ExactCase], ...]]:
    """Every algorithm's instance makers: :data:`DEFAULT_CASES`, then those of any other
    registered adapter (a plug-in's) whose ``exact_cases()`` offers some."""
    from audits.registry import adapters

    makers = dict(DEFAULT_CASES)
    for name, adapter in adapters().items():
        offered = tuple(adapter.exact_cases())
        if name not in makers and offered:
            makers[name] = offered
    return makers


def default_cases(names: Sequence[str] | None = None) -> list[ExactCase]:
    """The bench's instances for ``names`` (all by default), in :func:`case_makers` order."""
    makers = case_makers()
    chosen = list(makers) if names is None else list(names)
    unknown = [n for n in chosen if n not in makers]
    if unknown:
        raise KeyError(f"no exact instance for {', '.join(unknown)}; known: "
                       f"{', '.join(makers)}")
    return [make() for n in chosen for make in makers[n]]
