"""Independent high-precision re-derivation of every koloskova2025 bound, from the paper's text.

Written separately from bounds/papers/koloskova2025.py and sharing no code with it: plain mpmath
at 60+ digits, the normal tail Q(x) = erfc(x/sqrt 2)/2 of eq. (9) evaluated with ample guard
digits (no log-space tricks), Theorem A.9 as the explicit sums over t of (21) (no geometric-series
closed forms), step counts by direct iteration. Each function names the equation it follows.
"""

from __future__ import annotations

import mpmath

DIGITS = 60
GUARD = 400  # generous: theta's subtraction can cancel hundreds of digits for tiny r


def mpf(x: object) -> mpmath.mpf:
    if isinstance(x, str) and "/" in x:
        num, den = x.split("/")
        return mpmath.mpf(num) / mpmath.mpf(den)
    return mpmath.mpf(x)


def ratio(num: int, den: int) -> mpmath.mpf:
    with mpmath.workdps(DIGITS):
        return mpmath.mpf(num) / den


def Q(x: mpmath.mpf) -> mpmath.mpf:
    """Standard normal upper tail (eq. 9 with the 1/sqrt(2 pi) normalisation)."""
    return mpmath.erfc(x / mpmath.sqrt(2)) / 2


def theta(eps: object, r: object) -> mpmath.mpf:
    """Eq. (9): theta_eps(r) = Q(eps/r - r/2) - e^eps Q(eps/r + r/2)."""
    with mpmath.workdps(DIGITS + GUARD):
        e, rr = mpf(eps), mpf(r)
        value = Q(e / rr - rr / 2) - mpmath.exp(e) * Q(e / rr + rr / 2)
    with mpmath.workdps(DIGITS):
        return +value


def log_theta(eps: object, r: object) -> mpmath.mpf:
    """log of eq. (9), taken before rounding theta to the 60 working digits (theta can be 1 - 1e-89)."""
    with mpmath.workdps(DIGITS + GUARD):
        e, rr = mpf(eps), mpf(r)
        value = mpmath.log(Q(e / rr - rr / 2) - mpmath.exp(e) * Q(e / rr + rr / 2))
    with mpmath.workdps(DIGITS):
        return +value


def theta_by_quadrature(eps: object, r: object) -> mpmath.mpf:
    """E_eps(N(0,1) || N(r,1)) = int [phi(x) - e^eps phi(x - r)]_+ dx (Definition A.1), by quadrature
    over the set where the integrand is positive, x <= r/2 - eps/r."""
    with mpmath.workdps(30):
        e, rr = mpf(eps), mpf(r)
        edge = rr / 2 - e / rr

        def integrand(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.npdf(x) - mpmath.exp(e) * mpmath.npdf(x - rr)

        return mpmath.quad(integrand, [-mpmath.inf, edge - 10, edge])


def renyi_a9(q: object, gammas: list, sigmas: list, C1s: list, lam: object, C0: object) -> mpmath.mpf:
    """Theorem A.9 (21) with the product index that recursion (23) produces:
    D_q <= (q/2) B^2 / sum_t w_t^2 sigma_t^2, w_t = prod_{k=t+1}^{T-1} rho_k, rho_k = 1 - gamma_k lam,
    B = (prod_t rho_t) 2 C0 + sum_t w_t 2 gamma_t C1_t."""
    with mpmath.workdps(DIGITS):
        n = len(gammas)
        rhos = [1 - mpf(g) * mpf(lam) for g in gammas]
        total = 0
        weights_sq = 0
        for t in range(n):
            w = mpmath.mpf(1)
            for k in range(t + 1, n):
                w *= rhos[k]
            total += w * 2 * mpf(gammas[t]) * mpf(C1s[t])
            weights_sq += w**2 * mpf(sigmas[t]) ** 2
        prod_all = mpmath.mpf(1)
        for rk in rhos:
            prod_all *= rk
        B = prod_all * 2 * mpf(C0) + total
        return mpf(q) * B**2 / (2 * weights_sq)


def renyi_a9_constant(q: object, T: int, gamma: object, lam: object, sigma: object, C0: object,
                      C1: object) -> mpmath.mpf:
    return renyi_a9(q, [gamma] * T, [sigma] * T, [C1] * T, lam, C0)


def gaussian_exact_renyi(q: object, gammas: list, sigmas: list, lam: object, C0: object) -> mpmath.mpf:
    """Ground truth: G constant (shared), ||x_0 - x_0'|| = 2 C0. The mean gap is prod rho_t 2 C0 and
    each coordinate's variance sum_t (prod_{k>t} rho_k)^2 sigma_t^2; D_q = q gap^2/(2 var)."""
    with mpmath.workdps(DIGITS):
        n = len(gammas)
        rhos = [1 - mpf(g) * mpf(lam) for g in gammas]
        var = 0
        for t in range(n):
            w = mpmath.mpf(1)
            for k in range(t + 1, n):
                w *= rhos[k]
            var += w**2 * mpf(sigmas[t]) ** 2
        gap = 2 * mpf(C0)
        for rk in rhos:
            gap *= rk
        return mpf(q) * gap**2 / (2 * var)


def mironov_epsilon(rate: object, delta: object) -> mpmath.mpf:
    """min over q > 1 of q rate + log(1/delta)/(q - 1) = rate + 2 sqrt(rate log(1/delta))."""
    with mpmath.workdps(DIGITS):
        rho, lg = mpf(rate), mpmath.log(1 / mpf(delta))
        return rho + 2 * mpmath.sqrt(rho * lg)


def balle_epsilon(rate: object, delta: object) -> mpmath.mpf:
    """min over q > 1 of q rate + log((q-1)/q) - (log delta + log q)/(q - 1) (Balle et al. 2020),
    by golden-section search on log(q - 1) (the function is unimodal there)."""
    with mpmath.workdps(DIGITS):
        rho, d = mpf(rate), mpf(delta)

        def f(u: mpmath.mpf) -> mpmath.mpf:
            qq = 1 + mpmath.exp(u)
            return qq * rho + mpmath.log((qq - 1) / qq) - (mpmath.log(d) + mpmath.log(qq)) / (qq - 1)

        lo, hi = mpmath.mpf(-20), mpmath.mpf(20)
        golden = (mpmath.sqrt(5) - 1) / 2
        for _ in range(300):
            a_ = hi - golden * (hi - lo)
            b_ = lo + golden * (hi - lo)
            if f(a_) < f(b_):
                hi = b_
            else:
                lo = a_
        return f((lo + hi) / 2)


def sigma_from_variance(variance: mpmath.mpf) -> mpmath.mpf:
    return mpmath.sqrt(variance)


def eq5(eps, delta, T, gamma, C0, C1, constant=18):
    """Theorem 4.1 (5): sigma^2 = c log(1/delta)/(eps^2 T) (C0 + C1 gamma T)^2 (printed c = 9)."""
    with mpmath.workdps(DIGITS):
        e, d = mpf(eps), mpf(delta)
        return sigma_from_variance(constant * mpmath.log(1 / d) / (e**2 * T)
                                   * (mpf(C0) + mpf(C1) * mpf(gamma) * T) ** 2)


def eq6(eps, delta, T, gamma, lam, C0, C1):
    """Theorem 4.1 (6): sigma^2 = 72 gamma lam log(1/delta)/eps^2 (C0 (1 - gamma lam)^T + C1/lam)^2."""
    with mpmath.workdps(DIGITS):
        g, lm = mpf(gamma), mpf(lam)
        return sigma_from_variance(72 * g * lm * mpmath.log(1 / mpf(delta)) / mpf(eps) ** 2
                                   * (mpf(C0) * (1 - g * lm) ** T + mpf(C1) / lm) ** 2)


def eq7(eps, delta, T, gamma, C0, C1):
    with mpmath.workdps(DIGITS):
        return sigma_from_variance(36 * mpmath.log(1 / mpf(delta)) / mpf(eps) ** 2
                                   * (mpf(C0) ** 2 / T + mpf(gamma) ** 2 * T * mpf(C1) ** 2))


def eq8(eps, delta, T, gamma, lam, C0, C1):
    with mpmath.workdps(DIGITS):
        g, lm = mpf(gamma), mpf(lam)
        return sigma_from_variance(144 * g * mpmath.log(1 / mpf(delta)) / mpf(eps) ** 2
                                   * (lm * mpf(C0) ** 2 * mpmath.exp(-lm * g * T) + mpf(C1) ** 2 / lm))


def eq12(eps, delta, gamma, C0, C1, constant=72):
    with mpmath.workdps(DIGITS):
        return sigma_from_variance(constant * mpf(gamma) * mpf(C1) * mpf(C0)
                                   * mpmath.log(1 / mpf(delta)) / mpf(eps) ** 2)


def eq13(eps, delta, gamma, lam, C0, C1, constant=288):
    with mpmath.workdps(DIGITS):
        return sigma_from_variance(constant * mpf(C1) ** 2 * mpf(gamma) * mpmath.log(1 / mpf(delta))
                                   / (mpf(lam) * mpf(eps) ** 2))


def eq13_steps(gamma, lam, C0, C1):
    with mpmath.workdps(DIGITS):
        return mpmath.log(mpf(lam) * mpf(C0) / mpf(C1)) / (mpf(gamma) * mpf(lam))


def initial_delta(eps, C0, sigma0):
    """delta_0 = theta_eps(2 C0/sigma0), and 1 without initial noise (Theorem 4.2 proof)."""
    return mpmath.mpf(1) if mpf(sigma0) == 0 else theta(eps, 2 * mpf(C0) / mpf(sigma0))


def eq10(eps, delta, C0, C2, sigma0, sigma):
    """Theorem 4.2 (10): (log(1/delta) + log theta_eps(2C0/sigma0))/log(1/theta_eps(2C2/sigma))."""
    with mpmath.workdps(DIGITS):
        initial = 0 if mpf(sigma0) == 0 else log_theta(eps, 2 * mpf(C0) / mpf(sigma0))
        num = mpmath.log(1 / mpf(delta)) + initial
        return num / -log_theta(eps, 2 * mpf(C2) / mpf(sigma))


def deltas(eps, C0, C2, sigma0, sigma, T, adaptive=False):
    """delta_t of Theorem 4.2's recursion, or of the adaptive one (eps_t = log(1 + (e^eps-1)/delta_t))."""
    with mpmath.workdps(DIGITS):
        out = [initial_delta(eps, C0, sigma0)]
        r = 2 * mpf(C2) / mpf(sigma)
        for _ in range(T):
            d = out[-1]
            e_t = mpmath.log(1 + (mpmath.exp(mpf(eps)) - 1) / d) if adaptive else mpf(eps)
            out.append(d * theta(e_t, r))
        return out


def least_steps(eps, delta, C0, C2, sigma0, sigma, adaptive=False, limit=100000):
    with mpmath.workdps(DIGITS):
        d = initial_delta(eps, C0, sigma0)
        r = 2 * mpf(C2) / mpf(sigma)
        t = 0
        while d > mpf(delta):
            e_t = mpmath.log(1 + (mpmath.exp(mpf(eps)) - 1) / d) if adaptive else mpf(eps)
            d = d * theta(e_t, r)
            t += 1
            assert t < limit
        return max(t, 1)


def eq11(eps, delta, T, C0, C2, sigma0, literal=False):
    """Solving the proof's T >= [log(1.25/delta) - s0^2 e^2/(8 C0^2)]/[s^2 e^2/(8 C2^2) - log 1.25]
    for sigma; ``literal`` reproduces the printed (11) (log 1.25 also on the 1/T term)."""
    with mpmath.workdps(DIGITS):
        e = mpf(eps)
        bracket = mpmath.log(mpf("1.25") / mpf(delta)) - mpf(sigma0) ** 2 * e**2 / (8 * mpf(C0) ** 2)
        ln125 = mpmath.log(mpf("1.25"))
        if literal:
            var = 8 * mpf(C2) ** 2 * ln125 / e**2 * (1 + bracket / T)
        else:
            var = 8 * mpf(C2) ** 2 / e**2 * (ln125 + bracket / T)
        return mpmath.sqrt(var)


def simplified_steps(eps, delta, C0, C2, sigma0, sigma):
    with mpmath.workdps(DIGITS):
        e = mpf(eps)
        bracket = mpmath.log(mpf("1.25") / mpf(delta)) - mpf(sigma0) ** 2 * e**2 / (8 * mpf(C0) ** 2)
        return bracket / (mpf(sigma) ** 2 * e**2 / (8 * mpf(C2) ** 2) - mpmath.log(mpf("1.25")))


def eq14(eps, C2):
    with mpmath.workdps(DIGITS):
        return mpmath.sqrt(8 * mpf(C2) ** 2 * mpmath.log(mpf("1.25")) / mpf(eps) ** 2)


def eq1(eps, delta, C0):
    """Eq. (1): variance 8 C0^2 log(1.25/delta)/eps^2."""
    with mpmath.workdps(DIGITS):
        return mpmath.sqrt(8 * mpf(C0) ** 2 * mpmath.log(mpf("1.25") / mpf(delta)) / mpf(eps) ** 2)


def analytic_sigma(eps, delta, C0):
    """Root in sigma of theta_eps(2 C0/sigma) = delta (the exact Gaussian mechanism)."""
    with mpmath.workdps(DIGITS):
        lo, hi = mpf("1e-6"), mpf("1e6")
        for _ in range(400):
            mid = mpmath.sqrt(lo * hi)
            if theta(eps, 2 * mpf(C0) / mid) > mpf(delta):
                lo = mid
            else:
                hi = mid
        return hi


def dpsgd_group(eps, delta, C, k, derived=False):
    """Section 4.2: sigma^2 = 2 C^2 k^2/eps^2 (log(1.25 k/delta) + k eps) (derived: + eps)."""
    with mpmath.workdps(DIGITS):
        e = mpf(eps)
        extra = e if derived else k * e
        return mpmath.sqrt(2 * mpf(C) ** 2 * k**2 / e**2 * (mpmath.log(mpf("1.25") * k / mpf(delta)) + extra))
