"""Newton removal with loss perturbation (Guo et al. 2020): the batched torch core against
per-trial numpy, exactness for least squares, Corollary 2 above the true residual, Algorithm 2."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from empirical.mechanisms import guo2020 as g
from empirical.mechanisms.common import TrialOptions


def problem(n: int = 40, d: int = 5, *, seed: int = 0, loss: g.Loss = "logistic"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.uniform(0.3, 1.0, size=(n, 1))  # ||x_i|| <= 1
    y = rng.choice([-1.0, 1.0], size=n) if loss == "logistic" else rng.normal(size=n)
    return torch.tensor(X), torch.tensor(y)


def noise(trials: int, d: int, sigma: float, seed: int = 1) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return sigma * torch.randn(trials, d, generator=gen, dtype=torch.float64)


def test_gamma_constants() -> None:
    z = torch.linspace(-10, 10, 200001, dtype=torch.float64)
    s = torch.sigmoid(z)
    third = (s * (1 - s) * (1 - 2 * s)).abs().max()  # |d/dz l''| for the logistic loss
    assert math.isclose(float(third), g.LOGISTIC_GAMMA_TIGHT, rel_tol=1e-8)
    assert g.gamma_of("logistic") == 0.25 and g.gamma_of("least_squares") == 0.0


@pytest.mark.parametrize("loss", ["logistic", "least_squares"])
def test_training_reaches_the_stated_tolerance(loss: g.Loss) -> None:
    X, y = problem(loss=loss)
    b = noise(6, X.shape[1], 5.0)
    trained = g.train(X, y, lam=0.05, b=b, loss=loss, tol=1e-11)
    assert bool((trained.residual <= 1e-11 * (1 + b.norm(dim=1))).all())
    recomputed = g.gradient(trained.w, X, y, lam=0.05, b=b, loss=loss).norm(dim=1)
    assert torch.allclose(recomputed, trained.residual)


def test_least_squares_removal_is_exact() -> None:
    """gamma = 0: the Newton step lands on the new minimiser; residual 0 to rounding."""
    X, y = problem(loss="least_squares")
    b = noise(4, X.shape[1], 10.0)
    trained = g.train(X, y, lam=0.1, b=b, loss="least_squares")
    step = g.newton_removal(trained.w, X, y, torch.tensor([3, 17, 30]), lam=0.1, b=b,
                            loss="least_squares")
    assert bool((step.true_residual <= 1e-11 * (1 + b.norm(dim=1))).all())
    assert bool((step.corollary2 == 0).all())


def _numpy_removal(w, X, y, removed, lam, b):
    """One trial of the logistic batch Newton removal, written independently in numpy."""
    keep = np.setdiff1d(np.arange(len(y)), removed)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    gone = removed
    delta = len(gone) * lam * w + X[gone].T @ ((sig(y[gone] * (X[gone] @ w)) - 1) * y[gone])
    s = sig(y[keep] * (X[keep] @ w))
    H = (X[keep].T * (s * (1 - s))) @ X[keep] + lam * len(keep) * np.eye(X.shape[1])
    v = np.linalg.solve(H, delta)
    w_new = w + v
    grad = X[keep].T @ ((sig(y[keep] * (X[keep] @ w_new)) - 1) * y[keep]) + lam * len(keep) * w_new + b
    x_norm = np.linalg.svd(X[keep], compute_uv=False)[0]
    return w_new, 0.25 * x_norm * np.linalg.norm(v) * np.linalg.norm(X[keep] @ v), np.linalg.norm(grad)


def test_batched_removal_matches_a_per_trial_numpy_loop_and_corollary2_holds() -> None:
    X, y = problem(n=30, d=4, seed=3)
    b = noise(5, 4, 30.0, seed=4)
    lam = 0.02
    trained = g.train(X, y, lam=lam, b=b, loss="logistic")
    removed = torch.tensor([2, 9, 21])
    step = g.newton_removal(trained.w, X, y, removed, lam=lam, b=b, loss="logistic")
    for t in range(5):
        w_new, cor2, residual = _numpy_removal(trained.w[t].numpy(), X.numpy(), y.numpy(),
                                               removed.numpy(), lam, b[t].numpy())
        np.testing.assert_allclose(step.w[t].numpy(), w_new, rtol=1e-10, atol=1e-12)
        assert math.isclose(float(step.corollary2[t]), cor2, rel_tol=1e-9)
        assert math.isclose(float(step.true_residual[t]), residual, rel_tol=1e-6, abs_tol=1e-12)
    assert bool((step.true_residual <= step.corollary2 + 1e-12).all())
    # Corollary 2 <= Theorem 4's middle term gamma (n - m) ||H^{-1} Delta||^2
    middle = 0.25 * (X.shape[0] - 3) * step.update_norm**2
    assert bool((step.corollary2 <= middle * (1 + 1e-12)).all())


def test_exact_spectral_norm_not_power_iteration() -> None:
    X, y = problem(n=25, d=6, seed=5)
    b = noise(2, 6, 1.0)
    trained = g.train(X, y, lam=0.1, b=b, loss="logistic")
    step = g.newton_removal(trained.w, X, y, torch.tensor([0]), lam=0.1, b=b, loss="logistic")
    exact = np.linalg.svd(X.numpy()[1:], compute_uv=False)[0]
    assert math.isclose(step.X_norm, exact, rel_tol=1e-12)


def test_algorithm2_accumulates_and_retrains() -> None:
    X, y = problem(n=40, d=4, seed=6)
    batches = [torch.tensor([i]) for i in range(6)]
    gen = torch.Generator().manual_seed(0)
    generous = g.algorithm2(X, y, batches, lam=0.05, sigma=1.0, budget=1e6, loss="logistic",
                            generator=gen, trials=3)
    assert bool((generous.retrains == 0).all())
    increments = torch.diff(generous.beta_history, dim=0)
    assert bool((increments >= 0).all())  # beta only grows without a retrain
    assert bool((generous.true_residual_history <= generous.beta_history + 1e-12).all())
    gen = torch.Generator().manual_seed(0)
    tight = g.algorithm2(X, y, batches[:3], lam=0.05, sigma=1.0, budget=1e-9, loss="logistic",
                         generator=gen, trials=2)
    assert bool((tight.retrains == 3).all())  # every removal exceeds a tiny budget
    assert bool((tight.beta <= 1e-9).all())  # reset to the retrain's optimiser residual


def test_packed_hessian_matches_the_shared_trial_model() -> None:
    """The one-GEMM Hessian equals LogisticRegression.data_hessian_sum + lambda n I (the shared model)."""
    from empirical.models.linear import LogisticRegression

    X, y = problem(n=30, d=5, seed=7)
    w = noise(4, 5, 2.0, seed=8)
    weights = torch.ones(30, dtype=torch.float64)
    weights[[1, 4]] = 0.0
    ours = g.hessian(w, X, y, lam=0.1, loss="logistic", weights=weights)
    shared = LogisticRegression(5).data_hessian_sum(
        w, X.expand(4, 30, 5), y.expand(4, 30), weights.expand(4, 30))
    torch.testing.assert_close(ours, shared + 0.1 * 28 * torch.eye(5, dtype=torch.float64),
                               rtol=1e-13, atol=1e-13)


def test_refined_hessian_solve_is_as_exact_as_cholesky() -> None:
    X, y = problem(n=50, d=6, seed=9)
    b = noise(8, 6, 3.0, seed=10)
    trained = g.train(X, y, lam=0.05, b=b, loss="logistic")
    rhs = noise(8, 6, 1.0, seed=11)
    w0 = g.train(X, y, lam=0.05, b=torch.zeros(1, 6, dtype=torch.float64), loss="logistic").w
    P = torch.linalg.inv(g.hessian(w0, X, y, lam=0.05, loss="logistic")[0])
    refined = g.hessian_solve(trained.w, X, y, rhs, lam=0.05, loss="logistic", preconditioner=P)
    H = g.hessian(trained.w, X, y, lam=0.05, loss="logistic")
    direct = torch.from_numpy(np.linalg.solve(H.numpy(), rhs.numpy()[..., None])[..., 0])
    torch.testing.assert_close(refined, direct, rtol=1e-12, atol=1e-14)
    # A useless preconditioner (far from H) falls back to Cholesky and is still exact.
    fallback = g.hessian_solve(trained.w, X, y, rhs, lam=0.05, loss="logistic",
                               preconditioner=-P)
    torch.testing.assert_close(fallback, direct, rtol=1e-12, atol=1e-14)


def test_preconditioned_training_meets_the_tolerance_and_agrees_with_newton() -> None:
    X, y = problem(n=40, d=5, seed=12)
    b = noise(6, 5, 20.0, seed=13)  # large noise: some trials leave P's basin and use Newton
    zero = torch.zeros(1, 5, dtype=torch.float64)
    w0 = g.train(X, y, lam=0.02, b=zero, loss="logistic").w
    P = torch.linalg.inv(g.hessian(w0, X, y, lam=0.02, loss="logistic")[0])
    fast = g.train(X, y, lam=0.02, b=b, loss="logistic", start=w0 - b @ P, preconditioner=P,
                   tol=1e-12)
    plain = g.train(X, y, lam=0.02, b=b, loss="logistic", tol=1e-12)
    assert bool((fast.residual <= 1e-12 * (1 + b.norm(dim=1))).all())
    torch.testing.assert_close(fast.w, plain.w, rtol=1e-9, atol=1e-10)


def digits_removals(count: int):
    from empirical.data.datasets import load_dataset
    from empirical.data.requests import removal_request

    return load_dataset("digits"), [removal_request([i]) for i in range(count)]


def test_run_guo_batched_equals_loop_and_respects_the_budget() -> None:
    dataset, requests = digits_removals(3)
    config = g.GuoConfig(lam=0.01, sigma=0.5, budget=0.012)
    batched = g.run_guo(dataset, requests, config=config,
                        options=TrialOptions(n_trials=6, seed=3, retain_scores=4))
    looped = g.run_guo(dataset, requests, config=config,
                       options=TrialOptions(n_trials=3, seed=3, mode="loop", first_trial=3, retain_scores=4))
    assert np.array_equal(batched.unlearned.params[3:], looped.unlearned.params)
    assert np.array_equal(batched.retrained.params[3:], looped.retrained.params)
    # beta only exceeds the budget at a step that retrains, and then the model is a fresh one.
    over = batched.beta_history > config.budget
    assert np.array_equal(over, batched.retrained_at.astype(bool))
    assert 0 < over.sum() < over.size  # this budget retrains sometimes, not always
    # The published model's true residual stays below the accumulated data-dependent bound.
    accumulated = np.where(over, np.inf, batched.beta_history)
    assert np.all(batched.residual_history <= accumulated + 1e-12)
    assert batched.X_norms[1] == pytest.approx(
        np.linalg.svd(dataset.features[1:], compute_uv=False)[0], rel=1e-12)


def per_trial_outputs(result: g.GuoResult) -> dict[str, np.ndarray]:
    """Every per-trial array of a run_guo result, by name."""
    outputs = {f"{side}.{name}": getattr(getattr(result, side), name)
               for side in ("unlearned", "retrained")
               for name in ("params", "forget_losses", "retain_losses", "test_accuracy")}
    outputs.update(beta=result.beta_history, residual=result.residual_history,
                   corollary2=result.corollary2_history, retrained_at=result.retrained_at,
                   train_residual=result.train_residual)
    return outputs


@pytest.mark.parametrize(("sigma", "lam", "budget"), [(0.5, 0.01, 0.012), (20.0, 0.001, 30.0)],
                         ids=["refinement-and-retrains", "exact-newton-and-cholesky-fallbacks"])
def test_a_trials_outputs_are_bit_identical_alone_in_a_batch_or_at_another_position(
        sigma: float, lam: float, budget: float) -> None:
    """Trial i's bits depend on (seed, i) only: not on how many trials share the call, the
    trial's place among them, the chunk size or the loop mode. The second setting sends trials
    out of the shared preconditioner's reach (exact Newton, Cholesky), the budget makes some
    trials retrain at some steps (rows of a chunk taking a separate path)."""
    dataset, requests = digits_removals(3)
    config = g.GuoConfig(lam=lam, sigma=sigma, budget=budget)

    def run(first: int, n_trials: int, **options: object) -> dict[str, np.ndarray]:
        return per_trial_outputs(g.run_guo(dataset, requests, config=config, options=TrialOptions(
            n_trials=n_trials, seed=3, first_trial=first, retain_scores=4, **options)))

    batch = run(0, 12)
    retrained = batch["retrained_at"].astype(bool)
    assert retrained.any() and not retrained.all()
    others = {"trial 5 alone": (5, run(5, 1)),
              "trial 5 third of five": (3, run(3, 5)),
              "trials 4-6 one at a time": (4, run(4, 3, mode="loop")),
              "chunks of 5": (0, run(0, 12, chunk_size=5))}
    for label, (first, outputs) in others.items():
        for name, values in outputs.items():
            assert np.array_equal(values, batch[name][first:first + len(values)]), (label, name)


def test_exact_hessian_solves_give_the_same_bits_one_trial_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact solves (damped Newton, the Cholesky fallback) form their Hessians a group of
    trials at a time to bound memory; groups of one trial change no bit."""
    dataset, requests = digits_removals(2)
    config = g.GuoConfig(lam=0.001, sigma=20.0, budget=30.0)  # far from the preconditioner

    def run() -> tuple[dict[str, np.ndarray], int]:
        solves = []
        original = g._solve_spd

        def counted(H: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
            solves.append(H.shape[0])
            return original(H, rhs)

        with monkeypatch.context() as patch:
            patch.setattr(g, "_solve_spd", counted)
            result = g.run_guo(dataset, requests, config=config,
                               options=TrialOptions(n_trials=8, seed=5, retain_scores=4))
        return per_trial_outputs(result), max(solves)

    grouped, largest = run()
    assert largest > 1  # several trials' Hessians at once by default
    monkeypatch.setattr(g, "_HESSIAN_BYTES", 1)
    alone, largest = run()
    assert largest == 1
    for name, values in grouped.items():
        assert np.array_equal(values, alone[name]), name


def test_run_guo_refuses_replacements() -> None:
    from empirical.data.datasets import load_dataset
    from empirical.data.requests import replacement_request

    dataset = load_dataset("digits")
    with pytest.raises(ValueError, match="removals only"):
        g.run_guo(dataset, replacement_request(dataset, [0], seed=0), config=g.GuoConfig(lam=0.01, sigma=1.0),
                  options=TrialOptions(n_trials=2, seed=0))


def test_spectral_norm_is_bounded_from_above_against_50_digits() -> None:
    import mpmath

    for seed in range(5):
        X, _ = problem(n=12, d=5, seed=20 + seed)
        with mpmath.workdps(50):
            gram = mpmath.matrix(X.numpy().T.tolist()) * mpmath.matrix(X.numpy().tolist())
            exact = mpmath.sqrt(max(mpmath.eigsy(gram)[0]))
        upper = g.spectral_norm_upper(X)
        assert upper >= exact
        assert upper <= exact * (1 + 1e-12)


def test_run_guo_refuses_a_model_its_config_does_not_train() -> None:
    from empirical.models.linear import LogisticRegression

    dataset, requests = digits_removals(1)
    with pytest.raises(ValueError, match="options.model must be None"):
        g.run_guo(dataset, requests, config=g.GuoConfig(lam=0.01, sigma=1.0),
                  options=TrialOptions(n_trials=1, seed=0, model=LogisticRegression(dataset.dim)))
