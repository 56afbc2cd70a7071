"""Newton removal with loss perturbation, batched over trials (Guo et al. 2020, seed 002).

Guo, Goldstein, Hannun, van der Maaten, "Certified Data Removal from Machine Learning Models"
(ICML 2020), Algorithms 1 and 2, eqs. (3) and (6). Numerical core only (no adapter yet).

Every trial shares the data (features X of shape [n, d], labels y of shape [n]) and has its
own perturbation b ~ N(0, sigma^2 I_d), so the parameters are a [trials, d] tensor and every
step (Newton training, Hessians, the removal solves) is one batched torch call, never a Python
loop over trials.

Conventions (docs/errata-guo2020.md, G1, G4, G5, G7):

* objective L_b(w; D) = sum_i l(w.x_i, y_i) + (lambda n / 2)||w||^2 + b.w (Section 3.1, not
  Algorithm 1's printed lambda n ||w||^2); removal Delta = m lambda w + sum_{removed} grad l;
* the removal Hessian is that of the remaining objective, regulariser lambda (n - m) I included;
* ||X||_2 of the remaining rows is exact (torch.linalg.matrix_norm(ord=2)), not a power
  iteration from below;
* least squares l = (w.x - y)^2 has Hessian 2 x x^T and gamma = 0: its Newton removal is exact.

Training is solved by damped Newton to a stated gradient-norm tolerance; the optimiser's own
residual u0 = grad L_b(w_train; D) is returned and Algorithm 2's accumulator starts from ||u0||:
w_train is the exact minimiser of L_b - u0.w, so by the multiple-removal argument (Section 3.2)
the total residual after T removals is at most ||u0|| + the per-removal bounds.

This module never imports ``bounds``: the budget sigma epsilon / c (``guo2020:alg2/budget``)
is passed in by the caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

__all__ = [
    "LOGISTIC_GAMMA",
    "LOGISTIC_GAMMA_TIGHT",
    "Loss",
    "RemovalStep",
    "Trained",
    "algorithm2",
    "gamma_of",
    "gradient",
    "hessian",
    "newton_removal",
    "train",
]

Loss = Literal["logistic", "least_squares"]

LOGISTIC_GAMMA = 0.25  # the paper's Lipschitz constant of l'' for the logistic loss
# Tight: |d/dz sigmoid(z)(1 - sigmoid(z))| peaks at 1/(6 sqrt 3) ~ 0.0962.
LOGISTIC_GAMMA_TIGHT = 1.0 / (6.0 * math.sqrt(3.0))


def gamma_of(loss: Loss, *, tight: bool = False) -> float:
    """Lipschitz constant gamma of l'' (Section 3.2): 1/4 (or 1/(6 sqrt 3)) logistic, 0 squares."""
    if loss == "logistic":
        return LOGISTIC_GAMMA_TIGHT if tight else LOGISTIC_GAMMA
    if loss == "least_squares":
        return 0.0
    raise ValueError(f"unknown loss {loss!r}")


def _derivatives(margins: torch.Tensor, y: torch.Tensor, loss: Loss) -> tuple[torch.Tensor, torch.Tensor]:
    """(l', l'') with respect to the score s = w.x, per trial and point ([trials, n])."""
    if loss == "logistic":  # l = log(1 + exp(-y s)), y in {-1, +1}
        p = torch.sigmoid(y * margins)
        return (p - 1) * y, p * (1 - p)
    if loss == "least_squares":  # l = (s - y)^2
        return 2 * (margins - y), torch.full_like(margins, 2.0)
    raise ValueError(f"unknown loss {loss!r}")


def _loss_values(margins: torch.Tensor, y: torch.Tensor, loss: Loss) -> torch.Tensor:
    if loss == "logistic":
        return torch.nn.functional.softplus(-y * margins)
    return (margins - y) ** 2


def objective(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, lam: float, b: torch.Tensor,
              loss: Loss) -> torch.Tensor:
    """L_b(w; D) per trial ([trials])."""
    margins = w @ X.T
    n = X.shape[0]
    return _loss_values(margins, y, loss).sum(1) + 0.5 * lam * n * (w * w).sum(1) + (b * w).sum(1)


def gradient(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, lam: float, b: torch.Tensor,
             loss: Loss) -> torch.Tensor:
    """grad L_b(w; D) = sum l'(w.x_i) x_i + lambda n w + b, per trial ([trials, d])."""
    first, _ = _derivatives(w @ X.T, y, loss)
    return first @ X + lam * X.shape[0] * w + b


def hessian(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, lam: float, loss: Loss) -> torch.Tensor:
    """Hessian X^T diag(l'') X + lambda n I of the objective on (X, y), per trial ([trials, d, d])."""
    _, second = _derivatives(w @ X.T, y, loss)
    d = X.shape[1]
    H = X.T @ (second[:, :, None] * X)  # one batched GEMM: [d, n] @ [trials, n, d]
    return H + lam * X.shape[0] * torch.eye(d, dtype=X.dtype, device=X.device)


@dataclass(frozen=True)
class Trained:
    """Algorithm 1's output for every trial, with the optimiser's own residual."""

    w: torch.Tensor  # [trials, d]
    b: torch.Tensor  # [trials, d]
    residual: torch.Tensor  # ||grad L_b(w; D)|| per trial: the optimiser's residual u0
    iterations: int


def train(X: torch.Tensor, y: torch.Tensor, *, lam: float, b: torch.Tensor, loss: Loss,
          tol: float = 1e-10, max_iter: int = 100) -> Trained:
    """Algorithm 1 (with the (lambda n/2) regulariser): argmin_w L_b(w; D), one b per trial.

    Damped Newton (Armijo backtracking, per trial) with batched Hessian solves, to
    ||grad L_b|| <= tol * (1 + ||b||) in every trial. Raises if that tolerance is not met.
    """
    if lam <= 0:
        raise ValueError(f"lam must be > 0 (strong convexity), got {lam}")
    w = torch.zeros_like(b)
    target = tol * (1 + b.norm(dim=1))
    for iteration in range(1, max_iter + 1):
        g = gradient(w, X, y, lam=lam, b=b, loss=loss)
        if bool((g.norm(dim=1) <= target).all()):
            return Trained(w, b, g.norm(dim=1), iteration - 1)
        step = torch.linalg.solve(hessian(w, X, y, lam=lam, loss=loss), g)
        value = objective(w, X, y, lam=lam, b=b, loss=loss)
        slope = (g * step).sum(1)
        g_norm = g.norm(dim=1)
        t = torch.ones_like(value)
        for _ in range(60):  # backtracking, vectorised: halve t where neither test passes
            candidate = w - t[:, None] * step
            armijo = objective(candidate, X, y, lam=lam, b=b, loss=loss) <= value - 1e-4 * t * slope
            # Near the minimiser the objective's decrease drowns in rounding; a clear drop of the
            # gradient norm then accepts the (locally quadratically convergent) Newton step.
            smaller = gradient(candidate, X, y, lam=lam, b=b, loss=loss).norm(dim=1) <= 0.5 * g_norm
            bad = ~(armijo | smaller)
            if not bool(bad.any()):
                break
            t = torch.where(bad, t / 2, t)
        w = w - t[:, None] * step
    g = gradient(w, X, y, lam=lam, b=b, loss=loss)
    if not bool((g.norm(dim=1) <= target).all()):
        raise RuntimeError(f"Algorithm 1: Newton did not reach tol={tol} in {max_iter} iterations "
                           f"(worst residual {float(g.norm(dim=1).max()):.3g})")
    return Trained(w, b, g.norm(dim=1), max_iter)


@dataclass(frozen=True)
class RemovalStep:
    """One batch Newton removal (eq. 6) for every trial, with the quantities of Corollary 2."""

    w: torch.Tensor  # updated parameters [trials, d]
    update_norm: torch.Tensor  # ||H^{-1} Delta|| per trial
    X_update_norm: torch.Tensor  # ||X^(-m) H^{-1} Delta|| per trial
    X_norm: float  # exact ||X^(-m)||_2 (shared data)
    corollary2: torch.Tensor  # gamma ||X|| ||H^{-1} Delta|| ||X H^{-1} Delta|| per trial
    true_residual: torch.Tensor  # ||grad L_b(w^-; D \\ D_m)|| per trial (diagnostic)


def newton_removal(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, removed: torch.Tensor, *,
                   lam: float, b: torch.Tensor, loss: Loss, gamma: float | None = None) -> RemovalStep:
    """Remove the rows ``removed`` (indices into X) from every trial by one Newton step.

    Delta = m lambda w + sum_{removed} grad l (Algorithm 2, line 11), H = Hessian of the
    remaining objective including lambda (n - m) I, w^- = w + H^{-1} Delta, solved exactly with
    one batched ``torch.linalg.solve``. ``X`` and ``y`` are the rows present before the removal.
    """
    gamma = gamma_of(loss) if gamma is None else gamma
    keep = torch.ones(X.shape[0], dtype=torch.bool, device=X.device)
    keep[removed] = False
    X_gone, y_gone, X_keep, y_keep = X[~keep], y[~keep], X[keep], y[keep]
    m = X_gone.shape[0]
    first, _ = _derivatives(w @ X_gone.T, y_gone, loss)
    delta = m * lam * w + first @ X_gone
    v = torch.linalg.solve(hessian(w, X_keep, y_keep, lam=lam, loss=loss), delta)
    w_new = w + v
    X_norm = float(torch.linalg.matrix_norm(X_keep, ord=2))  # exact largest singular value
    update_norm = v.norm(dim=1)
    X_update_norm = (v @ X_keep.T).norm(dim=1)
    residual = gradient(w_new, X_keep, y_keep, lam=lam, b=b, loss=loss).norm(dim=1)
    return RemovalStep(w_new, update_norm, X_update_norm, X_norm,
                       gamma * X_norm * update_norm * X_update_norm, residual)


@dataclass(frozen=True)
class Algorithm2Result:
    """Algorithm 2 over a sequence of batches for every trial."""

    w: torch.Tensor  # final parameters [trials, d]
    beta: torch.Tensor  # accumulated residual bound at the end (after any reset)
    retrains: torch.Tensor  # number of retrains per trial
    beta_history: torch.Tensor  # [steps, trials] accumulator after each batch (before reset)
    true_residual_history: torch.Tensor  # [steps, trials] ||grad L_b|| after each step


def algorithm2(X: torch.Tensor, y: torch.Tensor, batches: list[torch.Tensor], *, lam: float,
               sigma: float, budget: float, loss: Loss, generator: torch.Generator,
               trials: int, gamma: float | None = None, tol: float = 1e-10) -> Algorithm2Result:
    """Algorithm 2: repeated batch removal with the data-dependent accumulator beta.

    ``budget`` is sigma epsilon / c (``guo2020:alg2/budget``). beta starts at the optimiser's
    residual (module docstring), adds Corollary 2 per batch, and when it exceeds the budget the
    trial is retrained from scratch on the remaining data with a fresh b (Algorithm 1) and beta
    is reset to that retrain's optimiser residual. ``batches`` index the original rows.
    """
    n, d = X.shape
    dtype, device = X.dtype, X.device
    b = sigma * torch.randn(trials, d, generator=generator, dtype=dtype, device=device)
    trained = train(X, y, lam=lam, b=b, loss=loss, tol=tol)
    w, beta = trained.w, trained.residual.clone()
    present = torch.ones(n, dtype=torch.bool, device=device)
    retrains = torch.zeros(trials, dtype=torch.long, device=device)
    betas, residuals = [], []
    for batch in batches:
        rows = torch.nonzero(present).squeeze(1)
        local = torch.nonzero(torch.isin(rows, batch)).squeeze(1)
        step = newton_removal(w, X[rows], y[rows], local, lam=lam, b=b, loss=loss, gamma=gamma)
        present[batch] = False
        beta = beta + step.corollary2
        betas.append(beta.clone())
        over = beta > budget
        w = torch.where(over[:, None], w, step.w)
        if bool(over.any()):
            fresh_b = sigma * torch.randn(int(over.sum()), d, generator=generator, dtype=dtype,
                                          device=device)
            again = train(X[present], y[present], lam=lam, b=fresh_b, loss=loss, tol=tol)
            w = w.clone()
            w[over] = again.w
            b = b.clone()
            b[over] = fresh_b
            beta = torch.where(over, torch.zeros_like(beta), beta)
            beta[over] = again.residual
            retrains = retrains + over.long()
        residuals.append(gradient(w, X[present], y[present], lam=lam, b=b, loss=loss).norm(dim=1))
    empty = torch.zeros(0, trials, dtype=dtype, device=device)
    return Algorithm2Result(w, beta, retrains, torch.stack(betas) if betas else empty,
                            torch.stack(residuals) if residuals else empty)
