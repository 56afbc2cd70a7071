"""Exact ground truth for the PNSGD bounds: quadratic losses without projection.

For f(x; a_i) = (1/2)(x - a_i)^T H (x - a_i) with H = diag(h), m <= h_k <= L, one PNSGD step on
mini-batch j is the linear Gaussian map

    x <- (I - eta H) x + eta H abar_j + sqrt(2 eta sigma^2) W,     abar_j = mean of a_i over B^j,

so every law is Gaussian with diagonal covariance. This module iterates that recursion exactly in
mpmath, step by step over the cyclic batches, for the means and variances of: the stationary law
of an epoch (the fixed point of the affine epoch map, solved exactly), K unlearning epochs on the
updated dataset, and chains of sequential requests. The Rényi divergence of two Gaussians is
then closed form (Gil, Alajaji and Linder 2013). Nothing here uses the declarations except to
compare with them: ``chien2024:exact-quadratic`` must equal the isotropic case, and every
applicable upper bound must be at least the exact value.

Correspondence with the bounds: replacing a_{i0} by a_{i0} + u changes the gradient by -H u for
every x, so the gradient-difference bound of Remark 3.6 is 2M = ||H u||; R = infinity (no
projection) is R = 10^30 here; c = 1 - eta m with m = min h.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bounds

DIGITS = 50
NO_PROJECTION = 10**30
FEW = settings(deadline=None, max_examples=15, suppress_health_check=list(HealthCheck))


@pytest.fixture(autouse=True)
def _precision():
    with mpmath.workdps(DIGITS):
        yield


def mpf(x: object) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


# --------------------------------------------------------------------------------------------
# The linear Gaussian process
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gaussian:
    """N(mean, diag(var))."""

    mean: tuple
    var: tuple


@dataclass(frozen=True)
class Quadratic:
    """PNSGD on (1/2)(x - a_i)^T diag(h) (x - a_i), cyclic batches B^j = {jb, ..., jb + b - 1}."""

    h: tuple  # curvatures, m <= h_k <= L
    eta: mpmath.mpf
    sigma: mpmath.mpf
    b: int

    def steps(self, law: Gaussian, data: list, epochs: int) -> Gaussian:
        """``epochs`` passes over the batches of ``data``, one PNSGD step per batch."""
        mean, var = list(law.mean), list(law.var)
        per_epoch = len(data) // self.b
        noise = 2 * self.eta * self.sigma**2
        for _ in range(epochs):
            for j in range(per_epoch):
                batch = data[j * self.b:(j + 1) * self.b]
                for k, h in enumerate(self.h):
                    c = 1 - self.eta * h
                    abar = sum(a[k] for a in batch) / self.b
                    mean[k] = c * mean[k] + self.eta * h * abar
                    var[k] = c * c * var[k] + noise
        return Gaussian(tuple(mean), tuple(var))

    def stationary(self, data: list) -> Gaussian:
        """Fixed point of the epoch map x -> C x + v (+ noise): mean v/(1 - C), var w/(1 - C^2),
        where one epoch from the point mass at 0 gives (v, w) and C = diag(c_k^{n/b})."""
        zero = Gaussian(tuple(mpf(0) for _ in self.h), tuple(mpf(0) for _ in self.h))
        one_epoch = self.steps(zero, data, 1)
        per_epoch = len(data) // self.b
        contraction = [(1 - self.eta * h) ** per_epoch for h in self.h]
        return Gaussian(
            tuple(v / (1 - q) for v, q in zip(one_epoch.mean, contraction, strict=True)),
            tuple(w / (1 - q * q) for w, q in zip(one_epoch.var, contraction, strict=True)),
        )


def renyi_gaussian(alpha: mpmath.mpf, p: Gaussian, q: Gaussian) -> mpmath.mpf:
    """D_alpha(N(mu1, S1) || N(mu2, S2)) for diagonal covariances (Gil-Alajaji-Linder):
    (alpha/2) d^T S_a^{-1} d - log(det S_a / (det S1^{1-alpha} det S2^alpha)) / (2(alpha - 1)),
    S_a = alpha S2 + (1 - alpha) S1 (must be positive definite)."""
    total = mpf(0)
    for m1, v1, m2, v2 in zip(p.mean, p.var, q.mean, q.var, strict=True):
        va = alpha * v2 + (1 - alpha) * v1
        assert va > 0, "the Rényi divergence is infinite"
        total += alpha / 2 * (m1 - m2) ** 2 / va
        total -= (mpmath.log(va) - (1 - alpha) * mpmath.log(v1) - alpha * mpmath.log(v2)) / (
            2 * (alpha - 1))
    return total


def renyi_difference(alpha: mpmath.mpf, p: Gaussian, q: Gaussian) -> mpmath.mpf:
    """max of both directions (Chien et al., Definition 2.1)."""
    return max(renyi_gaussian(alpha, p, q), renyi_gaussian(alpha, q, p))


# --------------------------------------------------------------------------------------------
# Problems drawn by hypothesis
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    process: Quadratic
    data: list
    shift: tuple  # u: the replaced point a_{i0} becomes a_{i0} + u
    alpha: mpmath.mpf
    m: mpmath.mpf
    L: mpmath.mpf
    M: mpmath.mpf  # half of ||H u||
    n: int
    K: int

    @property
    def per_epoch(self) -> int:
        return self.n // self.process.b

    @property
    def c(self) -> mpmath.mpf:
        return 1 - self.process.eta * self.m

    def replaced(self, data: list, index: int, times: int = 1) -> list:
        new = list(data)
        new[index] = tuple(a + times * u for a, u in zip(data[index], self.shift, strict=True))
        return new

    def params(self, **extra: object) -> dict:
        """The declared bounds' parameters (exact rationals where the problem has them)."""
        return {"alpha": self.alpha, "sigma": self.process.sigma, "eta": self.process.eta,
                "m": self.m, "L": self.L, "M": self.M, "n": self.n, "b": self.process.b,
                "K": self.K, "R": NO_PROJECTION, **extra}

    def unlearning_divergence(self, j0: int, slot: int = 0) -> mpmath.mpf:
        """Exact d_alpha between K unlearning epochs on D' from nu_D and nu_D' (retraining),
        the replaced point sitting at position ``slot`` of batch ``j0``."""
        index = j0 * self.process.b + slot
        updated = self.replaced(self.data, index)
        learned = self.process.stationary(self.data)
        unlearned = self.process.steps(learned, updated, self.K)
        retrained = self.process.stationary(updated)
        return renyi_difference(self.alpha, unlearned, retrained)


def _fractions(lo: float, hi: float):
    return st.floats(lo, hi).map(Fraction)


@st.composite
def problems(draw, *, isotropic: bool = False, max_batches: int = 4) -> Problem:
    dim = 1 if isotropic else draw(st.integers(1, 3))
    L = draw(_fractions(0.1, 4.0))
    m = L * draw(_fractions(0.05, 1.0))
    eta = min(draw(_fractions(0.05, 1.0)) / L, Fraction(95, 100) / m)  # c = 1 - eta m >= 0.05
    if isotropic:
        L = m
        eta = min(eta, 1 / m * Fraction(95, 100))
        h = (m,)
    else:
        h = (m, *(draw(st.fractions(m, L)) for _ in range(dim - 1)))
        L = max(h)
    b = draw(st.integers(1, 3))
    per_epoch = draw(st.integers(1, max_batches))
    n = b * per_epoch
    data = [tuple(mpf(draw(_fractions(-1, 1))) for _ in range(dim)) for _ in range(n)]
    shift = tuple(mpf(draw(st.sampled_from((-1, 1))) * draw(_fractions(0.05, 1)))
                  for _ in range(dim))
    h_mp = tuple(mpf(x) for x in h)
    grad_gap = mpmath.sqrt(sum((hk * uk) ** 2 for hk, uk in zip(h_mp, shift, strict=True)))
    # The theorems need eta <= 1/L of the numbers the engine sees (the mpf's exact binary
    # values): eta is rounded down and kept at most 1/L of the rounded L, so a draw at the
    # boundary eta = 1/L stays inside the domain.
    eta_mp = min(mpmath.fdiv(eta.numerator, eta.denominator, rounding="d"),
                 mpmath.fdiv(1, max(h_mp), rounding="d"))
    return Problem(
        process=Quadratic(h=h_mp, eta=eta_mp, sigma=mpf(draw(_fractions(0.05, 2.0))), b=b),
        data=data,
        shift=shift,
        alpha=1 + mpf(draw(_fractions(0.05, 50.0))),
        m=h_mp[0],
        L=max(h_mp),
        M=grad_gap / 2,
        n=n,
        K=draw(st.integers(1, 4)),
    )


def bound_value(bound_id: str, params: dict) -> mpmath.mpf:
    bound = bounds.get(bound_id)
    args = {k: _exact(v) for k, v in params.items() if k in bound.parameter_names}
    return bound.evaluate(precision="mp", digits=DIGITS, **args).value


def _exact(value: object) -> object:
    """An mpf passes to the engine as the exact binary rational it is."""
    if isinstance(value, mpmath.mpf):  # ``man`` carries no sign: take it from the value
        sign = -1 if value < 0 else 1
        return sign * Fraction(int(value.man)) * Fraction(2) ** int(value.exp) if value else 0
    return value


def exact_quadratic(problem: Problem, j0: int) -> mpmath.mpf:
    return bound_value("chien2024:exact-quadratic", problem.params(j0=j0))


# --------------------------------------------------------------------------------------------
# The derivation itself
# --------------------------------------------------------------------------------------------


def test_gaussian_renyi_against_numerical_integration():
    """The closed form against a direct integral of p^alpha q^(1-alpha) (1-d, unequal variances)."""
    p, q = Gaussian((mpf("0.3"),), (mpf("0.7"),)), Gaussian((mpf("-0.2"),), (mpf("1.1"),))
    alpha = mpf("2.5")
    with mpmath.workdps(30):
        def density(g: Gaussian, x):
            return mpmath.npdf(x, g.mean[0], mpmath.sqrt(g.var[0]))

        integral = mpmath.quad(lambda x: density(p, x) ** alpha * density(q, x) ** (1 - alpha),
                               [-mpmath.inf, 0, mpmath.inf])
        direct = mpmath.log(integral) / (alpha - 1)
        assert abs(direct - renyi_gaussian(alpha, p, q)) < mpf("1e-20")


@FEW
@given(problems())
def test_stationary_law_is_invariant(problem):
    """One more epoch of learning on D leaves the solved fixed point unchanged."""
    law = problem.process.stationary(problem.data)
    again = problem.process.steps(law, problem.data, 1)
    for a, b in zip(law.mean + law.var, again.mean + again.var, strict=True):
        assert abs(a - b) <= mpf(10) ** -40 * max(abs(a), 1)


def rounding_floor(problem: Problem) -> mpmath.mpf:
    """Absolute error of a DIGITS-digit evaluation of the divergence, from its conditioning.

    The variance part of the Gaussian Rényi divergence is a difference of logarithms,
    (log va - (1 - alpha) log v1 - alpha log v2) / (2 (alpha - 1)), of variances that agree to
    all digits (unlearning keeps the stationary variance): each log carries an absolute error
    of a few units of 10^-DIGITS, amplified by the weights (|1 - alpha| + alpha + 1)/(2|alpha - 1|).
    The divergence itself is ~c^(2 K n/b) small, so its relative error is not bounded when
    eta is close to 1/m (c close to 0): an absolute floor, not a wider relative tolerance.
    """
    retrained = problem.process.stationary(problem.data)
    alpha = problem.alpha
    weight = (abs(1 - alpha) + alpha + 1) / (2 * abs(alpha - 1))
    logs = sum(abs(mpmath.log(v)) + 1 for v in retrained.var)
    return mpf(10) ** (4 - DIGITS) * weight * logs


def assert_matches_ground_truth(problem: Problem, j0: int, slot: int) -> None:
    exact = problem.unlearning_divergence(j0, slot)
    declared = exact_quadratic(problem, j0)
    assert abs(exact - declared) <= mpf(10) ** -25 * exact + rounding_floor(problem), (exact, declared)


@FEW
@given(problems(isotropic=True), st.data())
def test_declared_exact_quadratic_is_the_isotropic_ground_truth(problem, data):
    j0 = data.draw(st.integers(0, problem.per_epoch - 1))
    slot = data.draw(st.integers(0, problem.process.b - 1))
    assert_matches_ground_truth(problem, j0, slot)


def test_exact_quadratic_matches_with_a_step_close_to_one_over_m():
    """c = 1 - eta m = 0.05: the divergence is ~4e-30 while the variance logs round at 1e-50."""
    process = Quadratic(h=(mpf(1),), eta=mpf(Fraction(95, 100)), sigma=mpf(1), b=2)
    problem = Problem(process=process, data=[(mpf(0),)] * 8, shift=(mpf(-1),), alpha=mpf(3),
                      m=mpf(1), L=mpf(1), M=mpf("0.5"), n=8, K=2)
    exact = problem.unlearning_divergence(0, 0)
    assert mpf("1e-30") < exact < mpf("1e-29")  # far below the 1e-50 absolute rounding scale
    assert_matches_ground_truth(problem, 0, 0)


# --------------------------------------------------------------------------------------------
# Bounds are above the truth
# --------------------------------------------------------------------------------------------

SINGLE_REQUEST_BOUNDS = (
    "chien2024:cor3.7",
    "chien2024:cor3.7/optimal-shift",
    "chien2024:cor3.7/exact-noise",
    "chien2024:cor3.7/tight",
    "chien2024:alg7",
    "chien2024:thm3.11+cor3.7",
    "chien2024:thm3.11+cor3.7/optimal-shift",
)


@FEW
@given(problems(), st.data())
def test_single_request_bounds_dominate_the_exact_divergence(problem, data):
    j0 = data.draw(st.integers(0, problem.per_epoch - 1))
    slot = data.draw(st.integers(0, problem.process.b - 1))
    exact = problem.unlearning_divergence(j0, slot)
    params = problem.params(s=1)
    for bound_id in SINGLE_REQUEST_BOUNDS:
        assert bound_value(bound_id, params) >= exact, bound_id


@FEW
@given(problems())
def test_pabi_lemma_dominates_the_exact_divergence(problem):
    """Lemma 2.6 with the papers' s^2 = eta sigma^2, Z = W_inf = ||mean shift|| (worst batch)."""
    exact = problem.unlearning_divergence(problem.per_epoch - 1)
    z = bound_value("chien2024:thm3.11", problem.params(s=1))
    lemma = {"alpha": problem.alpha, "s": mpmath.sqrt(problem.process.eta) * problem.process.sigma,
             "Z": z, "c": problem.c, "N": problem.K * problem.per_epoch}
    for bound_id in ("chien2024:lem2.6", "chien2024:lem2.6/optimal-shift"):
        assert bound_value(bound_id, lemma) >= exact * (1 - mpf(10) ** -30), bound_id


@FEW
@given(problems())
def test_cor38_dominates_the_mean_over_batch_positions(problem):
    """Joint convexity (Ye-Shokri): with j0 uniform, d_alpha(mixtures) <= log-mean-exp over j0 of
    (alpha - 1) d_alpha(conditional) / (alpha - 1). Corollary 3.8 must be above that mean."""
    alpha = problem.alpha
    conditional = [problem.unlearning_divergence(j0) for j0 in range(problem.per_epoch)]
    mean = mpmath.log(sum(mpmath.exp((alpha - 1) * d) for d in conditional) / len(conditional))
    assert bound_value("chien2024:cor3.8", problem.params()) >= mean / (alpha - 1)


@FEW
@given(problems(max_batches=3), st.integers(2, 4))
def test_sequential_bounds_dominate_the_exact_divergence(problem, requests):
    """Requests s = 1..S each replace the same slot of the last batch by a further +u, then run K
    epochs from the previous request's output; compare with retraining on D_s."""
    index = problem.n - 1  # worst placement: the last batch
    current = problem.process.stationary(problem.data)
    dataset = problem.data
    for s in range(1, requests + 1):
        dataset = problem.replaced(dataset, index)
        unlearned = problem.process.steps(current, dataset, problem.K)
        retrained = problem.process.stationary(dataset)
        exact = renyi_difference(problem.alpha, unlearned, retrained)
        for bound_id in ("chien2024:thm3.11+cor3.7", "chien2024:thm3.11+cor3.7/optimal-shift"):
            assert bound_value(bound_id, problem.params(s=s)) >= exact, (bound_id, s)
        current = unlearned


@FEW
@given(problems(isotropic=True, max_batches=3), st.integers(1, 5))
def test_thm311_distance_is_attained_in_the_isotropic_worst_case(problem, requests):
    """W_inf between the law before request s and nu_{D_s} is the mean gap (equal covariances)
    and equals Z^{(s)} when every replacement pushes the same way from the last batch."""
    index = problem.n - 1
    current = problem.process.stationary(problem.data)
    dataset = problem.data
    for s in range(1, requests + 1):
        dataset = problem.replaced(dataset, index)
        target = problem.process.stationary(dataset)
        gap = abs(current.mean[0] - target.mean[0])
        z = bound_value("chien2024:thm3.11", problem.params(s=s))
        assert abs(gap - z) <= mpf(10) ** -25 * z, (s, gap, z)
        current = problem.process.steps(current, dataset, problem.K)


@FEW
@given(problems(isotropic=True), st.integers(0, 6))
def test_lem33_is_attained_from_a_common_start(problem, epochs):
    """Lemma 3.3 at finite T: learning on D and D' from the same point, the mean gap after T
    epochs equals the bound at the replaced point's batch (isotropic, aligned)."""
    start = Gaussian((mpf(0),), (mpf(0),))
    for j0 in range(problem.per_epoch):
        updated = problem.replaced(problem.data, j0 * problem.process.b)
        gap = abs(problem.process.steps(start, problem.data, epochs).mean[0]
                  - problem.process.steps(start, updated, epochs).mean[0])
        lemma = bound_value("chien2024:lem3.3", {**problem.params(), "T": epochs, "j0": j0})
        assert abs(gap - lemma) <= mpf(10) ** -25 * max(lemma, mpf(10) ** -30), (j0, gap, lemma)


@FEW
@given(problems(isotropic=True), st.integers(1, 6), st.data())
def test_batch_corollary_is_attained_and_the_printed_form_is_loose(problem, epochs, data):
    """S aligned replacements in the last batch attain the corrected Corollary J.1; the printed
    geometric factor (1 - c^T)/(1 - c) is strictly larger whenever b < n."""
    b = problem.process.b
    group = data.draw(st.integers(1, b))
    updated = problem.data
    for slot in range(group):
        updated = problem.replaced(updated, problem.n - b + slot)
    start = Gaussian((mpf(0),), (mpf(0),))
    gap = abs(problem.process.steps(start, problem.data, epochs).mean[0]
              - problem.process.steps(start, updated, epochs).mean[0])
    params = {**problem.params(), "T": epochs, "S": group}
    corrected = bound_value("chien2024:corJ.1", params)
    printed = bound_value("chien2024:corJ.1/as-printed", params)
    assert abs(gap - corrected) <= mpf(10) ** -25 * corrected
    if problem.per_epoch > 1 and epochs > 1:
        assert printed > corrected * (1 + mpf(10) ** -30)


def test_tight_bound_exceeds_the_truth_by_exactly_one_over_one_minus_c_to_the_2N():
    """Isotropic worst case (j0 = n/b - 1): /tight = exact / (1 - c^{2N}), N = K n/b. This is
    the only slack left in the improved bound; as N grows it vanishes."""
    for m, eta, n, b, k in ((Fraction(1, 2), 1, 12, 3, 1), (Fraction(1, 10), 2, 6, 2, 3),
                            (Fraction(3, 4), Fraction(1, 3), 4, 4, 2)):
        problem_params = {"alpha": 7, "sigma": Fraction(3, 10), "eta": eta, "m": m, "L": m, "M": 1,
                          "n": n, "b": b, "K": k, "R": NO_PROJECTION}
        per_epoch = n // b
        tight = bound_value("chien2024:cor3.7/tight", problem_params)
        exact = bound_value("chien2024:exact-quadratic", {**problem_params, "j0": per_epoch - 1})
        c = 1 - mpf(eta) * mpf(m)
        assert abs(tight * (1 - c ** (2 * k * per_epoch)) - exact) <= mpf(10) ** -40 * exact
        cor = bound_value("chien2024:cor3.7", problem_params)
        assert abs(cor * (1 - c**2) / 2 - exact) <= mpf(10) ** -40 * exact  # ratio 2/(1 - c^2)


def _exact_isotropic_divergence(problem: Problem, j0: int) -> Fraction:
    """The isotropic d_alpha of ``Problem.unlearning_divergence`` (replaced point in slot 0 of
    batch j0) as an exact rational, from the same inputs the engine receives (each mpf read as
    the binary rational it is).

    Why exact: the divergence can be ~1e-32 while the means and variances are O(1), so in
    50-digit arithmetic the mean gap and the log-determinant terms cancel to a handful of correct
    digits (c = 0.05, n = 3, b = 1, K = 4, alpha = 2 fails there). In rationals nothing
    cancels: the variance recursion does not depend on the data, K whole epochs from the
    stationary law keep the stationary variance v, so both laws share v and
    d_alpha = alpha (mean gap)^2 / (2 v) in both directions, with no logarithm left."""
    def exact(value: object) -> Fraction:
        return Fraction(_exact(value))

    (h,) = (exact(x) for x in problem.process.h)
    process = Quadratic(h=(h,), eta=exact(problem.process.eta), sigma=exact(problem.process.sigma),
                        b=problem.process.b)
    data = [(exact(a),) for (a,) in problem.data]
    updated = list(data)
    updated[j0 * process.b] = (data[j0 * process.b][0] + exact(problem.shift[0]),)

    def stationary(points: list) -> Gaussian:
        one_epoch = process.steps(Gaussian((Fraction(0),), (Fraction(0),)), points, 1)
        contraction = (1 - process.eta * h) ** problem.per_epoch
        return Gaussian((one_epoch.mean[0] / (1 - contraction),),
                        (one_epoch.var[0] / (1 - contraction**2),))

    unlearned = process.steps(stationary(data), updated, problem.K)
    retrained = stationary(updated)
    assert unlearned.var == retrained.var  # the stationary variance survives whole epochs exactly
    gap = unlearned.mean[0] - retrained.mean[0]
    return exact(problem.alpha) * gap**2 / (2 * retrained.var[0])


# The engine evaluates /tight, a product and quotient of positive terms with 1 - c >= 0.05 (no
# cancellation), in DIGITS-digit arithmetic: a few dozen correctly rounded operations. Ten digits
# of headroom over that rounding error; the ground truth itself is exact.
ENGINE_RELATIVE_ERROR = mpf(10) ** (10 - DIGITS)


@FEW
@given(problems(isotropic=True))
def test_tight_ratio_against_the_simulated_process(problem):
    """/tight = exact / (1 - c^{2N}) on the simulated isotropic process, against an exact
    rational ground truth (see ``_exact_isotropic_divergence``)."""
    j0 = problem.per_epoch - 1
    exact = _exact_isotropic_divergence(problem, j0)
    # The 50-digit simulation agrees in absolute terms: its means are O(1), its variances within
    # [1e-5, 1e5] and alpha/(alpha - 1) <= 21, so its rounding error is far below 1e-45; relative
    # agreement is what cancellation destroys.
    assert abs(mpf(exact) - problem.unlearning_divergence(j0)) <= mpf(10) ** (5 - DIGITS)
    tight = bound_value("chien2024:cor3.7/tight", problem.params())
    big_n = problem.K * problem.per_epoch
    c = 1 - Fraction(_exact(problem.process.eta)) * Fraction(_exact(problem.m))
    assert exact > 0
    ratio = tight * mpf(1 - c ** (2 * big_n)) / mpf(exact)
    assert abs(ratio - 1) <= ENGINE_RELATIVE_ERROR, (ratio, exact)


# --------------------------------------------------------------------------------------------
# Finite burn-in: the time-shift certificate (docs/improved.md (e)) against the exact laws
# --------------------------------------------------------------------------------------------
#
# Learning starts from nu_0 = N(x0, v) with v = 2 eta sigma^2/(1 - c^2), the fixed point of the
# per-step variance map, so every law below is N(mean, v) exactly (in rationals) and
# d_alpha = alpha (mean gap)^2/(2 v) in both directions. Without projection the laws are not on a
# ball C_R; the proof uses R only through "two laws of the processes are at W_inf <= 2R", and for
# Gaussians with one covariance W_inf is the mean gap. So R is taken as half the spread of the
# means of every law the proof compares: they then all lie in one interval of length 2R, the
# role C_R plays for PNSGD.


@dataclass(frozen=True)
class ExactIsotropic:
    """The isotropic problem in rationals (each mpf of the drawn problem read exactly)."""

    process: Quadratic
    data: list
    shift: Fraction
    c: Fraction
    variance: Fraction


def _exact_isotropic(problem: Problem) -> ExactIsotropic:
    def exact(value: object) -> Fraction:
        return Fraction(_exact(value))

    (h,) = (exact(x) for x in problem.process.h)
    eta, sigma = exact(problem.process.eta), exact(problem.process.sigma)
    c = 1 - eta * h
    return ExactIsotropic(
        process=Quadratic(h=(h,), eta=eta, sigma=sigma, b=problem.process.b),
        data=[(exact(a),) for (a,) in problem.data],
        shift=exact(problem.shift[0]),
        c=c,
        variance=2 * eta * sigma**2 / (1 - c**2),
    )


def _epoch_means(process: Quadratic, law: Gaussian, data: list, epochs: int) -> list[Gaussian]:
    """The laws at epochs 0, 1, ..., ``epochs`` of PNSGD on ``data`` from ``law``."""
    laws = [law]
    for _ in range(epochs):
        laws.append(process.steps(laws[-1], data, 1))
    return laws


def _stationary_exact(problem: ExactIsotropic, data: list, per_epoch: int) -> Gaussian:
    zero = Gaussian((Fraction(0),), (Fraction(0),))
    one_epoch = problem.process.steps(zero, data, 1)
    contraction = problem.c**per_epoch
    return Gaussian((one_epoch.mean[0] / (1 - contraction),), (problem.variance,))


def _half_spread(laws: list[Gaussian]) -> Fraction:
    means = [law.mean[0] for law in laws]
    return (max(means) - min(means)) / 2


def _exact_divergence(alpha: Fraction, p: Gaussian, q: Gaussian) -> Fraction:
    assert p.var == q.var  # one covariance: no log-determinant term, both directions equal
    return alpha * (p.mean[0] - q.mean[0]) ** 2 / (2 * p.var[0])


@FEW
@given(problems(isotropic=True), st.integers(1, 5), st.data())
def test_time_shift_dominates_the_exact_divergence_at_finite_burn_in(problem, burn_in, data):
    """Learn T epochs on D from nu_0, unlearn K epochs on D' (K up to T + 1, so both cases of the
    bound are drawn); the exact d_alpha to retraining T epochs on D' from nu_0 never exceeds
    chien2024:thm3.2/time-shift nor its /exact-noise form."""
    q = _exact_isotropic(problem)
    epochs = data.draw(st.integers(1, burn_in + 1), label="K")
    index = data.draw(st.integers(0, problem.n - 1), label="replaced index")
    start = Gaussian((Fraction(data.draw(st.integers(-40, 40), label="x0")),), (q.variance,))
    updated = list(q.data)
    updated[index] = (q.data[index][0] + q.shift,)
    learning = _epoch_means(q.process, start, q.data, burn_in)
    unlearning = _epoch_means(q.process, learning[-1], updated, epochs)
    retraining = _epoch_means(q.process, start, updated, burn_in + epochs)
    exact = _exact_divergence(Fraction(_exact(problem.alpha)), unlearning[-1], retraining[burn_in])
    radius = _half_spread(learning + unlearning + retraining)
    for bound_id in ("chien2024:thm3.2/time-shift", "chien2024:thm3.2/time-shift/exact-noise"):
        bound = bound_value(bound_id, {**problem.params(), "K": epochs, "T": burn_in, "R": radius})
        assert bound >= mpf(exact) * (1 - ENGINE_RELATIVE_ERROR), (bound_id, bound, exact)


@FEW
@given(problems(isotropic=True), st.integers(2, 6), st.data())
def test_time_shift_distance_is_attained_when_the_two_shifts_align(problem, burn_in, data):
    """K < T, the replaced point in the last batch and x0 far on the side that makes Lemma 3.3's
    gap and the burn-in gap point the same way: the mean gap is exactly c^{Kn/b}(Z_learn(T) +
    2R c^{(T-K)n/b}) with 2R = W_inf(nu_K^{D'}, nu_0), so the declaration equals the exact
    divergence times 2/(1 - c^2), PABI's own slack here (papers' 2 eta sigma^2, c^{2N}); the
    /exact-noise form, exactly 1/(1 - c^2)."""
    q = _exact_isotropic(problem)
    per_epoch = problem.per_epoch
    epochs = data.draw(st.integers(1, burn_in - 1), label="K")
    index = problem.n - problem.process.b  # slot 0 of the last batch
    updated = list(q.data)
    updated[index] = (q.data[index][0] + q.shift,)
    sign = 1 if q.shift > 0 else -1
    kick = 2 * q.process.eta * Fraction(_exact(problem.M)) / problem.process.b
    learn_gap = kick / (1 - q.c**per_epoch)  # >= Lemma 3.3's gap at any T
    far = 2 * learn_gap / ((1 - q.c ** (epochs * per_epoch))
                           * (1 - q.c ** ((burn_in - epochs) * per_epoch))) + 1
    x0 = _stationary_exact(q, updated, per_epoch).mean[0] + sign * far
    start = Gaussian((x0,), (q.variance,))
    learned = q.process.steps(start, q.data, burn_in)
    unlearned = q.process.steps(learned, updated, epochs)
    retrained = q.process.steps(start, updated, burn_in)
    exact = _exact_divergence(Fraction(_exact(problem.alpha)), unlearned, retrained)
    radius = abs(q.process.steps(start, updated, epochs).mean[0] - x0) / 2
    params = {**problem.params(), "K": epochs, "T": burn_in, "R": radius}
    bound = bound_value("chien2024:thm3.2/time-shift", params)
    ratio = bound * mpf((1 - q.c**2) / 2) / mpf(exact)
    assert abs(ratio - 1) <= ENGINE_RELATIVE_ERROR, ratio
    # With the algorithm's own noise variance the factor 2 goes: exactly 1/(1 - c^2) remains.
    tight = bound_value("chien2024:thm3.2/time-shift/exact-noise", params)
    assert tight >= mpf(exact) * (1 - ENGINE_RELATIVE_ERROR)
    assert abs(tight * mpf(1 - q.c**2) / mpf(exact) - 1) <= ENGINE_RELATIVE_ERROR


@FEW
@given(problems(isotropic=True, max_batches=3), st.integers(1, 4),
       st.lists(st.integers(1, 5), min_size=1, max_size=4), st.integers(-30, 30))
def test_time_shift_sequence_dominates_the_exact_divergence(problem, burn_in, schedule, x0):
    """Learn T epochs on D_0 from nu_0; request s replaces the last point by a further +u and
    runs K_s epochs on D_s (K_s may exceed T). After each request the exact d_alpha to retraining
    T epochs on D_s from nu_0 never exceeds chien2024:thm3.2+thm3.11/sequence/time-shift at
    sequence_start_distance's Z."""
    from bounds.papers.chien2024 import sequence_start_distance

    q = _exact_isotropic(problem)
    alpha = Fraction(_exact(problem.alpha))
    start = Gaussian((Fraction(x0),), (q.variance,))
    datasets = [q.data]
    for _ in schedule:
        updated = list(datasets[-1])
        updated[-1] = (updated[-1][0] + q.shift,)
        datasets.append(updated)
    chain = _epoch_means(q.process, start, q.data, burn_in)
    compared = list(chain) + [_stationary_exact(q, d, problem.per_epoch) for d in datasets]
    results = []
    for s, epochs in enumerate(schedule, start=1):
        unlearning = _epoch_means(q.process, chain[-1], datasets[s], epochs)
        retraining = _epoch_means(q.process, start, datasets[s], burn_in)
        chain += unlearning[1:]
        compared += unlearning[1:] + retraining
        results.append((s, epochs, unlearning[-1], retraining[-1]))
    radius = _half_spread(compared)
    for s, epochs, unlearned, retrained in results:
        exact = _exact_divergence(alpha, unlearned, retrained)
        z = sequence_start_distance(eta=q.process.eta, m=q.process.h[0], M=Fraction(_exact(problem.M)),
                                    n=problem.n, b=problem.process.b, T=burn_in, R=radius,
                                    sizes=[1] * s, epochs=list(schedule[:s]))
        params = {**problem.params(), "K": epochs, "T": burn_in, "R": radius, "Z": z,
                  "Kprev": sum(schedule[:s - 1])}
        for bound_id in ("chien2024:thm3.2+thm3.11/sequence/time-shift",
                         "chien2024:thm3.2+thm3.11/sequence/time-shift/exact-noise"):
            bound = bound_value(bound_id, params)
            assert bound >= mpf(exact) * (1 - ENGINE_RELATIVE_ERROR), (bound_id, s, bound, exact)
