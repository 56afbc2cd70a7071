"""chien2024:thm3.2/time-shift and its sequence form (docs/improved.md (e)): Theorem 3.2's finite
burn-in certificate without the weak triangle.

Ground truths written apart from the declarations and the engine: the bound is linear in the
Rényi order, alpha G, so Mironov's conversion G alpha + log(1/delta)/(alpha - 1) is minimised in
closed form at alpha - 1 = sqrt(log(1/delta)/G), giving G + 2 sqrt(G log(1/delta)); the start
distance and Theorem 3.11's recursion are written out below in mpmath at 50 digits. The exact
quadratic ground truth is in test_ground_truth.py, the 80-digit re-derivation in
reference_pnsgd.py, and "never above Theorem 3.2" in test_chien2024.py (improved vs paper).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bounds
from bounds.calibration import calibrate
from bounds.errors import BoundError
from bounds.papers.chien2024.schedules import experiment_constants, sequential_epochs

SINGLE = "chien2024:thm3.2/time-shift"
SEQUENCE = "chien2024:thm3.2+thm3.11/sequence/time-shift"
SINGLE_NOISE = "chien2024:thm3.2/time-shift/exact-noise"
SEQUENCE_NOISE = "chien2024:thm3.2+thm3.11/sequence/time-shift/exact-noise"
FEW = settings(deadline=None, max_examples=15)

# Seed 000 App. N.3 for MNIST with Figure 3b's sigma and target; Table 2's burn-in T.
MNIST_N = 11264
SIGMA = Fraction(3, 100)
DELTA = 1 / MNIST_N
BURN_IN = {MNIST_N: 1000, 128: 20}


def mp(x: Fraction | int) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def mnist(b: int) -> dict[str, Fraction | int]:
    lam = Fraction(MNIST_N, 10**6)
    smooth = Fraction(1, 4) + lam
    return {"m": lam, "L": smooth, "eta": 1 / smooth, "M": 1, "n": MNIST_N, "b": b, "R": 100,
            "sigma": SIGMA, "T": BURN_IN[b]}


def closed_form_epsilon(divergence_over_alpha: mpmath.mpf, delta: float) -> mpmath.mpf:
    """min over alpha > 1 of alpha G + log(1/delta)/(alpha - 1)."""
    log_term = mpmath.log(1 / mpmath.mpf(delta))
    return divergence_over_alpha + 2 * mpmath.sqrt(divergence_over_alpha * log_term)


def shifted_over_alpha(p: dict, start: mpmath.mpf, epochs: int) -> mpmath.mpf:
    """The declaration's value divided by alpha, by cases on K <= T (docs/improved.md (e))."""
    eta, m, r, sigma = mp(p["eta"]), mp(p["m"]), mp(p["R"]), mp(p["sigma"])
    c, per_epoch, burn_in = 1 - eta * m, p["n"] // p["b"], p["T"]
    if epochs <= burn_in:
        distance = min(start + 2 * r * c ** ((burn_in - epochs) * per_epoch), 2 * r)
        return distance**2 * c ** (2 * epochs * per_epoch) / (2 * eta * sigma**2)
    return (2 * r) ** 2 * c ** (2 * burn_in * per_epoch) / (2 * eta * sigma**2)


def learning_distance(p: dict) -> mpmath.mpf:
    """Lemma 3.3 at the worst batch: T epochs of one 2 eta M/b kick each, contracted."""
    eta, m, big_m, r = mp(p["eta"]), mp(p["m"]), mp(p["M"]), mp(p["R"])
    c, per_epoch = 1 - eta * m, p["n"] // p["b"]
    kicks = mpmath.fsum(c ** (t * per_epoch) for t in range(p["T"]))
    return min(kicks * 2 * eta * big_m / p["b"], 2 * r)


def least_k(meets) -> int:
    k = 1
    while not meets(k):
        k += 1
    return k


def test_mnist_full_batch_single_request_needs_four_epochs_like_algorithm_7():
    """Issue 24's numbers, recomputed: at MNIST constants, full batch, sigma = 0.03, T = 1000,
    (1, 1/n), the time-shift certificate needs K = 4 (epsilon about 0.998), where Theorem 3.2's
    weak triangle needs K = 13 and Algorithm 7 (converged, Corollary 3.7 uncapped) returns 4."""
    p = mnist(MNIST_N)
    with mpmath.workdps(50):
        start = learning_distance(p)

        def meets(k: int) -> bool:
            return closed_form_epsilon(shifted_over_alpha(p, start, k), DELTA) <= 1

        expected = least_k(meets)
        expected_eps = closed_form_epsilon(shifted_over_alpha(p, start, expected), DELTA)
    engine = calibrate(SINGLE, solve="K", epsilon=1.0, delta=DELTA, **p)
    assert engine.value == expected == 4
    assert abs(engine.certified_epsilon - float(expected_eps)) <= 1e-9
    assert 0.997 < engine.certified_epsilon <= 1
    weak_triangle = calibrate("chien2024:thm3.2", solve="K", epsilon=1.0, delta=DELTA, **p)
    printed = calibrate("chien2024:alg7", solve="K", epsilon=1.0, delta=DELTA,
                        **{k: v for k, v in p.items() if k not in ("T", "R")})
    assert weak_triangle.value == 13
    assert printed.value == engine.value


def _independent_schedule(p: dict, requests: int, noise: int = 1) -> list[int]:
    """Least K_s per request: Theorem 3.11's recursion from 2R c^{Tn/b} (Lemma 3.4), each
    request adding min(Z_B, 2R) and capped at 2R, its K_s epochs contracting by c^{K_s n/b}.
    ``noise`` = 2 divides the divergence by 2 (the algorithm's variance 2 eta sigma^2)."""
    with mpmath.workdps(50):
        eta, m, big_m, r = mp(p["eta"]), mp(p["m"]), mp(p["M"]), mp(p["R"])
        c, per_epoch = 1 - eta * m, p["n"] // p["b"]
        step = min(2 * eta * big_m / (p["b"] * (1 - c**per_epoch)), 2 * r)
        z = 2 * r * c ** (p["T"] * per_epoch)
        schedule: list[int] = []
        for _ in range(requests):
            if schedule:
                z = c ** (schedule[-1] * per_epoch) * z
            z = min(z + step, 2 * r)
            schedule.append(least_k(
                lambda k, z=z: closed_form_epsilon(shifted_over_alpha(p, z, k) / noise, DELTA) <= 1))
        return schedule


@pytest.mark.parametrize(("b", "total"), [(MNIST_N, 1786), (128, 100)])
def test_mnist_hundred_requests_schedule_matches_an_independent_recursion(b, total):
    """Figure 3b's setting at MNIST constants: 100 requests at (1, 1/n), sigma = 0.03, Table 2's
    T. The engine's schedule equals the hand recursion, request by request, with totals
    1786 (b = n) and 100 (b = 128), equal to Theorem 3.11's converged accounting."""
    p = mnist(b)
    expected = _independent_schedule(p, 100)
    schedule = sequential_epochs(requests=100, epsilon=1.0, delta=DELTA, method="time-shift",
                                 **{k: v for k, v in p.items()})
    assert list(schedule.epochs) == expected
    assert schedule.total_epochs == total
    assert schedule.certified and max(schedule.epsilons) <= 1
    assert all(k <= p["T"] for k in schedule.epochs)
    converged = sequential_epochs(requests=100, epsilon=1.0, delta=DELTA, method="thm3.11",
                                  **{k: v for k, v in p.items() if k != "T"})
    assert converged.total_epochs == total


def test_mnist_full_batch_weak_triangle_chain_needs_more_epochs():
    """The same 100 requests certified with Theorem 3.2's weak triangle instead need more epochs
    at b = n: the gap is the weak triangle, not the finite burn-in."""
    p = mnist(MNIST_N)
    shifted = sequential_epochs(requests=100, epsilon=1.0, delta=DELTA, method="time-shift", **p)
    chained = sequential_epochs(requests=100, epsilon=1.0, delta=DELTA, method="thm3.2+thm3.11",
                                **p)
    assert chained.total_epochs > shifted.total_epochs


@FEW
@given(st.integers(1, 5), st.integers(1, 8))
def test_with_learning_distance_as_z_one_request_never_exceeds_the_sequence_form(burn_in, epochs):
    """One request: the sequence form at Z = the stationary route (2R c^{Tn/b} + Z_B) is never
    below the direct form, whose start distance is Lemma 3.3 at T (<= Z_B)."""
    p = {**bounds.get(SINGLE).example, "T": burn_in, "K": epochs}
    single = bounds.get(SINGLE).evaluate(precision="mp", digits=40, **p).value
    with mpmath.workdps(40):
        lam, eta = mp(Fraction("0.011264")), 1 / (mp(Fraction("0.261264")))
        c = 1 - eta * lam
        zb = 2 * eta / (128 * (1 - c**88))
        z = min(2 * 100 * c ** (burn_in * 88) + zb, 200)
        seq = bounds.get(SEQUENCE).evaluate(precision="mp", digits=40, **p, Z=z, Kprev=0).value
        assert single <= seq * (1 + mpmath.mpf(10) ** -30)


def test_many_burn_in_epochs_give_corollary_3_7():
    """As T grows, Z_learn(T) -> min(Z_B, 2R) and 2R c^{Tn/b} -> 0: the bound tends to Corollary
    3.7, the converged certificate (here c^{Tn/b} < 1e-400, far below 40 digits)."""
    example = dict(bounds.get(SINGLE).example)
    finite = bounds.get(SINGLE).evaluate(precision="mp", digits=40, **{**example, "T": 10**4})
    converged = bounds.get("chien2024:cor3.7").evaluate(
        precision="mp", digits=40, **{k: v for k, v in example.items() if k != "T"})
    with mpmath.workdps(40):
        assert abs(finite.value - converged.value) <= mpmath.mpf(10) ** -35 * converged.value


def test_more_epochs_than_burn_in_leave_the_burn_in_floor():
    """K > T: the bound is alpha (2R)^2 c^{2Tn/b}/(2 eta sigma^2) for every K, the floor no
    number of unlearning epochs removes."""
    example = {**bounds.get(SINGLE).example, "T": 2, "R": Fraction(1, 1000)}
    values = {k: bounds.get(SINGLE).evaluate(precision="mp", digits=40, **{**example, "K": k}).value
              for k in (2, 3, 50)}
    with mpmath.workdps(40):
        eta = 1 / mp(Fraction("0.261264"))
        c = 1 - eta * mp(Fraction("0.011264"))
        floor = 10 * (2 * mp(Fraction(1, 1000))) ** 2 * c ** (2 * 2 * 88) / (
            2 * eta * mp(Fraction(1, 20)) ** 2)
        assert abs(values[3] - floor) <= mpmath.mpf(10) ** -35 * floor
    assert values[3] == values[50]
    assert values[2] >= values[3]


def test_sigma_calibration_is_below_theorem_3_2():
    """Table 3's MNIST b = 128 setting at (1, 1/n), K = 1: the least sigma of the time-shift
    certificate is below Theorem 3.2's and is certified."""
    params = {k: v for k, v in mnist(128).items() if k != "sigma"}
    shifted = calibrate(SINGLE, solve="sigma", epsilon=1.0, delta=DELTA, K=1, **params)
    weak = calibrate("chien2024:thm3.2", solve="sigma", epsilon=1.0, delta=DELTA, K=1, **params)
    assert shifted.certified and shifted.certified_epsilon <= 1
    assert shifted.value < weak.value


def test_sequential_epochs_refuses_a_missing_or_unused_burn_in():
    p = mnist(128)
    with pytest.raises(BoundError, match="give T and R"):
        sequential_epochs(requests=2, epsilon=1.0, delta=DELTA, method="time-shift",
                          **{k: v for k, v in p.items() if k != "T"})
    with pytest.raises(BoundError, match="takes no T"):
        sequential_epochs(requests=2, epsilon=1.0, delta=DELTA, method="thm3.11", **p)
    with pytest.raises(BoundError, match="unknown method"):
        sequential_epochs(requests=2, epsilon=1.0, delta=DELTA, method="time shift", **p)


def test_experiment_constants_are_the_ones_used_here():
    """The MNIST constants above are App. N.3's (experiment_constants), written out exactly."""
    const = experiment_constants("MNIST")
    resolved = bounds.get(SINGLE).resolve({**const, "alpha": 2, "sigma": SIGMA, "b": 128,
                                           "T": 20, "K": 1})
    for name, value in mnist(128).items():
        assert resolved[name] == value, name


# --------------------------------------------------------------------------------------------
# The algorithm's own noise variance (docs/improved.md (b), (e)): exactly half
# --------------------------------------------------------------------------------------------


def test_exact_noise_needs_one_epoch_at_mnist_constants():
    """MNIST, full batch, sigma = 0.03, T = 1000, (1, 1/n): with the noise Algorithm 1 adds,
    one unlearning epoch suffices (epsilon about 0.8015), where the papers' variance needs 4."""
    p = mnist(MNIST_N)
    with mpmath.workdps(50):
        start = learning_distance(p)
        expected_eps = closed_form_epsilon(shifted_over_alpha(p, start, 1) / 2, DELTA)
    engine = calibrate(SINGLE_NOISE, solve="K", epsilon=1.0, delta=DELTA, **p)
    assert engine.value == 1 and engine.certified
    assert abs(engine.certified_epsilon - float(expected_eps)) <= 1e-9
    assert 0.80 < engine.certified_epsilon < 0.81


@pytest.mark.parametrize(("b", "total"), [(MNIST_N, 1385), (128, 100)])
def test_exact_noise_hundred_requests_schedule_matches_an_independent_recursion(b, total):
    p = mnist(b)
    expected = _independent_schedule(p, 100, noise=2)
    schedule = sequential_epochs(requests=100, epsilon=1.0, delta=DELTA,
                                 method="time-shift/exact-noise", **p)
    assert list(schedule.epochs) == expected
    assert schedule.total_epochs == total and schedule.certified and max(schedule.epsilons) <= 1
    assert schedule.provenance["theorems"][0] == SEQUENCE_NOISE


def test_exact_noise_sigma_is_the_papers_variance_sigma_over_root_two():
    """The bound is proportional to 1/sigma^2, so halving it divides the least sigma by sqrt 2."""
    params = {k: v for k, v in mnist(128).items() if k != "sigma"}
    papers = calibrate(SINGLE, solve="sigma", epsilon=1.0, delta=DELTA, K=1, **params)
    exact = calibrate(SINGLE_NOISE, solve="sigma", epsilon=1.0, delta=DELTA, K=1, **params)
    assert exact.certified and exact.certified_epsilon <= 1
    assert abs(exact.value * 2**0.5 / papers.value - 1) < 1e-8


@FEW
@given(st.integers(1, 5), st.integers(1, 8), st.integers(0, 6), st.fractions(0, 3))
def test_exact_noise_forms_are_half_the_papers_variance_forms(burn_in, epochs, earlier, z):
    example = {**bounds.get(SEQUENCE).example, "T": burn_in, "K": epochs, "Kprev": earlier, "Z": z}
    single = {k: v for k, v in example.items() if k not in ("Z", "Kprev")}
    for papers_id, exact_id, params in ((SINGLE, SINGLE_NOISE, single),
                                        (SEQUENCE, SEQUENCE_NOISE, example)):
        papers = bounds.get(papers_id).evaluate(precision="mp", digits=40, **params).value
        exact = bounds.get(exact_id).evaluate(precision="mp", digits=40, **params).value
        with mpmath.workdps(40):
            assert abs(2 * exact / papers - 1) < mpmath.mpf(10) ** -35


# --------------------------------------------------------------------------------------------
# The sequence forms never use a start distance below Theorem 3.11's recursion
# --------------------------------------------------------------------------------------------


def _short_burn_in() -> dict:
    """Table 3's example at T = 1: the burn-in term 2R c^{Tn/b} is about 4.3, not negligible."""
    example = {k: v for k, v in bounds.get(SEQUENCE).example.items() if k not in ("Z", "Kprev")}
    return {**example, "T": 1, "K": 1}


def test_a_start_distance_without_the_burn_in_term_is_raised_to_the_recursion():
    p = _short_burn_in()
    with mpmath.workdps(50):
        eta, m = 1 / mp(Fraction("0.261264")), mp(Fraction("0.011264"))
        c = 1 - eta * m
        zb = min(2 * eta / (128 * (1 - c**88)), 200)
        burn_in_term = 200 * c**88
        recursion = min(burn_in_term + zb, 200)
        single_z_t = min((1 - c**88) / (1 - c**88) * 2 * eta / 128, 200)  # Z_T at T = 1
    assert burn_in_term > 1
    z_exact = Fraction(str(mpmath.nstr(recursion, 40)))
    for bound_id in (SEQUENCE, SEQUENCE_NOISE):
        bound = bounds.get(bound_id)
        right = bound.evaluate(precision="mp", digits=40, **p, Z=z_exact, Kprev=0)
        assert not right.notes
        for wrong in (zb, single_z_t):
            low = bound.evaluate(precision="mp", digits=40, **p, Z=Fraction(str(mpmath.nstr(wrong, 40))),
                                 Kprev=0)
            assert any("below" in note and "sequence_start_distance" in note for note in low.notes)
            assert abs(low.value / right.value - 1) < mpmath.mpf(10) ** -30


@FEW
@given(st.integers(1, 4), st.lists(st.integers(1, 6), min_size=1, max_size=5))
def test_the_floor_never_exceeds_the_recursion(burn_in, epochs):
    """min(2R c^{(T+Kprev)n/b} + min(Z_B, 2R), 2R) <= sequence_start_distance for every schedule,
    so at the recursion's own Z the value is the one the recursion gives (no note)."""
    from bounds.papers.chien2024 import sequence_start_distance

    p = {**_short_burn_in(), "T": burn_in, "K": epochs[-1]}
    z = sequence_start_distance(eta=1 / Fraction("0.261264"), m=Fraction("0.011264"), M=1, n=11264,
                                b=128, T=burn_in, R=100, sizes=[1] * len(epochs), epochs=epochs)
    z_exact = Fraction(int(z.man)) * Fraction(2) ** int(z.exp)
    ev = bounds.get(SEQUENCE).evaluate(precision="mp", digits=30, **p, Z=z_exact,
                                       Kprev=sum(epochs[:-1]))
    assert not ev.notes
