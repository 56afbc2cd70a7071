"""The error budget split on the allocation pilot: the first 5% of one shared row order decides
the levels, no test reads those rows as tested data, and the levels never exceed the budget."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.allocation import (
    FLOOR_EPS,
    FLOOR_RENYI,
    KIND_EPS,
    RENYI_SHARE,
    allocation,
    pilot_allocation,
    trial_rows,
)
from audits.protocols import Certificate
from audits.results import AttackScores
from audits.runner import audit_scores
from audits.statistics import allocation_pilot_size
from empirical.benchmarks.leaks import LEAKS
from empirical.divergences.renyi_reach import gaussian_fit_excess
from empirical.divergences.renyi_tests import renyi_audit
from empirical.statistics.checks import paired_permutations
from empirical.statistics.pilot import pilot_epsilon_lower_bound
from empirical.statistics.pilot_window import pilot_window_epsilon_lower_bound

GAUSSIAN = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=1)


def _levels(result) -> tuple[float, float]:
    tests = result.report["verdict"]["tests"]
    return tests["alpha_each"], tests["alpha_renyi"]


def test_the_levels_depend_only_on_the_allocation_pilot_rows():
    n, seed = 4000, 3
    rng = np.random.default_rng(0)
    u, r = rng.normal(1.2, 1.0, n), rng.normal(0.0, 1.0, n)
    first = audit_scores(unlearned={"s": u}, retrained={"s": r}, certificate=GAUSSIAN,
                         seed=seed, estimators=[])
    pilot = trial_rows(seed, n)[:allocation_pilot_size(n)]
    tested = np.setdiff1d(np.arange(n), pilot)
    # Every other row replaced by scores of another law: the levels stay as they were.
    u2, r2 = u.copy(), r.copy()
    u2[tested], r2[tested] = rng.standard_cauchy(tested.size) * 50, rng.laplace(size=tested.size)
    second = audit_scores(unlearned={"s": u2}, retrained={"s": r2}, certificate=GAUSSIAN,
                          seed=seed, estimators=[])
    assert _levels(second) == _levels(first)
    assert first.report["verdict"]["tests"]["allocation"]["rule"] == "pilot"
    # The pilot rows themselves do decide: worlds lying apart on them make the (epsilon, delta)
    # test promising, and the split goes back to the fixed one.
    u3 = u.copy()
    u3[pilot] += 30.0
    third = audit_scores(unlearned={"s": u3}, retrained={"s": r}, certificate=GAUSSIAN,
                         seed=seed, estimators=[])
    assert _levels(third) != _levels(first)
    assert third.report["verdict"]["tests"]["allocation"]["ruled_out"] == []


@settings(max_examples=60, deadline=None)
@given(pilot_u=st.lists(st.floats(-1e6, 1e6), min_size=5, max_size=12),
       pilot_r=st.lists(st.sampled_from([0.0, 1.0, -3.5, 1e-9, 7.0]), min_size=5, max_size=12),
       statistics=st.sampled_from([("pilot-window",), ("pilot-threshold",),
                                   ("pilot-window", "pilot-threshold")]),
       direction=st.sampled_from(["both", "greater", "less"]),
       n_attacks=st.integers(1, 3), sigma=st.sampled_from([0.3, 1.0, 5.0]),
       miss=st.sampled_from([1e-6, 0.05, 0.5]))
def test_the_levels_sum_to_at_most_the_budget_for_every_pilot(pilot_u, pilot_r, statistics,
                                                              direction, n_attacks, sigma,
                                                              miss):
    n = 200  # allocation_pilot_size(200) = 10 rows: the drawn pilot values fill them, the rest is noise
    k = allocation_pilot_size(n)
    rows = trial_rows(0, n)
    rng = np.random.default_rng(1)
    certificate = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1,
                                         sigma=sigma)
    attacks = []
    for i in range(n_attacks):
        u, r = rng.normal(size=n), rng.normal(size=n)
        u[rows[:k]] = np.resize(np.asarray(pilot_u) * (i + 1), k)
        r[rows[:k]] = np.resize(np.asarray(pilot_r), k)
        attacks.append(AttackScores(f"a{i}", u, r, None, {}))
    n_eps, n_renyi = n_attacks * len(statistics), n_attacks  # one test per pilot statistic
    chosen = pilot_allocation(attacks, certificate, statistics=statistics, direction=direction,
                              miss=miss, rows=rows, n_eps=n_eps, n_renyi=n_renyi)
    assert chosen.rule == "pilot"
    assert chosen.alpha_eps > 0 and chosen.alpha_renyi > 0
    assert n_eps * chosen.alpha_eps + n_renyi * chosen.alpha_renyi <= miss * (1 + 1e-12)


@pytest.mark.parametrize("ruled_out", [None, (), (KIND_EPS,), ("renyi",), (KIND_EPS, "renyi")])
@pytest.mark.parametrize("n_eps,n_renyi", [(1, 1), (3, 1), (2, 5), (0, 2), (4, 0)])
def test_every_allocation_spends_at_most_the_budget(ruled_out, n_eps, n_renyi):
    eps, renyi = allocation(n_eps=n_eps, n_renyi=n_renyi, miss=0.05, ruled_out=ruled_out)
    assert n_eps * eps + n_renyi * renyi == pytest.approx(0.05, rel=1e-12)


@pytest.mark.parametrize("ruled_out", [(), ("renyi",)])
def test_a_promising_epsilon_delta_test_keeps_almost_its_whole_level_beside_a_renyi_curve(
        ruled_out):
    """Stating a Rényi curve beside (epsilon, delta) must not starve an (epsilon, delta) test
    the pilot forecasts to reject: it keeps 1 - FLOOR_RENYI of the level it has alone."""
    alone = allocation(n_eps=1, n_renyi=0, miss=0.05, ruled_out=ruled_out)[0]
    beside = allocation(n_eps=1, n_renyi=1, miss=0.05, ruled_out=ruled_out)[0]
    assert beside == pytest.approx((1 - FLOOR_RENYI) * alone)


def test_the_pilot_gives_almost_all_the_budget_to_the_renyi_test_on_gaussian_scores():
    """N = 10^4, delta = 1e-5, a 15% noise shortfall: the (epsilon, delta) test cannot show
    more than the certified epsilon there, and the pilot says so."""
    rng = np.random.default_rng(5)
    hits = 0
    for seed in range(3):
        u, r = rng.normal(1.15, 1.0, 10_000), rng.normal(0.0, 1.0, 10_000)
        result = audit_scores(unlearned={"s": u}, retrained={"s": r}, certificate=GAUSSIAN,
                              seed=seed, estimators=[])
        allocation_record = result.report["verdict"]["tests"]["allocation"]
        assert allocation_record["ruled_out"] == [KIND_EPS]
        assert allocation_record["predicted_epsilon"] < GAUSSIAN.epsilon
        eps_level, renyi_level = _levels(result)
        assert renyi_level == pytest.approx(0.05 * (1 - FLOOR_EPS))
        assert renyi_level > 0.05 * RENYI_SHARE  # more than the fixed split gives it
        assert eps_level == pytest.approx(0.05 * FLOOR_EPS)
        hits += result.status == "VIOLATION"
    assert hits >= 2


def test_an_atom_leak_forecast_just_short_of_the_certificate_keeps_its_epsilon_delta_level():
    """A 5% atom inside the bulk at N = 2000 against a Gaussian curve (sigma 2, epsilon 2.52):
    its 100-row pilot forecasts the (epsilon, delta) test near, often just short of, the
    certified epsilon; the tests that then refute it alone must keep their level beside the
    curve in most draws (stating more never sees less)."""
    curve = Certificate.from_bound("gaussian:rdp", delta=1e-5, sensitivity=1, sigma=2)
    leak = next(leak for leak in LEAKS if leak.name.startswith("inner atom"))
    n, kept, forecasts = 2000, 0, []
    for seed in range(40):
        u, r = leak.draw(np.random.default_rng([8_081, n, seed]), n)
        rows = trial_rows(seed, n)
        attack = AttackScores(name="s", unlearned=u, retrained=r, per_example=None, details={})
        chosen = pilot_allocation([attack], curve,
                                  statistics=("pilot-regions",), direction="both", miss=0.05,
                                  rows=rows, n_eps=1, n_renyi=1)
        forecasts.append(chosen.predicted_epsilon / curve.epsilon)
        kept += KIND_EPS not in chosen.ruled_out
    # Forecasts come in steps of the pilot's atom count; 3 of these 40 sit at 0.80 of the
    # certificate, which a margin of 0.8 would hand to the Rényi test (34 kept).
    assert kept >= 37, sorted(forecasts)


@pytest.mark.parametrize("statistics,n", [(("pilot-window", "bonferroni-pareto"), 2000),
                                          (("sample-split",), 2000),
                                          (("pilot-window",), 60)])
def test_a_statistic_that_reads_every_trial_keeps_the_fixed_split(statistics, n):
    rng = np.random.default_rng(2)
    result = audit_scores(unlearned={"s": rng.normal(1.15, 1.0, n)},
                          retrained={"s": rng.normal(0.0, 1.0, n)}, certificate=GAUSSIAN,
                          statistics=statistics, estimators=[])
    tests = result.report["verdict"]["tests"]
    n_eps = tests["family_size"] - 1
    assert tests["allocation"]["rule"] == "fixed"
    assert tests["allocation"]["reason"]
    assert _levels(result) == pytest.approx(allocation(n_eps=n_eps, n_renyi=1, miss=0.05))
    if result.status != "INCONCLUSIVE":
        assert "by a rule fixed in advance" in result.report["verdict"]["explanation"]


def test_every_pilot_of_the_audit_is_a_prefix_of_the_one_row_order():
    """Given the shared row order, the pilot-window and pilot-threshold statistics hold out
    exactly its first 5% and the Rényi test its first 20%: scores outside those rows never
    change what the statistics chose, and a given order is the split a seed would draw."""
    n, seed = 2000, 9
    rng = np.random.default_rng(4)
    u, r = rng.normal(2.0, 1.0, n), rng.normal(0.0, 1.0, n)
    rows = trial_rows(seed, n)
    window = pilot_window_epsilon_lower_bound(u, r, delta=1e-3, rows=rows)
    threshold = pilot_epsilon_lower_bound(u, r, delta=1e-3, rows=rows,
                                          pilot_fraction=allocation_pilot_size(n) / n)
    renyi = renyi_audit(u, r, certified=lambda a: a / 2, rows=rows)
    assert window.n_pilot_positive == threshold.n_pilot_positive == allocation_pilot_size(n)
    assert window.n_positive == threshold.n_positive == n - allocation_pilot_size(n)
    assert renyi.n_pilot_p == round(0.2 * n)
    # Shift the rows after the first 20%: every choice made on a pilot stays as it was.
    late = rows[round(0.2 * n):]
    u2 = u.copy()
    u2[late] = u2[late] * 3 + 1
    assert pilot_window_epsilon_lower_bound(u2, r, delta=1e-3, rows=rows).threshold == \
        window.threshold
    assert pilot_epsilon_lower_bound(u2, r, delta=1e-3, rows=rows,
                                     pilot_fraction=allocation_pilot_size(n) / n).threshold == \
        threshold.threshold
    assert renyi_audit(u2, r, certified=lambda a: a / 2, rows=rows).choice == renyi.choice
    # A given order is the seeded split.
    drawn, _ = paired_permutations(np.random.default_rng(seed), n, n)
    assert pilot_window_epsilon_lower_bound(u, r, delta=1e-3, seed=seed) == \
        pilot_window_epsilon_lower_bound(u, r, delta=1e-3, rows=drawn)
    with pytest.raises(ValueError, match="permutation"):
        pilot_window_epsilon_lower_bound(u, r, delta=1e-3, rows=np.zeros(n, dtype=int))


def _normal_renyi_by_quadrature(m1, s1, m2, s2, order):
    mpmath.mp.dps = 40
    m1, s1, m2, s2, a = (mpmath.mpf(x) for x in (m1, s1, m2, s2, order))

    def integrand(x):
        return (mpmath.npdf(x, m1, s1) ** a) * (mpmath.npdf(x, m2, s2) ** (1 - a))

    total = mpmath.quad(integrand, [-mpmath.inf, m1 - 10 * s1, m1, m2, m2 + 10 * s2, mpmath.inf])
    return float(mpmath.log(total) / (a - 1))


@pytest.mark.parametrize("m1,s1,m2,s2,order", [(1.2, 1.0, 0.0, 1.0, 2.0),
                                               (0.3, 0.8, -0.1, 1.1, 3.0),
                                               (0.0, 1.5, 0.5, 1.0, 1.25)])
def test_the_normal_fits_renyi_divergence_matches_quadrature(m1, s1, m2, s2, order):
    rng = np.random.default_rng(0)
    # Pilots rescaled to have exactly these sample means and standard deviations.
    def exact(m, s):
        x = rng.normal(size=50)
        return m + s * (x - x.mean()) / x.std(ddof=1)

    excess = gaussian_fit_excess(exact(m1, s1), exact(m2, s2), certified=lambda a: 0.0,
                                 orders=[order], two_sided=False)
    assert excess == pytest.approx(_normal_renyi_by_quadrature(m1, s1, m2, s2, order),
                                   rel=1e-9)
    # Where order s2^2 + (1 - order) s1^2 <= 0 the divergence is infinite.
    assert gaussian_fit_excess(exact(0, 2.0), exact(0, 1.0), certified=lambda a: 0.0,
                               orders=[8.0], two_sided=False) == math.inf
