"""Neel, Roth and Sharifi-Malvajerdi, "Descent-to-Delete: Gradient-Based Methods for Machine
Unlearning" (ALT 2021), as Chien et al. restate it: seed 000 Appendix O (Theorems O.1, O.2,
eqs. 93-95) and seed 003 Appendix L (Theorems L.1, L.2, eqs. 74-76).

Delete-to-Descent (D2D): gradient descent with step 2/(L + m), which contracts distances by
gamma = (L - m)/(L + m) per step; after each update request it fine-tunes for I steps and
publishes the parameters plus Gaussian noise N(0, sigma^2 I_d). The bounds below are the noise
standard deviation sigma (output perturbation, not a per-step variance) and the iteration
counts the two theorems require.

Reading of the square roots: the extracted text of seed 000 loses their extent and seed 003
prints e.g. ``sqrt(log(1/delta)) + epsilon - sqrt(log(1/delta))``, which is just epsilon. The
root differences are sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta)) and its analogues:
otherwise the authors would have written epsilon, and this is the Gaussian-mechanism calibration
of Neel et al. (the form used by their and the restating authors' published code). The literal
reading would shrink sigma by about 2 sqrt(log(1/delta)), which is unsafe, so it is not offered
as a variant (see the notes of each bound and docs/errata.md).
"""

from __future__ import annotations

import sympy as sp

from bounds.declarations import Bound, Citation, Guarantee, Parameter, Precondition
from bounds.registry import register
from bounds.values import symbols

REFERENCE = (
    "Neel, Roth, Sharifi-Malvajerdi. Descent-to-Delete: Gradient-Based Methods for Machine "
    "Unlearning. ALT 2021 (restated by Chien, Wang, Chen, Li, NeurIPS 2024, Appendix O)"
)
SEED = "000_f878b12740525d35.txt"


def cite(label: str, section: str) -> Citation:
    """Citation of a result of Neel, Roth, Sharifi-Malvajerdi 2021."""
    return Citation("neel2021", REFERENCE, SEED, label, section)


eps, delta, M, m, L, n, I, T, R, d, i = symbols("epsilon delta M m L n I T R d i")

gamma = (L - m) / (L + m)  # contraction of one gradient step with eta = 2/(L + m)

# ----------------------------------------------------------------------------------------------
# Parameters and preconditions
# ----------------------------------------------------------------------------------------------

P_EPS = Parameter("epsilon", "target epsilon of (epsilon, delta)-unlearning", lower=0,
                  lower_open=True)
P_DELTA = Parameter("delta", "target delta of (epsilon, delta)-unlearning", lower=0, upper=1,
                    lower_open=True, upper_open=True)
P_M = Parameter("M", "Lipschitz constant of every f(.; d)", lower=0, lower_open=True)
P_M_CONVEX = Parameter("m", "strong-convexity constant", lower=0, lower_open=True)
P_L = Parameter("L", "smoothness constant", lower=0, lower_open=True)
P_N = Parameter("n", "dataset size", lower=1, integer=True)
P_I = Parameter("I", "fine-tuning iterations per update (before the noise is added)", lower=1,
                integer=True)
P_T = Parameter("T", "gradient-descent iterations of the initial learning", lower=0, integer=True)
P_R = Parameter("R", "radius of the parameter set (diameter 2R)", lower=0, lower_open=True)
P_DIM = Parameter("d", "parameter dimension", lower=1, integer=True)
P_REQUEST = Parameter("i", "index of the sequential update request", lower=1, integer=True)

PRE_GAMMA = Precondition(
    sp.Lt(m, L), "m < L, so that the contraction gamma = (L - m)/(L + m) lies in (0, 1)"
)

# The learning run must be long enough: T >= I + log(2Rmn/(2M))/log(1/gamma), as printed (the
# 2/2 cancels; 2R is the diameter of the parameter set).
LEARNING_ITERATIONS = I + sp.log(2 * R * m * n / (2 * M)) / sp.log(1 / gamma)
PRE_LEARNING = Precondition(
    sp.Ge(T, LEARNING_ITERATIONS),
    "learning ran T >= I + log(2Rmn/(2M))/log(1/gamma) iterations",
)


def root_gap(base: sp.Expr, upper: sp.Expr, lower: sp.Expr = sp.S.Zero) -> sp.Expr:
    """sqrt(base + upper) - sqrt(base + lower): epsilon sits inside the roots (module docstring)."""
    return sp.sqrt(base + upper) - sp.sqrt(base + lower)


LOG_1_DELTA = sp.log(1 / delta)
TWO_LOG_2_DELTA = 2 * sp.log(2 / delta)

# Equation (94): the least fine-tuning length I of Theorem 28.
THM28_MIN_I = (
    sp.log(sp.sqrt(2 * d) / (1 - gamma) / root_gap(TWO_LOG_2_DELTA, eps)) / sp.log(1 / gamma)
)
PRE_THM28_I = Precondition(
    sp.Ge(I, THM28_MIN_I),
    "I satisfies eq. (94): I >= log(sqrt(2d)/((1 - gamma)(sqrt(2log(2/delta) + epsilon) - "
    "sqrt(2log(2/delta)))))/log(1/gamma)",
)

SMOOTH_STRONGLY_CONVEX = (
    "for every d, f(.; d) is m-strongly convex, M-Lipschitz and L-smooth in x",
    "learning and fine-tuning are (projected) gradient descent with step size eta = 2/(L + m)",
)
ADJACENCY = (
    "add/remove adjacency (one record added or deleted per update), as in Neel et al.; Chien et "
    "al. apply the bound to replacement adjacency 'for simplicity and fair comparison', noting "
    "that a slightly worse bound holds there, so for replacement the value is not certified",
)
EPS_ORDER = "epsilon = O(log(1/delta)) (an asymptotic side condition, not checkable numerically)"

NOISE = Guarantee(
    "noise_scale",
    "standard deviation of the Gaussian noise N(0, sigma^2 I_d) added to the fine-tuned "
    "parameters that gives (epsilon, delta)-unlearning",
)
ITERATIONS = Guarantee(
    "iterations", "number of gradient iterations the theorem requires (round up)"
)

_ROOT_NOTE = (
    "Read with epsilon inside the first root. Seed 003 prints sqrt(log(1/delta)) + epsilon - "
    "sqrt(log(1/delta)), which equals epsilon and would shrink sigma by a factor of about "
    "2 sqrt(log(1/delta)) (not a valid calibration of the Gaussian mechanism); that literal form "
    "is not declared."
)
_ROOT_NOTE_28 = (
    "Read with the epsilons inside the roots. Seed 003 prints sqrt(2log(2/delta)) + 3 epsilon - "
    "sqrt(2log(2/delta)) + 2 epsilon, which equals 5 epsilon and would shrink sigma by a factor "
    "of about 10 sqrt(2log(2/delta)); that literal form is not declared."
)
_FLOAT_NOTE = (
    "For epsilon much smaller than log(1/delta) the root difference cancels in float; use "
    "precision='mp' or 'interval' there."
)

MNIST_EXAMPLE = {"epsilon": 1, "delta": "1/11264", "M": 1, "m": "0.011264", "L": "0.261264",
                 "n": 11264}

# ----------------------------------------------------------------------------------------------
# Theorem 9 (with internal non-private state)
# ----------------------------------------------------------------------------------------------

THM9 = register(Bound(
    id="neel2021:thm9",
    aliases=("chien2024:thmO.1", "chien2024sglu:thmL.1", "chien2024:eq93", "chien2024sglu:eq74"),
    title="D2D noise scale with an internal non-private state (fine-tune the clean parameters)",
    citation=cite("Theorem 9", "restated as Theorem O.1, eq. (93), Appendix O of seed 000"),
    parameters=(P_EPS, P_DELTA, P_M, P_M_CONVEX, P_L, P_N, P_I, P_T, P_R),
    expression=4 * sp.sqrt(2) * M * gamma**I
    / (m * n * (1 - gamma**I) * root_gap(LOG_1_DELTA, eps)),
    guarantee=NOISE,
    preconditions=(PRE_GAMMA, PRE_LEARNING),
    assumptions=SMOOTH_STRONGLY_CONVEX + ADJACENCY + (
        EPS_ORDER,
        "the server keeps the noiseless fine-tuned parameters and fine-tunes them for I "
        "iterations per update; only the noisy copy is published",
    ),
    monotone={"I": "decreasing", "epsilon": "decreasing", "delta": "decreasing",
              "n": "decreasing", "M": "increasing"},
    notes=(
        _ROOT_NOTE,
        _FLOAT_NOTE,
        "Chien et al. use it for Figure 3a with I = 1 and 5 and T = 10,000 learning iterations.",
    ),
    example={**MNIST_EXAMPLE, "I": 5, "T": 10000, "R": 100},
))

# ----------------------------------------------------------------------------------------------
# Theorem 28 (no internal state)
# ----------------------------------------------------------------------------------------------

THM28 = register(Bound(
    id="neel2021:thm28",
    aliases=("chien2024:thmO.2", "chien2024sglu:thmL.2", "chien2024:eq95", "chien2024sglu:eq76"),
    title="D2D noise scale without internal state (fine-tune the published noisy parameters)",
    citation=cite("Theorem 28", "restated as Theorem O.2, eq. (95), Appendix O of seed 000"),
    parameters=(P_EPS, P_DELTA, P_M, P_M_CONVEX, P_L, P_N, P_DIM, P_I, P_T, P_R),
    expression=8 * M * gamma**I
    / (m * n * (1 - gamma**I) * root_gap(TWO_LOG_2_DELTA, 3 * eps, 2 * eps)),
    guarantee=NOISE,
    preconditions=(PRE_GAMMA, PRE_THM28_I, PRE_LEARNING),
    assumptions=SMOOTH_STRONGLY_CONVEX + ADJACENCY + (
        EPS_ORDER,
        "the i-th update fine-tunes the published noisy parameters for I + "
        "log(log(4 d i/delta))/log(1/gamma) iterations (neel2021:thm28/request-iterations)",
    ),
    monotone={"I": "decreasing", "epsilon": "decreasing", "delta": "decreasing",
              "n": "decreasing", "M": "increasing"},
    notes=(
        _ROOT_NOTE_28,
        "sigma uses I, not the total per-request count: the restating authors' code passes "
        "I + ceil(log(log(4 d i/delta))/log(1/gamma)) into sigma, which gives less noise than "
        "the theorem states.",
        _FLOAT_NOTE,
    ),
    example={**MNIST_EXAMPLE, "d": 784, "I": 98, "T": 10000, "R": 100},
))

THM28_I = register(Bound(
    id="neel2021:thm28/iterations",
    aliases=("chien2024:thmO.2/iterations", "chien2024sglu:thmL.2/iterations", "chien2024:eq94",
             "chien2024sglu:eq75"),
    title="D2D without internal state: least fine-tuning length I (eq. 94)",
    citation=cite("Theorem 28", "restated as Theorem O.2, eq. (94), Appendix O of seed 000"),
    parameters=(P_EPS, P_DELTA, P_M_CONVEX, P_L, P_DIM),
    expression=THM28_MIN_I,
    guarantee=Guarantee(
        "iterations",
        "I must be at least the value (the least admissible integer I is its ceiling, and at "
        "least 1)",
    ),
    preconditions=(PRE_GAMMA,),
    assumptions=THM28.assumptions,
    monotone={"epsilon": "decreasing", "delta": "decreasing", "d": "increasing"},
    notes=("Read with epsilon inside the first root; seed 003 prints sqrt(2log(2/delta)) + epsilon "
           "- sqrt(2log(2/delta)), which equals epsilon (not declared).",),
    example={k: v for k, v in {**MNIST_EXAMPLE, "d": 784}.items() if k not in ("M", "n")},
))

THM28_REQUEST = register(Bound(
    id="neel2021:thm28/request-iterations",
    aliases=("chien2024:thmO.2/request-iterations", "chien2024sglu:thmL.2/request-iterations"),
    title="D2D without internal state: fine-tuning iterations for the i-th update request",
    citation=cite("Theorem 28", "restated as Theorem O.2, Appendix O of seed 000"),
    parameters=(P_EPS, P_DELTA, P_M_CONVEX, P_L, P_DIM, P_I, P_REQUEST),
    expression=I + sp.log(sp.log(4 * d * i / delta)) / sp.log(1 / gamma),
    guarantee=ITERATIONS,
    preconditions=(PRE_GAMMA, PRE_THM28_I),
    assumptions=THM28.assumptions,
    monotone={"i": "increasing", "I": "increasing", "d": "increasing", "delta": "decreasing"},
    notes=(
        "log(4 d i/delta) > log 4 > 1, so the double logarithm is positive.",
        "Algorithm 3 of seed 000 (the experiments' pseudo-code) runs only I iterations.",
    ),
    example={**THM28_I.example, "I": 98, "i": 1},
))

LEARNING = register(Bound(
    id="neel2021:thm9/learning-iterations",
    aliases=("neel2021:thm28/learning-iterations",),
    title="D2D: gradient-descent iterations the initial learning run needs",
    citation=cite("Theorems 9 and 28", "restated as Theorems O.1 and O.2, Appendix O of seed 000"),
    parameters=(P_M, P_M_CONVEX, P_L, P_N, P_I, P_R),
    expression=LEARNING_ITERATIONS,
    guarantee=ITERATIONS,
    preconditions=(PRE_GAMMA,),
    assumptions=SMOOTH_STRONGLY_CONVEX + ("the initial point lies in the parameter set of "
                                          "diameter 2R",),
    monotone={"I": "increasing", "R": "increasing", "n": "increasing", "M": "decreasing"},
    notes=("Printed as log(2Rmn/(2M)); equal to log(Rmn/M).",),
    example={"M": 1, "m": "0.011264", "L": "0.261264", "n": 11264, "I": 5, "R": 100},
))
