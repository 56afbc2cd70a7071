"""Numerics at the edges: exact differences of inputs, overflow never a silent 0, the safe end
and the name of a value decided by its kind, and values accurate against independent 60-digit
recomputations (each written here from the papers' formulas, not from the declarations).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from fractions import Fraction

import mpmath
import pytest

import bounds
from audits.cli import main
from bounds.calibration import calibrate
from bounds.numerics import interval_endpoints

DPS = 60


def mp(x: object) -> mpmath.mpf:
    """An exact input (int, Fraction, decimal string) at the current mp precision."""
    q = Fraction(x)
    return mpmath.mpf(q.numerator) / q.denominator


def rel(a: object, b: object) -> mpmath.mpf:
    return abs(mpmath.mpf(a) / mpmath.mpf(b) - 1)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------------------------
# Guo et al.: n - m formed exactly
# --------------------------------------------------------------------------------------------

N_NEAR_2_53, M_NEAR_2_53 = 2**53 + 2, 2**53 + 1


def guo_thm4_truth(*, gamma, C, lam, n, m, b_norm=0):
    """gamma m^2 (2C + ||b||/n)^2 / (lam^2 (n - m)) (Theorem 4 and its erratum), 60 digits."""
    with mpmath.workdps(DPS):
        g, c, lm, b = mp(gamma), mp(C), mp(lam), mp(b_norm)
        return g * m**2 * (2 * c + b / n) ** 2 / (lm**2 * (n - m))


@pytest.mark.parametrize("bound_id, extra", [
    ("guo2020:thm4", {}),
    ("guo2020:thm4/corrected", {"b_norm": 3}),
])
def test_guo_batch_bound_forms_n_minus_m_exactly_in_float(bound_id, extra):
    value = bounds.get(bound_id).evaluate(gamma="1/4", C=1, lam=1, n=N_NEAR_2_53, m=M_NEAR_2_53,
                                          **extra).value
    truth = guo_thm4_truth(gamma="1/4", C=1, lam=1, n=N_NEAR_2_53, m=M_NEAR_2_53, **extra)
    assert rel(value, truth) < 1e-15


def test_guo_whp_batch_bound_forms_n_minus_m_exactly_in_float():
    ev = bounds.get("guo2020:thm4/corrected-whp").evaluate(
        gamma="1/4", C=1, lam=1, n=N_NEAR_2_53, m=M_NEAR_2_53, sigma=1, d=4, tau="1/2")
    with mpmath.workdps(DPS):
        b = 1 * (mpmath.sqrt(4) + mpmath.sqrt(2 * mpmath.log(2)))
        truth = mp("1/4") * M_NEAR_2_53**2 * (2 + b / N_NEAR_2_53) ** 2 / (N_NEAR_2_53 - M_NEAR_2_53)
    assert rel(ev.value, truth) < 1e-15


def test_guo_middle_term_forms_n_minus_m_exactly_in_float_and_mp():
    middle = bounds.get("guo2020:thm4/middle")
    n, m = 10**20 + 1, 10**20
    assert middle.evaluate(gamma="1/4", n=n, m=m, update_norm="1e-3").value == pytest.approx(
        2.5e-7, rel=1e-15)
    big_n, big_m = 10**60 + 1, 10**60
    value = middle.evaluate(precision="mp", gamma="1/4", n=big_n, m=big_m, update_norm=1).value
    assert value == mpmath.mpf("0.25")


def test_guo_thm4_in_mp_at_n_near_digits_is_exact_not_a_division_by_zero():
    n, m = 10**60 + 1, 10**60
    value = bounds.get("guo2020:thm4").evaluate(precision="mp", gamma="1/4", C=1, lam=1, n=n,
                                                m=m).value
    truth = guo_thm4_truth(gamma="1/4", C=1, lam=1, n=n, m=m)
    assert rel(value, truth) < mpmath.mpf(10) ** -45


# --------------------------------------------------------------------------------------------
# Overflow inside a float evaluation
# --------------------------------------------------------------------------------------------


def test_budget_at_a_subnormal_delta_is_not_a_silent_zero():
    ev = bounds.get("guo2020:alg2/budget").evaluate(sigma=10, epsilon=1, delta="1e-309")
    with mpmath.workdps(DPS):
        truth = 10 / mpmath.sqrt(2 * mpmath.log(mpmath.mpf(3) / 2 / mpmath.mpf("1e-309")))
    assert rel(ev.value, truth) < 1e-15
    assert str(truth).startswith("0.26501728876")
    assert any("computed in mpmath" in note for note in ev.notes)


def test_float_overflow_inside_chien_thm32_says_so_and_keeps_the_mp_value():
    params = {"alpha": 10, "sigma": "1e155", "eta": "1/L", "m": "0.011264", "L": "0.261264", "M": 1,
              "n": 11264, "b": 128, "R": 100, "T": 20, "K": 1}
    bound = bounds.get("chien2024:thm3.2")
    ev = bound.evaluate(**params)
    exact = bound.evaluate(precision="mp", digits=DPS, **params).value
    assert ev.value > 0 and rel(ev.value, exact) < 1e-6  # a subnormal keeps few digits
    assert any("overflowed" in note for note in ev.notes)
    assert any("below the normal float range" in note for note in ev.notes)


def test_float_overflow_on_arrays_is_refused_not_zero():
    import numpy as np

    with pytest.raises(bounds.BoundError, match="not reliable"):
        bounds.get("guo2020:alg2/budget").evaluate(sigma=np.array([10.0, 20.0]), epsilon=1,
                                                   delta=1e-309)


# --------------------------------------------------------------------------------------------
# The kind of quantity decides the safe end and the name
# --------------------------------------------------------------------------------------------


def test_budget_interval_certifies_its_lower_end():
    ev = bounds.get("guo2020:alg2/budget").evaluate(precision="interval", sigma=10, epsilon=1,
                                                    delta="1e-4")
    out = ev.to_dict()
    assert out["safe_end"] == "lower" and "certified_upper" not in out
    assert out["certified_lower"] <= ev.lower
    code, text, _ = run_cli(["bounds", "eval", "guo2020:alg2/budget", "sigma=10", "epsilon=1",
                             "delta=1e-4", "--precision", "interval"])
    assert code == 0 and "certified lower 2.28030094643933" in text and "certified upper" not in text


def test_safe_end_follows_the_kind_of_quantity():
    kinds = {b.id: b.guarantee.safe_end for b in bounds.list_bounds(None)}
    assert kinds["guo2020:alg2/budget"] == "lower"
    assert kinds["chourasia2023:thm4.5"] == "lower"  # an impossibility limit
    assert kinds["guo2020:thm3ii/sigma"] == "upper"  # a sufficient noise level
    assert kinds["koloskova2025:eq9"] == "both"  # an exact value


def test_calibrating_a_delta_names_it_a_delta():
    cal = calibrate("guo2020:thm5/delta", solve="delta_cr", delta=1e-4, delta_dp="1e-5")
    out = cal.to_dict()
    assert out["quantity"] == "delta" and "certified_epsilon" not in out
    assert out["certified_delta"] <= 1e-4
    with pytest.raises(bounds.BoundError, match="bounds a delta"):
        calibrate("guo2020:thm5/delta", solve="delta_cr", epsilon=1e-4, delta_dp="1e-5")
    code, text, _ = run_cli(["calibrate", "guo2020:thm5/delta", "--solve", "delta_cr",
                             "--delta", "1e-4", "delta_dp=1e-5"])
    assert code == 0 and "certified delta" in text and "epsilon" not in text


def test_delta_bound_is_refused_as_an_epsilon_certificate():
    assert bounds.get("guo2020:thm5/delta").guarantee.kind == "unlearning_delta"


def test_literal_theorem3_warns_with_the_exact_epsilon():
    ev = bounds.get("guo2020:thm3ii/literal").evaluate(eps_prime="22.803", sigma=10, delta="1e-4")
    assert ev.value == pytest.approx(10, rel=1e-6)
    warning = next(note for note in ev.notes if note.startswith("WARNING"))
    # The exact epsilon, recomputed here: least eps with Phi(mu/2 - eps/mu) - e^eps
    # Phi(-mu/2 - eps/mu) <= delta at mu = eps'/sigma (Balle and Wang 2018, Theorem 8).
    with mpmath.workdps(DPS):
        mu = mp("22.803") / 10

        def excess(e):
            return (mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)
                    - mp("1e-4"))

        exact = mpmath.findroot(excess, (mpmath.mpf(10), mpmath.mpf(11)), solver="anderson")
    assert f"{float(exact):.6g}" == "10.4911"
    assert "10.4911" in warning


def test_theorem3_calibrates_sigma_with_its_own_delta():
    cal = calibrate("guo2020:thm3ii", solve="sigma", epsilon=1, delta=1e-4, eps_prime="0.01")
    with mpmath.workdps(DPS):
        least = mpmath.sqrt(2 * mpmath.log(mp("1.5") / mp(1e-4))) * mp("0.01")  # c eps'/epsilon
    assert cal.value >= least and rel(cal.value, least) < 1e-8
    assert cal.certified_epsilon <= 1
    code, _, err = run_cli(["calibrate", "guo2020:thm3ii", "--solve", "sigma", "--epsilon", "1",
                            "eps_prime=0.01", "delta=1e-4", "--delta", "1e-4"])
    assert code == 1 and "delta given twice" in err
    code, text, err = run_cli(["calibrate", "guo2020:thm3ii", "--solve", "sigma", "--epsilon", "1",
                               "eps_prime=0.01", "--delta", "1e-4"])
    assert code == 0, err
    assert text.startswith("sigma = 0.04385386")


# --------------------------------------------------------------------------------------------
# Chourasia and Shah
# --------------------------------------------------------------------------------------------


def test_q_infinity_advantage_keeps_tiny_epsilon():
    value = bounds.get("chourasia2023:thm4.1/q-infinity").evaluate(epsilon="1e-30").value
    with mpmath.workdps(DPS):
        truth = min(mpmath.sqrt(2 * mp("1e-30")), mpmath.expm1(mp("1e-30")))
    assert rel(value, truth) < 1e-15


def test_deletion_iterations_at_a_ratio_close_to_one_do_not_cancel():
    eps_dd = "0.999999999999"
    value = bounds.get("chourasia2023:thm5.1/deletion-iterations").evaluate(
        lam=1, beta=3, epsilon_dp=1, epsilon_dd=eps_dd).value
    with mpmath.workdps(DPS):
        kappa = (mp(1) + mp(3)) / mp(1)  # (lambda + beta)/lambda, eq. (16)
        truth = 4 * kappa * mpmath.log(1 / mp(eps_dd))
    assert rel(value, truth) < 1e-14


# --------------------------------------------------------------------------------------------
# Koloskova et al.
# --------------------------------------------------------------------------------------------


def theta_truth(eps, r):
    """theta_eps(r) = Phi(r/2 - eps/r) - e^eps Phi(-r/2 - eps/r) (eq. 9), at 60 digits."""
    with mpmath.workdps(DPS + 40):  # the difference cancels where theta is small
        e, rr = mp(eps), mp(r)
        value = mpmath.ncdf(rr / 2 - e / rr) - mpmath.exp(e) * mpmath.ncdf(-rr / 2 - e / rr)
    with mpmath.workdps(DPS):
        return +value


@pytest.mark.parametrize("eps, r", [(1, 2), (1, 0.0625), (1, 0.03125), (5, 0.25), (0.5, 8)])
def test_eq9_float_is_the_correctly_rounded_theta(eps, r):
    value = bounds.get("koloskova2025:eq9").evaluate(epsilon=eps, r=r).value
    truth = theta_truth(eps, r)
    assert rel(value, truth) <= 2**-52


def least_sigma_truth(eps, delta, sens):
    """Least sigma with theta_eps(sens/sigma) <= delta (Balle and Wang 2018), by 60-digit bisection."""
    with mpmath.workdps(DPS):
        lo, hi = mp(sens) / 100, mp(sens) * 10**6
        for _ in range(400):
            mid = (lo + hi) / 2
            if theta_truth(eps, Fraction(str(mpmath.nstr(mp(sens) / mid, 70)))) <= mp(delta):
                hi = mid
            else:
                lo = mid
        return hi


def test_analytic_output_perturbation_sigma_rounds_up():
    value = bounds.get("koloskova2025:eq1/analytic").evaluate(epsilon="0.001", delta="1e-12",
                                                              C0=1).value
    truth = least_sigma_truth("0.001", "1e-12", 2)
    assert value >= truth and rel(value, truth) < 1e-9


def test_eq10_interval_encloses_the_value_at_a_tiny_delta():
    ev = bounds.get("koloskova2025:eq10").evaluate(
        precision="interval", epsilon=1, delta="1e-300", C0=30, C2="1/2", sigma0=0, sigma="1/200")
    with mpmath.workdps(DPS + 40):
        r = mp(1) / mp("1/200")  # 2 C2/sigma
        one_minus = mpmath.ncdf(1 / r - r / 2) + mpmath.e * mpmath.ncdf(-r / 2 - 1 / r)
        truth = mpmath.log(1 / mp("1e-300")) / -mpmath.log1p(-one_minus)  # sigma0 = 0: theta = 1
    assert ev.lower <= truth <= ev.upper
    assert mpmath.nstr(truth, 5) == "1.5585e+2176"
    code, text, _ = run_cli(["bounds", "eval", "koloskova2025:eq10", "epsilon=1", "delta=1e-300",
                             "C0=30", "C2=1/2", "sigma0=0", "sigma=1/200", "--precision", "interval"])
    assert code == 0 and "beyond the float range" in text and "upper inf" not in text


def test_gaussian_certificate_recheck_uses_the_exact_inputs():
    from bounds.hockey_stick import log_gaussian_delta, log_theta

    enclosure = log_gaussian_delta(epsilon=1, sensitivity=2 * Fraction(0.1), sigma=0.3)
    lo, hi = interval_endpoints(enclosure)
    r = 2 * Fraction(0.1) / Fraction(0.3)  # exact binary inputs, exact ratio
    truth = mpmath.log(theta_truth(1, r))
    assert mpmath.mpf(lo) <= truth <= mpmath.mpf(hi)
    assert type(log_theta(epsilon=1, r=2, precision="interval")).__name__ == "ivmpf"


def test_noise_floor_is_not_a_sufficient_noise_level():
    eq14 = bounds.get("koloskova2025:eq14").guarantee
    assert eq14.kind == "noise_floor" and eq14.safe_end == "lower"


# --------------------------------------------------------------------------------------------
# Command line and citations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1/0", "0/0", "-3/0"])
def test_division_by_zero_input_is_one_line_refusal(value):
    code, _, err = run_cli(["bounds", "eval", "guo2020:thm1", "gamma=1/4", "C=1", "lam=1",
                            f"n={value}"])
    assert code == 1 and err.count("\n") == 1 and "divides by zero" in err
    assert "internal error" not in err and "TypeError" not in err


def test_delta_below_the_float_range_is_a_usage_error():
    code, out, err = run_cli(["bounds", "epsilon", "chien2024:thm3.2", "--delta", "1e-400",
                              "alpha=10", "--json"])
    assert code == 2 and "below the smallest positive float" in err
    assert json.loads(out)["error"]["type"] == "usage"


def test_citations_carry_no_placeholder():
    placeholder = re.compile(r"\[\s*(seed\s*)?\]|TODO|XXX|\?\?|\{\}")
    for bound in bounds.list_bounds(None):
        assert not placeholder.search(bound.citation.describe()), bound.id
    code, text, _ = run_cli(["bounds", "show", "gaussian:rdp"])
    assert code == 0 and "[seed ]" not in text and "Mironov" in text
