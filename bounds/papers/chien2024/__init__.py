"""Chien, Wang, Chen and Li, "Certified Machine Unlearning via Noisy Stochastic Gradient
Descent" (NeurIPS 2024; seed 000), with the numbering of the earlier version "Stochastic
Gradient Langevin Unlearning" (seed 003) as ``chien2024sglu:*`` aliases.

PNSGD (Algorithm 1): projected noisy mini-batch SGD over a fixed cyclic partition of the data
into n/b batches; per step x <- Proj_{C_R}(x - eta * mean_batch grad + sqrt(2 eta sigma^2) W).
Unlearning runs K more epochs on the updated dataset D' from the learned model.

Conventions (see docs/conventions.md): natural logarithms; ``sigma`` is the paper's noise
hyper-parameter (per-step noise variance 2*eta*sigma^2); replacement adjacency (one record of D
replaced); ``M`` is half the bound on the per-example gradient difference (Remark 3.6), so
clipping at M plus l2 regularisation qualifies. ``c = 1 - eta*m`` is the contraction factor.

The divergence bounds keep the papers' denominator 2*eta*sigma^2 (needed to reproduce Table 3),
although a literal application of the PABI lemma to the algorithm's noise gives 4*eta*sigma^2;
the ``/exact-noise`` and ``/tight`` variants use the latter. See docs/errata.md.

Theorem 3.1 (existence, uniqueness and weak convergence to the stationary law nu_{D|B} of the
epoch chain, for a closed convex bounded C of positive measure and continuous gradients) has no
numeric content; it is recorded as the assumption :data:`THM31_ASSUMPTION` of the convergent
results (Corollaries 3.7, 3.8, 3.10, Theorem 3.11).

The solvers of the experiments (Algorithms 4-6) and the reproductions of Table 3 and Figure 3d are
in :mod:`bounds.papers.chien2024.schedules`.
"""

from __future__ import annotations

import functools
from typing import Any

import mpmath
import sympy as sp

from bounds.backends import MP_FUNCS
from bounds.declarations import Bound, Citation, Guarantee, Parameter, Precondition
from bounds.errors import BoundError
from bounds.numerics import interval_endpoints, interval_min, iv_precision, stabilise
from bounds.registry import register
from bounds.special import GeometricLogMeanExp
from bounds.values import exact_interval, symbols, to_mp

REFERENCE = (
    "Chien, Wang, Chen, Li. Certified Machine Unlearning via Noisy Stochastic Gradient Descent. "
    "NeurIPS 2024"
)
REFERENCE_SGLU = (
    "Chien, Wang, Chen, Li. Stochastic Gradient Langevin Unlearning. arXiv 2403.17105 (v1)"
)
SEED = "000_f878b12740525d35.txt"


def cite(label: str, section: str = "") -> Citation:
    """Citation of a result of Chien et al. 2024 (seed 000)."""
    return Citation("chien2024", REFERENCE, SEED, label, section)


alpha, sigma, eta, m, L, M, n, b, T, K, R, j0, s, S, W0, d, E0, eps, delta = symbols(
    "alpha sigma eta m L M n b T K R j0 s S W0 d E0 epsilon delta"
)

c = 1 - eta * m
P = n / b  # iterations per epoch


# ----------------------------------------------------------------------------------------------
# Parameters and preconditions shared by the PNSGD results
# ----------------------------------------------------------------------------------------------

P_ALPHA = Parameter("alpha", "Rényi order", lower=1, lower_open=True)
P_SIGMA = Parameter("sigma", "noise hyper-parameter (per-step noise variance 2*eta*sigma^2)",
                    lower=0, lower_open=True)
P_ETA = Parameter("eta", "step size", lower=0, lower_open=True)
P_M_CONVEX = Parameter("m", "strong-convexity constant", lower=0, lower_open=True)
P_L = Parameter("L", "smoothness constant", lower=0, lower_open=True)
P_M = Parameter("M", "Lipschitz constant (half the per-example gradient-difference bound)",
                lower=0)
P_N = Parameter("n", "dataset size", lower=1, integer=True)
P_B = Parameter("b", "mini-batch size (n divisible by b)", lower=1, integer=True)
P_T = Parameter("T", "learning epochs (burn-in)", lower=0, integer=True)
P_K = Parameter("K", "unlearning epochs", lower=1, integer=True)
P_R = Parameter("R", "radius of the projection ball C_R", lower=0, lower_open=True)
P_J0 = Parameter("j0", "index of the mini-batch holding the replaced point", lower=0, integer=True)
P_S_REQ = Parameter("s", "index of the sequential unlearning request", lower=1, integer=True)
P_S_BATCH = Parameter("S", "number of points replaced at once", lower=1, integer=True)
P_W0 = Parameter("W0", "W_infinity distance of the initial law to the stationary law", lower=0)
P_DIM = Parameter("d", "parameter dimension", lower=1, integer=True)

PRE_STEP = Precondition(sp.Le(eta, 1 / L), "step size at most 1/L")
PRE_M_LE_L = Precondition(sp.Le(m, L), "strong convexity at most smoothness")
PRE_BATCH = Precondition(sp.Le(b, n), "mini-batch no larger than the dataset")
PRE_DIVIDES = Precondition(sp.Eq(sp.Mod(n, b), 0), "n divisible by b (drop the remainder)")
PRE_J0 = Precondition(sp.Le(j0, n / b - 1), "j0 indexes one of the n/b batches")
# Lemma 2.6 bounds the divergence after N >= 1 noisy iterations; with T = 0 the retrained model
# is the initial law itself (a point mass for a fixed start), at infinite divergence from any
# law with a density, so the burn-in term pabi(2 alpha, 2R, T n/b) has no justification there.
PRE_BURN_IN = Precondition(sp.Le(1, T), "at least one learning epoch (T >= 1): Lemma 2.6 needs "
                           "N >= 1 noisy iterations between the stationary and the retrained law")

STRONGLY_CONVEX = (
    "for every d, f(.; d) is L-smooth, M-Lipschitz (or has gradient differences <= 2M, "
    "Remark 3.6) and m-strongly convex",
)
PNSGD_SETTING = (
    "learning and unlearning follow Algorithm 1 with a fixed cyclic mini-batch sequence B, "
    "reused for learning and unlearning",
    "replacement adjacency: D and D' differ in one record",
    "the initial law nu_0 of learning is supported on C_R",
)
THM31_ASSUMPTION = (
    "Theorem 3.1: the epoch chain on D has a unique stationary law nu_{D|B} and the learned "
    "model is drawn from it (T large enough), which the corollary assumes"
)

COMMON_PARAMS = (P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_B)
COMMON_PRE = (PRE_STEP, PRE_M_LE_L, PRE_BATCH, PRE_DIVIDES)

TABLE3_EXAMPLE = {
    "alpha": 10, "sigma": "0.05", "eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1,
    "n": 11264, "b": 128, "R": 100,
}

# ----------------------------------------------------------------------------------------------
# Building blocks (the same sympy sub-expressions are shared by several results)
# ----------------------------------------------------------------------------------------------


def geometric_sum_ratio(epochs: sp.Expr) -> sp.Expr:
    """(1 - c^{epochs*n/b}) / (1 - c^{n/b}) = sum_{t<epochs} c^{t n/b} (Lemma 3.3)."""
    return (1 - c ** (epochs * P)) / (1 - c**P)


Z_STATIONARY = sp.Min(2 * eta * M / (b * (1 - c**P)), 2 * R)  # Corollary 3.7's Z_B
Z_THM32 = 2 * R * c ** (T * P) + sp.Min(geometric_sum_ratio(T) * 2 * eta * M / b, 2 * R)


def pabi(order: sp.Expr, distance: sp.Expr, iterations: sp.Expr) -> sp.Expr:
    """Lemma 2.6 as the papers apply it: order * Z^2 c^{2N} / (2 eta sigma^2)."""
    return order * distance**2 * c ** (2 * iterations) / (2 * eta * sigma**2)


def optimal_shift_factor(iterations: sp.Expr) -> sp.Expr:
    """c^{2N}(1 - c^2)/(1 - c^{2N}): the shift-optimised PABI factor, <= c^{2N} for N >= 1."""
    return c ** (2 * iterations) * (1 - c**2) / (1 - c ** (2 * iterations))


def weak_triangle(order: sp.Expr, first: sp.Expr, second: sp.Expr) -> sp.Expr:
    """Mironov's weak triangle inequality with p = q = 2, applied to both terms."""
    return (order - sp.Rational(1, 2)) / (order - 1) * (first + second)


RENYI_RU = Guarantee(
    "renyi_unlearning",
    "(alpha, value)-Rényi unlearning: the Rényi difference d_alpha between the unlearned and the "
    "retrained model is at most the value",
    renyi_order="alpha",
)
W_INF = Guarantee("w_infinity", "W_infinity distance between the two laws is at most the value")

# ----------------------------------------------------------------------------------------------
# Theorem 3.2 and its lemmas
# ----------------------------------------------------------------------------------------------

THM32 = register(Bound(
    id="chien2024:thm3.2",
    aliases=("chien2024sglu:thm3.2",),
    title="Rényi unlearning of PNSGD, fixed mini-batch sequence, finite burn-in T",
    citation=cite("Theorem 3.2", "Section 3.1; proof Appendix F"),
    parameters=(*COMMON_PARAMS, P_T, P_K, P_R),
    expression=weak_triangle(
        alpha,
        pabi(2 * alpha, 2 * R, T * P),
        pabi(2 * alpha, Z_THM32, K * P),
    ),
    guarantee=RENYI_RU,
    preconditions=(*COMMON_PRE, PRE_BURN_IN),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING,
    # Not monotone in T: when 2 eta M/(b(1 - c^{n/b})) > 2R the printed Z_B exceeds 2R and first
    # grows with T; chien2024:thm3.2/capped is non-increasing in T.
    monotone={"sigma": "decreasing", "K": "decreasing"},
    notes=(
        "Z_B bounds W_inf(rho^0_{0|B}, nu_{D'|B}), the initial unlearning law; the main text "
        "of the NeurIPS version writes rho^0_{K|B} (erratum E5).",
        "Not monotone in alpha: alpha(2 alpha - 1)/(alpha - 1) is minimal at 1 + 1/sqrt(2).",
        "Not monotone in T when 2 eta M/(b(1 - c^{n/b})) > 2R: the printed Z_B then exceeds the "
        "diameter 2R and the value can rise with T. To calibrate T use chien2024:thm3.2/capped.",
    ),
    example={**TABLE3_EXAMPLE, "T": 20, "K": 1},
))

THM32_CAPPED = register(Bound(
    id="chien2024:thm3.2/capped",
    title="Theorem 3.2 with Z_B capped at the diameter 2R (non-increasing in T)",
    citation=cite("Theorem 3.2 (improved)", "derivation in docs/improved.md"),
    parameters=THM32.parameters,
    expression=weak_triangle(
        alpha,
        pabi(2 * alpha, 2 * R, T * P),
        pabi(2 * alpha, sp.Min(Z_THM32, 2 * R), K * P),
    ),
    guarantee=RENYI_RU,
    preconditions=(*COMMON_PRE, PRE_BURN_IN),
    assumptions=THM32.assumptions,
    variant="improved",
    monotone={"sigma": "decreasing", "K": "decreasing", "T": "decreasing"},
    notes=(
        "Both laws live on C_R, whose diameter is 2R, so W_inf <= 2R and capping Z_B at 2R is "
        "valid; the result is never above Theorem 3.2.",
        "With A = 2 eta M/(b(1 - c^{n/b})) and u = c^{Tn/b}, the capped Z_B is "
        "min(A + (2R - A) u, 2R): constant 2R if A >= 2R, decreasing in T otherwise.",
    ),
    example={**TABLE3_EXAMPLE, "T": 20, "K": 1},
))

LEM33 = register(Bound(
    id="chien2024:lem3.3",
    aliases=("chien2024sglu:lem3.5",),
    title="W_infinity between PNSGD learning processes on adjacent datasets",
    citation=cite("Lemma 3.3", "Section 3.1; proof Appendix L"),
    parameters=(P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_B, P_T, P_R, P_J0),
    expression=sp.Min(geometric_sum_ratio(T) * c ** (P - j0 - 1) * 2 * eta * M / b, 2 * R),
    guarantee=W_INF,
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_BATCH, PRE_DIVIDES, PRE_J0),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING[:2] + ("both processes start from the same law",),
    monotone={"T": "increasing", "j0": "increasing", "M": "increasing"},
    example={"eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1, "n": 11264, "b": 128,
             "T": 20, "R": 100, "j0": 87},
))

LEM34 = register(Bound(
    id="chien2024:lem3.4",
    aliases=("chien2024sglu:lem3.6",),
    title="W_infinity from the PNSGD learning process to its stationary law",
    citation=cite("Lemma 3.4", "Section 3.1; proof Appendix M"),
    parameters=(P_ETA, P_M_CONVEX, P_L, P_N, P_B, P_T, P_W0),
    expression=c ** (T * P) * W0,
    guarantee=W_INF,
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_BATCH, PRE_DIVIDES),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING[:1] + (THM31_ASSUMPTION,),
    monotone={"T": "decreasing", "W0": "increasing"},
    example={"eta": "1/L", "m": "0.011264", "L": "0.261264", "n": 11264, "b": 128, "T": 20,
             "W0": 200},
))

# ----------------------------------------------------------------------------------------------
# Convergent results
# ----------------------------------------------------------------------------------------------

COR37 = register(Bound(
    id="chien2024:cor3.7",
    aliases=("chien2024sglu:cor3.8",),
    title="Rényi unlearning of PNSGD from the stationary law (well-trained model)",
    citation=cite("Corollary 3.7", "Section 3.1; proof Appendix H"),
    parameters=(*COMMON_PARAMS, P_K, P_R),
    expression=pabi(alpha, Z_STATIONARY, K * P),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE,
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING + (THM31_ASSUMPTION,),
    monotone={"sigma": "decreasing", "K": "decreasing", "alpha": "increasing", "M": "increasing"},
    example={**TABLE3_EXAMPLE, "K": 1},
))

COR38 = register(Bound(
    id="chien2024:cor3.8",
    aliases=("chien2024sglu:cor3.9",),
    title="Rényi unlearning of PNSGD averaged over the random mini-batch sequence",
    citation=cite("Corollary 3.8", "Section 3.1; proof Appendix I"),
    parameters=(*COMMON_PARAMS, P_K, P_R),
    expression=GeometricLogMeanExp(
        alpha * (alpha - 1) * c ** (2 * K * P) / (2 * eta * sigma**2),
        2 * eta * M / (b * (1 - c**P)),
        c,
        P,
        2 * R,
    ) / (alpha - 1),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE,
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING + (
        THM31_ASSUMPTION,
        "the partition B is uniformly random and independent of the request (non-adaptive), so "
        "the batch j0 of the replaced point is uniform on {0, ..., n/b - 1}",
    ),
    monotone={"sigma": "decreasing", "K": "decreasing", "alpha": "increasing"},
    notes=(
        "Z_B is Lemma 3.3 with T -> infinity: min(c^{n/b-j0-1} 2 eta M/(b(1-c^{n/b})), 2R); the "
        "expectation over B is the mean over j0.",
    ),
    example={**TABLE3_EXAMPLE, "K": 1},
))

COR310 = register(Bound(
    id="chien2024:cor3.10",
    aliases=("chien2024sglu:cor3.10",),
    title="Rényi unlearning of PNSGD without strong convexity (m = 0)",
    citation=cite("Corollary 3.10", "Section 3.1"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_L, P_M, P_N, P_B, P_T, P_K, P_R),
    expression=alpha * sp.Min(2 * eta * M * T / b, 2 * R) ** 2 / (2 * eta * sigma**2) * b / (K * n),
    guarantee=RENYI_RU,
    preconditions=(PRE_STEP, PRE_BATCH, PRE_DIVIDES),
    assumptions=(
        "for every d, f(.; d) is L-smooth, M-Lipschitz and convex (m = 0)",
        *PNSGD_SETTING,
        THM31_ASSUMPTION,
    ),
    monotone={"sigma": "decreasing", "K": "decreasing", "T": "increasing", "alpha": "increasing"},
    certificate_conditions=(Precondition(
        sp.Ge(eta * M * T, R * b),
        "T >= Rb/(eta M), where the printed distance is the justified Z = 2R (erratum E8)",
    ),),
    notes=(
        "The corollary assumes convergence yet uses the finite-T distance 2 eta M T/b, a bound on "
        "W_inf between the T-epoch laws on D and D' from the same start (erratum E8). Read "
        "literally it is justified only against retraining for T + K epochs on D' from the "
        "learning's initial law; against the stationary law only Z = 2R is (set T >= Rb/(eta M)).",
    ),
    example={"alpha": 10, "sigma": 1, "eta": 1, "L": 1, "M": 1, "n": 12800, "b": 128, "T": 100,
             "K": 10, "R": 5},
))

PROP39 = register(Bound(
    id="chien2024:prop3.9",
    title="Excess empirical risk of full-batch PNSGD unlearning",
    citation=cite("Proposition 3.9", "Section 3.1; proof Appendix K"),
    parameters=(P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_K, P_R, P_DIM),
    expression=M * c**K * sp.Min(2 * eta * M / (n * (1 - c)), 2 * R) + 2 * L * d * sigma**2 / m,
    guarantee=Guarantee("excess_risk", "E[f_D'(y_K) - min_{C_R} f_D'] is at most the value"),
    preconditions=(
        Precondition(sp.Le(eta, m / (2 * L**2)), "step size at most m/(2 L^2)"),
        PRE_M_LE_L,
    ),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING + (
        THM31_ASSUMPTION,
        "full batch b = n",
        "the minimiser of every f_D lies in the relative interior of C_R",
    ),
    monotone={"K": "decreasing", "sigma": "increasing"},
    example={"sigma": "0.05", "eta": "0.08", "m": "0.011264", "L": "0.261264", "M": 1,
             "n": 11264, "K": 10, "R": 100, "d": 784},
))

LEMK1 = register(Bound(
    id="chien2024:lemK.1",
    title="Excess risk of noisy gradient descent after T iterations (Chourasia et al. Sec. 5)",
    citation=cite("Lemma K.1", "Appendix K, eq. (45)"),
    parameters=(P_SIGMA, P_ETA, P_M_CONVEX, P_L, P_T, P_DIM,
                Parameter("E0", "E||x_0 - x*||^2 of the initialisation", lower=0)),
    expression=L / 2 * sp.exp(-m * eta * T) * E0 + 2 * L * d * sigma**2 / m,
    guarantee=Guarantee("excess_risk", "E[f_D(x_T) - f_D(x*)] is at most the value"),
    preconditions=(Precondition(sp.Le(eta, m / (2 * L**2)), "step size at most m/(2 L^2)"),
                   PRE_M_LE_L),
    assumptions=("f_D is M-Lipschitz, m-strongly convex and L-smooth on C_R",),
    monotone={"T": "decreasing", "sigma": "increasing"},
    example={"sigma": "0.05", "eta": "0.08", "m": "0.011264", "L": "0.261264", "T": 100,
             "d": 784, "E0": 1},
))

# ----------------------------------------------------------------------------------------------
# Multiple points: sequential requests (Theorem 3.11) and batch requests (Corollary J.1)
# ----------------------------------------------------------------------------------------------

# Z^{(1)} = Z_B, Z^{(s+1)} = min(a Z^{(s)} + Z_B, 2R) with a = c^{K n/b} has, for a constant K,
# the closed form min(Z_B (1 - a^s)/(1 - a), 2R): the uncapped sequence increases to the fixed
# point Z_B/(1 - a), and once it passes 2R the capped map stays at 2R. The tests check this
# against the recursion itself.
Z_SEQUENTIAL = sp.Min(Z_STATIONARY * (1 - c ** (s * K * P)) / (1 - c ** (K * P)), 2 * R)

THM311 = register(Bound(
    id="chien2024:thm3.11",
    aliases=("chien2024sglu:thm3.11",),
    title="W_infinity bound for the s-th of a sequence of unlearning requests (K epochs each)",
    citation=cite("Theorem 3.11", "Section 3.2; proof Appendix G"),
    parameters=(P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_B, P_K, P_R, P_S_REQ),
    expression=Z_SEQUENTIAL,
    guarantee=W_INF,
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_BATCH, PRE_DIVIDES),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING + (
        THM31_ASSUMPTION,
        "every request runs the same number K of unlearning epochs (for a list K_s use "
        "bounds.papers.chien2024.schedules.sequential_epochs)",
    ),
    monotone={"s": "increasing", "K": "decreasing"},
    notes=("Z^{(s)} bounds W_inf between the law before request s and the stationary law on D_s.",),
    example={"eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1, "n": 11264, "b": 128,
             "K": 1, "R": 100, "s": 10},
))

THM311_RU = register(Bound(
    id="chien2024:thm3.11+cor3.7",
    title="Rényi unlearning of the s-th sequential request (Theorem 3.11 with Corollary 3.7)",
    citation=cite("Theorem 3.11 with Corollary 3.7", "Section 3.2"),
    parameters=(*COMMON_PARAMS, P_K, P_R, P_S_REQ),
    expression=pabi(alpha, Z_SEQUENTIAL, K * P),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE,
    assumptions=THM311.assumptions,
    monotone={"sigma": "decreasing", "K": "decreasing", "s": "increasing", "alpha": "increasing"},
    example={**TABLE3_EXAMPLE, "K": 1, "s": 10},
))

CORJ1 = register(Bound(
    id="chien2024:corJ.1",
    aliases=("chien2024sglu:cor3.12",),
    title="W_infinity between learning processes on datasets differing in S points (corrected)",
    citation=cite("Corollary J.1", "Appendix J (proof's recursion, eq. 43)"),
    parameters=(P_ETA, P_M_CONVEX, P_L, P_M, P_N, P_B, P_T, P_R, P_S_BATCH),
    expression=sp.Min(geometric_sum_ratio(T) * S * 2 * eta * M / b, 2 * R),
    guarantee=W_INF,
    preconditions=(PRE_STEP, PRE_M_LE_L, PRE_BATCH, PRE_DIVIDES,
                   Precondition(sp.Le(S, n), "at most n points replaced")),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING[:1] + (
        "D and D' differ in S records; worst case over where they sit in the batches "
        "(sum_g c^{n/b-j_g-1} S_{j_g} <= S, attained when all sit in the last batch)",
    ),
    monotone={"T": "increasing", "S": "increasing"},
    notes=(
        "Printed with the factor (1 - c^T)/(1 - c); the proof's own epoch recursion gives "
        "(1 - c^{Tn/b})/(1 - c^{n/b}), which is used here (erratum E1). The printed form is "
        "chien2024:corJ.1/as-printed.",
    ),
    example={"eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1, "n": 11264, "b": 128,
             "T": 20, "R": 100, "S": 5},
))

CORJ1_PRINTED = register(Bound(
    id="chien2024:corJ.1/as-printed",
    title="Corollary J.1 exactly as printed (geometric factor (1 - c^T)/(1 - c))",
    citation=cite("Corollary J.1", "Appendix J, statement"),
    parameters=CORJ1.parameters,
    expression=sp.Min((1 - c**T) / (1 - c) * S * 2 * eta * M / b, 2 * R),
    guarantee=W_INF,
    preconditions=CORJ1.preconditions,
    assumptions=CORJ1.assumptions,
    variant="literal",
    monotone={"T": "increasing", "S": "increasing"},
    notes=("Valid but looser than the corrected form for b < n; equal at b = n.",),
    example=CORJ1.example,
))

# ----------------------------------------------------------------------------------------------
# Conversion (Proposition N.2) and the experiments' pseudo-code as printed
# ----------------------------------------------------------------------------------------------

PROPN2 = register(Bound(
    id="chien2024:propN.2",
    aliases=("chien2024sglu:propK.2",),
    title="Rényi unlearning to (epsilon, delta)-unlearning",
    citation=cite("Proposition N.2", "Appendix N, eq. (87)"),
    parameters=(P_ALPHA, Parameter("epsilon", "Rényi unlearning level at order alpha", lower=0),
                Parameter("delta", "delta of (epsilon, delta)-unlearning", lower=0, upper=1,
                          lower_open=True, upper_open=True)),
    expression=eps + sp.log(1 / delta) / (alpha - 1),
    guarantee=Guarantee("eps_delta_unlearning", "(value, delta)-unlearning"),
    assumptions=("(alpha, epsilon)-Rényi unlearning holds",),
    monotone={"alpha": "decreasing", "delta": "decreasing"},
    example={"alpha": 10, "epsilon": "0.5", "delta": "1e-5"},
))

ALG5_PRINTED = register(Bound(
    id="chien2024:alg5/as-printed",
    title="Algorithm 5's privacy loss exactly as printed (2R c^{Tn/b} added outside the square)",
    citation=cite("Algorithm 5", "Appendix N"),
    parameters=THM32.parameters,
    expression=weak_triangle(
        alpha,
        pabi(2 * alpha, 2 * R, T * P),
        pabi(2 * alpha, 2 * eta * M / (b * (1 - c**P)), K * P) + 2 * R * c ** (T * P),
    ),
    guarantee=RENYI_RU,
    preconditions=(*COMMON_PRE, PRE_BURN_IN),
    assumptions=THM32.assumptions,
    variant="literal",
    monotone={"sigma": "decreasing", "K": "decreasing"},
    notes=(
        "Adds a length to a divergence (erratum E3). Immaterial for Table 3, but for short "
        "burn-in it can fall below Theorem 3.2, so it is not a certificate.",
    ),
    example=THM32.example,
))

ALG7 = register(Bound(
    id="chien2024:alg7",
    title="Algorithms 7-8: per-request privacy loss used by Algorithm 6 (Z_B without the 2R cap)",
    citation=cite("Algorithms 7 and 8", "Appendix N"),
    parameters=(*COMMON_PARAMS, P_K),
    expression=pabi(alpha, 2 * eta * M / (b * (1 - c**P)), K * P),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE,
    assumptions=COR37.assumptions,
    variant="literal",
    monotone={"sigma": "decreasing", "K": "decreasing", "alpha": "increasing"},
    notes=("Ignores the growth of the initial distance across requests (erratum E4); certifies "
           "only the first request.",),
    example={k: v for k, v in {**TABLE3_EXAMPLE, "K": 1}.items() if k != "R"},
))

# ----------------------------------------------------------------------------------------------
# Improved bounds proved in this toolkit (docs/improved.md)
# ----------------------------------------------------------------------------------------------

_IMPROVED_NOTE_SHIFT = (
    "Shift-optimised PABI: minimising sum a_k^2 subject to sum c^{N-k} a_k = c^N Z (Cauchy-Schwarz) "
    "gives Z^2 c^{2N}(1 - c^2)/(1 - c^{2N}) instead of Z^2 c^{2N}; <= the paper's for N >= 1."
)
_IMPROVED_NOTE_NOISE = (
    "Exact noise accounting: Algorithm 1 adds noise of variance 2 eta sigma^2 per step, so the "
    "PABI lemma's denominator is 2 * (2 eta sigma^2); the papers use 2 eta sigma^2."
)

COR37_SHIFT = register(Bound(
    id="chien2024:cor3.7/optimal-shift",
    title="Corollary 3.7 with the shift-optimised PABI factor",
    citation=cite("Corollary 3.7 (improved)", "derivation in docs/improved.md"),
    parameters=COR37.parameters,
    expression=alpha * Z_STATIONARY**2 / (2 * eta * sigma**2) * optimal_shift_factor(K * P),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE + (Precondition(sp.Lt(0, m), "strong convexity (c < 1)"),),
    assumptions=COR37.assumptions,
    variant="improved",
    monotone=COR37.monotone,
    notes=(_IMPROVED_NOTE_SHIFT,),
    example=COR37.example,
))

COR37_NOISE = register(Bound(
    id="chien2024:cor3.7/exact-noise",
    title="Corollary 3.7 with the algorithm's true noise variance",
    citation=cite("Corollary 3.7 (improved)", "derivation in docs/improved.md"),
    parameters=COR37.parameters,
    expression=pabi(alpha, Z_STATIONARY, K * P) / 2,
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE,
    assumptions=COR37.assumptions,
    variant="improved",
    monotone=COR37.monotone,
    notes=(_IMPROVED_NOTE_NOISE,),
    example=COR37.example,
))

COR37_TIGHT = register(Bound(
    id="chien2024:cor3.7/tight",
    title="Corollary 3.7 with both the shift-optimised factor and the true noise variance",
    citation=cite("Corollary 3.7 (improved)", "derivation in docs/improved.md"),
    parameters=COR37.parameters,
    expression=alpha * Z_STATIONARY**2 / (4 * eta * sigma**2) * optimal_shift_factor(K * P),
    guarantee=RENYI_RU,
    preconditions=COR37_SHIFT.preconditions,
    assumptions=COR37.assumptions,
    variant="improved",
    monotone=COR37.monotone,
    notes=(_IMPROVED_NOTE_SHIFT, _IMPROVED_NOTE_NOISE,
           "For quadratic losses it exceeds the exact divergence by the factor 1/(1 - c^{2N})."),
    example=COR37.example,
))

THM32_SHIFT = register(Bound(
    id="chien2024:thm3.2/optimal-shift",
    title="Theorem 3.2 with the shift-optimised PABI factor in both terms",
    citation=cite("Theorem 3.2 (improved)", "derivation in docs/improved.md"),
    parameters=THM32.parameters,
    expression=weak_triangle(
        alpha,
        2 * alpha * (2 * R) ** 2 / (2 * eta * sigma**2) * optimal_shift_factor(T * P),
        2 * alpha * Z_THM32**2 / (2 * eta * sigma**2) * optimal_shift_factor(K * P),
    ),
    guarantee=RENYI_RU,
    preconditions=COMMON_PRE + (
        Precondition(sp.Lt(0, m), "strong convexity (c < 1)"),
        PRE_BURN_IN,
    ),
    assumptions=THM32.assumptions,
    variant="improved",
    monotone={"sigma": "decreasing", "K": "decreasing"},
    notes=(_IMPROVED_NOTE_SHIFT,),
    example=THM32.example,
))

THM311_RU_SHIFT = register(Bound(
    id="chien2024:thm3.11+cor3.7/optimal-shift",
    title="Sequential request s with the shift-optimised PABI factor (reproduces Figure 3d)",
    citation=cite("Theorem 3.11 with Corollary 3.7 (improved)", "derivation in docs/improved.md"),
    parameters=THM311_RU.parameters,
    expression=alpha * Z_SEQUENTIAL**2 / (2 * eta * sigma**2) * optimal_shift_factor(K * P),
    guarantee=RENYI_RU,
    preconditions=COR37_SHIFT.preconditions,
    assumptions=THM311.assumptions,
    variant="improved",
    monotone=THM311_RU.monotone,
    notes=(_IMPROVED_NOTE_SHIFT,),
    example=THM311_RU.example,
))

# ----------------------------------------------------------------------------------------------
# Exact ground truth: isotropic quadratic losses without projection
# ----------------------------------------------------------------------------------------------

EXACT_QUADRATIC = register(Bound(
    id="chien2024:exact-quadratic",
    title="Exact Rényi divergence of PNSGD unlearning vs retraining for quadratic losses",
    citation=cite("ground truth for Corollary 3.7", "derivation in docs/improved.md"),
    parameters=(P_ALPHA, P_SIGMA, P_ETA, P_M_CONVEX, P_M, P_N, P_B, P_K, P_J0),
    expression=alpha * c ** (2 * K * P)
    * (c ** (P - 1 - j0) * 2 * eta * M / (b * (1 - c**P))) ** 2
    * (1 - c**2) / (4 * eta * sigma**2),
    guarantee=Guarantee(
        "exact_divergence",
        "D_alpha between the unlearned and the retrained law, both directions, for "
        "f(x; d_i) = (m/2)||x - a_i||^2, no projection, learned model drawn from the stationary law",
        renyi_order="alpha",
    ),
    preconditions=(Precondition(sp.Le(eta, 1 / m), "step size at most 1/L = 1/m"),
                   Precondition(sp.Lt(eta * m, 1), "c > 0"), PRE_BATCH, PRE_DIVIDES, PRE_J0),
    assumptions=(
        "per-example loss (m/2)||x - a_i||^2 (so L = m), replaced point with ||a - a'|| m = 2M",
        "no projection (R = infinity); learned model drawn from the stationary Gaussian law",
    ),
    variant="improved",
    monotone={"sigma": "decreasing", "K": "decreasing", "alpha": "increasing"},
    notes=(
        "Every law is Gaussian with covariance 2 eta sigma^2/(1 - c^2) I; the means differ by "
        "c^{Kn/b} Delta with ||Delta|| = c^{n/b-1-j0} 2 eta M/(b(1 - c^{n/b})).",
    ),
    example={"alpha": 10, "sigma": "0.1", "eta": 1, "m": "0.5", "M": 1, "n": 100, "b": 10,
             "K": 1, "j0": 9},
))

# ----------------------------------------------------------------------------------------------
# Lemma 2.6 (PABI) as a stand-alone bound, for initial distances computed elsewhere
# ----------------------------------------------------------------------------------------------

Z, cf, N_it, s_noise = symbols("Z c N s")
P_Z = Parameter("Z", "W_infinity distance between the two initial laws", lower=0)
P_C = Parameter("c", "Lipschitz constant of every map of the CNI", lower=0, upper=1,
                upper_open=True)
P_NIT = Parameter("N", "number of CNI iterations", lower=1, integer=True)
P_SNOISE = Parameter("s", "standard deviation of the Gaussian noise of each iteration", lower=0,
                     lower_open=True)

LEM26 = register(Bound(
    id="chien2024:lem2.6",
    aliases=("chien2024sglu:lem3.4",),
    title="Privacy amplification by iteration (PABI) for c-contractive noisy iterations",
    citation=cite("Lemma 2.6", "Section 2, eq. (1); Altschuler-Talwar Prop. 2.10"),
    parameters=(P_ALPHA, P_SNOISE, P_Z, P_C, P_NIT),
    expression=alpha * Z**2 / (2 * s_noise**2) * cf ** (2 * N_it),
    guarantee=RENYI_RU,
    assumptions=(
        "two c-CNI processes with the same maps and N(0, s^2 I) noise, started W_inf <= Z apart",
    ),
    monotone={"N": "decreasing", "s": "decreasing", "Z": "increasing", "alpha": "increasing"},
    notes=(
        "The PNSGD results substitute s^2 = eta sigma^2 (the algorithm's noise has variance "
        "2 eta sigma^2; erratum E2).",
        "As printed, the c < 1 branch tends to alpha Z^2/(2 s^2) as c -> 1 while the c = 1 branch "
        "is alpha Z^2/(2 s^2 N): the lemma is discontinuous at c = 1. The optimal-shift form is "
        "continuous.",
    ),
    example={"alpha": 10, "s": "0.1", "Z": "0.05", "c": "0.95", "N": 10},
))

LEM26_NONEXPANSIVE = register(Bound(
    id="chien2024:lem2.6/nonexpansive",
    title="PABI for non-expansive noisy iterations (c = 1)",
    citation=cite("Lemma 2.6, case c = 1", "Section 2, eq. (1)"),
    parameters=(P_ALPHA, P_SNOISE, P_Z, P_NIT),
    expression=alpha * Z**2 / (2 * s_noise**2 * N_it),
    guarantee=RENYI_RU,
    assumptions=LEM26.assumptions,
    monotone={"N": "decreasing", "s": "decreasing", "Z": "increasing", "alpha": "increasing"},
    example={"alpha": 10, "s": "0.1", "Z": "0.05", "N": 10},
))

LEM26_SHIFT = register(Bound(
    id="chien2024:lem2.6/optimal-shift",
    title="PABI with the optimal shifts (valid for 0 <= c < 1)",
    citation=cite("Lemma 2.6 (improved)", "derivation in docs/improved.md"),
    parameters=LEM26.parameters,
    expression=alpha * Z**2 / (2 * s_noise**2) * cf ** (2 * N_it) * (1 - cf**2)
    / (1 - cf ** (2 * N_it)),
    guarantee=RENYI_RU,
    assumptions=LEM26.assumptions,
    variant="improved",
    monotone=LEM26.monotone,
    notes=(_IMPROVED_NOTE_SHIFT, "Tends to the c = 1 branch alpha Z^2/(2 s^2 N) as c -> 1."),
    example=LEM26.example,
))

# ----------------------------------------------------------------------------------------------
# The last request of a sequence with finite burn-in: Theorem 3.2's argument, Theorem 3.11's
# recursion (the certificate of sequence audits)
# ----------------------------------------------------------------------------------------------

P_Z_START = Parameter("Z", "W_infinity bound between the law at the start of the last request and "
                      "the stationary law of the final dataset (see sequence_start_distance)",
                      lower=0)

THM32_SEQUENCE = register(Bound(
    id="chien2024:thm3.2+thm3.11/sequence",
    title="Rényi unlearning of the last of a sequence of requests, finite burn-in T: Theorem "
          "3.2's argument with Theorem 3.11's distance recursion",
    citation=cite("Theorem 3.2 with Theorem 3.11 and Lemmas 3.3-3.4", "Sections 3.1-3.2"),
    parameters=(*COMMON_PARAMS, P_T, P_K, P_R, P_Z_START),
    # Theorem 3.2's weak triangle with its initial distance Z_B replaced by the free bound Z on
    # W_infinity at the start of the last request; K is that request's number of epochs.
    expression=weak_triangle(
        alpha,
        pabi(2 * alpha, 2 * R, T * P),
        pabi(2 * alpha, symbols("Z")[0], K * P),
    ),
    guarantee=RENYI_RU,
    preconditions=(*COMMON_PRE, PRE_BURN_IN),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING + (
        "Z is computed by sequence_start_distance in interval arithmetic: Lemma 3.4 (burn-in "
        "from a law on C_R), Lemma 3.3 with T -> infinity per request (S records: S times the "
        "distance, Corollary J.1) and the contraction c^{K_s n/b} of each request's K_s epochs, "
        "capped at 2R, i.e. Theorem 3.11's recursion with per-request K_s and a finite burn-in",
    ),
    variant="improved",
    monotone={"sigma": "decreasing", "Z": "increasing"},
    notes=("With Z = Z_B of Theorem 3.2 (one request) the expression is Theorem 3.2's.",),
    example={**TABLE3_EXAMPLE, "T": 20, "K": 1, "Z": "1/100"},
))


def sequence_start_distance(*, eta: Any, m: Any, M: Any, n: int, b: int, T: int, R: Any,
                            sizes: list[int] | tuple[int, ...],
                            epochs: list[int] | tuple[int, ...]) -> mpmath.mpf:
    """Upper end of Z, the W_infinity bound at the start of the last request (Theorem 3.11).

    ``sizes[s]`` records are replaced by request s, which then runs ``epochs[s]`` epochs (the
    last entry of ``epochs`` is not used: it is the K of the bound). Recursion: Z starts at
    2R c^{T n/b} (Lemma 3.4 after T learning epochs from a law on C_R); each request adds
    min(S_s Z_B, 2R) with Z_B = 2 eta M / (b (1 - c^{n/b})) (Lemma 3.3, T -> infinity) and the
    total is capped at 2R; between requests the K_s epochs contract it by c^{K_s n/b}. For one
    size and one K this is :data:`Z_SEQUENTIAL` plus the burn-in term. Interval arithmetic with
    outward rounding: the returned upper end is a rigorous upper bound on the exact value.
    """
    if len(sizes) < 1 or len(epochs) != len(sizes):
        raise BoundError("Theorem 3.11 sequence: give one size and one K per request "
                         f"(got {len(sizes)} sizes and {len(epochs)} epochs)")
    if n % b:
        raise BoundError(f"Theorem 3.11 sequence: n = {n} must be divisible by b = {b}")
    with iv_precision(40):
        per_epoch = n // b
        contraction = 1 - exact_interval(eta) * exact_interval(m)
        two_r = 2 * exact_interval(R)
        step = (2 * exact_interval(eta) * exact_interval(M)
                / (exact_interval(b) * (1 - contraction**per_epoch)))
        z = two_r * contraction ** (T * per_epoch)
        for position, size in enumerate(sizes):
            if position:
                z = contraction ** (epochs[position - 1] * per_epoch) * z
            z = interval_min(z + interval_min(size * step, two_r), two_r)
        return interval_endpoints(z)[1]


# ----------------------------------------------------------------------------------------------
# Finite burn-in without the weak triangle: the time-shift coupling (docs/improved.md (e))
# ----------------------------------------------------------------------------------------------

Z_LEARN = sp.Min(geometric_sum_ratio(T) * 2 * eta * M / b, 2 * R)  # Lemma 3.3, worst batch


def time_shift_distance(start: sp.Expr) -> sp.Expr:
    """c^{Kn/b} times the W_inf bound between the two start laws of the last K epochs on D'.

    For K <= T: min(start + 2R c^{(T-K)n/b}, 2R) c^{Kn/b}, written as
    min(start c^{Kn/b} + 2R c^{Tn/b}, 2R c^{Kn/b}) so that no power has a negative exponent. For
    K > T retraining has only T epochs to compare: 2R c^{Tn/b}, which is the first term's floor.
    """
    return sp.Min(start * c ** (K * P) + 2 * R * c ** (T * P), 2 * R * c ** (sp.Min(K, T) * P))


_TIME_SHIFT_ASSUMPTIONS = (
    "retraining runs Algorithm 1 on D' for the same T epochs, from the same initial law nu_0 "
    "and with the same mini-batch sequence B and step size as learning and unlearning, so T "
    "retraining epochs are T - K epochs followed by K epochs of the same D' epoch kernel",
)

THM32_TIME_SHIFT = register(Bound(
    id="chien2024:thm3.2/time-shift",
    title="Rényi unlearning of PNSGD at finite burn-in T without the weak triangle (time-shift "
          "coupling)",
    citation=cite("Theorem 3.2 (improved)", "derivation in docs/improved.md, section (e)"),
    parameters=THM32.parameters,
    expression=alpha * time_shift_distance(Z_LEARN) ** 2 / (2 * eta * sigma**2),
    guarantee=RENYI_RU,
    preconditions=(*COMMON_PRE, PRE_BURN_IN),
    assumptions=STRONGLY_CONVEX + PNSGD_SETTING + _TIME_SHIFT_ASSUMPTIONS,
    variant="improved",
    monotone={"sigma": "decreasing", "K": "decreasing", "alpha": "increasing", "M": "increasing",
              "R": "increasing"},
    notes=(
        "Unlearning (T epochs on D, then K on D') and retraining (T epochs on D') are the same K "
        "epochs on D' started from nu_T^D and nu_{T-K}^{D'}, at W_inf distance at most "
        "Z_learn(T) + 2R c^{(T-K)n/b} (Lemma 3.3 plus a synchronous coupling), capped at 2R; "
        "Lemma 2.6 then applies once, at order alpha.",
        "Never above Theorem 3.2: alpha (a + b)^2 <= 2 alpha (a^2 + b^2) and (alpha - 1/2)/(alpha "
        "- 1) > 1. The term 2R c^{Tn/b} is a floor no K removes (it is the burn-in's own).",
        "Keeps the papers' denominator 2 eta sigma^2 (erratum E2: valid, twice what the "
        "algorithm's noise gives).",
    ),
    example={**TABLE3_EXAMPLE, "T": 20, "K": 1},
))

P_KPREV = Parameter("Kprev", "unlearning epochs run by the earlier requests of the sequence, in "
                    "total (0 for the first request)", lower=0, integer=True)

# The least value Theorem 3.11's recursion (sequence_start_distance) can take at the start of a
# request after T burn-in epochs and Kprev earlier unlearning epochs: by induction over the
# requests, Z_s >= min(2R c^{(T + Kprev) n/b} + min(Z_B, 2R), 2R) (docs/improved.md (e)). A
# start distance below it (one that omits the burn-in term, or the single-request Z_T) is raised
# to it, so the sequence forms never certify less than the recursion allows.
Z_SEQUENCE_FLOOR = sp.Min(2 * R * c ** ((T + symbols("Kprev")[0]) * P) + Z_STATIONARY, 2 * R)
_SEQUENCE_START = sp.Max(symbols("Z")[0], Z_SEQUENCE_FLOOR)

_FLOOR_NAMES = ("eta", "m", "M", "n", "b", "T", "R", "Kprev")


@functools.cache
def _floor_mp() -> Any:
    return sp.lambdify(symbols(" ".join(_FLOOR_NAMES)), stabilise(Z_SEQUENCE_FLOOR),
                       modules=[MP_FUNCS, "mpmath"])


def _start_floor_remark(values: Any) -> str | None:
    """A note when the given Z is below the recursion's least value (which the value then uses)."""
    with mpmath.workdps(30):
        floor = _floor_mp()(*[to_mp(values[name]) for name in _FLOOR_NAMES])
        given = to_mp(values["Z"])
        if given >= floor:
            return None
        return (f"Z = {mpmath.nstr(given, 8)} is below {mpmath.nstr(floor, 8)}, the least start "
                "distance Theorem 3.11's recursion gives after T burn-in and Kprev earlier "
                "unlearning epochs (min(2R c^{(T+Kprev)n/b} + min(Z_B, 2R), 2R)); the value uses "
                "the latter. Compute Z with sequence_start_distance.")


_SEQUENCE_NOTES = (
    "Z bounds W_inf between the law at the start of the last request and the stationary law "
    "of the final dataset (sequence_start_distance); Lemma 3.4 adds 2R c^{(T-K)n/b} for the "
    "retraining law T - K epochs in.",
    "A Z below min(2R c^{(T+Kprev)n/b} + min(Z_B, 2R), 2R), the least value of Theorem 3.11's "
    "recursion after Kprev earlier unlearning epochs, is raised to it (with a note): a Z that "
    "omits the burn-in term or is the single-request Z_T never gives a smaller certificate.",
)

THM32_TIME_SHIFT_SEQUENCE = register(Bound(
    id="chien2024:thm3.2+thm3.11/sequence/time-shift",
    title="Rényi unlearning of the last of a sequence of requests at finite burn-in T without the "
          "weak triangle (time-shift coupling with Theorem 3.11's recursion)",
    citation=cite("Theorem 3.2 with Theorem 3.11 (improved)",
                  "derivation in docs/improved.md, section (e)"),
    parameters=(*THM32_SEQUENCE.parameters, P_KPREV),
    expression=alpha * time_shift_distance(_SEQUENCE_START) ** 2 / (2 * eta * sigma**2),
    guarantee=RENYI_RU,
    preconditions=THM32_TIME_SHIFT.preconditions,
    assumptions=THM32_SEQUENCE.assumptions + _TIME_SHIFT_ASSUMPTIONS,
    variant="improved",
    monotone={"sigma": "decreasing", "K": "decreasing", "Z": "increasing", "alpha": "increasing",
              "Kprev": "decreasing"},
    notes=(*_SEQUENCE_NOTES,
           "Never above chien2024:thm3.2+thm3.11/sequence at the same Z (at or above the floor)."),
    example={**TABLE3_EXAMPLE, "T": 20, "K": 1, "Z": "1/10", "Kprev": 0},
    remark=_start_floor_remark,
))

# ----------------------------------------------------------------------------------------------
# The time-shift certificates with the algorithm's own noise variance (docs/improved.md (e), (b))
# ----------------------------------------------------------------------------------------------

_EXACT_NOISE_TIME_SHIFT = (
    "Lemma C applied with the noise Algorithm 1 adds, s^2 = 2 eta sigma^2 (not the papers' eta "
    "sigma^2, erratum E2): exactly half of chien2024:thm3.2/time-shift, under the same "
    "assumptions."
)

THM32_TIME_SHIFT_NOISE = register(Bound(
    id="chien2024:thm3.2/time-shift/exact-noise",
    title="Rényi unlearning of PNSGD at finite burn-in T: the time-shift coupling with the "
          "algorithm's true noise variance",
    citation=cite("Theorem 3.2 (improved)", "derivation in docs/improved.md, sections (b), (e)"),
    parameters=THM32_TIME_SHIFT.parameters,
    expression=alpha * time_shift_distance(Z_LEARN) ** 2 / (4 * eta * sigma**2),
    guarantee=RENYI_RU,
    preconditions=THM32_TIME_SHIFT.preconditions,
    assumptions=THM32_TIME_SHIFT.assumptions,
    variant="improved",
    monotone=THM32_TIME_SHIFT.monotone,
    notes=(_EXACT_NOISE_TIME_SHIFT,
           "On the isotropic quadratic with aligned gaps it is the exact divergence times "
           "1/(1 - c^2) (K < T); at c = 0 it is exact."),
    example=THM32_TIME_SHIFT.example,
))

THM32_TIME_SHIFT_SEQUENCE_NOISE = register(Bound(
    id="chien2024:thm3.2+thm3.11/sequence/time-shift/exact-noise",
    title="Rényi unlearning of the last of a sequence of requests at finite burn-in T: the "
          "time-shift coupling with the algorithm's true noise variance",
    citation=cite("Theorem 3.2 with Theorem 3.11 (improved)",
                  "derivation in docs/improved.md, sections (b), (e)"),
    parameters=THM32_TIME_SHIFT_SEQUENCE.parameters,
    expression=alpha * time_shift_distance(_SEQUENCE_START) ** 2 / (4 * eta * sigma**2),
    guarantee=RENYI_RU,
    preconditions=THM32_TIME_SHIFT_SEQUENCE.preconditions,
    assumptions=THM32_TIME_SHIFT_SEQUENCE.assumptions,
    variant="improved",
    monotone=THM32_TIME_SHIFT_SEQUENCE.monotone,
    notes=(_EXACT_NOISE_TIME_SHIFT.replace("chien2024:thm3.2/time-shift",
                                           "chien2024:thm3.2+thm3.11/sequence/time-shift"),
           *_SEQUENCE_NOTES),
    example=THM32_TIME_SHIFT_SEQUENCE.example,
    remark=_start_floor_remark,
))
