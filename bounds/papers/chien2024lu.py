"""Chien, Wang and Li, "Langevin Unlearning: A New Perspective of Noisy Gradient Descent for
Machine Unlearning" (2024), as restated by Chien et al. (PNSGD): seed 000 Appendix P (Theorems
P.1, P.2, eqs. 96-100) and seed 003 Appendix M (Theorems M.1, M.2, eqs. 77-81).

Langevin unlearning (LU) runs projected noisy full-batch gradient descent (PNGD),
x <- Proj(x - eta grad f_D(x) + sqrt(2 eta sigma^2) W), to learn, and K more such steps on D' to
unlearn; its analysis goes through the log-Sobolev inequality (LSI) of the laws involved.

Also declared here: eqs. (99) and (100) of seed 000, the PNSGD bounds that Appendix P simplifies
to compare with LU. They carry ``chien2024:`` ids as they are the PNSGD paper's own formulas.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import sympy as sp

from bounds.calibration import least_integer
from bounds.conversions import best_epsilon
from bounds.declarations import Bound, Citation, Guarantee, Parameter, Precondition
from bounds.papers.chien2024 import (
    COMMON_PARAMS,
    COMMON_PRE,
    COR37,
    P_ALPHA,
    P_K,
    P_L,
    P_M,
    P_M_CONVEX,
    P_N,
    P_S_BATCH,
    P_SIGMA,
    PRE_M_LE_L,
    PRE_STEP,
    RENYI_RU,
    TABLE3_EXAMPLE,
)
from bounds.papers.chien2024 import REFERENCE as REFERENCE_PNSGD
from bounds.papers.chien2024 import SEED as SEED_PNSGD
from bounds.registry import register
from bounds.values import symbols

REFERENCE = (
    "Chien, Wang, Li. Langevin Unlearning: A New Perspective of Noisy Gradient Descent for "
    "Machine Unlearning. NeurIPS 2024 (arXiv 2401.10371); restated by Chien, Wang, Chen, Li, "
    "NeurIPS 2024, Appendix P"
)


def cite(label: str, section: str) -> Citation:
    """Citation of a result of Chien, Wang, Li 2024 (Langevin unlearning)."""
    return Citation("chien2024lu", REFERENCE, SEED_PNSGD, label, section)


def cite_pnsgd(label: str, section: str) -> Citation:
    """Citation of a result of the PNSGD paper (seed 000) that this module declares."""
    return Citation("chien2024", REFERENCE_PNSGD, SEED_PNSGD, label, section)


alpha, sigma, eta, m, L, M, n, b, K, T, S, C_LSI, eps0 = symbols(
    "alpha sigma eta m L M n b K T S C_LSI eps0"
)

# ----------------------------------------------------------------------------------------------
# Parameters, preconditions, assumptions
# ----------------------------------------------------------------------------------------------

P_ETA = Parameter("eta", "step size (constant)", lower=0, lower_open=True)
P_K_LU = Parameter("K", "unlearning iterations (full-batch PNGD steps)", lower=1, integer=True)
P_T_LU = Parameter("T", "learning iterations (full-batch PNGD steps)", lower=0, integer=True)
P_C_LSI = Parameter("C_LSI", "log-Sobolev constant of the learned law nu_D", lower=0,
                    lower_open=True)
P_EPS0 = Parameter("eps0", "RDP level at order alpha of the learning mechanism", lower=0)

PRE_LSI = Precondition(sp.Lt(sigma**2 / m, C_LSI), "sigma^2/m < C_LSI")
PRE_LU_STEP = Precondition(
    sp.Le(eta, 2 / m * (1 - sigma**2 / (m * C_LSI))),
    "eta <= (2/m)(1 - sigma^2/(m C_LSI)), the first term of eta <= min(., 1/L)",
)
PRE_GROUP = Precondition(sp.Le(S, n), "a group of S records fits in the dataset")

PNGD = (
    "learning and unlearning are projected noisy full-batch gradient descent (PNGD) with a "
    "constant step size eta and per-step noise sqrt(2 eta sigma^2) W",
)
SMOOTH_STRONGLY_CONVEX = (
    "for every d, f(.; d) is L-smooth, M-Lipschitz and m-strongly convex",
)
REPLACEMENT = "replacement adjacency: D and D' differ in S records (S = 1 for one request)"
STATIONARY_START = (
    "unlearning starts from the learned model drawn from the limit law: y_0 = x_infinity = M(D)"
)
LSI_INIT = (
    "the initialisation of learning satisfies the (2 sigma^2/m)-LSI, e.g. N(0, (2 sigma^2/m) I)"
)

RDP = Guarantee(
    "renyi_dp",
    "(alpha, value)-RDP of the learning algorithm for datasets differing in S records",
    renyi_order="alpha",
)

LU_EXAMPLE = {"alpha": 10, "sigma": "0.05", "eta": "1/L", "m": "0.011264", "L": "0.261264",
              "M": 1, "n": 11264}

# ----------------------------------------------------------------------------------------------
# LU Theorem 3.2 (= Theorem P.1) and Theorem 3.3 (= Theorem P.2)
# ----------------------------------------------------------------------------------------------

THM32 = register(Bound(
    id="chien2024lu:thm3.2",
    aliases=("chien2024:thmP.1", "chien2024sglu:thmM.1", "chien2024:eq96", "chien2024sglu:eq77"),
    title="Rényi unlearning of PNGD unlearning under an LSI (strongly convex)",
    citation=cite("Theorem 3.2", "restated as Theorem P.1, eq. (96), Appendix P of seed 000"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_K_LU, P_C_LSI, P_EPS0),
    expression=sp.exp(-(1 / alpha) * 2 * sigma**2 * eta * K / C_LSI) * eps0,
    # eps0 is the learning mechanism's RDP level at this very order: the value holds at the order
    # the caller states, and a conversion must use that order only (chien2024lu:eq98 combines
    # Theorem 3.3 at every order and can be optimised).
    guarantee=dataclasses.replace(RENYI_RU, fixed_order_inputs=("eps0",)),
    preconditions=(PRE_LSI, PRE_LU_STEP, PRE_STEP, PRE_M_LE_L),
    assumptions=SMOOTH_STRONGLY_CONVEX + PNGD + (
        "for every dataset D the limit law nu_D of learning satisfies the C_LSI-LSI",
        "the learning mechanism is (alpha, eps0)-RDP (at the same order alpha)",
        STATIONARY_START,
    ),
    monotone={"K": "decreasing", "sigma": "decreasing", "eta": "decreasing",
              "C_LSI": "increasing", "eps0": "increasing", "alpha": "increasing"},
    notes=("m <= L is not printed; it follows from m-strong convexity and L-smoothness.",),
    example={**{k: v for k, v in LU_EXAMPLE.items() if k not in ("M", "n")},
             "K": 1, "C_LSI": "2*sigma**2/m", "eps0": 1},
))

THM33 = register(Bound(
    id="chien2024lu:thm3.3",
    aliases=("chien2024:thmP.2", "chien2024sglu:thmM.2", "chien2024:eq97", "chien2024sglu:eq78"),
    title="RDP of PNGD learning with group size S after T iterations (strongly convex)",
    citation=cite("Theorem 3.3", "restated as Theorem P.2, eq. (97), Appendix P of seed 000"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_T_LU, P_S_BATCH),
    expression=4 * alpha * S**2 * M**2 / (m * sigma**2 * n**2) * (1 - sp.exp(-m * eta * T)),
    guarantee=RDP,
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_GROUP),
    assumptions=SMOOTH_STRONGLY_CONVEX + PNGD + (
        LSI_INIT,
        REPLACEMENT,
        "the law of every learning iterate then satisfies the (2 sigma^2/m)-LSI (part of the "
        "theorem; it supplies C_LSI = 2 sigma^2/m to Theorem 3.2)",
    ),
    monotone={"sigma": "decreasing", "T": "increasing", "S": "increasing", "M": "increasing",
              "n": "decreasing", "alpha": "increasing", "eta": "increasing"},
    example={**LU_EXAMPLE, "T": 10000, "S": 1},
))

EQ98 = register(Bound(
    id="chien2024lu:eq98",
    aliases=("chien2024:eq98", "chien2024sglu:eq79"),
    title="Langevin unlearning: Theorem 3.2 with Theorem 3.3 (C_LSI = 2 sigma^2/m, T -> infinity)",
    citation=cite("Theorems 3.2 and 3.3 combined", "eq. (98), Appendix P of seed 000"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_K_LU, P_S_BATCH),
    expression=sp.exp(-m * eta * K / alpha) * 4 * alpha * S**2 * M**2 / (m * sigma**2 * n**2),
    guarantee=RENYI_RU,
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_GROUP),
    assumptions=SMOOTH_STRONGLY_CONVEX + PNGD + (LSI_INIT, REPLACEMENT, STATIONARY_START),
    monotone={"K": "decreasing", "sigma": "decreasing", "eta": "decreasing", "S": "increasing",
              "M": "increasing", "n": "decreasing", "alpha": "increasing"},
    notes=(
        "With C_LSI = 2 sigma^2/m Theorem 3.2's conditions reduce to eta <= min(1/m, 1/L) = 1/L; "
        "the factor 1 - exp(-m eta T) <= 1 of Theorem 3.3 is dropped.",
        "The published baseline code implements this form for one request.",
    ),
    example={**LU_EXAMPLE, "K": 1, "S": 1},
))

# ----------------------------------------------------------------------------------------------
# The PNSGD side of the comparison: eqs. (99) and (100) of seed 000
# ----------------------------------------------------------------------------------------------

c = 1 - eta * m

EQ99 = register(Bound(
    id="chien2024:eq99",
    aliases=("chien2024sglu:eq80",),
    title="PNSGD Rényi unlearning with the worst-case initial distance 2 eta M/((1 - c) b)",
    citation=cite_pnsgd("eq. (99)", "Appendix P"),
    parameters=(*COMMON_PARAMS, P_K),
    expression=c ** (2 * K * n / b) * 2 * alpha * M**2 / (eta * m**2 * sigma**2 * b**2),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE,
    assumptions=COR37.assumptions,
    monotone={"K": "decreasing", "sigma": "decreasing", "alpha": "increasing",
              "M": "increasing", "n": "decreasing"},
    notes=(
        "Printed as the combination of 'Theorem 3.2, 3.3' (seed 003: 'Theorem 3.2, 3.5'); the "
        "formula is Corollary 3.7 (no weak-triangle factor) with 1 - c^{n/b} >= 1 - c and no 2R "
        "cap, so it is >= chien2024:cor3.7, with equality at b = n when the cap is inactive.",
        "The three printed forms are equal: c^{2Kn/b} alpha/(2 eta sigma^2) (2 eta M/((1-c)b))^2 "
        "= c^{2Kn/b} 2 alpha M^2/(eta m^2 sigma^2 b^2).",
    ),
    example={**{k: v for k, v in TABLE3_EXAMPLE.items() if k != "R"}, "K": 1},
))

EQ100 = register(Bound(
    id="chien2024:eq100",
    aliases=("chien2024sglu:eq81",),
    title="PNSGD Rényi unlearning, full batch, relaxed by 1 - x < exp(-x) (LU comparison)",
    citation=cite_pnsgd("eq. (100)", "Appendix P"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_K),
    expression=sp.exp(-2 * K * eta * m) * 4 * alpha * M**2 / (m * sigma**2 * n**2)
    / (2 * m * eta),
    guarantee=RENYI_RU,
    preconditions=(PRE_STEP, PRE_M_LE_L),
    assumptions=COR37.assumptions + ("full batch: b = n",),
    monotone={"K": "decreasing", "sigma": "decreasing", "eta": "decreasing",
              "alpha": "increasing", "M": "increasing", "n": "decreasing"},
    notes=(
        "Strictly above eq. (99) at b = n: the ratio is (exp(-eta m)/(1 - eta m))^{2K} > 1.",
        "Compared with eq. (98) the initial distance carries the extra factor 1/(2 m eta) "
        "(= L/(2m) at eta = 1/L), while the decay exp(-2 K eta m) does not depend on alpha.",
    ),
    example={**LU_EXAMPLE, "K": 1},
))


# ----------------------------------------------------------------------------------------------
# Sequential requests: DERIVED here (not restated in the seeds) from Theorems P.1 and P.2 chained
# by the weak triangle inequality, as seed 000 Section 3.2 and Appendix P describe the structure.
# ----------------------------------------------------------------------------------------------
#
# Requests j = 1..s change S records each: D_0 -> D_1 -> ... -> D_s. Request j runs K_j PNGD steps
# on D_j from the previous output rho_{j-1} (rho_0 = nu_{D_0}, the learned law). Let E_j(beta)
# bound the Rényi difference d_beta(rho_j, nu_{D_j}) and e0(beta) = 4 beta S^2 M^2/(m sigma^2
# n^2) bound d_beta(nu_{D_{j-1}}, nu_{D_j}) (Theorem P.2 with 1 - exp(-m eta T) <= 1). Then
#   E_1(beta)     = exp(-m eta K_1/beta) e0(beta)                                  (eq. 98)
#   E_j(beta)     = exp(-m eta K_j/beta) (beta - 1/2)/(beta - 1) (E_{j-1}(2 beta) + e0(2 beta))
# The second line is the weak triangle inequality in seed 000's form (eq. 12: both terms at order
# 2 beta) for the start d_beta(rho_{j-1}, nu_{D_j}), then Theorem P.1's contraction with
# C_LSI = 2 sigma^2/m. Certifying request s at order alpha needs request j at order
# 2^{s-j} alpha: the order doubles at every request (seed 000 App. P, "the alpha in their bound
# will roughly grow at scale 2^s").

P_E_PREV = Parameter("E", "Rényi difference bound of the previous request's output at order 2 alpha",
                     lower=0)
(E_prev,) = symbols("E")

LU_SEQUENCE_ASSUMPTIONS = SMOOTH_STRONGLY_CONVEX + PNGD + (
    LSI_INIT,
    REPLACEMENT,
    STATIONARY_START,
    "Theorem P.1's contraction d_alpha(rho_K, nu_{D'}) <= exp(-2 sigma^2 eta K/(alpha C_LSI)) "
    "d_alpha(rho_0, nu_{D'}) applied to the previous request's output as start law rho_0 (the "
    "restatement fixes rho_0 = nu_D; its LSI argument only uses the start's Rényi difference)",
    "the start of request j is bounded by the weak triangle inequality (seed 000 eq. 12) through "
    "nu_{D_{j-1}}: E at order 2 alpha plus Theorem P.2's group-S level at order 2 alpha",
)

LU_SEQUENCE_STEP = register(Bound(
    id="chien2024lu:thm3.2+thm3.3/sequence-step",
    title="Langevin unlearning, one more sequential request (DERIVED: Theorems P.1, P.2 and the "
          "weak triangle inequality)",
    citation=cite("Theorems 3.2 and 3.3 with the weak triangle inequality (derived here)",
                  "structure from seed 000 Section 3.2 and Appendix P"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_K_LU, P_S_BATCH, P_E_PREV),
    expression=sp.exp(-m * eta * K / alpha) * (alpha - sp.Rational(1, 2)) / (alpha - 1)
    * (E_prev + 4 * (2 * alpha) * S**2 * M**2 / (m * sigma**2 * n**2)),
    # E holds at the order 2 alpha of this very alpha: conversions must use the stated order.
    guarantee=dataclasses.replace(RENYI_RU, fixed_order_inputs=("E",)),
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_GROUP),
    assumptions=LU_SEQUENCE_ASSUMPTIONS,
    variant="improved",
    monotone={"K": "decreasing", "E": "increasing", "S": "increasing", "M": "increasing",
              "n": "decreasing"},
    notes=(
        "Derived, not printed in the seeds: seed 000 only describes the structure (the weak "
        "triangle inequality doubles the order alpha at each request).",
        "With E = chien2024lu:eq98 at order 2 alpha for the first request, chaining this step "
        "s - 1 times certifies the s-th request (lu_sequence_level).",
    ),
    example={**LU_EXAMPLE, "K": 1, "S": 10, "E": "1/100"},
))


def _lu_e0(beta: Any, *, sigma: Any, m: Any, M: Any, n: Any, S: Any) -> Any:
    return 4 * beta * S**2 * M**2 / (m * sigma**2 * n**2)


def lu_sequence_level_float(*, alpha: Any, epochs: Any, sigma: float, eta: float, m: float,
                            M: float, n: int, S: int) -> Any:
    """E_s(alpha) of the derived recursion in float (numpy-vectorised over ``alpha``).

    For searches only; :func:`lu_sequence_certificate` certifies in interval arithmetic.
    """
    import numpy as np

    alpha = np.asarray(alpha, dtype=float)
    s = len(epochs)
    level = None
    for j, k in enumerate(epochs):
        beta = alpha * 2.0 ** (s - 1 - j)
        decay = np.exp(-m * eta * k / beta)
        if level is None:
            level = decay * _lu_e0(beta, sigma=sigma, m=m, M=M, n=n, S=S)
        else:
            level = decay * (beta - 0.5) / (beta - 1) * (
                level + _lu_e0(2 * beta, sigma=sigma, m=m, M=M, n=n, S=S))
    return level


def lu_sequence_certificate(*, alpha: Any, epochs: Any, delta: float, sigma: Any, eta: Any,
                            m: Any, L: Any, M: Any, n: int, S: int,
                            conversion: str = "mironov") -> Any:
    """Certified (epsilon, delta) of the last of ``len(epochs)`` LU requests at order ``alpha``.

    Request 1 at order 2^{s-1} alpha is chien2024lu:eq98 (interval upper end); each further
    request applies chien2024lu:thm3.2+thm3.3/sequence-step (increasing in E, so feeding the
    previous upper end is safe); the last is converted at ``alpha`` with the engine's
    conversion. Returns the engine's :class:`~bounds.conversions.DPConversion`.
    """
    if len(epochs) < 1:
        raise ValueError("give the unlearning iterations of at least one request")
    alpha = Fraction(alpha)
    common = {"sigma": sigma, "eta": eta, "m": m, "L": L, "M": M, "n": n, "S": S}
    s = len(epochs)
    if s == 1:
        return best_epsilon(EQ98, delta=delta, conversion=conversion, alpha=alpha, K=epochs[0],
                            **common)
    level = EQ98.evaluate(precision="interval", alpha=alpha * 2 ** (s - 1), K=epochs[0],
                          **common).certified_upper
    for j in range(1, s - 1):
        level = LU_SEQUENCE_STEP.evaluate(precision="interval", alpha=alpha * 2 ** (s - 1 - j),
                                          K=epochs[j], E=Fraction(level),
                                          **common).certified_upper
    return best_epsilon(LU_SEQUENCE_STEP, delta=delta, conversion=conversion, alpha=alpha,
                        K=epochs[-1], E=Fraction(level), **common)


def lu_best_alpha(*, epochs: Any, delta: float, sigma: float, eta: float, m: float, M: float,
                  n: int, S: int) -> tuple[float, float]:
    """(float epsilon, alpha) minimising E_s(alpha) + log(1/delta)/(alpha - 1) on a log grid."""
    import numpy as np

    grid = 1.0 + np.logspace(-3, 4, 1200)
    values = lu_sequence_level_float(alpha=grid, epochs=epochs, sigma=sigma, eta=eta, m=m, M=M,
                                     n=n, S=S) + math.log(1 / delta) / (grid - 1)
    best = int(np.nanargmin(values))
    return float(values[best]), float(grid[best])


def lu_sequential_iterations(*, requests: int, epsilon: float, delta: float, sigma: Any, eta: Any,
                             m: Any, L: Any, M: Any, n: int, S: int,
                             conversion: str = "mironov") -> dict[str, Any]:
    """Least K_j for each of ``requests`` sequential LU requests of S records (DERIVED bound).

    Greedy as seed 000's Algorithm 6 does for PNSGD: K_j is the least integer for which request j
    meets (epsilon, delta) given K_1..K_{j-1}; each is re-checked rigorously with
    :func:`lu_sequence_certificate` (one more iteration while the certificate misses).
    """
    if not (isinstance(requests, int) and requests >= 1):
        raise ValueError(f"requests must be a positive integer, got {requests!r}")
    # Strings are read as exact decimals or ratios by Fraction (never sympified).
    floats = {k: float(Fraction(v) if isinstance(v, str) else v)
              for k, v in {"sigma": sigma, "eta": eta, "m": m, "M": M}.items()}
    epochs: list[int] = []
    epsilons: list[float] = []
    alphas: list[float] = []
    for _ in range(requests):
        def meets(k: int) -> bool:
            eps, _ = lu_best_alpha(epochs=[*epochs, k], delta=delta, n=n, S=S, **floats)
            return eps <= epsilon

        k = least_integer(meets, start=1)
        while True:
            _, alpha = lu_best_alpha(epochs=[*epochs, k], delta=delta, n=n, S=S, **floats)
            conv = lu_sequence_certificate(alpha=alpha, epochs=[*epochs, k], delta=delta,
                                           sigma=sigma, eta=eta, m=m, L=L, M=M, n=n, S=S,
                                           conversion=conversion)
            if conv.epsilon <= epsilon:
                break
            k += 1
        epochs.append(k)
        epsilons.append(conv.epsilon)
        alphas.append(conv.alpha)
    return {"iterations": tuple(epochs), "total": sum(epochs), "epsilons": tuple(epsilons),
            "alphas": tuple(alphas), "bound": LU_SEQUENCE_STEP.id, "derived": True,
            "first": EQ98.id}
