"""Sekhari, Acharya, Kamath, Suresh 2021, "Remember What You Want to Forget": the removal's
sensitivity and the noise of its Algorithm 2, declared for the bound engine (``bounds`` only).

Removing m of n points from the minimiser w_hat of F(w) = (1/n) sum f(w, z) (f L-Lipschitz,
lambda-strongly convex, with an M-Lipschitz Hessian) by one Newton step with the retained
Hessian gives w_bar with ||w_bar - w_hat'|| <= gamma = 2 M L^2 m^2 / (lambda^3 n^2), w_hat' the
minimiser on the retained points; Algorithm 2 publishes w_bar + N(0, sigma^2 I). Constants and
what could not be checked against the paper: README.md.
"""

from __future__ import annotations

import sympy as sp

from bounds.declarations import Bound, Citation, Guarantee, GuaranteeKind, Parameter, Precondition
from bounds.registry import register
from bounds.values import symbols

REFERENCE = ("Sekhari, Acharya, Kamath, Suresh. Remember What You Want to Forget: Algorithms "
             "for Machine Unlearning. NeurIPS 2021 (arXiv:2103.03279)")
L, M, lam, m, n, sigma, alpha, epsilon, delta = symbols("L M lam m n sigma alpha epsilon delta")
GAMMA = 2 * M * L**2 * m**2 / (lam**3 * n**2)

PARAMETERS = (
    Parameter("L", "Lipschitz constant of each loss f(., z)", lower=0, lower_open=True),
    Parameter("M", "Lipschitz constant of each loss's Hessian", lower=0, lower_open=True),
    Parameter("lam", "strong convexity of each loss f(., z)", lower=0, lower_open=True),
    Parameter("m", "number of points removed", lower=1, integer=True),
    Parameter("n", "number of training points", lower=2, integer=True),
)
FEWER = Precondition(sp.Lt(m, n), "m < n: some data is retained")
ASSUMPTIONS = ("w_hat and w_hat' are the exact minimisers of the empirical losses on S and on "
               "S minus U", "f(., z) is L-Lipschitz, lambda-strongly convex and has an "
               "M-Lipschitz Hessian on a set holding w_hat and w_hat'")

SENSITIVITY = register(Bound(
    id="sekhari2021:alg2/gamma",
    title="Newton removal error ||w_bar - w_hat'|| <= gamma = 2 M L^2 m^2 / (lambda^3 n^2)",
    citation=Citation("sekhari2021", REFERENCE, "", "Algorithm 2, gamma",
                      "Section 4 (the lemma bounding the Newton step's error)"),
    parameters=PARAMETERS, expression=GAMMA, preconditions=(FEWER,), assumptions=ASSUMPTIONS,
    guarantee=Guarantee(GuaranteeKind.SENSITIVITY, "the distance between the Newton-step "
                        "model w_bar and the retrained minimiser w_hat' (both deterministic) is "
                        "at most the value"),
    monotone={"L": "increasing", "M": "increasing", "lam": "decreasing", "m": "increasing",
              "n": "decreasing"},
    example={"L": 2, "M": "1/10", "lam": "1/10", "m": 1, "n": 280},
))

RENYI = register(Bound(
    id="sekhari2021:alg2/renyi",
    title="Rényi unlearning of Algorithm 2: alpha gamma^2 / (2 sigma^2)",
    citation=Citation("sekhari2021", REFERENCE, "", "Algorithm 2, gamma, with the Gaussian "
                      "mechanism's Rényi curve (Mironov 2017, Proposition 7)", "Section 4"),
    parameters=(*PARAMETERS, Parameter("sigma", "standard deviation of the output noise",
                                       lower=0, lower_open=True),
                Parameter("alpha", "Rényi order", lower=1, lower_open=True)),
    expression=alpha * GAMMA**2 / (2 * sigma**2), preconditions=(FEWER,),
    assumptions=(*ASSUMPTIONS, "the unlearned model w_bar + N(0, sigma^2 I) is compared with "
                 "the retrained one w_hat' + N(0, sigma^2 I) (the paper's unlearning definition)"),
    guarantee=Guarantee(GuaranteeKind.RENYI_UNLEARNING, "D_alpha between the unlearned and "
                        "the retrained output laws, in both directions, is at most the value",
                        renyi_order="alpha"),
    variant="improved",
    monotone={"sigma": "decreasing", "alpha": "increasing", "lam": "decreasing",
              "n": "decreasing", "m": "increasing"},
    notes=("Not printed in the paper: its gamma composed with the exact Rényi curve of the "
           "Gaussian mechanism, so that the toolkit's best conversion to (epsilon, delta) "
           "applies at any epsilon.",),
    example={"L": 2, "M": "1/10", "lam": "1/10", "m": 1, "n": 280, "sigma": "1/20", "alpha": 10},
))

SIGMA = register(Bound(
    id="sekhari2021:alg2/sigma",
    title="Algorithm 2's noise sigma = (gamma / epsilon) sqrt(2 ln(1.25 / delta))",
    citation=Citation("sekhari2021", REFERENCE, "", "Algorithm 2, sigma", "Section 4"),
    parameters=(*PARAMETERS, Parameter("epsilon", "target epsilon", lower=0, lower_open=True,
                                       upper=1, upper_open=True),
                Parameter("delta", "target delta", lower=0, lower_open=True, upper=1,
                          upper_open=True)),
    expression=GAMMA / epsilon * sp.sqrt(2 * sp.log(sp.Rational(5, 4) / delta)),
    preconditions=(FEWER,), assumptions=(*ASSUMPTIONS, "epsilon < 1: the classical Gaussian "
                                         "mechanism (Dwork and Roth 2014, Theorem A.1)"),
    guarantee=Guarantee(GuaranteeKind.NOISE_SCALE, "(epsilon, delta)-unlearning for every "
                        "sigma at least the value"),
    monotone={"epsilon": "decreasing", "delta": "decreasing", "lam": "decreasing"},
    example={"L": 2, "M": "1/10", "lam": "1/10", "m": 1, "n": 280, "epsilon": "1/2",
             "delta": "1/280"},
))
