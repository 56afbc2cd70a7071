"""Guo, Goldstein, Hannun and van der Maaten, "Certified Data Removal from Machine Learning
Models" (ICML 2020): seed 002, Section 3 and Appendix A.

Setting: an L2-regularised linear model trained on n points by minimising
L_b(w; D) = sum_i l(w^T x_i, y_i) + (lambda n / 2) ||w||^2 + b^T w (Section 3.1; Algorithm 1
prints lambda n ||w||^2 without the 1/2: docs/errata-guo2020.md, G1), with b a random vector.
Removing m points is one Newton step w^- = w* + H^{-1} Delta (eqs. 3 and 6). The gradient
residual ||grad L_b(w^-; D')||_2 is bounded in the worst case (Theorems 1 and 4) and from data
(Corollaries 1 and 2); the noise b masks any residual of norm at most eps' (Theorems 2 and 3),
so a total residual budget sigma * epsilon / c certifies (epsilon, delta)-removal
(Algorithm 2). Theorem 5 adds a differentially private feature extractor.

Conventions: ``sigma`` is the standard deviation of each coordinate of b (the paper writes
N(0, sigma)^d with sigma a standard deviation); ``gamma`` is the Lipschitz constant of l''
(1/4 for logistic regression as the paper states, 1/(6 sqrt 3) is the tight value); ``C`` bounds
||grad l|| for every w and training point; ``lam`` is lambda; ``m`` points are removed at once.

Errata (docs/errata-guo2020.md): the worst-case bounds of Theorems 1 and 4 assume that w* is the
minimiser of the unperturbed loss; with the perturbation b they need ||b||, and the corrected
forms are declared as ``guo2020:thm1/corrected`` (given ||b||) and ``guo2020:thm1/corrected-whp``
(with a high-probability bound on ||b|| for Gaussian b), and likewise for Theorem 4. Theorem 3
(ii) relies on the Gaussian-mechanism theorem of Dwork and Roth, proved for epsilon < 1: the
declaration refuses epsilon > 1 and :func:`exact_gaussian_delta` and the calibrations with
``method="exact"`` give the exact analytic-Gaussian answer instead.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Literal

import mpmath
import sympy as sp

from bounds.conversions import gaussian_delta, gaussian_delta_mp, gaussian_epsilon
from bounds.declarations import Bound, Citation, Guarantee, Parameter, Precondition
from bounds.errors import BoundError, PreconditionError, SolverError
from bounds.numerics import float_down, float_up, interval_endpoints, iv_precision
from bounds.registry import register
from bounds.values import symbols

REFERENCE = (
    "Guo, Goldstein, Hannun, van der Maaten. Certified Data Removal from Machine Learning "
    "Models. ICML 2020"
)
SEED = "002_ef6ddb75b5fc6065.txt"


def cite(label: str, section: str) -> Citation:
    """Citation of a result of Guo et al. 2020 (seed 002)."""
    return Citation("guo2020", REFERENCE, SEED, label, section)


(gamma, C, lam, n, m, update_norm, X_norm, X_update_norm, b_norm, sigma, d, tau, eps_prime,
 T, eps, delta, scale, eps_dp, eps_cr, delta_dp, delta_cr) = symbols(
    "gamma C lam n m update_norm X_norm X_update_norm b_norm sigma d tau eps_prime T epsilon "
    "delta scale eps_dp eps_cr delta_dp delta_cr"
)

# ----------------------------------------------------------------------------------------------
# Parameters and preconditions
# ----------------------------------------------------------------------------------------------

P_GAMMA = Parameter("gamma", "Lipschitz constant of the loss's second derivative l''", lower=0)
P_C = Parameter("C", "bound on ||grad l(w^T x_i, y_i)||_2 for every w and training point",
                lower=0, lower_open=True)
P_LAM = Parameter("lam", "L2-regularisation lambda (objective sum l + (lambda n/2)||w||^2)",
                  lower=0, lower_open=True)
P_N = Parameter("n", "training-set size before the removal", lower=2, integer=True)
P_M = Parameter("m", "number of points removed at once (batch size)", lower=1, integer=True)
P_UPDATE = Parameter("update_norm", "||H^{-1} Delta||_2, the norm of the Newton update", lower=0)
P_XNORM = Parameter(
    "X_norm", "||X^-||_2, spectral norm of the remaining data matrix (exact, or an upper bound)",
    lower=0,
)
P_XUPDATE = Parameter("X_update_norm", "||X^- H^{-1} Delta||_2", lower=0)
P_BNORM = Parameter("b_norm", "||b||_2, the norm of the loss perturbation", lower=0)
P_SIGMA = Parameter("sigma", "standard deviation of each coordinate of b ~ N(0, sigma^2 I_d)",
                    lower=0, lower_open=True)
P_DIM = Parameter("d", "parameter dimension", lower=1, integer=True)
P_TAU = Parameter("tau", "probability that the high-probability bound on ||b||_2 fails", lower=0,
                  upper=1, lower_open=True, upper_open=True)
P_EPS_PRIME = Parameter("eps_prime", "bound eps' on the gradient-residual norm", lower=0,
                        lower_open=True)
P_T = Parameter("T", "number of removals", lower=1, integer=True)
P_EPS = Parameter("epsilon", "target epsilon of (epsilon, delta)-certified removal", lower=0,
                  lower_open=True)
# Theorem 3 (ii) and Algorithm 2 inherit Dwork and Roth's Theorem 3.22 (epsilon < 1); epsilon = 1
# follows by continuity of the exact delta in epsilon (docs/errata-guo2020.md, G2).
P_EPS_GAUSS = Parameter(
    "epsilon",
    "target epsilon; at most 1 (Theorem 3 (ii) rests on Dwork-Roth Thm 3.22, proved for "
    "epsilon < 1; beyond it use guo2020.sigma_for_removals(method='exact'))",
    lower=0, upper=1, lower_open=True,
)
P_DELTA = Parameter("delta", "target delta of (epsilon, delta)-certified removal", lower=0, upper=1,
                    lower_open=True, upper_open=True)
P_SCALE = Parameter("scale", "scale s of the noise density p(b) proportional to exp(-||b||_2/s)",
                    lower=0, lower_open=True)
P_EPS_DP = Parameter("eps_dp", "epsilon of the differentially private feature extractor", lower=0)
P_EPS_CR = Parameter("eps_cr", "epsilon of the certified removal of the linear head", lower=0)
P_DELTA_DP = Parameter("delta_dp", "delta of the differentially private feature extractor",
                       lower=0, upper=1)
P_DELTA_CR = Parameter("delta_cr", "delta of the certified removal of the linear head", lower=0,
                       upper=1)

PRE_BATCH = Precondition(sp.Lt(m, n), "m < n: at least one training point remains")
# ||x_i|| <= 1 for every row gives ||X^-||_2 <= ||X^-||_F <= sqrt(rows).
PRE_XNORM_1 = Precondition(
    sp.Le(X_norm, sp.sqrt(n - 1)),
    "||X^-||_2 <= sqrt(n - 1), implied by ||x_i||_2 <= 1 (an assumption of Theorem 1)",
)
PRE_XNORM_M = Precondition(
    sp.Le(X_norm, sp.sqrt(n - m)),
    "||X^(-m)||_2 <= sqrt(n - m), implied by ||x_i||_2 <= 1 (an assumption of Theorem 1)",
)
# ||X v|| <= ||X||_2 ||v|| always; a relative slack of 1e-9 absorbs the rounding of inputs
# computed in floating point (a larger X_update_norm only raises the bound, so this is safe).
PRE_CONSISTENT = Precondition(
    sp.Le(X_update_norm, X_norm * update_norm * (1 + sp.Rational(1, 10**9))),
    "||X^- H^{-1} Delta||_2 <= ||X^-||_2 ||H^{-1} Delta||_2 (consistent inputs)",
)

# c of Theorem 3 (ii) and Algorithm 2, line 7: delta = 1.5 exp(-c^2/2).
C_OF_DELTA = sp.sqrt(2 * sp.log(sp.Rational(3, 2) / delta))
PRE_GAUSS_RANGE = Precondition(
    sp.Le(C_OF_DELTA * eps_prime / sigma, 1),
    "the resulting epsilon = c eps'/sigma is at most 1: Theorem 3 (ii) rests on Dwork-Roth "
    "Thm 3.22, proved for epsilon < 1 (at delta = 1e-4 it fails from epsilon ~ 8.38 on); beyond it use "
    "guo2020.exact_gaussian_epsilon or sigma_for_removals(method='exact')",
)

REGULARITY = (
    "||grad l(w^T x_i, y_i)||_2 <= C for every w and training point",
    "l is convex and twice differentiable, and l'' is gamma-Lipschitz in its first argument",
    "||x_i||_2 <= 1 for every training point",
    "w* is the exact minimiser of L(.; D) = sum l + (lambda n/2)||w||^2 (no perturbation: "
    "b = 0); see the corrected variants for b != 0",
)
REGULARITY_PERTURBED = REGULARITY[:3] + (
    "w* is the exact minimiser of the perturbed loss L_b(.; D) = sum l + (lambda n/2)||w||^2 + "
    "b^T w (the setting of Theorem 3); an optimiser's own residual must be added separately",
)
NEWTON = "the removal is the Newton step w^- = w* + H^{-1} Delta with H the Hessian of the " \
    "remaining data including the regulariser lambda (n - m) I"

RESIDUAL = Guarantee(
    "gradient_residual",
    "upper bound on the gradient-residual norm ||grad L_b(w^-; D')||_2 after the Newton removal",
)
CR = Guarantee("eps_delta_unlearning",
               "epsilon of (epsilon, delta)-certified removal (max-divergence form, Guo eq. 1)")

_PAPER_NUMBERS = {"gamma": "1/4", "C": 1, "lam": "1/1000", "n": 11982}

# ----------------------------------------------------------------------------------------------
# Theorem 1 and Theorem 4: worst case
# ----------------------------------------------------------------------------------------------

THM1 = register(Bound(
    id="guo2020:thm1",
    title="Worst-case gradient residual of one Newton removal (unperturbed loss)",
    citation=cite("Theorem 1", "Section 3.1, eq. (4); proof in Appendix A"),
    parameters=(P_GAMMA, P_C, P_LAM, P_N),
    expression=4 * gamma * C**2 / (lam**2 * (n - 1)),
    guarantee=RESIDUAL,
    assumptions=REGULARITY + (NEWTON,),
    monotone={"gamma": "increasing", "C": "increasing", "lam": "decreasing", "n": "decreasing"},
    notes=(
        "Valid as stated only for b = 0. The paper's own erratum: once the loss is perturbed "
        "(Theorem 3) ||w*|| depends on ||b||, and this bound can fail; use "
        "guo2020:thm1/corrected or guo2020:thm1/corrected-whp there (docs/errata-guo2020.md, G3).",
        "Logistic regression: C = 1, gamma = 1/4, so the bound is 1/(lambda^2 (n - 1)).",
    ),
    example=_PAPER_NUMBERS,
))

THM1_MIDDLE = register(Bound(
    id="guo2020:thm1/middle",
    title="Theorem 1's middle term gamma (n - 1) ||H^{-1} Delta||^2",
    citation=cite("Theorem 1", "Section 3.1, eq. (4), middle inequality"),
    parameters=(P_GAMMA, P_N, P_UPDATE),
    expression=gamma * (n - 1) * update_norm**2,
    guarantee=RESIDUAL,
    assumptions=REGULARITY[:3] + (NEWTON,),
    monotone={"gamma": "increasing", "n": "increasing", "update_norm": "increasing"},
    notes=("Holds with or without the perturbation b: it uses the computed update norm.",),
    example={"gamma": "1/4", "n": 11982, "update_norm": "0.01"},
))

THM4 = register(Bound(
    id="guo2020:thm4",
    title="Worst-case gradient residual of one batch Newton removal of m points (unperturbed loss)",
    citation=cite("Theorem 4", "Section 3.2 (batch removal); proof in Appendix A"),
    parameters=(P_GAMMA, P_C, P_LAM, P_N, P_M),
    expression=4 * gamma * m**2 * C**2 / (lam**2 * (n - m)),
    guarantee=RESIDUAL,
    preconditions=(PRE_BATCH,),
    assumptions=REGULARITY + (NEWTON,),
    monotone={"gamma": "increasing", "C": "increasing", "lam": "decreasing", "n": "decreasing",
              "m": "increasing"},
    notes=(
        "At m = 1 it is Theorem 1. Valid as stated only for b = 0; see guo2020:thm4/corrected "
        "(docs/errata-guo2020.md, G3).",
    ),
    example={**_PAPER_NUMBERS, "m": 10},
))

THM4_MIDDLE = register(Bound(
    id="guo2020:thm4/middle",
    title="Theorem 4's middle term gamma (n - m) ||[H^(m)]^{-1} Delta^(m)||^2",
    citation=cite("Theorem 4", "Section 3.2, middle inequality"),
    parameters=(P_GAMMA, P_N, P_M, P_UPDATE),
    expression=gamma * (n - m) * update_norm**2,
    guarantee=RESIDUAL,
    preconditions=(PRE_BATCH,),
    assumptions=REGULARITY[:3] + (NEWTON,),
    monotone={"gamma": "increasing", "update_norm": "increasing", "m": "decreasing"},
    example={"gamma": "1/4", "n": 11982, "m": 10, "update_norm": "0.1"},
))

# ----------------------------------------------------------------------------------------------
# The erratum: worst case with the perturbation b
# ----------------------------------------------------------------------------------------------

# From 0 = sum grad l + lambda n w* + b: lambda ||w*|| <= C + ||b||/n, so ||Delta^(m)|| <=
# m (2C + ||b||/n) and ||[H^(m)]^{-1}|| <= 1/(lambda (n - m)).
CORRECTED_BATCH = gamma * m**2 * (2 * C + b_norm / n) ** 2 / (lam**2 * (n - m))
# ||b||_2 is sigma-Lipschitz in a standard Gaussian vector with E||b|| <= sigma sqrt(d), so
# P(||b||_2 > sigma (sqrt(d) + sqrt(2 log(1/tau)))) <= tau (Gaussian concentration).
B_NORM_WHP = sigma * (sp.sqrt(d) + sp.sqrt(2 * sp.log(1 / tau)))

_CORRECTED_NOTE = (
    "Derived here from the paper's erratum (||w*|| <= (C n + ||b||)/(lambda n)); not printed in "
    "the paper. Equals the printed bound times (1 + ||b||/(2 C n))^2 (docs/errata-guo2020.md, G3)."
)
_WHP_NOTE = (
    "Holds with probability at least 1 - tau over b ~ N(0, sigma^2 I_d); when used as eps' in "
    "Theorem 3 (ii), add tau to delta. The tail bound is Gaussian concentration of the "
    "1-Lipschitz norm (Borell-TIS), not from the paper."
)

THM1_CORRECTED = register(Bound(
    id="guo2020:thm1/corrected",
    title="Worst-case gradient residual of one Newton removal with the loss perturbation b",
    citation=cite("Theorem 1 and the authors' erratum", "Appendix A, proof of Theorem 1; erratum"),
    parameters=(P_GAMMA, P_C, P_LAM, P_N, P_BNORM),
    expression=CORRECTED_BATCH.subs(m, 1),
    guarantee=RESIDUAL,
    assumptions=REGULARITY_PERTURBED + (NEWTON,),
    monotone={"gamma": "increasing", "C": "increasing", "lam": "decreasing",
              "b_norm": "increasing"},
    notes=(_CORRECTED_NOTE, "At b_norm = 0 it is guo2020:thm1."),
    example={**_PAPER_NUMBERS, "b_norm": 300},
))

THM4_CORRECTED = register(Bound(
    id="guo2020:thm4/corrected",
    title="Worst-case gradient residual of a batch Newton removal with the loss perturbation b",
    citation=cite("Theorem 4 and the authors' erratum", "Appendix A, proof of Theorem 4; erratum"),
    parameters=(P_GAMMA, P_C, P_LAM, P_N, P_M, P_BNORM),
    expression=CORRECTED_BATCH,
    guarantee=RESIDUAL,
    preconditions=(PRE_BATCH,),
    assumptions=REGULARITY_PERTURBED + (NEWTON,),
    monotone={"gamma": "increasing", "C": "increasing", "lam": "decreasing", "m": "increasing",
              "b_norm": "increasing"},
    notes=(_CORRECTED_NOTE, "At m = 1 it is guo2020:thm1/corrected; at b_norm = 0, guo2020:thm4."),
    example={**_PAPER_NUMBERS, "m": 10, "b_norm": 300},
))

THM1_WHP = register(Bound(
    id="guo2020:thm1/corrected-whp",
    title="Worst-case residual of one Newton removal, Gaussian b, with probability 1 - tau",
    citation=cite("Theorem 1 and the authors' erratum", "erratum; Gaussian norm tail bound"),
    parameters=(P_GAMMA, P_C, P_LAM, P_N, P_SIGMA, P_DIM, P_TAU),
    expression=CORRECTED_BATCH.subs({m: 1, b_norm: B_NORM_WHP}),
    guarantee=Guarantee("gradient_residual", RESIDUAL.description + ", with probability at "
                        "least 1 - tau over b ~ N(0, sigma^2 I_d)"),
    assumptions=REGULARITY_PERTURBED + (NEWTON, "b ~ N(0, sigma^2 I_d), sigma the standard "
                                        "deviation"),
    monotone={"sigma": "increasing", "d": "increasing", "tau": "decreasing", "lam": "decreasing"},
    notes=(_CORRECTED_NOTE, _WHP_NOTE),
    example={**_PAPER_NUMBERS, "sigma": 10, "d": 784, "tau": "1e-6"},
))

THM4_WHP = register(Bound(
    id="guo2020:thm4/corrected-whp",
    title="Worst-case residual of a batch Newton removal, Gaussian b, with probability 1 - tau",
    citation=cite("Theorem 4 and the authors' erratum", "erratum; Gaussian norm tail bound"),
    parameters=(P_GAMMA, P_C, P_LAM, P_N, P_M, P_SIGMA, P_DIM, P_TAU),
    expression=CORRECTED_BATCH.subs(b_norm, B_NORM_WHP),
    guarantee=THM1_WHP.guarantee,
    preconditions=(PRE_BATCH,),
    assumptions=THM1_WHP.assumptions,
    monotone={"sigma": "increasing", "d": "increasing", "tau": "decreasing", "m": "increasing",
              "lam": "decreasing"},
    notes=(_CORRECTED_NOTE, _WHP_NOTE),
    example={**_PAPER_NUMBERS, "m": 10, "sigma": 10, "d": 784, "tau": "1e-6"},
))

# ----------------------------------------------------------------------------------------------
# Corollaries 1 and 2: data-dependent residuals
# ----------------------------------------------------------------------------------------------

_DATA_NOTE = (
    "Unaffected by the erratum: ||H^{-1} Delta|| is computed, not bounded. X_norm must be the "
    "exact spectral norm or an upper bound; a power iteration approaches it from below and is "
    "not a certificate (docs/errata-guo2020.md, G5)."
)

COR1 = register(Bound(
    id="guo2020:cor1",
    title="Data-dependent gradient residual of one Newton removal",
    citation=cite("Corollary 1", "Section 3.2 (data-dependent bound on gradient norm)"),
    parameters=(P_GAMMA, P_N, P_XNORM, P_UPDATE, P_XUPDATE),
    expression=gamma * X_norm * update_norm * X_update_norm,
    guarantee=RESIDUAL,
    preconditions=(PRE_XNORM_1, PRE_CONSISTENT),
    assumptions=REGULARITY[:3] + (NEWTON,),
    monotone={"gamma": "increasing", "X_norm": "increasing", "update_norm": "increasing",
              "X_update_norm": "increasing"},
    notes=(_DATA_NOTE, "n enters only through the check ||X^-||_2 <= sqrt(n - 1); under the "
           "preconditions the value is at most guo2020:thm1/middle."),
    example={"gamma": "1/4", "n": 11982, "X_norm": 50, "update_norm": "0.01", "X_update_norm": "0.3"},
))

COR2 = register(Bound(
    id="guo2020:cor2",
    title="Data-dependent gradient residual of one batch Newton removal of m points",
    citation=cite("Corollary 2", "Section 3.2 (batch removal); printed without the gradient sign"),
    parameters=(P_GAMMA, P_N, P_M, P_XNORM, P_UPDATE, P_XUPDATE),
    expression=gamma * X_norm * update_norm * X_update_norm,
    guarantee=RESIDUAL,
    preconditions=(PRE_BATCH, PRE_XNORM_M, PRE_CONSISTENT),
    assumptions=REGULARITY[:3] + (NEWTON,),
    monotone=COR1.monotone,
    notes=(_DATA_NOTE, "At m = 1 it is guo2020:cor1; under the preconditions the value is at most "
           "guo2020:thm4/middle."),
    example={**COR1.example, "m": 10},
))

MULTIPLE = register(Bound(
    id="guo2020:multiple",
    title="Gradient residual after T removals, each with residual at most eps'",
    citation=cite("Multiple removals", "Section 3.2 (multiple removals), induction on T"),
    parameters=(P_T, P_EPS_PRIME),
    expression=T * eps_prime,
    guarantee=Guarantee("gradient_residual", "upper bound on the accumulated gradient residual "
                        "||u_T||_2 after T successive Newton removals"),
    assumptions=("each removal's own residual (on the loss shifted by the previous residual) is "
                 "at most eps'",),
    monotone={"T": "increasing", "eps_prime": "increasing"},
    notes=("Algorithm 2's accumulator beta is this sum with the per-step data-dependent bounds of "
           "Corollary 2 in place of T eps'.",),
    example={"T": 100, "eps_prime": "0.001"},
))

# ----------------------------------------------------------------------------------------------
# Theorems 2, 3 and 5; Algorithm 2's budget
# ----------------------------------------------------------------------------------------------

THM2 = register(Bound(
    id="guo2020:thm2",
    title="Max-divergence transfer from the noise density to the model density",
    citation=cite("Theorem 2", "Section 3.1 (loss perturbation); proof in Appendix A"),
    parameters=(P_EPS,),
    expression=eps,
    guarantee=Guarantee("eps_delta_unlearning", "epsilon with delta = 0: the density of the "
                        "approximately removed model is within e^{+-epsilon} of the exact one"),
    assumptions=(
        "b has a density p with e^-epsilon <= p(b1)/p(b2) <= e^epsilon whenever "
        "||b1 - b2||_2 <= eps'",
        "the approximate minimiser's gradient residual u satisfies ||u||_2 <= eps' for every b",
        "the proof convolves the density of u with that of b as if u were independent of b; for "
        "the Newton removal u depends on b through w*, so this step is not justified as written "
        "(docs/errata-guo2020.md, G6): recorded, not verified",
    ),
    notes=("The value is the epsilon of the noise-density ratio, passed through unchanged.",),
    example={"epsilon": 1},
))

THM3I = register(Bound(
    id="guo2020:thm3i",
    title="epsilon-certified removal with norm-Laplace noise p(b) ~ exp(-||b||/scale)",
    citation=cite("Theorem 3 (i)", "Section 3.1; proof in Appendix A"),
    parameters=(P_EPS_PRIME, P_SCALE),
    expression=eps_prime / scale,
    guarantee=Guarantee("eps_delta_unlearning", "epsilon of epsilon-certified removal (delta = 0)"),
    assumptions=REGULARITY_PERTURBED[3:] + (
        "the gradient residual of the removal is at most eps' for every b",
        "Theorem 2's assumptions",
    ),
    monotone={"eps_prime": "increasing", "scale": "decreasing"},
    notes=("The paper writes p(b) proportional to exp(-(epsilon/eps')||b||), i.e. scale = "
           "eps'/epsilon: ||b|| ~ Gamma(d, scale) with a uniform direction.",),
    example={"eps_prime": "0.01", "scale": "0.01"},
))

_THM3II_ASSUMPTIONS = REGULARITY_PERTURBED[3:] + (
    "the gradient residual of the removal is at most eps' for every b",
    "b ~ N(0, sigma^2 I_d), sigma the standard deviation of each coordinate",
    "Theorem 2's assumptions",
)

THM3II = register(Bound(
    id="guo2020:thm3ii",
    title="(epsilon, delta)-certified removal with Gaussian noise: epsilon = c eps'/sigma",
    citation=cite("Theorem 3 (ii)", "Section 3.1; Algorithm 2, line 7; proof in Appendix A"),
    parameters=(P_EPS_PRIME, P_SIGMA, P_DELTA),
    expression=C_OF_DELTA * eps_prime / sigma,
    guarantee=CR,
    preconditions=(PRE_GAUSS_RANGE,),
    assumptions=_THM3II_ASSUMPTIONS,
    monotone={"eps_prime": "increasing", "sigma": "decreasing", "delta": "decreasing"},
    notes=(
        "The paper states delta = 1.5 exp(-c^2/2) for b ~ N(0, c eps'/epsilon)^d; solved for "
        "epsilon this is epsilon = c eps'/sigma with c = sqrt(2 log(1.5/delta)).",
        "Refused for epsilon > 1 (docs/errata-guo2020.md, G2); guo2020:thm3ii/literal keeps the "
        "printed statement without the restriction, and exact_gaussian_epsilon gives the exact "
        "Gaussian-mechanism answer.",
    ),
    example={"eps_prime": "2.2803", "sigma": 10, "delta": "1e-4"},
))

def _literal_epsilon_remark(values: Mapping[str, Any]) -> str | None:
    """Beyond epsilon = 1 the printed epsilon understates the exact Gaussian-mechanism one."""
    with mpmath.workdps(30):
        eps_prime_, sigma_, delta_ = (mpmath.mpf(sp.Rational(values[k]).p) / sp.Rational(values[k]).q
                                      if values[k].is_Rational else mpmath.mpf(float(values[k]))
                                      for k in ("eps_prime", "sigma", "delta"))
        printed = c_of_delta(delta_) * eps_prime_ / sigma_
    if printed <= 1:
        return None
    head = (f"WARNING: the printed epsilon {mpmath.nstr(printed, 6)} exceeds 1, outside Dwork-Roth "
            "Thm 3.22 that Theorem 3 (ii) rests on")
    try:
        exact = exact_gaussian_epsilon(eps_prime=float(eps_prime_), sigma=float(sigma_),
                                       delta=float(delta_))
    except (ArithmeticError, ValueError):  # inputs beyond the float search: no number to quote
        return f"{head}; it is not certified here (docs/errata-guo2020.md, G2)"
    return (f"{head}; the exact Gaussian mechanism at these inputs needs epsilon {exact:.6g} "
            "(guo2020.exact_gaussian_epsilon), so this value "
            + ("understates the privacy loss" if exact > printed else "is not certified here")
            + " (docs/errata-guo2020.md, G2)")


THM3II_LITERAL = register(Bound(
    id="guo2020:thm3ii/literal",
    title="Theorem 3 (ii) as printed, without the epsilon <= 1 range of the cited theorem",
    citation=THM3II.citation,
    parameters=(P_EPS_PRIME, P_SIGMA, P_DELTA),
    expression=C_OF_DELTA * eps_prime / sigma,
    guarantee=CR,
    assumptions=_THM3II_ASSUMPTIONS,
    variant="literal",
    monotone=THM3II.monotone,
    remark=_literal_epsilon_remark,
    notes=("Not certified for epsilon > 1: at delta = 1e-4 the exact delta of the Gaussian "
           "mechanism exceeds delta from epsilon ~ 8.38 on (docs/errata-guo2020.md, G2).",),
    example={"eps_prime": "22.803", "sigma": 10, "delta": "1e-4"},
))

THM3II_SIGMA = register(Bound(
    id="guo2020:thm3ii/sigma",
    title="Noise standard deviation sigma = c eps'/epsilon for (epsilon, delta)-certified removal",
    citation=THM3II.citation,
    parameters=(P_EPS_PRIME, P_EPS_GAUSS, P_DELTA),
    expression=C_OF_DELTA * eps_prime / eps,
    guarantee=Guarantee("noise_scale", "standard deviation of each coordinate of b that gives "
                        "(epsilon, delta)-certified removal for a total residual eps'"),
    assumptions=_THM3II_ASSUMPTIONS,
    monotone={"eps_prime": "increasing", "epsilon": "decreasing", "delta": "decreasing"},
    notes=("For T removals pass eps' = the accumulated residual bound (guo2020:multiple, or "
           "Algorithm 2's beta).",),
    example={"eps_prime": "2.2803", "epsilon": 1, "delta": "1e-4"},
))

ALG2_BUDGET = register(Bound(
    id="guo2020:alg2/budget",
    title="Algorithm 2's removal budget sigma epsilon / c on the accumulated residual bound",
    citation=cite("Algorithm 2", "Section 3.2, Algorithm 2 lines 7 and 16 (pseudo-code)"),
    parameters=(P_SIGMA, P_EPS_GAUSS, P_DELTA),
    expression=sigma * eps / C_OF_DELTA,
    guarantee=Guarantee(
        "residual_budget",
        "largest accumulated gradient-residual bound beta that Theorem 3 (ii) certifies at "
        "(epsilon, delta); Algorithm 2 retrains once beta exceeds it (a budget: the lower end "
        "is the safe one)",
    ),
    assumptions=_THM3II_ASSUMPTIONS + (
        "beta accumulates Corollary 2 per batch, with ||X||_2 exact or bounded from above; beta is "
        "reset to 0 after a retrain (not stated in the pseudo-code)",
    ),
    monotone={"sigma": "increasing", "epsilon": "increasing", "delta": "increasing"},
    notes=("At delta = 1e-4, c = sqrt(2 log 15000) ~ 4.3854.",),
    example={"sigma": 10, "epsilon": 1, "delta": "1e-4"},
))

_THM5_ASSUMPTIONS = (
    "the feature extractor Phi is (eps_dp, delta_dp)-differentially private",
    "the linear head is trained on Phi's features by minimising L_b and removed from with an "
    "(eps_cr, delta_cr)-certified removal mechanism",
    "the proof bounds a Radon-Nikodym derivative by e^eps_dp, which needs delta_dp = 0; for "
    "delta_dp > 0 the argument is informal (recorded, not verified)",
)

THM5 = register(Bound(
    id="guo2020:thm5",
    title="DP feature extractor plus certified-removal head: the epsilons add",
    citation=cite("Theorem 5", "Section 3.3; proof in Appendix A"),
    parameters=(P_EPS_DP, P_EPS_CR),
    expression=eps_dp + eps_cr,
    guarantee=CR,
    assumptions=_THM5_ASSUMPTIONS,
    monotone={"eps_dp": "increasing", "eps_cr": "increasing"},
    notes=("The delta of the combination is guo2020:thm5/delta.",),
    example={"eps_dp": 1, "eps_cr": "0.1"},
))

THM5_DELTA = register(Bound(
    id="guo2020:thm5/delta",
    title="DP feature extractor plus certified-removal head: the deltas add",
    citation=THM5.citation,
    parameters=(P_DELTA_DP, P_DELTA_CR),
    expression=delta_dp + delta_cr,
    guarantee=Guarantee("unlearning_delta", "delta (not epsilon) of the combined "
                        "(eps_dp + eps_cr, delta_dp + delta_cr)-certified removal"),
    assumptions=_THM5_ASSUMPTIONS,
    monotone={"delta_dp": "increasing", "delta_cr": "increasing"},
    example={"delta_dp": "1e-5", "delta_cr": "9e-5"},
))

# ----------------------------------------------------------------------------------------------
# The exact Gaussian mechanism (the alternative to Theorem 3 (ii) outside epsilon <= 1)
# ----------------------------------------------------------------------------------------------

EXACT_DIGITS = 50
# The mp evaluations below are not interval-rigorous; at 50 digits their relative error is far
# below this margin, which every safe-side re-check adds before comparing with a target.
_MP_MARGIN = mpmath.mpf("1e-30")


def exact_gaussian_delta(*, epsilon: Any, mu: Any, digits: int = EXACT_DIGITS) -> mpmath.mpf:
    """Exact delta(epsilon) of the Gaussian mechanism with sensitivity / noise ratio ``mu``.

    delta = Phi(mu/2 - epsilon/mu) - e^epsilon Phi(-mu/2 - epsilon/mu) (Balle and Wang 2018,
    Theorem 8). For Theorem 3 (ii), mu = eps'/sigma = epsilon/c. Evaluated in mpmath at
    ``digits`` significant digits (accurate, not interval-rigorous) by the one high-precision
    implementation, :func:`bounds.conversions.gaussian_delta_mp`.
    """
    return gaussian_delta_mp(epsilon=epsilon, mu=mu, digits=digits)


def _exact_delta_at(*, epsilon: float, total: Fraction, sigma: float) -> mpmath.mpf:
    """Exact delta(epsilon) for an accumulated residual ``total`` masked by noise ``sigma``."""
    with mpmath.workdps(EXACT_DIGITS):
        mu = mpmath.mpf(total.numerator) / total.denominator / mpmath.mpf(sigma)
        return exact_gaussian_delta(epsilon=epsilon, mu=mu)


def theorem3_delta(*, c: Any, digits: int = EXACT_DIGITS) -> mpmath.mpf:
    """delta = 1.5 exp(-c^2/2) as printed in Theorem 3 (ii)."""
    with mpmath.workdps(digits):
        return mpmath.mpf(3) / 2 * mpmath.exp(-mpmath.mpf(c) ** 2 / 2)


def c_of_delta(delta: Any, *, digits: int = EXACT_DIGITS) -> mpmath.mpf:
    """c = sqrt(2 log(1.5/delta)) (Algorithm 2, line 7)."""
    with mpmath.workdps(digits):
        return mpmath.sqrt(2 * mpmath.log(mpmath.mpf(3) / 2 / mpmath.mpf(delta)))


def theorem3_holds(*, epsilon: Any, delta: Any) -> bool:
    """Whether Theorem 3 (ii)'s delta is at least the exact delta of its Gaussian mechanism.

    With sigma = c eps'/epsilon the mechanism has mu = epsilon/c; the statement holds at
    (epsilon, delta) iff the exact delta at that mu is <= delta.
    """
    c = c_of_delta(delta)
    with mpmath.workdps(EXACT_DIGITS):
        exact = exact_gaussian_delta(epsilon=epsilon, mu=mpmath.mpf(epsilon) / c)
        return bool(exact * (1 + _MP_MARGIN) <= mpmath.mpf(delta))


def theorem3_epsilon_limit(*, delta: float, tolerance: float = 1e-6) -> float:
    """Largest epsilon (within ``tolerance``, from below) at which Theorem 3 (ii)'s delta holds.

    Bisection on :func:`theorem3_holds` over [1, 1000]: the exact delta of the mechanism
    sigma = c eps'/epsilon grows with epsilon (mu = epsilon/c). The lower end is returned, so
    the statement holds at the answer.
    """
    if not theorem3_holds(epsilon=1, delta=delta):  # pragma: no cover - G2 shows it holds at 1
        raise SolverError("Theorem 3 (ii) fails already at epsilon = 1")
    lo, hi = 1.0, 1000.0
    if theorem3_holds(epsilon=hi, delta=delta):
        return hi
    while hi - lo > tolerance:
        mid = 0.5 * (lo + hi)
        if theorem3_holds(epsilon=mid, delta=delta):
            lo = mid
        else:
            hi = mid
    return lo


def exact_gaussian_epsilon(*, eps_prime: float, sigma: float, delta: float) -> float:
    """Least epsilon certified by the exact Gaussian mechanism for residual eps' and noise sigma.

    The alternative to Theorem 3 (ii) for any epsilon: the mechanism adds N(0, sigma^2 I_d) to
    a quantity of sensitivity eps', so mu = eps'/sigma, and epsilon is the least value with the
    exact delta(epsilon; mu) <= delta. Float search (conversions.gaussian_epsilon, rounded up),
    re-checked at 50 digits and stepped up until it passes.
    """
    for name, value in (("eps_prime", eps_prime), ("sigma", sigma)):
        if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise PreconditionError(f"{name} must be a positive finite number, got {value!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise PreconditionError(f"delta must lie in (0, 1), got {delta!r}")
    mu = mpmath.mpf(eps_prime) / mpmath.mpf(sigma)
    epsilon = gaussian_epsilon(delta=float(delta), mu=float(mu))
    for _ in range(200):
        if exact_gaussian_delta(epsilon=epsilon, mu=mu) * (1 + _MP_MARGIN) <= delta:
            return epsilon
        epsilon = float_up(mpmath.mpf(epsilon) * (1 + mpmath.mpf("1e-12")) + mpmath.mpf("1e-300"))
    raise SolverError("exact_gaussian_epsilon: the re-check failed")  # pragma: no cover


def _largest_mu(*, epsilon: float, delta: float) -> float:
    """Largest mu = sensitivity/sigma whose exact delta(epsilon) is <= delta (safe side).

    delta(epsilon; mu) increases with mu. Bisection in float (conversions.gaussian_delta, log
    space), then the answer is re-checked at 50 digits and stepped down until it passes.
    """
    if not (0 < delta < 1):
        raise PreconditionError(f"delta must lie in (0, 1), got {delta!r}")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PreconditionError(f"epsilon must be positive and finite, got {epsilon!r}")
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon=epsilon, mu=hi) <= delta:
        lo, hi = hi, 2 * hi
        if hi > 1e12:
            raise SolverError("exact Gaussian calibration: no finite mu reaches delta")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if gaussian_delta(epsilon=epsilon, mu=mid) <= delta:
            lo = mid
        else:
            hi = mid
    # One part in 1e12 below the float boundary: the 50-digit re-check then passes at once, and
    # later roundings of sigma = sensitivity/mu (by a few ulps) cannot cross the boundary.
    mu = lo * (1 - 1e-12)
    for _ in range(200):
        if mu > 0 and exact_gaussian_delta(epsilon=epsilon, mu=mu) * (1 + _MP_MARGIN) <= delta:
            return mu
        mu = float_down(mpmath.mpf(mu) * (1 - mpmath.mpf("1e-12")))
    raise SolverError("exact Gaussian calibration: the re-check failed")  # pragma: no cover


# ----------------------------------------------------------------------------------------------
# Calibration: sigma for a wanted number of removals, removals a given sigma supports
# ----------------------------------------------------------------------------------------------

Method = Literal["theorem3", "exact"]


@dataclasses.dataclass(frozen=True)
class RemovalCalibration:
    """A calibration of Guo et al.'s Gaussian loss perturbation, with its safe-side re-check.

    Attributes:
      sigma: standard deviation of each coordinate of b.
      removals: number of removals of residual ``eps_prime`` each that ``sigma`` supports.
      budget: the accumulated residual that ``sigma`` certifies at (epsilon, delta) (a lower
        end: the true budget is at least this).
      method: ``"theorem3"`` (Theorem 3 (ii) and Algorithm 2, epsilon <= 1) or ``"exact"``
        (the exact Gaussian mechanism, any epsilon).
      checked_delta: for ``"exact"``, the 50-digit exact delta at the answer (<= delta); for
        ``"theorem3"``, 1.5 exp(-c^2/2) (= delta).
      neighbour: the adjacent answer on the unsafe side (sigma slightly smaller, or one more
        removal), which fails the target.
    """

    sigma: float
    removals: int
    eps_prime: float
    epsilon: float
    delta: float
    budget: float
    method: str
    checked_delta: float
    neighbour: float | int
    notes: tuple[str, ...]
    provenance: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The calibration as plain JSON data."""
        return {k: (dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(self).items()}


def _check_inputs(*, epsilon: float, delta: float, eps_prime: float, method: str) -> None:
    if method not in ("theorem3", "exact"):
        raise BoundError(f"method must be 'theorem3' or 'exact', got {method!r}")
    for name, value in (("epsilon", epsilon), ("eps_prime", eps_prime)):
        if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise PreconditionError(f"{name} must be a positive finite number, got {value!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise PreconditionError(f"delta must lie in (0, 1), got {delta!r}")
    if method == "theorem3" and epsilon > 1:
        raise PreconditionError(
            f"guo2020:thm3ii (Theorem 3 (ii)): requires epsilon <= 1 (Dwork-Roth Thm 3.22), got "
            f"epsilon={epsilon}; use method='exact' for the exact Gaussian-mechanism calibration"
        )


def _budget_interval(*, sigma: float, epsilon: float, delta: float) -> tuple[Any, Any]:
    """Interval enclosure of sigma epsilon / c (Algorithm 2's budget)."""
    ev = ALG2_BUDGET.evaluate(precision="interval", digits=40, sigma=sigma, epsilon=epsilon,
                              delta=delta)
    return ev.lower, ev.upper


def sigma_for_removals(
    *, removals: int, eps_prime: float, epsilon: float, delta: float, method: Method = "theorem3"
) -> RemovalCalibration:
    """Least sigma that certifies ``removals`` removals of residual ``eps_prime`` each.

    ``"theorem3"``: sigma = c T eps'/epsilon (Theorem 3 (ii) with the accumulated residual
    T eps' of guo2020:multiple), rounded up from an interval enclosure; refused for epsilon > 1.
    ``"exact"``: the exact Gaussian mechanism with sensitivity T eps' (any epsilon): the least
    sigma whose exact delta(epsilon) is <= delta, re-checked at 50 digits.
    """
    _check_inputs(epsilon=epsilon, delta=delta, eps_prime=eps_prime, method=method)
    if isinstance(removals, bool) or not isinstance(removals, int) or removals < 1:
        raise PreconditionError(f"removals must be a positive integer, got {removals!r}")
    with iv_precision(40):
        total = mpmath.iv.mpf(eps_prime) * removals
        _, total_hi = interval_endpoints(total)
    provenance = {"bound": "guo2020:thm3ii/sigma" if method == "theorem3" else "exact Gaussian",
                  "citation": THM3II.citation.describe(),
                  "accumulation": MULTIPLE.citation.describe()}
    if method == "theorem3":
        ev = THM3II_SIGMA.evaluate(precision="interval", digits=40, eps_prime=total_hi,
                                   epsilon=epsilon, delta=delta)
        sigma_value = ev.certified_upper
        # Re-check: the budget at this sigma covers the accumulated residual.
        lo, _ = _budget_interval(sigma=sigma_value, epsilon=epsilon, delta=delta)
        if not lo >= total_hi:  # pragma: no cover - rounding up cannot make it smaller
            raise SolverError("guo2020 calibration: the re-check of the budget failed")
        neighbour = float_down(mpmath.mpf(sigma_value) * (1 - mpmath.mpf("1e-9")))
        _, nb_hi = _budget_interval(sigma=neighbour, epsilon=epsilon, delta=delta)
        if nb_hi >= total_hi:  # pragma: no cover
            raise SolverError("guo2020 calibration: the neighbour also meets the target")
        return RemovalCalibration(
            sigma=sigma_value, removals=removals, eps_prime=float(eps_prime),
            epsilon=float(epsilon), delta=float(delta), budget=float_down(lo), method=method,
            checked_delta=float(theorem3_delta(c=c_of_delta(delta))), neighbour=neighbour,
            notes=("sigma rounded up from an interval enclosure of c T eps'/epsilon",),
            provenance=provenance,
        )
    mu = _largest_mu(epsilon=float(epsilon), delta=float(delta))
    with mpmath.workdps(EXACT_DIGITS):
        sigma_value = float_up(total_hi / mpmath.mpf(mu))
        checked = exact_gaussian_delta(epsilon=epsilon, mu=total_hi / mpmath.mpf(sigma_value))
    if not checked * (1 + _MP_MARGIN) <= delta:  # pragma: no cover - sigma only grew
        raise SolverError("guo2020 exact calibration: the re-check failed")
    neighbour = float_down(mpmath.mpf(sigma_value) * (1 - mpmath.mpf("1e-9")))
    with mpmath.workdps(EXACT_DIGITS):
        neighbour_mu = total_hi / mpmath.mpf(neighbour)
    if exact_gaussian_delta(epsilon=epsilon, mu=neighbour_mu) <= delta:
        raise SolverError("guo2020 exact calibration: the neighbour also meets the target")
    return RemovalCalibration(
        sigma=sigma_value, removals=removals, eps_prime=float(eps_prime), epsilon=float(epsilon),
        delta=float(delta), budget=float(total_hi), method=method, checked_delta=float(checked),
        neighbour=neighbour,
        notes=("exact Gaussian mechanism (Balle-Wang 2018, Thm 8) with sensitivity T eps'; "
               "re-checked at 50 digits (accurate, not interval-rigorous)",),
        provenance=provenance,
    )


def removals_supported(
    *, sigma: float, eps_prime: float, epsilon: float, delta: float, method: Method = "theorem3"
) -> RemovalCalibration:
    """Largest number T of removals of residual ``eps_prime`` each that ``sigma`` certifies.

    ``"theorem3"``: the largest T with T eps' <= sigma epsilon / c (Algorithm 2's budget, lower
    end of an interval enclosure); ``"exact"``: the largest T whose accumulated residual T eps'
    keeps the exact Gaussian delta(epsilon) <= delta. T = 0 means not even one removal.
    """
    _check_inputs(epsilon=epsilon, delta=delta, eps_prime=eps_prime, method=method)
    if not (isinstance(sigma, (int, float)) and sigma > 0 and math.isfinite(sigma)):
        raise PreconditionError(f"sigma must be a positive finite number, got {sigma!r}")
    provenance = {"bound": "guo2020:alg2/budget" if method == "theorem3" else "exact Gaussian",
                  "citation": ALG2_BUDGET.citation.describe(),
                  "accumulation": MULTIPLE.citation.describe()}
    with iv_precision(40):
        if method == "theorem3":
            budget_lo, _ = _budget_interval(sigma=sigma, epsilon=epsilon, delta=delta)
            note = "largest T with T eps' <= lower end of sigma epsilon / c"
        else:
            mu = _largest_mu(epsilon=float(epsilon), delta=float(delta))
            budget_lo, _ = interval_endpoints(mpmath.iv.mpf(mu) * mpmath.iv.mpf(sigma))
            note = "largest T with T eps' <= mu* sigma, mu* the largest safe exact-Gaussian ratio"
        ratio_lo, _ = interval_endpoints(mpmath.iv.mpf(budget_lo) / mpmath.iv.mpf(eps_prime))
    count = int(mpmath.floor(ratio_lo))  # the lower end: a count that is safe
    # Re-check with exact rationals: T eps' <= budget < (T + 1) eps'.
    man, exp = budget_lo.man_exp
    exact_budget = Fraction(int(man)) * Fraction(2) ** int(exp) if man else Fraction(0)
    if not (count * Fraction(eps_prime) <= exact_budget < (count + 1) * Fraction(eps_prime)):
        raise SolverError("guo2020 calibration: the re-check of the count failed")  # pragma: no cover
    checked = (theorem3_delta(c=c_of_delta(delta)) if method == "theorem3" else
               _exact_delta_at(epsilon=epsilon, total=count * Fraction(eps_prime), sigma=sigma)
               if count > 0 else mpmath.mpf(0))
    return RemovalCalibration(
        sigma=float(sigma), removals=count, eps_prime=float(eps_prime), epsilon=float(epsilon),
        delta=float(delta), budget=float_down(budget_lo), method=method, checked_delta=float(checked),
        neighbour=count + 1, notes=(note,), provenance=provenance,
    )
