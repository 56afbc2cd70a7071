"""The grid laws of empirical.exact_laws against closed forms: Gaussian recursions (linear
drift, no projection), hand-computed atoms, and a simulation of projected noisy steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bounds.conversions import gaussian_epsilon
from empirical.exact_laws.divergences import epsilon_at_delta, hockey_stick, renyi_divergence
from empirical.exact_laws.grid import Grid, GridLaw, gaussian_law, noisy_step, point_mass
from empirical.exact_laws.noisy_gradient import Records, StepRule, ordered_partitions, run_epochs


def _gaussian_pair(shift: float, steps: int) -> tuple[GridLaw, GridLaw, float, float]:
    """Two runs of x <- 0.7 x + c + N(0, 0.3^2) from N(0, 1) and N(shift, 1): Gaussian laws
    with the closed-form means and variance."""
    grid = Grid(-14.0, 14.0, 1401, False)
    p = gaussian_law(grid, mean=shift, variance=1.0)
    q = gaussian_law(grid, mean=0.0, variance=1.0)
    mean_p, mean_q, var = shift, 0.0, 1.0
    for _ in range(steps):
        p = noisy_step(p, lambda x: 0.7 * x + 0.1, noise_std=0.3)
        q = noisy_step(q, lambda x: 0.7 * x + 0.1, noise_std=0.3)
        mean_p, mean_q, var = 0.7 * mean_p + 0.1, 0.7 * mean_q + 0.1, 0.49 * var + 0.09
    return p, q, (mean_p - mean_q) / math.sqrt(var), var


@pytest.mark.parametrize("alpha", [1.5, 2.0, 10.0])
def test_renyi_divergence_of_a_linear_gaussian_recursion_matches_alpha_mu_squared_over_two(
        alpha: float) -> None:
    p, q, mu, _ = _gaussian_pair(0.8, steps=3)
    assert renyi_divergence(p, q, alpha) == pytest.approx(alpha * mu**2 / 2, rel=1e-9)
    assert renyi_divergence(q, p, alpha) == pytest.approx(alpha * mu**2 / 2, rel=1e-9)


def test_a_tiny_renyi_divergence_keeps_its_relative_accuracy() -> None:
    p, q, mu, _ = _gaussian_pair(1e-5, steps=2)
    assert renyi_divergence(p, q, 2.0) == pytest.approx(mu**2, rel=1e-6)


@pytest.mark.parametrize("delta", [1e-2, 1e-5])
def test_epsilon_of_a_gaussian_pair_matches_the_exact_gaussian_curve(delta: float) -> None:
    p, q, mu, _ = _gaussian_pair(0.8, steps=3)
    assert epsilon_at_delta(p, q, delta) == pytest.approx(gaussian_epsilon(delta=delta, mu=mu),
                                                          rel=1e-6)


def test_a_noisy_step_keeps_the_mass_and_moves_mean_and_variance_exactly() -> None:
    _, q, _, var = _gaussian_pair(0.0, steps=4)
    assert q.total_mass() == pytest.approx(1.0, abs=1e-12)
    assert q.variance() == pytest.approx(var, rel=1e-9)


def test_hockey_stick_sums_over_atoms_and_density() -> None:
    grid = Grid(-1.0, 1.0, 5, True)
    empty = np.full(5, -np.inf)
    p = GridLaw(grid, empty, np.array([-1.0, 1.0]), np.log([0.25, 0.75]))
    q = GridLaw(grid, empty, np.array([-1.0, 1.0]), np.log([0.5, 0.5]))
    eps = 0.2
    expected = max(0.75 - math.exp(eps) * 0.5, 0.0) + max(0.25 - math.exp(eps) * 0.5, 0.0)
    assert hockey_stick(p, q, eps) == pytest.approx(expected, rel=1e-12)
    # the smallest eps with H <= delta: 0.75 - e^eps 0.5 = delta
    assert epsilon_at_delta(p, q, 0.1) == pytest.approx(math.log(0.65 / 0.5), rel=1e-12)
    alpha = 3.0
    assert renyi_divergence(p, q, alpha) == pytest.approx(
        math.log(0.25**3 * 0.5**-2 + 0.75**3 * 0.5**-2) / 2, rel=1e-12)


def test_mass_where_the_other_law_has_none_makes_the_divergences_infinite() -> None:
    grid = Grid(-1.0, 1.0, 5, True)
    empty = np.full(5, -np.inf)
    p = GridLaw(grid, empty, np.array([-1.0, 1.0]), np.log([0.5, 0.5]))
    q = GridLaw(grid, empty, np.array([1.0]), np.array([0.0]))
    assert renyi_divergence(p, q, 2.0) == math.inf
    assert epsilon_at_delta(p, q, 0.1) == math.inf
    assert epsilon_at_delta(q, p, 0.1) < math.inf


def test_projected_noisy_steps_match_a_simulation_of_the_mechanism() -> None:
    """Atoms at +-R and the mean of three projected clipped-logistic steps against 400 000
    simulated runs (5 standard errors)."""
    records = Records((1.0, -0.5, 0.8, 0.3), (1.0, -1.0, -1.0, 1.0), (1.0, 0.0, 1.0, 1.0))
    rule = StepRule(eta=0.9, l2=0.5, clip=0.2)
    batches = [(0, 1), (2, 3)]
    radius, noise = 0.3, 0.25
    law = run_epochs(point_mass(Grid(-radius, radius, 301, True), 0.0), rule, records, batches,
                     epochs=2, noise_std=noise, radius=radius)
    rng = np.random.default_rng(7)
    x = np.zeros(400_000)
    for _ in range(2):
        for batch in batches:
            x = np.clip(rule.drift(records, batch)(x) + noise * rng.standard_normal(x.size),
                        -radius, radius)
    atoms = np.exp(law.atom_log_masses)
    for atom, hits in zip(atoms, (x == -radius, x == radius), strict=True):
        se = math.sqrt(atom * (1 - atom) / x.size)
        assert abs(hits.mean() - atom) < 5 * se
    assert abs(x.mean() - law.mean()) < 5 * x.std() / math.sqrt(x.size)


def test_ordered_partitions_are_the_distinct_batch_sequences() -> None:
    parts = list(ordered_partitions(4, 2))
    assert len(parts) == 6 == len(set(parts))
    assert all(sorted(i for b in p for i in b) == [0, 1, 2, 3] for p in parts)


def test_a_crossing_next_to_a_grid_point_is_found_and_h0_is_the_total_variation() -> None:
    """The log ratio of two Gaussians crosses 0 within 0.002 of a grid point here."""
    grid = Grid(-41.5945122981953, 41.6945122981953, 801, False)
    sigma = 2.574657018637206
    p, q = (noisy_step(point_mass(grid, c), lambda x: x, noise_std=sigma) for c in (0.5, -0.4))
    mu = 0.9 / sigma
    total_variation = math.erf(mu / (2 * math.sqrt(2)))
    assert hockey_stick(p, q, 0.0) == pytest.approx(total_variation, rel=1e-7)
