"""Chourasia and Shah, "Forget Unlearning: Towards True Data-Deletion in Machine Learning"
(ICML 2023), seed 001.

Section 4 defines (q, epsilon)-data-deletion (Definition 4.1: a Rényi bound of order q between the
model released after a deletion and a law that never saw the deleted record) and proves three
facts about it: it bounds membership inference (Theorem 4.1), it survives adaptive requests if
the algorithms are also Rényi-DP (Theorem 4.3), and adaptive deletion is impossible without
privacy of the remaining records (Theorem 4.5). Section 5 instantiates it with Noisy-GD
(Algorithm 2: theta <- theta - eta grad L_D(theta) + sqrt(2 eta) N(0, sigma^2 I_d), learning for
K_A steps from rho and deleting by K_Abar more steps on the edited data) for convex (Theorem 5.1)
and non-convex (Theorem 5.2) losses.

Statement only, proof not in the seed: the extracted text stops inside Appendix F, so the
proofs of Theorems 5.1 and 5.2 (Appendix G) are missing. Their constants are declared as
printed and cannot be checked against a proof; the one piece re-derived here is the Rényi-DP
part of Theorem 5.2 (eq. 18), which is the Gaussian mechanism composed over the steps.

Parameter names follow the paper: ``lam`` is the L2 constant lambda, ``epsilon_dd`` and
``epsilon_dp`` the deletion and privacy budgets, ``K_A``/``K_Abar`` the iteration counts of
learning and deletion, ``sigma`` the noise parameter of Algorithm 2 (sigma^2 is the paper's
"noise variance"; each step adds sqrt(2 eta) sigma times a standard normal).

The conversions of Appendix B (Rényi -> one-sided (epsilon, delta), monotonicity in the order,
composition, weak triangle inequality) are those of :mod:`bounds.conversions`; nothing is
re-implemented here. Findings: ``docs/errata-chourasia2023.md`` (C1..C6).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import sympy as sp

from bounds.conversions import renyi_to_dp
from bounds.declarations import Bound, Citation, Guarantee, Parameter, Precondition
from bounds.registry import Reproduction, register, register_reproduction
from bounds.values import symbols

REFERENCE = (
    "Chourasia, Shah. Forget Unlearning: Towards True Data-Deletion in Machine Learning. "
    "ICML 2023 (PMLR 202)"
)
SEED = "001_bbcc44276c259a4b.txt"
NO_PROOF = "statement only, proof not in the seed (Appendix G is missing from the extracted text)"


def cite(label: str, section: str = "") -> Citation:
    """Citation of a result of Chourasia & Shah 2023 (seed 001)."""
    return Citation("chourasia2023", REFERENCE, SEED, label, section)


(q, eps, eps_dd, eps_dp, p, delta, lam, beta, L, n, d, r, K_A, K_Abar, B, eta, sigma) = symbols(
    "q epsilon epsilon_dd epsilon_dp p delta lam beta L n d r K_A K_Abar B eta sigma"
)

kappa = (lam + beta) / lam  # condition number of Theorem 5.1

# ----------------------------------------------------------------------------------------------
# Parameters
# ----------------------------------------------------------------------------------------------

P_Q = Parameter("q", "Rényi order of the data-deletion (and Rényi-DP) guarantee", lower=1,
                lower_open=True)
P_EPS = Parameter("epsilon", "Rényi bound of (q, epsilon)-data-deletion (Definition 4.1)",
                  lower=0)
P_EPS_DD = Parameter("epsilon_dd", "data-deletion budget: (q, epsilon_dd)-data-deletion",
                     lower=0, lower_open=True)
P_EPS_DP = Parameter("epsilon_dp", "privacy budget: (q, epsilon_dp)-Rényi DP", lower=0,
                     lower_open=True)
P_P = Parameter("p", "adaptivity: how many earlier releases the requester observes", lower=0,
                integer=True)
P_DELTA_ADV = Parameter("delta", "advantage threshold of the two tests (not a DP delta)",
                        lower=0, upper=1, lower_open=True, upper_open=True)
P_LAM = Parameter("lam", "L2 regularisation constant lambda of r(theta) = lam/2 ||theta||^2",
                  lower=0, lower_open=True)
P_BETA = Parameter("beta", "smoothness constant of the loss", lower=0, lower_open=True)
P_L = Parameter("L", "Lipschitz constant of the loss (or its gradient clipping norm)", lower=0,
                lower_open=True)
P_N = Parameter("n", "database size", lower=1, integer=True)
P_D = Parameter("d", "model dimension", lower=1, integer=True)
P_R = Parameter("r", "records replaced per edit request", lower=1, integer=True)
P_K_A = Parameter("K_A", "Noisy-GD iterations of learning", lower=0, integer=True)
P_K_ABAR = Parameter("K_Abar", "Noisy-GD iterations of one deletion", lower=0, integer=True)
P_B = Parameter("B", "constant B > 1 of Theorem 5.2 (the loss is sigma^2 log(B)/4-bounded)",
                lower=1, lower_open=True)
P_ETA = Parameter("eta", "step size of Noisy-GD", lower=0, lower_open=True)
P_SIGMA = Parameter("sigma", "noise parameter of Algorithm 2 (each step adds sqrt(2 eta) sigma "
                    "N(0, I_d))", lower=0, lower_open=True)

PRE_BUDGETS = Precondition(sp.Le(eps_dd, eps_dp), "0 < epsilon_dd <= epsilon_dp")
PRE_BUDGET_DIM = Precondition(sp.Lt(eps_dd, d), "epsilon_dd <= epsilon_dp < d (Theorem 5.2)")
PRE_DP_DIM = Precondition(sp.Lt(eps_dp, d), "epsilon_dp < d (Theorem 5.2)")
PRE_R_LE_N = Precondition(sp.Le(r, n), "an edit replaces at most the n records of the database")

# ----------------------------------------------------------------------------------------------
# Guarantees and shared assumptions
# ----------------------------------------------------------------------------------------------

ADVANTAGE = Guarantee(
    "membership_advantage",
    "P[MI = 1 | H0] - P[MI = 1 | H1] of any membership-inference test on the post-deletion "
    "models is at most the value",
)
DATA_DELETION = Guarantee(
    "renyi_unlearning",
    "(q, value)-data-deletion (Definition 4.1) at the order q of the inputs; q is fixed, not "
    "optimised (convert with bounds.conversions.renyi_to_dp at that q)",
)
ITERATIONS = Guarantee("iterations", "the iteration count must be at least the value (round up)")
SAVINGS = Guarantee(
    "gradient_complexity",
    "per-request saving n (K_A - K_Abar) in per-example gradients when both counts sit at the "
    "theorem's thresholds (may be negative: then deleting costs more than retraining)",
)

DEF41 = (
    "Definition 4.1: for every requester and step there is a map pi that never sees the "
    "deleted record with R_q(released model || pi(D_0 o <ind, y>)) <= epsilon",
)
CONVEX_SETTING = (
    "the loss is twice differentiable, convex, L-Lipschitz (or its gradients are clipped to "
    "norm L, Remark 5.3) and beta-smooth; r(theta) = lam/2 ||theta||^2",
    "Noisy-GD (Algorithm 2) with eta = 1/(2(lam + beta)), sigma^2 = 4 q L^2/(lam epsilon_dp "
    "n^2) and initialisation rho = N(0, sigma^2/(lam (1 - eta lam/2)) I_d); deletion warm-starts "
    "from the released model and runs K_Abar steps on the edited database (Definition 5.1)",
    "replacement edits of r records (Definition 2.5); non-adaptive requesters unless combined "
    "with Theorem 4.3",
    NO_PROOF,
)
NONCONVEX_SETTING = (
    "the loss is (sigma^2 log(B)/4)-bounded, L-Lipschitz and beta-smooth (not necessarily "
    "convex); r(theta) = lam/2 ||theta||^2; rho = N(0, sigma^2/lam I_d)",
    "0 < epsilon_dd <= epsilon_dp < d, q > 1, B > 1",
    "Noisy-GD (Algorithm 2), deletion as in Definition 5.1; non-adaptive requesters",
    NO_PROOF,
)

THM51_EXAMPLE = {"q": 2, "L": 1, "lam": 1, "beta": 1, "epsilon_dp": 1, "epsilon_dd": "0.1",
                 "n": 10000, "d": 100, "r": 1}
THM52_EXAMPLE = {"q": 2, "L": 1, "lam": 1, "beta": 1, "B": "exp(2)", "epsilon_dp": 1,
                 "epsilon_dd": "0.5", "n": 10000, "d": 10, "r": 1}


def _pick(example: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: example[k] for k in names}


# ----------------------------------------------------------------------------------------------
# Theorem 4.1: soundness (membership-inference advantage)
# ----------------------------------------------------------------------------------------------

# min over delta in (0, 1) of exp(epsilon + log(1/delta)/(q-1)) - 1 + 2 delta: Remark 2.1 applied
# to both hypotheses, minimised at delta* = (e^epsilon/(2(q-1)))^((q-1)/q).
THM41_RENYI_TERM = q * sp.exp(eps * (q - 1) / q) / (q - 1) * (2 * (q - 1)) ** (1 / q) - 1
THM41_PINSKER_TERM = sp.sqrt(2 * eps)

THM41 = register(Bound(
    id="chourasia2023:thm4.1",
    aliases=("chourasia2023:eq10", "chourasia2023:eq34"),
    title="Membership-inference advantage against (q, epsilon)-data-deletion",
    citation=cite("Theorem 4.1", "Section 4, eq. (10); proof in Appendix D, eq. (34)"),
    parameters=(P_EPS, P_Q),
    expression=sp.Min(THM41_PINSKER_TERM, THM41_RENYI_TERM),
    guarantee=ADVANTAGE,
    assumptions=DEF41 + (
        "(A, Abar) satisfies (q, epsilon)-data-deletion under all p-adaptive r-requesters; the "
        "adversary designs the requester and observes only the models released from the "
        "deletion step on",
    ),
    monotone={"epsilon": "increasing"},
    notes=(
        "First term: Pinsker on KL <= R_q <= epsilon for both hypotheses, then the triangle "
        "inequality. Second term: the closed-form minimum over delta of the two one-sided "
        "conversions of Remark 2.1 (the minimiser may be >= 1; then the term is >= 2q - 1 >= 1, "
        "vacuous but still true since an advantage never exceeds 1).",
        "Not monotone in q. As q -> infinity the bound decreases to min{sqrt(2 epsilon), "
        "e^epsilon - 1} from above (chourasia2023:thm4.1/q-infinity), which is therefore not a "
        "bound at finite q.",
    ),
    example={"epsilon": "0.1", "q": 10},
))

THM41_LIMIT = register(Bound(
    id="chourasia2023:thm4.1/q-infinity",
    title="Theorem 4.1 as q -> infinity: advantage under (infinity, epsilon)-data-deletion",
    citation=cite("Theorem 4.1", "Section 4, the sentence after eq. (10)"),
    parameters=(P_EPS,),
    expression=sp.Min(THM41_PINSKER_TERM, sp.exp(eps) - 1),
    guarantee=ADVANTAGE,
    assumptions=DEF41 + (
        "the divergence bound holds at every order (max-divergence R_infinity <= epsilon); at a "
        "finite q use chourasia2023:thm4.1, whose value is larger",
    ),
    monotone={"epsilon": "increasing"},
    notes=("The limit of eq. (10): (q/(q-1)) (2(q-1))^(1/q) -> 1 and e^(epsilon (q-1)/q) -> "
           "e^epsilon.",
           "e^epsilon - 1 cancels for tiny epsilon: float and mp lose relative accuracy (about "
           "1e-16/epsilon in float); interval mode stays rigorous.",),
    example={"epsilon": "0.1"},
))

# ----------------------------------------------------------------------------------------------
# Theorem 4.3: adaptive from non-adaptive deletion
# ----------------------------------------------------------------------------------------------

THM43 = register(Bound(
    id="chourasia2023:thm4.3",
    title="Data-deletion under p-adaptive requesters from non-adaptive deletion plus Rényi DP",
    citation=cite("Theorem 4.3", "Section 4.1; proof in Appendix D"),
    parameters=(P_Q, P_EPS_DD, P_EPS_DP, P_P),
    expression=eps_dd + p * eps_dp,
    guarantee=Guarantee(
        "renyi_unlearning",
        "(q, value)-data-deletion under all p-adaptive r-requesters, at the order q of the "
        "inputs (q is not optimised)",
    ),
    assumptions=DEF41 + (
        "(A, Abar) satisfies (q, epsilon_dd)-data-deletion under all non-adaptive r-requesters",
        "A and Abar are (q, epsilon_dp)-Rényi DP with respect to the records not being deleted "
        "(replace-one adjacency), at the same order q",
        "the requester sees at most p of the earlier releases",
    ),
    monotone={"epsilon_dd": "increasing", "epsilon_dp": "increasing", "p": "increasing"},
    notes=("q does not enter the value: both inputs must hold at this order.",),
    example={"q": 2, "epsilon_dd": "0.1", "epsilon_dp": 1, "p": 1},
))

# ----------------------------------------------------------------------------------------------
# Theorem 4.5: privacy of the remaining records is necessary
# ----------------------------------------------------------------------------------------------

THM45_RENYI = sp.log(q - 1) + q / (q - 1) * sp.log((1 + delta**2) / (q * 2 ** (1 / q)))
THM45_RENYI_PRINTED = sp.log(q - 1) + q / (q - 1) * sp.log((1 + delta**2) / q ** (2 ** (1 / q)))
THM45_ASSUMPTIONS = (
    "Test separates A(D) from A(D') with advantage > delta",
    "Test-bar separates Abar(D-bar, u-bar, theta) from Abar(D-bar', u-bar, theta) with advantage "
    "> delta for every model theta (eq. 42 of the proof; the statement omits 'for every theta')",
    "Abar depends on the database only through the edited database (true for Noisy-GD)",
)

THM45 = register(Bound(
    id="chourasia2023:thm4.5",
    aliases=("chourasia2023:eq11", "chourasia2023:eq40", "chourasia2023:eq52"),
    title="Least epsilon of any data-deletion certificate under 1-adaptive requesters, given two "
          "tests with advantage delta",
    citation=cite("Theorem 4.5", "Section 4.1, eq. (11); proof in Appendix D, eqs. (40)-(52)"),
    parameters=(P_DELTA_ADV, P_Q),
    expression=sp.Max(delta**4 / 2, THM45_RENYI),
    guarantee=Guarantee(
        "epsilon_lower_limit",
        "(A, Abar) cannot satisfy (q, epsilon)-data-deletion under 1-adaptive 1-requesters for "
        "any epsilon below the value",
    ),
    assumptions=THM45_ASSUMPTIONS,
    monotone={"delta": "increasing"},
    notes=(
        "Denominator q 2^(1/q), as eq. (52) prints it and as inverting Theorem 4.1 at advantage "
        "delta^2 gives; eqs. (11) and (40) of the extracted text print q^(2^(1/q)) "
        "(chourasia2023:thm4.5/as-printed, erratum C1).",
    ),
    example={"delta": "0.9", "q": 50},
))

THM45_PRINTED = register(Bound(
    id="chourasia2023:thm4.5/as-printed",
    title="Theorem 4.5 with the denominator q^(2^(1/q)) of eqs. (11) and (40) (garbled)",
    citation=cite("Theorem 4.5", "Section 4.1, eq. (11) and Appendix D, eq. (40)"),
    parameters=(P_DELTA_ADV, P_Q),
    expression=sp.Max(delta**4 / 2, THM45_RENYI_PRINTED),
    guarantee=THM45.guarantee,
    assumptions=THM45_ASSUMPTIONS,
    variant="literal",
    monotone={"delta": "increasing"},
    notes=("Kept for erratum C1 only: it does not follow from Theorem 4.1. Its Rényi term is "
           "below the correct one for q above about 2.3645 (a weaker, still implied limit) and "
           "above it for q below (a limit Theorem 4.1 does not support).",),
    example={"delta": "0.9", "q": 50},
))

# ----------------------------------------------------------------------------------------------
# Theorem 5.1: convex losses
# ----------------------------------------------------------------------------------------------

SIGMA51_SQUARED = 4 * q * L**2 / (lam * eps_dp * n**2)
ETA51 = 1 / (2 * (lam + beta))
RHO51_VARIANCE = SIGMA51_SQUARED / (lam * (1 - ETA51 * lam / 2))
DELETION_ITERATIONS51 = 4 * kappa * sp.log(eps_dp / eps_dd)  # eq. (16)
LEARNING_ITERATIONS51 = 4 * kappa * sp.log(eps_dp * n**2 / (4 * q * d))  # eq. (17), K_A
UTILITY_ITERATIONS51 = 4 * kappa * sp.log(sp.Max(5 * kappa, 8 * eps_dp * r**2 / (q * d)))  # (17)
UNLEARNING_ITERATIONS51 = sp.Max(DELETION_ITERATIONS51, UTILITY_ITERATIONS51)

THM51_SIGMA = register(Bound(
    id="chourasia2023:thm5.1/sigma",
    title="Noisy-GD noise parameter sigma of Theorem 5.1 (sigma^2 = 4 q L^2/(lam epsilon_dp n^2))",
    citation=cite("Theorem 5.1", "Section 5.1"),
    parameters=(P_Q, P_L, P_LAM, P_EPS_DP, P_N),
    expression=sp.sqrt(SIGMA51_SQUARED),
    guarantee=Guarantee(
        "noise_scale",
        "sigma of Algorithm 2 (each step adds sqrt(2 eta) sigma N(0, I_d)) that Theorem 5.1 "
        "prescribes for (q, epsilon_dp)-Rényi DP at any K_A, K_Abar",
    ),
    assumptions=CONVEX_SETTING,
    monotone={"q": "increasing", "L": "increasing", "lam": "decreasing",
              "epsilon_dp": "decreasing", "n": "decreasing"},
    notes=("The paper states the variance sigma^2; the value here is its square root.",),
    example=_pick(THM51_EXAMPLE, "q", "L", "lam", "epsilon_dp", "n"),
))

THM51_ETA = register(Bound(
    id="chourasia2023:thm5.1/eta",
    title="Noisy-GD step size of Theorem 5.1",
    citation=cite("Theorem 5.1", "Section 5.1"),
    parameters=(P_LAM, P_BETA),
    expression=ETA51,
    guarantee=Guarantee("step_size", "the step size eta = 1/(2(lam + beta)) the theorem uses"),
    assumptions=CONVEX_SETTING,
    monotone={"lam": "decreasing", "beta": "decreasing"},
    example=_pick(THM51_EXAMPLE, "lam", "beta"),
))

THM51_RHO = register(Bound(
    id="chourasia2023:thm5.1/rho-scale",
    title="Standard deviation of each coordinate of the initialisation rho of Theorem 5.1",
    citation=cite("Theorem 5.1", "Section 5.1"),
    parameters=(P_Q, P_L, P_LAM, P_BETA, P_EPS_DP, P_N),
    expression=sp.sqrt(RHO51_VARIANCE),
    guarantee=Guarantee(
        "noise_scale",
        "standard deviation of rho = N(0, sigma^2/(lam (1 - eta lam/2)) I_d), sigma and eta as "
        "in the theorem",
    ),
    assumptions=CONVEX_SETTING,
    monotone={"q": "increasing", "L": "increasing", "epsilon_dp": "decreasing",
              "n": "decreasing"},
    notes=("rho is the stationary law of one Noisy-GD step on the regulariser alone: "
           "(1 - eta lam)^2 v + 2 eta sigma^2 = v at v = sigma^2/(lam (1 - eta lam/2)).",),
    example=_pick(THM51_EXAMPLE, "q", "L", "lam", "beta", "epsilon_dp", "n"),
))

THM51_DELETION = register(Bound(
    id="chourasia2023:thm5.1/deletion-iterations",
    aliases=("chourasia2023:eq16",),
    title="Deletion iterations K_Abar for (q, epsilon_dd)-data-deletion (convex, eq. 16)",
    citation=cite("Theorem 5.1", "Section 5.1, eq. (16)"),
    parameters=(P_LAM, P_BETA, P_EPS_DP, P_EPS_DD),
    expression=DELETION_ITERATIONS51,
    guarantee=ITERATIONS,
    preconditions=(PRE_BUDGETS,),
    assumptions=CONVEX_SETTING,
    monotone={"epsilon_dp": "increasing", "epsilon_dd": "decreasing", "beta": "increasing",
              "lam": "decreasing"},
    notes=("Independent of r, n and d.",),
    example=_pick(THM51_EXAMPLE, "lam", "beta", "epsilon_dp", "epsilon_dd"),
))

THM51_EPSILON = register(Bound(
    id="chourasia2023:thm5.1/deletion-epsilon",
    title="Data-deletion budget certified by K_Abar deletion iterations (eq. 16 solved for "
          "epsilon_dd)",
    citation=cite("Theorem 5.1", "Section 5.1, eq. (16)"),
    parameters=(P_LAM, P_BETA, P_EPS_DP, P_K_ABAR),
    expression=eps_dp * sp.exp(-K_Abar / (4 * kappa)),
    guarantee=DATA_DELETION,
    assumptions=CONVEX_SETTING,
    monotone={"K_Abar": "decreasing", "epsilon_dp": "increasing", "beta": "increasing",
              "lam": "decreasing"},
    notes=(
        "Equivalent to eq. (16): K_Abar >= 4 kappa log(epsilon_dp/epsilon_dd) holds exactly when "
        "epsilon_dd >= epsilon_dp exp(-K_Abar/(4 kappa)), and the value never exceeds "
        "epsilon_dp. bounds.calibration.calibrate(solve='K_Abar') gives the least K_Abar for a "
        "target epsilon_dd.",
    ),
    example={**_pick(THM51_EXAMPLE, "lam", "beta", "epsilon_dp"), "K_Abar": 19},
))

THM51_DELETION_CURVE = register(Bound(
    id="chourasia2023:thm5.1/deletion-renyi",
    title="Rényi data-deletion curve of one Noisy-GD run at every order q (Theorem 5.1 at a "
          "fixed sigma)",
    citation=cite("Theorem 5.1", "Section 5.1, parts (1)-(2) and eq. (16)"),
    parameters=(P_Q, P_SIGMA, P_L, P_LAM, P_BETA, P_N, P_K_ABAR),
    expression=4 * q * L**2 / (lam * sigma**2 * n**2) * sp.exp(-K_Abar / (4 * kappa)),
    guarantee=Guarantee(
        "renyi_unlearning",
        "(q, value)-data-deletion (Definition 4.1) of the pair run with this sigma, for every "
        "order q > 1 at once: an (epsilon, delta) conversion may optimise q",
        renyi_order="q",
    ),
    assumptions=CONVEX_SETTING + (
        "one mechanism for every q: eta = 1/(2(lam + beta)) and rho = N(0, sigma^2/(lam (1 - "
        "eta lam/2)) I_d) do not involve q, so the run with a given sigma is the run Theorem 5.1 "
        "prescribes for epsilon_dp(q) = 4 q L^2/(lam sigma^2 n^2) at each q simultaneously",
    ),
    monotone={"sigma": "decreasing", "K_Abar": "decreasing", "q": "increasing",
              "L": "increasing", "n": "decreasing", "beta": "increasing"},
    notes=(
        "Theorem 5.1 solved for its budgets at a given sigma: sigma^2 = 4 q L^2/(lam epsilon_dp "
        "n^2) gives epsilon_dp = 4 q L^2/(lam sigma^2 n^2), and eq. (16) at equality gives "
        "epsilon_dd = epsilon_dp exp(-K_Abar/(4 kappa)) <= epsilon_dp.",
        "Linear in q: the Rényi curve of a Gaussian mechanism, so the conversion to (epsilon, "
        "delta) at the best q is that of a Gaussian with the same curve.",
    ),
    example={"q": 2, "sigma": "0.01", "L": 1, "lam": 1, "beta": 1, "n": 1000, "K_Abar": 4},
))

THM43_THM51_ADAPTIVE = register(Bound(
    id="chourasia2023:thm4.3+thm5.1/adaptive-deletion-renyi",
    title="Rényi data-deletion of Noisy-GD under p-adaptive requesters at every order q "
          "(Theorem 4.3 applied to Theorem 5.1 at a fixed sigma)",
    citation=cite("Theorems 4.3 and 5.1", "Sections 4.1 and 5.1"),
    parameters=(P_Q, P_SIGMA, P_L, P_LAM, P_BETA, P_N, P_K_ABAR, P_P),
    expression=4 * q * L**2 / (lam * sigma**2 * n**2) * (sp.exp(-K_Abar / (4 * kappa)) + p),
    guarantee=Guarantee(
        "renyi_unlearning",
        "(q, value)-data-deletion (Definition 4.1) under p-adaptive 1-requesters for every "
        "order q > 1 at once: an (epsilon, delta) conversion may optimise q",
        renyi_order="q",
    ),
    assumptions=CONVEX_SETTING + (
        "Theorem 4.3: epsilon_dd + p epsilon_dp with both terms taken from Theorem 5.1 at the "
        "same q: epsilon_dp(q) = 4 q L^2/(lam sigma^2 n^2) (part 1, any K_A, K_Abar) and "
        "epsilon_dd(q) = epsilon_dp(q) exp(-K_Abar/(4 kappa)) (part 2, eq. 16 at equality)",
        "the requester sees at most p releases; K_Abar is the count of the deletion that "
        "serves the target's request",
    ),
    monotone={"sigma": "decreasing", "K_Abar": "decreasing", "p": "increasing",
              "q": "increasing", "L": "increasing", "n": "decreasing"},
    notes=("p = 0 is chourasia2023:thm5.1/deletion-renyi.",),
    example={"q": 2, "sigma": "0.01", "L": 1, "lam": 1, "beta": 1, "n": 1000, "K_Abar": 4,
             "p": 2},
))

THM51_LEARNING = register(Bound(
    id="chourasia2023:thm5.1/learning-iterations",
    aliases=("chourasia2023:eq17/K_A",),
    title="Learning iterations K_A for excess risk O(qd/(epsilon_dp n^2)) (convex, eq. 17)",
    citation=cite("Theorem 5.1", "Section 5.1, eq. (17)"),
    parameters=(P_LAM, P_BETA, P_Q, P_EPS_DP, P_N, P_D),
    expression=LEARNING_ITERATIONS51,
    guarantee=ITERATIONS,
    assumptions=CONVEX_SETTING,
    monotone={"n": "increasing", "epsilon_dp": "increasing", "d": "decreasing",
              "q": "decreasing"},
    notes=("Negative when epsilon_dp n^2 < 4 q d: then any K_A >= 0 meets eq. (17).",
           "The constant hidden in O(qd/(epsilon_dp n^2)) is not given."),
    example=_pick(THM51_EXAMPLE, "lam", "beta", "q", "epsilon_dp", "n", "d"),
))

THM51_UTILITY = register(Bound(
    id="chourasia2023:thm5.1/utility-iterations",
    aliases=("chourasia2023:eq17/K_Abar",),
    title="Deletion iterations K_Abar for optimal excess risk (convex, eq. 17)",
    citation=cite("Theorem 5.1", "Section 5.1, eq. (17)"),
    parameters=(P_LAM, P_BETA, P_Q, P_EPS_DP, P_D, P_R),
    expression=UTILITY_ITERATIONS51,
    guarantee=ITERATIONS,
    assumptions=CONVEX_SETTING,
    monotone={"r": "increasing", "epsilon_dp": "increasing", "d": "decreasing"},
    example=_pick(THM51_EXAMPLE, "lam", "beta", "q", "epsilon_dp", "d", "r"),
))

THM51_UNLEARNING = register(Bound(
    id="chourasia2023:thm5.1/unlearning-iterations",
    title="Deletion iterations K_Abar meeting both eq. (16) and eq. (17) (convex)",
    citation=cite("Theorem 5.1", "Section 5.1, eqs. (16) and (17)"),
    parameters=(P_LAM, P_BETA, P_Q, P_EPS_DP, P_EPS_DD, P_D, P_R),
    expression=UNLEARNING_ITERATIONS51,
    guarantee=ITERATIONS,
    preconditions=(PRE_BUDGETS,),
    assumptions=CONVEX_SETTING,
    monotone={"r": "increasing", "epsilon_dd": "decreasing"},
    notes=("eq. (16) alone suffices for utility exactly when max{5 kappa, 8 epsilon_dp r^2/(qd)}"
           " <= epsilon_dp/epsilon_dd, i.e. r <= sqrt(qd/(8 epsilon_dd)) and 5 kappa <= "
           "epsilon_dp/epsilon_dd; the text says r <= sqrt(qd/epsilon_dd) (erratum C4).",),
    example=_pick(THM51_EXAMPLE, "lam", "beta", "q", "epsilon_dp", "epsilon_dd", "d", "r"),
))

THM51_SAVINGS = register(Bound(
    id="chourasia2023:thm5.1/savings",
    title="Per-request gradient saving n (K_A - K_Abar) of Noisy-GD deletion (convex)",
    citation=cite("Theorem 5.1", "Section 5.1, the paragraph after eq. (17)"),
    parameters=(P_LAM, P_BETA, P_Q, P_EPS_DP, P_EPS_DD, P_N, P_D, P_R),
    expression=n * (LEARNING_ITERATIONS51 - UNLEARNING_ITERATIONS51),
    guarantee=SAVINGS,
    preconditions=(PRE_BUDGETS, PRE_R_LE_N),
    assumptions=CONVEX_SETTING,
    notes=("The text claims Omega(n log min{n/r, n sqrt(epsilon_dd/(qd))}); the exact value is "
           "4 kappa n log(min{n^2/(32 r^2), epsilon_dd n^2/(4qd), epsilon_dp n^2/(20 kappa q d)}), "
           "so the claim holds for kappa = O(1) (erratum C3).",),
    example=_pick(THM51_EXAMPLE, "lam", "beta", "q", "epsilon_dp", "epsilon_dd", "n", "d", "r"),
))

THM51_SAVINGS_ORDER = register(Bound(
    id="chourasia2023:thm5.1/savings-order",
    title="Growth order n log min{n/r, n sqrt(epsilon_dd/(qd))} claimed for the convex saving",
    citation=cite("Theorem 5.1", "Section 5.1, the paragraph after eq. (17)"),
    parameters=(P_Q, P_EPS_DD, P_N, P_D, P_R),
    expression=n * sp.log(sp.Min(n / r, n * sp.sqrt(eps_dd / (q * d)))),
    guarantee=Guarantee(
        "gradient_complexity",
        "an Omega(.) growth order with an unknown constant, not a count: compare only ratios "
        "against chourasia2023:thm5.1/savings",
    ),
    preconditions=(PRE_R_LE_N,),
    assumptions=CONVEX_SETTING,
    example=_pick(THM51_EXAMPLE, "q", "epsilon_dd", "n", "d", "r"),
))

TABLE1_NOISY_GD = register(Bound(
    id="chourasia2023:table1/noisy-gd",
    title="Table 1, Noisy-GD row: savings order n log min{n, epsilon n/sqrt(d)} as printed",
    citation=cite("Table 1", "Section 5.1"),
    parameters=(Parameter("epsilon", "target epsilon of one-sided (epsilon, delta)-unlearning",
                          lower=0, lower_open=True), P_N, P_D),
    expression=n * sp.log(sp.Min(n, eps * n / sp.sqrt(d))),
    guarantee=Guarantee(
        "gradient_complexity",
        "an Omega(.) growth order with an unknown constant, not a count",
    ),
    assumptions=(
        "r = 1, non-adaptive edits; convex 1-Lipschitz O(1)-smooth loss, lam = O(1)",
        "each method meets (1 + (2/epsilon) log(1/delta), epsilon/2)-data-deletion, which gives "
        "one-sided (epsilon, delta)-unlearning by Remark 2.1 (bounds.conversions.renyi_to_dp)",
    ),
    notes=("Substituting q = 1 + (2/epsilon) log(1/delta) and epsilon_dd = epsilon/2 into "
           "chourasia2023:thm5.1/savings-order gives n log min{n, epsilon n/sqrt(2d(epsilon + "
           "2 log(1/delta)))}: the printed row drops a log(1/delta) factor (erratum C3).",),
    example={"epsilon": 1, "n": 10000, "d": 100},
))

# ----------------------------------------------------------------------------------------------
# Theorem 5.2: non-convex losses
# ----------------------------------------------------------------------------------------------

ETA52_CAP = lam * eps_dd / (64 * d * q * B * (beta + lam) ** 2)
PRE_ETA52 = Precondition(sp.Le(eta, ETA52_CAP),
                         "eta <= lam epsilon_dd/(64 d q B (beta + lam)^2) (eq. 19)")
LEARNING_ITERATIONS52 = 2 * B / (lam * eta) * sp.log(q * sp.log(B) / eps_dd)
SAVED_ITERATIONS52 = 2 * B / (lam * eta) * sp.log(sp.log(B) / (2 * (eps_dd + r / n * sp.log(B))))

THM52_RDP = register(Bound(
    id="chourasia2023:thm5.2/rdp",
    aliases=("chourasia2023:eq18",),
    title="Rényi DP of Noisy-GD learning or deletion after max{K_A, K_Abar} steps (eq. 18 "
          "solved for epsilon_dp)",
    citation=cite("Theorem 5.2", "Section 5.2, eq. (18); restates Abadi et al. 2016, Theorem 1"),
    parameters=(P_Q, P_L, P_N, P_ETA, P_K_A, P_K_ABAR, P_SIGMA),
    expression=q * L**2 * eta * sp.Max(K_A, K_Abar) / (n**2 * sigma**2),
    guarantee=Guarantee("renyi_dp", "(q, value)-Rényi DP of A and of Abar (replace-one)",
                        renyi_order="q"),
    assumptions=(
        "the loss is L-Lipschitz (or its gradients are clipped to norm L); any eta >= 0",
        "Noisy-GD (Algorithm 2): each step adds sqrt(2 eta) sigma N(0, I_d)",
    ),
    monotone={"sigma": "decreasing", "K_A": "increasing", "K_Abar": "increasing",
              "n": "decreasing", "q": "increasing", "L": "increasing", "eta": "increasing"},
    notes=(
        "Re-derived here (the proof is not in the seed): a replacement moves the mean of one "
        "step by at most 2 eta L/n, the step's noise has variance 2 eta sigma^2, so one step is "
        "(q, q eta L^2/(n^2 sigma^2))-RDP; adaptive composition over the steps gives the value. "
        "Valid at every order q, so the order may be optimised.",
    ),
    example={"q": 2, "L": 1, "n": 10000, "eta": "1e-5", "K_A": 2000000, "K_Abar": 1500000,
             "sigma": "8e-4"},
))

THM52_SIGMA = register(Bound(
    id="chourasia2023:thm5.2/sigma",
    title="Least Noisy-GD noise parameter sigma for (q, epsilon_dp)-Rényi DP (non-convex, eq. 18)",
    citation=cite("Theorem 5.2", "Section 5.2, eq. (18)"),
    parameters=(P_Q, P_L, P_EPS_DP, P_N, P_ETA, P_K_A, P_K_ABAR),
    expression=sp.sqrt(q * L**2 / (eps_dp * n**2) * eta * sp.Max(K_A, K_Abar)),
    guarantee=Guarantee("noise_scale", "least sigma of Algorithm 2 meeting eq. (18)"),
    assumptions=THM52_RDP.assumptions,
    monotone={"epsilon_dp": "decreasing", "n": "decreasing", "K_A": "increasing",
              "K_Abar": "increasing", "eta": "increasing"},
    example={"q": 2, "L": 1, "epsilon_dp": 1, "n": 10000, "eta": "1e-5", "K_A": 2000000,
             "K_Abar": 1500000},
))

THM52_ETA = register(Bound(
    id="chourasia2023:thm5.2/eta",
    title="Largest Noisy-GD step size for data-deletion (non-convex, eq. 19)",
    citation=cite("Theorem 5.2", "Section 5.2, part (2)"),
    parameters=(P_LAM, P_BETA, P_EPS_DD, P_D, P_Q, P_B),
    expression=ETA52_CAP,
    guarantee=Guarantee("step_size", "eta must be at most the value"),
    preconditions=(PRE_BUDGET_DIM,),
    assumptions=NONCONVEX_SETTING,
    monotone={"d": "decreasing", "q": "decreasing", "B": "decreasing",
              "epsilon_dd": "increasing", "beta": "decreasing"},
    example=_pick(THM52_EXAMPLE, "lam", "beta", "epsilon_dd", "d", "q", "B"),
))

THM52_LEARNING = register(Bound(
    id="chourasia2023:thm5.2/learning-iterations",
    aliases=("chourasia2023:eq19/K_A",),
    title="Learning iterations K_A for data-deletion (non-convex, eq. 19)",
    citation=cite("Theorem 5.2", "Section 5.2, eq. (19)"),
    parameters=(P_LAM, P_BETA, P_EPS_DD, P_D, P_Q, P_B, P_ETA),
    expression=LEARNING_ITERATIONS52,
    guarantee=ITERATIONS,
    preconditions=(PRE_BUDGET_DIM, PRE_ETA52),
    assumptions=NONCONVEX_SETTING,
    monotone={"epsilon_dd": "decreasing"},
    notes=("Negative when q log B < epsilon_dd: then any K_A >= 0 meets eq. (19).",),
    example={**_pick(THM52_EXAMPLE, "lam", "beta", "epsilon_dd", "d", "q", "B"),
             "eta": "lam*epsilon_dd/(64*d*q*B*(beta + lam)**2)"},
))

THM52_UNLEARNING = register(Bound(
    id="chourasia2023:thm5.2/unlearning-iterations",
    aliases=("chourasia2023:eq19/K_Abar",),
    title="Deletion iterations K_Abar for data-deletion given K_A (non-convex, eq. 19)",
    citation=cite("Theorem 5.2", "Section 5.2, eq. (19)"),
    parameters=(P_LAM, P_BETA, P_EPS_DD, P_D, P_Q, P_B, P_ETA, P_N, P_R, P_K_A),
    expression=K_A - SAVED_ITERATIONS52,
    guarantee=ITERATIONS,
    preconditions=(PRE_BUDGET_DIM, PRE_ETA52, PRE_R_LE_N,
                   Precondition(sp.Ge(K_A, LEARNING_ITERATIONS52), "K_A meets eq. (19)")),
    assumptions=NONCONVEX_SETTING,
    monotone={"K_A": "increasing", "r": "increasing"},
    notes=("K_Abar < K_A (a saving) exactly when r/n < 1/2 - epsilon_dd/log B; the text says "
           "<=, where the saving is zero (erratum C3).",),
    example={**_pick(THM52_EXAMPLE, "lam", "beta", "epsilon_dd", "d", "q", "B", "n", "r"),
             "eta": "lam*epsilon_dd/(64*d*q*B*(beta + lam)**2)", "K_A": 2400000},
))

THM52_SAVINGS = register(Bound(
    id="chourasia2023:thm5.2/savings",
    title="Per-request gradient saving n (K_A - K_Abar) of Noisy-GD deletion (non-convex)",
    citation=cite("Theorem 5.2", "Section 5.2, the paragraphs after the theorem"),
    parameters=(P_LAM, P_BETA, P_EPS_DD, P_D, P_Q, P_B, P_ETA, P_N, P_R),
    expression=n * SAVED_ITERATIONS52,
    guarantee=SAVINGS,
    preconditions=(PRE_BUDGET_DIM, PRE_ETA52, PRE_R_LE_N),
    assumptions=NONCONVEX_SETTING,
    notes=("At epsilon_dd = log(B)/4 and eta at its cap the value is "
           "128 d q B^2 (beta + lam)^2/(lam^2 epsilon_dd) n log(2n/(n + 4r)): Theta(d n), not the "
           "Omega(d n log(n/r)) the text claims (erratum C3).",),
    example={**_pick(THM52_EXAMPLE, "lam", "beta", "epsilon_dd", "d", "q", "B", "n", "r"),
             "eta": "lam*epsilon_dd/(64*d*q*B*(beta + lam)**2)"},
))


# ----------------------------------------------------------------------------------------------
# Hyper-parameter calculators (thin layers over the declarations, for the phase-2 mechanism)
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ConvexSetting:
    """Noisy-GD hyper-parameters of Theorem 5.1 (statement only, proof not in the seed).

    ``K_A`` and ``K_Abar`` are the least integers meeting eqs. (16)-(17) (at least 0);
    ``rho_variance`` is the per-coordinate variance of the initialisation.
    """

    sigma: float
    eta: float
    rho_variance: float
    K_A: int
    K_Abar: int
    kappa: float
    provenance: tuple[str, ...]


def convex_setting(*, q: float, L: float, lam: float, beta: float, epsilon_dp: float,
                   epsilon_dd: float, n: int, d: int, r: int) -> ConvexSetting:
    """Theorem 5.1's sigma, eta, rho and the least K_A, K_Abar (eqs. 16-17), from the declared
    bounds; iteration counts are rounded up from a 50-digit interval evaluation."""
    common = {"lam": lam, "beta": beta}

    def least_count(bound: Bound, **params: Any) -> int:
        upper = bound.evaluate(precision="interval", **params).certified_upper
        return max(0, math.ceil(upper))

    sigma_value = float(THM51_SIGMA.evaluate(precision="mp", q=q, L=L, lam=lam,
                                             epsilon_dp=epsilon_dp, n=n).value)
    eta_value = float(THM51_ETA.evaluate(precision="mp", **common).value)
    rho = float(THM51_RHO.evaluate(precision="mp", q=q, L=L, epsilon_dp=epsilon_dp, n=n,
                                   **common).value) ** 2
    k_a = least_count(THM51_LEARNING, q=q, epsilon_dp=epsilon_dp, n=n, d=d, **common)
    k_abar = least_count(THM51_UNLEARNING, q=q, epsilon_dp=epsilon_dp, epsilon_dd=epsilon_dd,
                         d=d, r=r, **common)
    return ConvexSetting(
        sigma=sigma_value, eta=eta_value, rho_variance=rho, K_A=k_a, K_Abar=k_abar,
        kappa=(lam + beta) / lam,
        provenance=(THM51_SIGMA.id, THM51_ETA.id, THM51_RHO.id, THM51_LEARNING.id,
                    THM51_UNLEARNING.id, NO_PROOF),
    )


@dataclasses.dataclass(frozen=True)
class Theorem52Check:
    """Which hypotheses of Theorem 5.2 a Noisy-GD configuration meets (eqs. 18 and 19)."""

    budgets_ok: bool  # 0 < epsilon_dd <= epsilon_dp < d
    privacy_ok: bool  # eq. (18)
    step_ok: bool  # eta cap of part (2)
    learning_ok: bool  # K_A of eq. (19)
    unlearning_ok: bool  # K_Abar of eq. (19)
    loss_bound: float  # the loss must take values in [-loss_bound, loss_bound]

    @property
    def all_ok(self) -> bool:
        """Whether every condition of Theorem 5.2 holds."""
        return (self.budgets_ok and self.privacy_ok and self.step_ok and self.learning_ok
                and self.unlearning_ok)


def check_theorem52(*, q: float, L: float, lam: float, beta: float, B: float, epsilon_dp: float,
                    epsilon_dd: float, n: int, d: int, r: int, eta: float, sigma: float,
                    K_A: int, K_Abar: int) -> Theorem52Check:
    """Check eqs. (18) and (19) of Theorem 5.2 exactly (sympy rationals of the float inputs).

    The conditions are evaluated on the declared expressions; nothing here is a proof (the
    proof of Theorem 5.2 is not in the seed)."""
    values = dict(q=q, L=L, lam=lam, beta=beta, B=B, epsilon_dp=epsilon_dp,
                  epsilon_dd=epsilon_dd, n=n, d=d, r=r, eta=eta, sigma=sigma, K_A=K_A,
                  K_Abar=K_Abar)
    # The binary value of each float, exactly: no rounding decides a borderline condition.
    exact = {k: sp.Rational(Fraction(v)) for k, v in values.items()}
    subs = {sp.Symbol(k, real=True): v for k, v in exact.items()}

    def holds(relation: sp.Basic) -> bool:
        return bool(relation.subs(subs))

    budgets = 0 < epsilon_dd <= epsilon_dp < d and q > 1 and B > 1
    privacy = holds(sp.Ge(sigma**2, q * L**2 / (eps_dp * n**2) * eta * sp.Max(K_A, K_Abar)))
    step = holds(PRE_ETA52.relation)
    learning = holds(sp.Ge(K_A, LEARNING_ITERATIONS52))
    unlearning = holds(sp.Ge(K_Abar, K_A - SAVED_ITERATIONS52)) if r <= n else False
    return Theorem52Check(budgets, privacy, step, learning, unlearning,
                          loss_bound=sigma**2 * math.log(B) / 4)


# ----------------------------------------------------------------------------------------------
# Footnote 5 / Remark 2.1: the normalisation of Table 1, through the engine's conversion
# ----------------------------------------------------------------------------------------------


def footnote5() -> dict[str, Any]:
    """(q, epsilon/2)-RDP at q = 1 + (2/epsilon) log(1/delta) gives (epsilon, delta) (Remark 2.1)."""
    rows = []
    for epsilon, delta_dp in ((0.5, 1e-5), (1.0, 1e-5), (2.0, 1e-6), (8.0, 1e-9)):
        order = 1 + 2 / epsilon * math.log(1 / delta_dp)
        computed = float(renyi_to_dp(renyi_epsilon=epsilon / 2, alpha=order, delta=delta_dp))
        rows.append({"epsilon": epsilon, "delta": delta_dp, "q": order, "published": epsilon,
                     "computed": computed, "match": math.isclose(computed, epsilon,
                                                                 rel_tol=1e-12)})
    return {"rows": rows, "matches": sum(r_["match"] for r_ in rows), "total": len(rows)}


register_reproduction(Reproduction(
    id="chourasia2023:footnote5",
    title="Footnote 5 / Table 1 normalisation: (1 + (2/epsilon) log(1/delta), epsilon/2)-Rényi "
          "gives (epsilon, delta)",
    citation=cite("Footnote 5 and Remark 2.1", "Section 5.1 and Section 2"),
    rule="Mironov's conversion (bounds.conversions.renyi_to_dp) returns epsilon to 1e-12",
    run=footnote5,
))

__all__ = [
    "THM41", "THM41_LIMIT", "THM43", "THM45", "THM45_PRINTED", "THM51_SIGMA", "THM51_ETA",
    "THM51_RHO", "THM51_DELETION", "THM51_EPSILON", "THM51_DELETION_CURVE",
    "THM43_THM51_ADAPTIVE", "THM51_LEARNING", "THM51_UTILITY",
    "THM51_UNLEARNING", "THM51_SAVINGS", "THM51_SAVINGS_ORDER", "TABLE1_NOISY_GD", "THM52_RDP",
    "THM52_SIGMA", "THM52_ETA", "THM52_LEARNING", "THM52_UNLEARNING", "THM52_SAVINGS",
    "ConvexSetting", "convex_setting", "Theorem52Check", "check_theorem52", "footnote5",
]
