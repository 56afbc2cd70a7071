"""Independent re-derivation of every ``guo2020:*`` bound from the text of seed 002, in mpmath.

Written from the paper (Section 3 and Appendix A) and its erratum, separately from
``bounds/papers/guo2020.py``: plain mpmath arithmetic at 60 digits, no sympy, no engine. The
tests compare the declarations with these functions in float, mp and interval mode.

Also here: a reference Newton removal for L2-regularised logistic regression with the loss
perturbation b (numpy, float64, damped Newton to a gradient norm near rounding), and the same in
one dimension at 50 digits with mpmath, used to check the bounds against the true residual and
to exhibit the erratum of Theorem 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np

DPS = 60


def _m(x: Any) -> mpmath.mpf:
    """An exact-ish mpf of a number, a decimal string or a fraction string ("1/4")."""
    if isinstance(x, str) and "/" in x:
        num, den = x.split("/")
        return mpmath.mpf(num) / mpmath.mpf(den)
    return mpmath.mpf(x)


def _c(delta: Any) -> mpmath.mpf:
    # Theorem 3 (ii): delta = 1.5 exp(-c^2/2)  <=>  c = sqrt(2 log(1.5/delta)).
    return mpmath.sqrt(2 * mpmath.log(mpmath.mpf(3) / 2 / _m(delta)))


def thm1(gamma, C, lam, n):
    # Theorem 1: ||H^{-1} Delta|| <= 2C/(lambda (n-1)), residual <= gamma (n-1) (2C/(lambda(n-1)))^2.
    u = 2 * _m(C) / (_m(lam) * (_m(n) - 1))
    return _m(gamma) * (_m(n) - 1) * u**2


def thm1_middle(gamma, n, update_norm):
    return _m(gamma) * (_m(n) - 1) * _m(update_norm) ** 2


def thm4(gamma, C, lam, n, m):
    # ||Delta^(m)|| <= 2 m C, Hessian of n - m points plus lambda (n - m) I.
    u = 2 * _m(m) * _m(C) / (_m(lam) * (_m(n) - _m(m)))
    return _m(gamma) * (_m(n) - _m(m)) * u**2


def thm4_middle(gamma, n, m, update_norm):
    return _m(gamma) * (_m(n) - _m(m)) * _m(update_norm) ** 2


def thm4_corrected(gamma, C, lam, n, m, b_norm):
    # Erratum: lambda ||w*|| <= C + ||b||/n, so ||Delta^(m)|| <= m (lambda ||w*|| + C).
    lam_w = _m(C) + _m(b_norm) / _m(n)
    delta_norm = _m(m) * (lam_w + _m(C))
    u = delta_norm / (_m(lam) * (_m(n) - _m(m)))
    return _m(gamma) * (_m(n) - _m(m)) * u**2


def thm1_corrected(gamma, C, lam, n, b_norm):
    return thm4_corrected(gamma, C, lam, n, 1, b_norm)


def gaussian_norm_tail(sigma, d, tau):
    # P(||b|| >= sigma sqrt(d) + sigma t) <= exp(-t^2/2) for b ~ N(0, sigma^2 I_d).
    t = mpmath.sqrt(-2 * mpmath.log(_m(tau)))
    return _m(sigma) * (mpmath.sqrt(_m(d)) + t)


def thm1_corrected_whp(gamma, C, lam, n, sigma, d, tau):
    return thm1_corrected(gamma, C, lam, n, gaussian_norm_tail(sigma, d, tau))


def thm4_corrected_whp(gamma, C, lam, n, m, sigma, d, tau):
    return thm4_corrected(gamma, C, lam, n, m, gaussian_norm_tail(sigma, d, tau))


def cor1(gamma, n, X_norm, update_norm, X_update_norm):
    return _m(gamma) * _m(X_norm) * _m(update_norm) * _m(X_update_norm)


def cor2(gamma, n, m, X_norm, update_norm, X_update_norm):
    return cor1(gamma, n, X_norm, update_norm, X_update_norm)


def multiple(T, eps_prime):
    # Induction on T: u_{T+1} = u_T + u', ||u'|| <= eps' (summed term by term when T is small).
    if int(T) <= 1000:
        return mpmath.fsum(_m(eps_prime) for _ in range(int(T)))
    return _m(T) * _m(eps_prime)


def thm2(epsilon):
    return _m(epsilon)


def thm3i(eps_prime, scale):
    # p(b) ~ exp(-(epsilon/eps') ||b||) = exp(-||b||/scale)  =>  epsilon = eps'/scale.
    return _m(eps_prime) / _m(scale)


def thm3ii(eps_prime, sigma, delta):
    # b ~ N(0, c eps'/epsilon) (standard deviation)  =>  epsilon = c eps'/sigma.
    return _c(delta) * _m(eps_prime) / _m(sigma)


def thm3ii_sigma(eps_prime, epsilon, delta):
    return _c(delta) * _m(eps_prime) / _m(epsilon)


def alg2_budget(sigma, epsilon, delta):
    # Algorithm 2 line 16: retrain when beta > sigma epsilon / c.
    return _m(sigma) * _m(epsilon) / _c(delta)


def thm5(eps_dp, eps_cr):
    return _m(eps_dp) + _m(eps_cr)


def thm5_delta(delta_dp, delta_cr):
    return _m(delta_dp) + _m(delta_cr)


REFERENCE: dict[str, Callable[..., mpmath.mpf]] = {
    "guo2020:thm1": thm1,
    "guo2020:thm1/middle": thm1_middle,
    "guo2020:thm4": thm4,
    "guo2020:thm4/middle": thm4_middle,
    "guo2020:thm1/corrected": thm1_corrected,
    "guo2020:thm4/corrected": thm4_corrected,
    "guo2020:thm1/corrected-whp": thm1_corrected_whp,
    "guo2020:thm4/corrected-whp": thm4_corrected_whp,
    "guo2020:cor1": cor1,
    "guo2020:cor2": cor2,
    "guo2020:multiple": multiple,
    "guo2020:thm2": thm2,
    "guo2020:thm3i": thm3i,
    "guo2020:thm3ii": thm3ii,
    "guo2020:thm3ii/literal": thm3ii,
    "guo2020:thm3ii/sigma": thm3ii_sigma,
    "guo2020:alg2/budget": alg2_budget,
    "guo2020:thm5": thm5,
    "guo2020:thm5/delta": thm5_delta,
}


def reference(bound_id: str, **params: Any) -> mpmath.mpf:
    """The reference value of ``bound_id`` at ``params`` (60 digits)."""
    with mpmath.workdps(DPS):
        return +REFERENCE[bound_id](**params)


def hockey_stick_delta(*, epsilon: Any, mu: Any, dps: int = 50) -> mpmath.mpf:
    """delta(epsilon) of N(mu, 1) against N(0, 1) by quadrature of (p - e^eps q)_+.

    The integrand is positive exactly for x > epsilon/mu + mu/2; integrated numerically,
    independently of the closed form used by the library.
    """
    with mpmath.workdps(dps):
        e, u = mpmath.mpf(epsilon), mpmath.mpf(mu)
        start = e / u + u / 2

        def integrand(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.npdf(x, u, 1) - mpmath.exp(e) * mpmath.npdf(x, 0, 1)

        # Past the start the integrand decays on the scale 1/start: break the range there.
        h = min(mpmath.mpf(1), 1 / max(start, mpmath.mpf(1)))
        points = [start] + [start + k * h for k in (1, 2, 4, 8, 16, 32, 64)] + [mpmath.inf]
        return mpmath.quad(integrand, points)


# ----------------------------------------------------------------------------------------------
# Reference Newton removal for logistic regression with the perturbation b
# ----------------------------------------------------------------------------------------------


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * z))  # no overflow for large |z|


def logistic_gradient(w: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float,
                      b: np.ndarray) -> np.ndarray:
    """Gradient of sum_i -log sigmoid(y_i w.x_i) + (lam n/2)||w||^2 + b.w (n = len(y))."""
    z = y * (X @ w)
    return X.T @ ((_sigmoid(z) - 1) * y) + lam * len(y) * w + b


def logistic_hessian(w: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    s = _sigmoid(y * (X @ w))
    return (X.T * (s * (1 - s))) @ X + lam * len(y) * np.eye(X.shape[1])


def gradient_rounding_envelope(w: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float,
                               b: np.ndarray) -> float:
    """An upper bound on the float64 error of ``logistic_gradient`` at ``w``, hence on the
    smallest gradient norm any float64 optimiser can be seen to reach.

    Each coordinate is a sum of n + 2 terms (n record terms c_i x_ij, lam n w_j, b_j), each
    formed with a few roundings: the standard bound gamma_k = k u / (1 - k u) on a k-term sum,
    with k = n + 8 to cover the products and the sigmoid's own relative error (a few ulps),
    times the sum of the terms' magnitudes; the Euclidean norm of the d coordinates adds sqrt(d).
    """
    u = 2.0**-53
    k = len(y) + 8
    gamma = k * u / (1 - k * u)
    coefficient = np.abs(_sigmoid(y * (X @ w)) - 1)
    magnitude = np.abs(X).T @ coefficient + lam * len(y) * np.abs(w) + np.abs(b)
    return float(gamma * np.linalg.norm(magnitude) * math.sqrt(X.shape[1]) + u * np.linalg.norm(b))


def logistic_minimiser(X: np.ndarray, y: np.ndarray, lam: float, b: np.ndarray) -> np.ndarray:
    """Exact (to rounding) minimiser of the perturbed objective.

    Damped Newton (Armijo on the objective) brings w into the region of quadratic convergence;
    there the objective's decrease falls below its own rounding and the line search stalls, so
    full Newton steps follow, and the iterate with the smallest computed gradient norm is kept.
    """
    w = np.zeros(X.shape[1])

    def objective(v: np.ndarray) -> float:
        return float(np.sum(np.logaddexp(0, -y * (X @ v))) + lam * len(y) / 2 * v @ v + b @ v)

    for _ in range(500):
        g = logistic_gradient(w, X, y, lam, b)
        step = np.linalg.solve(logistic_hessian(w, X, y, lam), g)
        t = 1.0
        while objective(w - t * step) > objective(w) - 1e-4 * t * (g @ step) and t > 1e-12:
            t /= 2
        if t <= 1e-12:
            break
        w_next = w - t * step
        if np.array_equal(w_next, w):
            break
        w = w_next
    best, best_norm = w, float(np.linalg.norm(logistic_gradient(w, X, y, lam, b)))
    for _ in range(8):
        w = w - np.linalg.solve(logistic_hessian(w, X, y, lam), logistic_gradient(w, X, y, lam, b))
        norm = float(np.linalg.norm(logistic_gradient(w, X, y, lam, b)))
        if norm < best_norm:
            best, best_norm = w, norm
    return best


def newton_removal(X: np.ndarray, y: np.ndarray, lam: float, b: np.ndarray, m: int) -> dict[str, float]:
    """Remove the last ``m`` rows by one Newton step (eq. 6); return the quantities of the bounds.

    ``residual`` is ||grad L_b(w^-; D \\ D_m)||; ``train_residual`` is the optimiser's own
    ||grad L_b(w*; D)|| (the theory assumes 0).
    """
    n = len(y)
    w = logistic_minimiser(X, y, lam, b)
    keep, gone = slice(0, n - m), slice(n - m, n)
    zg = y[gone] * (X[gone] @ w)
    delta = m * lam * w + X[gone].T @ ((_sigmoid(zg) - 1) * y[gone])
    v = np.linalg.solve(logistic_hessian(w, X[keep], y[keep], lam), delta)
    w_minus = w + v
    return {
        "residual": float(np.linalg.norm(logistic_gradient(w_minus, X[keep], y[keep], lam, b))),
        "train_residual": float(np.linalg.norm(logistic_gradient(w, X, y, lam, b))),
        "update_norm": float(np.linalg.norm(v)),
        "X_norm": float(np.linalg.norm(X[keep], 2)),
        "X_update_norm": float(np.linalg.norm(X[keep] @ v)),
        "delta_norm": float(np.linalg.norm(delta)),
        "train_envelope": gradient_rounding_envelope(w, X, y, lam, b),
        "residual_envelope": gradient_rounding_envelope(w_minus, X[keep], y[keep], lam, b),
    }


def erratum_example(*, dps: int = 50) -> dict[str, mpmath.mpf]:
    """A one-dimensional instance where Theorem 1's printed bound fails once b != 0.

    n = 2 points x = 1 with label -1, lambda = 8, b = -50, logistic loss, remove the second
    point. Everything is solved at ``dps`` digits: w* is the root of
    2 sigmoid(w) + 16 w - 50 (findroot), the Newton step uses the one remaining point.
    """
    with mpmath.workdps(dps):
        lam, b, n = mpmath.mpf(8), mpmath.mpf(-50), 2

        def sig(z: mpmath.mpf) -> mpmath.mpf:
            return 1 / (1 + mpmath.exp(-z))

        # label -1, x = 1: l(w) = log(1 + e^w), l'(w) = sigmoid(w), l''(w) = s(1 - s).
        def full_gradient(w: mpmath.mpf) -> mpmath.mpf:
            return n * sig(w) + lam * n * w + b

        w_star = mpmath.findroot(full_gradient, mpmath.mpf(3))
        delta = lam * w_star + sig(w_star)
        hessian = sig(w_star) * (1 - sig(w_star)) + lam * (n - 1)
        v = delta / hessian
        w_minus = w_star + v
        residual = abs(sig(w_minus) + lam * (n - 1) * w_minus + b)
        return {
            "w_star": w_star,
            "train_residual": abs(full_gradient(w_star)),
            "delta_norm": abs(delta),
            "update_norm": abs(v),
            "residual": residual,
            "thm1": thm1("1/4", 1, 8, 2),
            "thm1_corrected": thm1_corrected("1/4", 1, 8, 2, 50),
            "cor1": cor1("1/4", 2, 1, abs(v), abs(v)),
        }


# ----------------------------------------------------------------------------------------------
# Small executable checks quoted in docs/errata-guo2020.md
# ----------------------------------------------------------------------------------------------


def least_squares_removal_residual(*, algorithm1_literal: bool = False, hessian_regulariser: bool = True,
                                   hessian_factor: float = 2.0, seed: int = 0) -> float:
    """||grad L_b(w^-; D')|| of a least-squares Newton removal under a choice of conventions.

    The removal always uses the Section 3 conventions (regulariser (lambda n/2)||w||^2, so
    Delta = lambda w + grad l). ``algorithm1_literal`` trains with Algorithm 1's printed
    lambda n ||w||^2 instead; ``hessian_regulariser=False`` drops lambda (n - 1) I from the
    Hessian as Algorithm 2, line 12 prints; ``hessian_factor`` is the factor of x x^T in the
    loss Hessian (2 is right for (w.x - y)^2, Section 3.2 prints 1). With gamma = 0 the
    residual is 0 exactly when the conventions agree.
    """
    rng = np.random.default_rng(seed)
    n, d, lam = 30, 4, 0.5
    X = rng.normal(size=(n, d)) / 3
    y = rng.normal(size=n)
    b = rng.normal(size=d)
    train_lam = 2 * lam if algorithm1_literal else lam  # lambda n ||w||^2 = (2 lambda n/2)||w||^2
    w = np.linalg.solve(2 * X.T @ X + train_lam * n * np.eye(d), 2 * X.T @ y - b)
    keep = slice(0, n - 1)
    delta = lam * w + 2 * X[-1] * (X[-1] @ w - y[-1])
    hessian = hessian_factor * X[keep].T @ X[keep]
    if hessian_regulariser:
        hessian = hessian + lam * (n - 1) * np.eye(d)
    w_minus = w + np.linalg.solve(hessian, delta)
    gradient = 2 * X[keep].T @ (X[keep] @ w_minus - y[keep]) + lam * (n - 1) * w_minus + b
    return float(np.linalg.norm(gradient))


def power_iteration_gap(*, iterations: int = 20, seed: int = 0) -> tuple[float, float]:
    """(power-iteration estimate of ||X||_2 from a random start, exact ||X||_2) for a matrix
    whose two top singular values are close, as the released code estimates sqrt(||K||_2)."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.normal(size=(200, 20)))
    v, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    singular = np.linspace(1.0, 0.2, 20)
    singular[1] = 0.99
    X = (u * singular) @ v.T
    K = X.T @ X
    z = rng.normal(size=20)
    for _ in range(iterations):
        z = K @ z
        z /= np.linalg.norm(z)
    estimate = float(np.sqrt(z @ K @ z))
    return estimate, float(np.linalg.norm(X, 2))


def residual_depends_on_b() -> tuple[float, float]:
    """Signed residual u of the one-dimensional erratum instance at b = -50 and b = -10: u is a
    function of b, not independent of it as Theorem 2's proof treats it."""
    def sig(z: mpmath.mpf) -> mpmath.mpf:
        return 1 / (1 + mpmath.exp(-z))

    def signed_residual(b: int) -> float:
        with mpmath.workdps(30):
            lam, n = mpmath.mpf(8), 2
            w = mpmath.findroot(lambda t: n * sig(t) + lam * n * t + b, mpmath.mpf(0))
            v = (lam * w + sig(w)) / (sig(w) * (1 - sig(w)) + lam)
            return float(sig(w + v) + lam * (w + v) + b)

    return signed_residual(-50), signed_residual(-10)
