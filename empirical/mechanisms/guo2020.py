"""Newton removal with loss perturbation, batched over trials (Guo et al. 2020, seed 002).

Guo, Goldstein, Hannun, van der Maaten, "Certified Data Removal from Machine Learning Models"
(ICML 2020), Algorithms 1 and 2, eqs. (3) and (6).

Every trial shares the data (features X [n, d], labels y [n], row weights in {0, 1}: a removed
row keeps its place with weight 0, as :func:`empirical.mechanisms.common.data_versions` builds
them) and has its own perturbation b ~ N(0, sigma^2 I_d). Parameters are a [trials, d] tensor
and every step is one batched torch call, never a Python loop over trials:

* every product of the trials' rows with a table they share (the data X, the packed outer
  products x_i x_i^T, the preconditioner) is a blocked product of a fixed number of trials
  (:func:`empirical.models.linear.blocked_product`): Hessians X^T diag(w_i l''_i) X are one such
  product [N, n] @ [n, d(d+1)/2] with the packed outer products (computed once per dataset),
  then unpacked;
* training starts from a shared warm start (the unperturbed minimiser w_0 minus
  H_0^{-1} b, exact to first order in b) and takes fixed-matrix Newton steps with the shared
  H_0^{-1}, two matrix products per step; trials where that stops contracting switch to exact
  damped Newton (batched Hessians and Cholesky);
* the removal's solve H^{-1} Delta with the exact Hessian of the remaining data is iterative
  refinement preconditioned by H_0^{-1}, run until its computed residual is at rounding level
  (the backward error of a direct solve), with batched Cholesky as the fallback.

Shared per-dataset work (w_0, H_0^{-1}, exact ||X||_2 per data version) is done once per call,
outside the trials. A trial's numbers are bit for bit the same however many trials share the
call (see :func:`run_guo`). On digits 3-vs-8 (n = 256, d = 64, one torch thread) this runs
train + one removal + retrain at about 35 times the per-trial rate of the same code run one
trial at a time (``unlearn bench trials --algorithm guo2020-newton``).

Conventions (docs/errata-guo2020.md, G1, G4, G5, G7):

* objective L_b(w; D) = sum_i l(w.x_i, y_i) + (lambda n / 2)||w||^2 + b.w (Section 3.1, not
  Algorithm 1's printed lambda n ||w||^2); removal Delta = m lambda w + sum_{removed} grad l;
* the removal Hessian is that of the remaining objective, regulariser lambda (n - m) I included;
* ||X||_2 of the remaining rows is the SVD's largest singular value rounded up
  (:func:`spectral_norm_upper`), not a power iteration from below;
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from empirical.data.datasets import Dataset
from empirical.data.requests import RequestSequence, UnlearningRequest
from empirical.engine.elementwise import elementwise_per_trial
from empirical.engine.trials import DEFAULT_CPU_MEMORY_BUDGET, TrialRandom, chunk_size_for
from empirical.mechanisms.common import (
    DataVersion,
    ModelSamples,
    TrialOptions,
    TrialResult,
    as_requests,
    evaluate,
    model_samples,
    prepare_mechanism,
    result_fields,
)
from empirical.models.linear import (
    TRIAL_BLOCK,
    blocked_product,
    broadcast_rows,
    padded_table,
    pairwise_dot,
    weighted_rows_sum,
)

__all__ = [
    "LOGISTIC_GAMMA",
    "LOGISTIC_GAMMA_TIGHT",
    "Algorithm2Result",
    "GuoConfig",
    "GuoResult",
    "Loss",
    "RemovalStep",
    "Trained",
    "algorithm2",
    "gamma_of",
    "gradient",
    "hessian",
    "hessian_solve",
    "newton_removal",
    "outer_products",
    "run_guo",
    "spectral_norm_upper",
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


def spectral_norm_upper(X: torch.Tensor) -> float:
    """||X||_2 from above: the SVD's largest singular value times (1 + 4 max(n, d) u).

    A backward-stable SVD returns each singular value within about max(n, d) u ||X||_2 of the
    truth; the factor covers that, so Corollary 2 never uses a value below the exact norm
    (Algorithm 2 needs ||X||_2 exact or bounded from above, docs/errata-guo2020.md G5).
    """
    if X.shape[0] == 0:
        return 0.0
    largest = float(torch.linalg.matrix_norm(X, ord=2))
    return largest * (1 + 4 * max(X.shape) * torch.finfo(X.dtype).eps)


def _ones(X: torch.Tensor) -> torch.Tensor:
    return torch.ones(X.shape[0], dtype=X.dtype, device=X.device)


# Products of the trials' rows with a table every trial shares (the data, the preconditioner)
# go through the blocked products of empirical.models.linear: one BLAS product over all trials would
# round by shape, so a trial's bits would depend on how many trials share the call.

def _scores(w: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """w @ X^T per trial, [trials, d] x [n, d] -> [trials, n]."""
    return pairwise_dot(w, X)


def _combine(coefficients: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """coefficients @ table, the rows of ``table`` summed with each trial's coefficients:
    [trials, n] x [n, k] -> [trials, k]."""
    return weighted_rows_sum(coefficients, broadcast_rows(table, coefficients.shape[0]))


def _rows(values: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """values[rows] for sorted distinct ``rows`` (from torch.nonzero); no copy when they are
    all the rows."""
    return values if rows.numel() == values.shape[0] else values[rows]


def _replace_rows(values: torch.Tensor, rows: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """A copy of ``values`` with ``values[rows] = new`` (``new`` itself when ``rows``, sorted and
    distinct, are all the rows)."""
    if rows.numel() == values.shape[0]:
        return new
    values = values.clone()
    values[rows] = new
    return values


def _sigmoid_margins(margins: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """sigmoid(y s) per trial and point, with each trial's bits independent of its neighbours."""
    return elementwise_per_trial(torch.sigmoid, y * margins)


def _first_derivative(margins: torch.Tensor, y: torch.Tensor, loss: Loss) -> torch.Tensor:
    """l' with respect to the score s = w.x, per trial and point ([trials, n])."""
    if loss == "logistic":  # l = log(1 + exp(-y s)), y in {-1, +1}
        return (_sigmoid_margins(margins, y) - 1) * y
    if loss == "least_squares":  # l = (s - y)^2
        return 2 * (margins - y)
    raise ValueError(f"unknown loss {loss!r}")


def _derivatives(margins: torch.Tensor, y: torch.Tensor, loss: Loss) -> tuple[torch.Tensor, torch.Tensor]:
    """(l', l'') with respect to the score s = w.x, per trial and point ([trials, n])."""
    if loss == "logistic":  # l = log(1 + exp(-y s)), y in {-1, +1}
        p = _sigmoid_margins(margins, y)
        return (p - 1) * y, p * (1 - p)
    if loss == "least_squares":  # l = (s - y)^2
        return 2 * (margins - y), torch.full_like(margins, 2.0)
    raise ValueError(f"unknown loss {loss!r}")


def _loss_values(margins: torch.Tensor, y: torch.Tensor, loss: Loss) -> torch.Tensor:
    if loss == "logistic":
        return elementwise_per_trial(torch.nn.functional.softplus, -y * margins)
    return (margins - y) ** 2


def objective(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, lam: float, b: torch.Tensor,
              loss: Loss, weights: torch.Tensor | None = None) -> torch.Tensor:
    """L_b(w; D) per trial ([trials]); rows of weight 0 are absent (n = sum of weights)."""
    weights = _ones(X) if weights is None else weights
    n = weights.sum()
    values = (_loss_values(_scores(w, X), y, loss) * weights).sum(1)
    return values + 0.5 * lam * n * (w * w).sum(1) + (b * w).sum(1)


def gradient(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, lam: float, b: torch.Tensor,
             loss: Loss, weights: torch.Tensor | None = None) -> torch.Tensor:
    """grad L_b(w; D) = sum l'(w.x_i) x_i + lambda n w + b, per trial ([trials, d])."""
    weights = _ones(X) if weights is None else weights
    first = _first_derivative(_scores(w, X), y, loss)
    return _combine(first * weights, X) + lam * weights.sum() * w + b


@dataclass(frozen=True)
class OuterProducts:
    """Packed upper triangles of x_i x_i^T, [n, d(d+1)/2] as a zero-padded table for
    :func:`~empirical.models.linear.blocked_product` (:func:`~empirical.models.linear.padded_table`), and
    where each of the d^2 entries of a symmetric matrix sits in the packed vector."""

    packed: torch.Tensor
    positions: torch.Tensor  # [d * d] index into the packed axis
    dim: int


# Largest packed table n * d(d+1)/2 kept (elements): digits (256 x 2080) fits easily; MNIST
# (11982 x 307720) would need 29 GB, so there the Hessians are formed per trial instead.
_PACKED_ELEMENTS = 1 << 24


def outer_products(X: torch.Tensor) -> OuterProducts | None:
    """x_i x_i^T for every row, packed (upper triangle): computed once per dataset (None when
    the table would exceed ``_PACKED_ELEMENTS``)."""
    d = X.shape[1]
    if X.shape[0] * d * (d + 1) // 2 > _PACKED_ELEMENTS:
        return None
    rows, cols = torch.triu_indices(d, d, device=X.device)
    position = torch.empty(d, d, dtype=torch.long, device=X.device)
    position[rows, cols] = torch.arange(rows.numel(), device=X.device)
    position[cols, rows] = position[rows, cols]
    return OuterProducts(padded_table(X[:, rows] * X[:, cols]), position.reshape(-1), d)


def _unpack(packed: torch.Tensor, outer: OuterProducts) -> torch.Tensor:
    # One gather (index_select) instead of two scatters into a zero tensor.
    full = torch.index_select(packed, 1, outer.positions)
    return full.reshape(packed.shape[0], outer.dim, outer.dim)


def hessian(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, *, lam: float, loss: Loss,
            weights: torch.Tensor | None = None, outer: OuterProducts | None = None) -> torch.Tensor:
    """Hessian X^T diag(weights l'') X + lambda n I of the objective, per trial ([trials, d, d]).

    The product [trials, n] @ [n, d(d+1)/2] with the packed outer products, shared by every
    trial, in blocks of a fixed number of trials (:func:`~empirical.models.linear.blocked_product`),
    so a trial's Hessian does not depend on the trials beside it.
    """
    weights = _ones(X) if weights is None else weights
    outer = outer_products(X) if outer is None else outer
    _, second = _derivatives(_scores(w, X), y, loss)
    scale = second * weights
    if outer is None:  # too large to pack: one [d, n] @ [n, d] product per trial
        H = torch.stack([(X.T * row) @ X for row in scale])
    else:
        H = _unpack(blocked_product(scale, outer.packed), outer)
    eye = torch.eye(X.shape[1], dtype=X.dtype, device=X.device)
    return H + lam * weights.sum() * eye


def _solve_spd(H: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """H^{-1} rhs per trial for symmetric positive definite H (lambda > 0), by Cholesky."""
    factor = torch.linalg.cholesky(H)
    return torch.cholesky_solve(rhs[..., None], factor)[..., 0]


# Bytes of Hessians the exact solves form at once: trials take that path in groups, so a chunk
# whose every trial needs it stays within this, and chunks are sized by the products alone.
_HESSIAN_BYTES = 8 * 2**20


def _exact_solve(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, rhs: torch.Tensor, *,
                 outer: OuterProducts | None, **kw: object) -> torch.Tensor:
    """H^{-1} rhs per trial by Cholesky of the formed Hessians, a group of trials at a time (the
    packed product or the per-trial [d, n] copies, the Hessians and their factors within
    ``_HESSIAN_BYTES``)."""
    n, d = X.shape
    outer = outer_products(X) if outer is None else outer  # once for every group
    group = max(1, _HESSIAN_BYTES // (rhs.element_size() * (n * d + 4 * d * d)))
    parts = [_solve_spd(hessian(w[start:start + group], X, y, outer=outer, **kw),
                        rhs[start:start + group]) for start in range(0, rhs.shape[0], group)]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


# Backward-error target of the iterative Hessian solve: ||H v - rhs|| <= _SOLVE_SLACK * u *
# (||H|| ||v|| + ||rhs||), u the unit roundoff; Cholesky's own backward error is of the order
# d * u * ||H||, so with _SOLVE_SLACK = 4 d the answer is as exact as a direct solve.
_SOLVE_ROUNDS = 40


def hessian_solve(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, rhs: torch.Tensor, *,
                  lam: float, loss: Loss, weights: torch.Tensor | None = None,
                  outer: OuterProducts | None = None, preconditioner: torch.Tensor | None = None,
                  X_norm: float | None = None, second: torch.Tensor | None = None) -> torch.Tensor:
    """H^{-1} rhs per trial, H = X^T diag(weights l''(w)) X + lambda n I exactly (eq. 6's solve).

    Without ``preconditioner``: Cholesky of the formed Hessians (groups of trials). With a shared
    ``preconditioner`` P (the inverse Hessian at a nearby point): iterative refinement
    v <- v + P (rhs - H v), with H v as two matrix products (no [d, d] per trial), run until the
    residual is at rounding level, ||H v - rhs|| <= 4 d u (||H|| ||v|| + ||rhs||) with ||H|| bounded
    above by max(l'') ||X||_2^2 + lambda n, the backward error of a direct solve; the residual
    is computed, not assumed. Trials where that does not contract fall back to Cholesky.
    ``second`` may pass l''(w.x_i) per trial and row when the caller has it.
    """
    weights = _ones(X) if weights is None else weights
    kw = {"lam": lam, "loss": loss, "weights": weights}
    if preconditioner is None:
        return _exact_solve(w, X, y, rhs, outer=outer, **kw)
    if second is None:
        _, second = _derivatives(_scores(w, X), y, loss)
    curvature = second * weights
    ridge = lam * weights.sum()

    def apply(v: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return _combine(_scores(v, X) * _rows(curvature, rows), X) + ridge * v

    if X_norm is None:
        X_norm = spectral_norm_upper(X[weights > 0])
    h_norm = curvature.max(dim=1).values * X_norm**2 + ridge
    slack = 4 * X.shape[1] * torch.finfo(X.dtype).eps
    everyone = torch.arange(rhs.shape[0], device=rhs.device)
    v = _combine(rhs, preconditioner)
    residual = rhs - apply(v, everyone)
    r_norm = residual.norm(dim=1)
    done = r_norm <= slack * (h_norm * v.norm(dim=1) + rhs.norm(dim=1))
    failed = torch.zeros_like(done)
    for _ in range(_SOLVE_ROUNDS):
        rows = torch.nonzero(~done & ~failed).squeeze(1)
        if rows.numel() == 0:
            break
        new_v = _rows(v, rows) + _combine(_rows(residual, rows), preconditioner)
        part_rhs = _rows(rhs, rows)
        new_residual = part_rhs - apply(new_v, rows)
        new_norm = new_residual.norm(dim=1)
        converged = new_norm <= slack * (_rows(h_norm, rows) * new_v.norm(dim=1)
                                         + part_rhs.norm(dim=1))
        # No halving of the residual: P is too far from this trial's Hessian (Cholesky below).
        failed[rows] = ~converged & (new_norm > 0.5 * _rows(r_norm, rows))
        v = _replace_rows(v, rows, new_v)
        residual = _replace_rows(residual, rows, new_residual)
        r_norm = _replace_rows(r_norm, rows, new_norm)
        done[rows] = converged
    rest = torch.nonzero(~done).squeeze(1)
    if rest.numel():
        v = v.clone()
        v[rest] = _exact_solve(w[rest], X, y, rhs[rest], outer=outer, **kw)
    return v


@dataclass(frozen=True)
class Trained:
    """Algorithm 1's output for every trial, with the optimiser's own residual."""

    w: torch.Tensor  # [trials, d]
    b: torch.Tensor  # [trials, d]
    residual: torch.Tensor  # ||grad L_b(w; D)|| per trial: the optimiser's residual u0
    iterations: int


def train(X: torch.Tensor, y: torch.Tensor, *, lam: float, b: torch.Tensor, loss: Loss,
          tol: float = 1e-10, max_iter: int = 100, weights: torch.Tensor | None = None,
          start: torch.Tensor | None = None, outer: OuterProducts | None = None,
          preconditioner: torch.Tensor | None = None) -> Trained:
    """Algorithm 1 (with the (lambda n/2) regulariser): argmin_w L_b(w; D), one b per trial.

    From ``start`` (default 0) to ||grad L_b|| <= tol * (1 + ||b||) in every trial, by

    * fixed-matrix Newton steps w <- w - P grad L_b(w) when a shared ``preconditioner`` P (the
      inverse Hessian at a nearby point) is given, kept while each step at least halves the
      gradient norm (no Hessian per trial: two matrix products per step);
    * damped Newton (exact batched Hessians, Cholesky solves; Armijo backtracking, or a
      halving of the gradient norm) for the trials where that fails, or for all without P.

    The optimiser only has to meet the stated tolerance: its residual is returned and accounted
    for (module docstring). A trial stops moving once it meets the tolerance, so its result
    does not depend on which other trials share the call. Raises if the tolerance is not met.
    """
    if lam <= 0:
        raise ValueError(f"lam must be > 0 (strong convexity), got {lam}")
    weights = _ones(X) if weights is None else weights
    outer = outer_products(X) if outer is None else outer
    w = torch.zeros_like(b) if start is None else start.clone()
    target = tol * (1 + b.norm(dim=1))
    kw = {"lam": lam, "loss": loss, "weights": weights}
    g = gradient(w, X, y, b=b, **kw)
    g_norm = g.norm(dim=1)
    exact = torch.full_like(g_norm, preconditioner is None, dtype=torch.bool)
    for iteration in range(1, max_iter + 1):
        pending = g_norm > target
        if not bool(pending.any()):
            return Trained(w, b, g_norm, iteration - 1)
        chord = torch.nonzero(pending & ~exact).squeeze(1)
        newton = torch.nonzero(pending & exact).squeeze(1)
        if chord.numel():
            candidate = _rows(w, chord) - _combine(_rows(g, chord), preconditioner)
            cand_g = gradient(candidate, X, y, b=_rows(b, chord), **kw)
            cand_norm = cand_g.norm(dim=1)
            good = cand_norm <= 0.5 * _rows(g_norm, chord)
            kept = torch.nonzero(good).squeeze(1)
            w = _replace_rows(w, chord[kept], _rows(candidate, kept))
            g = _replace_rows(g, chord[kept], _rows(cand_g, kept))
            g_norm = _replace_rows(g_norm, chord[kept], _rows(cand_norm, kept))
            exact[chord[~good]] = True  # too far from P's point: exact Newton from now on
        if newton.numel():
            stepped = _damped_newton_step(_rows(w, newton), _rows(g, newton), _rows(g_norm, newton),
                                          X, y, b=_rows(b, newton), outer=outer, **kw)
            w, g, g_norm = (_replace_rows(t, newton, new)
                            for t, new in zip((w, g, g_norm), stepped, strict=True))
    if not bool((g_norm <= target).all()):
        raise RuntimeError(f"Algorithm 1: Newton did not reach tol={tol} in {max_iter} iterations "
                           f"(worst residual {float(g_norm.max()):.3g})")
    return Trained(w, b, g_norm, max_iter)


def _damped_newton_step(w: torch.Tensor, g: torch.Tensor, g_norm: torch.Tensor, X: torch.Tensor,
                        y: torch.Tensor, *, lam: float, b: torch.Tensor, loss: Loss,
                        weights: torch.Tensor, outer: OuterProducts
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One Newton step per trial with vectorised backtracking: (w, gradient, its norm)."""
    kw = {"lam": lam, "loss": loss, "weights": weights}
    step = _exact_solve(w, X, y, g, outer=outer, **kw)
    value = objective(w, X, y, b=b, **kw)
    slope = (g * step).sum(1)
    t = torch.ones_like(g_norm)
    for _ in range(60):  # halve t where neither test passes
        candidate = w - t[:, None] * step
        cand_g = gradient(candidate, X, y, b=b, **kw)
        cand_norm = cand_g.norm(dim=1)
        armijo = objective(candidate, X, y, b=b, **kw) <= value - 1e-4 * t * slope
        # Near the minimiser the objective's decrease drowns in rounding; a clear drop of the
        # gradient norm then accepts the (locally quadratically convergent) Newton step.
        bad = ~(armijo | (cand_norm <= 0.5 * g_norm))
        if not bool(bad.any()):
            break
        t = torch.where(bad, t / 2, t)
    return candidate, cand_g, cand_norm


@dataclass(frozen=True)
class RemovalStep:
    """One batch Newton removal (eq. 6) for every trial, with the quantities of Corollary 2."""

    w: torch.Tensor  # updated parameters [trials, d]
    update_norm: torch.Tensor  # ||H^{-1} Delta|| per trial
    X_update_norm: torch.Tensor  # ||X^(-m) H^{-1} Delta|| per trial
    X_norm: float  # ||X^(-m)||_2 (shared data), SVD value rounded up (spectral_norm_upper)
    corollary2: torch.Tensor  # gamma ||X|| ||H^{-1} Delta|| ||X H^{-1} Delta|| per trial
    true_residual: torch.Tensor  # ||grad L_b(w^-; D \\ D_m)|| per trial (diagnostic)


def newton_removal(w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, removed: torch.Tensor, *,
                   lam: float, b: torch.Tensor, loss: Loss, gamma: float | None = None,
                   weights: torch.Tensor | None = None, outer: OuterProducts | None = None,
                   X_norm: float | None = None, preconditioner: torch.Tensor | None = None
                   ) -> RemovalStep:
    """Remove the rows ``removed`` (indices into X) from every trial by one Newton step.

    Delta = m lambda w + sum_{removed} grad l (Algorithm 2, line 11), H = Hessian of the
    remaining objective including lambda (n - m) I, w^- = w + H^{-1} Delta, solved to rounding
    (:func:`hessian_solve`: batched Cholesky, or refinement with a shared ``preconditioner``).
    ``weights`` (default all ones) mark the rows present before the removal; ``X_norm`` may
    pass the exact ||X^(-m)||_2 when the caller has it.
    """
    gamma = gamma_of(loss) if gamma is None else gamma
    before = _ones(X) if weights is None else weights
    gone = torch.zeros_like(before)
    gone[removed] = before[removed]
    if bool((before[removed] == 0).any()):
        raise ValueError("newton_removal: a removed row is not present")
    after = before - gone
    m = gone.sum()
    first, second = _derivatives(_scores(w, X), y, loss)
    # Only the removed rows' gradients enter Delta: a product over those rows alone.
    rows = torch.nonzero(gone).squeeze(1)
    delta = m * lam * w + _combine(first[:, rows] * gone[rows], X[rows])
    if X_norm is None:  # largest singular value of the remaining rows, from above
        X_norm = spectral_norm_upper(X[after > 0])
    v = hessian_solve(w, X, y, delta, lam=lam, loss=loss, weights=after, outer=outer,
                      preconditioner=preconditioner, X_norm=X_norm, second=second)
    w_new = w + v
    update_norm = v.norm(dim=1)
    X_update_norm = (_scores(v, X) * after).norm(dim=1)  # weights are 0/1
    residual = gradient(w_new, X, y, lam=lam, b=b, loss=loss, weights=after).norm(dim=1)
    return RemovalStep(w_new, update_norm, X_update_norm, X_norm,
                       gamma * X_norm * update_norm * X_update_norm, residual)


# ----------------------------------------------------------------------------------------------
# Algorithm 2 over batched trials.


@dataclass(frozen=True, kw_only=True)
class GuoConfig:
    """Hyper-parameters of Guo et al.'s Algorithms 1 and 2.

    ``lam`` is lambda (objective sum l + (lambda n/2)||w||^2 + b.w), ``sigma`` the standard
    deviation of each coordinate of b. ``budget`` is Algorithm 2's sigma epsilon / c on the
    accumulated residual bound beta (None: never retrain, beta is only recorded). ``gamma``
    None is the paper's constant for the loss (1/4 logistic, 0 least squares). ``tol`` is the
    training tolerance on ||grad L_b|| / (1 + ||b||). ``noise_multiplier_scale`` multiplies
    every b the mechanism draws without changing ``sigma`` or ``budget`` (a deliberately
    broken mechanism for testing audits).
    """

    lam: float
    sigma: float
    loss: Loss = "logistic"
    budget: float | None = None
    gamma: float | None = None
    tol: float = 1e-10
    max_iter: int = 100
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("lam", "sigma", "tol"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value}")
        gamma_of(self.loss)
        if self.budget is not None and not (self.budget >= 0 and not math.isnan(self.budget)):
            raise ValueError(f"budget must be >= 0 or None, got {self.budget}")
        if self.gamma is not None and not (math.isfinite(self.gamma) and self.gamma >= 0):
            raise ValueError(f"gamma must be finite and >= 0, got {self.gamma}")
        if not (math.isfinite(self.noise_multiplier_scale) and self.noise_multiplier_scale >= 0):
            raise ValueError(f"noise_multiplier_scale must be >= 0, got "
                             f"{self.noise_multiplier_scale}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")

    @property
    def gamma_value(self) -> float:
        """gamma of the loss: the configured value, else the loss's own."""
        return gamma_of(self.loss) if self.gamma is None else float(self.gamma)


@dataclass(frozen=True, eq=False)
class GuoResult(TrialResult):
    """Outputs of ``n_trials`` runs of train -> Algorithm 2 removals, and of retraining.

    ``unlearned`` and ``retrained`` are the two samples an audit compares; ``learned`` is the
    model before any removal (None unless ``evaluate_learned``). Per trial and removal step:
    ``beta_history`` [N, steps] is the accumulator after the step (before a reset),
    ``residual_history`` [N, steps] the true ||grad L_b|| of the published model after it,
    ``corollary2_history`` [N, steps] the step's Corollary 2 bound and ``retrained_at``
    [N, steps] is 1 where the step retrained from scratch. ``train_residual`` [N] is u0.
    """

    config: GuoConfig
    learned: ModelSamples | None
    beta_history: np.ndarray
    residual_history: np.ndarray
    corollary2_history: np.ndarray
    retrained_at: np.ndarray
    train_residual: np.ndarray
    X_norms: tuple[float, ...]


@dataclass(frozen=True)
class _Version:
    data: DataVersion
    outer: OuterProducts | None
    X_norm: float  # ||X||_2 of the present rows, from above
    w0: torch.Tensor  # [d] unperturbed minimiser (warm start)
    h0_inverse: torch.Tensor  # [d, d] inverse Hessian at w0 (warm start)


def _prepare_version(data: DataVersion, outer: OuterProducts | None, config: GuoConfig,
                     previous: _Version | None = None) -> _Version:
    present = data.weights > 0
    X_norm = spectral_norm_upper(data.features[present])
    zero = data.features.new_zeros(1, data.features.shape[1])
    kw = {"lam": config.lam, "loss": config.loss, "weights": data.weights, "outer": outer}
    # The previous version (a few rows more) is a close start for a long removal sequence.
    start = None if previous is None else previous.w0[None]
    P = None if previous is None else previous.h0_inverse
    w0 = train(data.features, data.labels, b=zero, tol=1e-13, start=start, preconditioner=P,
               **kw).w
    if previous is not None and outer is None:
        # Wide data (no packed table): a d x d Hessian costs n d^2; the first version's inverse
        # stays a valid preconditioner (every solve checks its own residual).
        return _Version(data, outer, X_norm, w0[0], previous.h0_inverse)
    h0 = hessian(w0, data.features, data.labels, **kw)[0]
    return _Version(data, outer, X_norm, w0[0], torch.linalg.inv(h0))


def _warm_train(version: _Version, b: torch.Tensor, config: GuoConfig) -> Trained:
    """Algorithm 1 from w_0 - H_0^{-1} b (first-order exact warm start), to ``config.tol``,
    with H_0^{-1} as the fixed-matrix Newton preconditioner (exact Newton where it is too far)."""
    start = version.w0 - _combine(b, version.h0_inverse)
    data = version.data
    return train(data.features, data.labels, lam=config.lam, b=b, loss=config.loss,
                 tol=config.tol, max_iter=config.max_iter, weights=data.weights, start=start,
                 outer=version.outer, preconditioner=version.h0_inverse)


def run_guo(
    dataset: Dataset,
    request: UnlearningRequest | RequestSequence | Sequence[UnlearningRequest],
    *,
    config: GuoConfig,
    options: TrialOptions,
    evaluate_learned: bool = False,
) -> GuoResult:
    """Algorithm 1, then Algorithm 2 over the removal requests, and retraining, per trial.

    Each request is one batch of m removals (one Newton step). Trial i: b ~ N(0, sigma^2 I)
    (stream ``noise/learn``), train on D; per request, the Newton removal, beta += Corollary 2,
    and if beta > budget a retrain on the remaining data with a fresh b (stream
    ``noise/alg2/<step>``) and beta reset to that retrain's optimiser residual; finally the
    retrained model: a fresh b (stream ``noise/retrain``) trained on the final data. Losses of
    the forget records use their original rows. Trial i depends only on (seed, i), bit for bit
    on CPU: its products with the shared data are blocked products of a fixed number of trials,
    its exp/log go through :func:`~empirical.engine.elementwise.elementwise_per_trial`, its solves and
    norms are its own, and a trial stops moving once it meets its tolerance, so neither the
    number of trials in the call, its place among them, the chunk size nor the mode changes a
    bit. ``evaluate_learned`` also scores the models before removal (off by default: the audit
    compares unlearned and retrained).
    """
    requests = as_requests(request)
    if not requests:
        raise ValueError("Guo et al.'s removal needs at least one request")
    if not all(r.is_removal for r in requests):
        raise ValueError("Guo et al.'s Newton removal serves removals only (no replacements)")
    if sum(len(r.indices) for r in requests) >= dataset.n:
        raise ValueError("at least one training point must remain")
    if options.model is not None:
        raise ValueError("Guo et al.'s removal trains its config's loss; options.model must be None")
    setup = prepare_mechanism(dataset, requests, options, least_retain_scores=1)
    datas = setup.versions
    outer = outer_products(datas[0].features)
    # Shared per data version (computed once, outside the trials): exact ||X||_2 and the warm
    # start of Algorithm 1.
    versions: list[_Version] = []
    with torch.no_grad():
        for data in datas:
            versions.append(_prepare_version(data, outer, config,
                                             versions[-1] if versions else None))
    sets = setup.sets
    model = setup.model
    d = dataset.dim
    noise_std = config.sigma * config.noise_multiplier_scale
    budget = math.inf if config.budget is None else config.budget
    gamma = config.gamma_value

    def pipeline(random: TrialRandom) -> dict[str, torch.Tensor]:
        b = random.normal("noise/learn", (d,)) * noise_std
        trained = _warm_train(versions[0], b, config)
        w, beta = trained.w, trained.residual
        outputs = evaluate(model, "learned", w, sets) if evaluate_learned else {}
        outputs["train_residual"] = trained.residual
        betas, residuals, bounds, retrains = [], [], [], []
        for step_index in range(1, len(versions)):
            before, after = versions[step_index - 1], versions[step_index]
            removed = torch.nonzero((before.data.weights > 0) & (after.data.weights == 0))
            step = newton_removal(w, before.data.features, before.data.labels,
                                  removed.squeeze(1), lam=config.lam, b=b, loss=config.loss,
                                  gamma=gamma, weights=before.data.weights, outer=outer,
                                  X_norm=after.X_norm, preconditioner=after.h0_inverse)
            beta = beta + step.corollary2
            betas.append(beta)
            bounds.append(step.corollary2)
            over = beta > budget
            w, residual = step.w, step.true_residual
            rows = torch.nonzero(over).squeeze(1)
            if rows.numel():
                fresh_b = random.normal(f"noise/alg2/{step_index}", (d,), rows=rows) * noise_std
                again = _warm_train(after, fresh_b, config)
                w, b, beta, residual = w.clone(), b.clone(), beta.clone(), residual.clone()
                w[rows], b[rows] = again.w, fresh_b
                beta[rows] = residual[rows] = again.residual
            retrains.append(over.to(setup.dtype))
            residuals.append(residual)
        outputs.update(evaluate(model, "unlearned", w, sets))
        fresh = random.normal("noise/retrain", (d,)) * noise_std
        outputs.update(evaluate(model, "retrained", _warm_train(versions[-1], fresh, config).w,
                                sets))
        outputs["beta"] = torch.stack(betas, 1)
        outputs["residual"] = torch.stack(residuals, 1)
        outputs["corollary2"] = torch.stack(bounds, 1)
        outputs["retrained_at"] = torch.stack(retrains, 1)
        return outputs

    itemsize = torch.empty((), dtype=setup.dtype).element_size()
    # A step's temporaries are about a dozen [n] margins and coefficients per trial and a few
    # dozen [d] vectors; the exact Hessian solves form their [d, d] matrices in groups within
    # _HESSIAN_BYTES (_exact_solve), outside this per-trial count.
    bytes_per_trial = itemsize * (16 * dataset.n + 32 * d + 8 * len(versions))
    chunk_size = None
    if options.mode == "batched" and setup.device.type == "cpu":
        chunk_size = chunk_size_for(n_trials=options.n_trials, bytes_per_trial=bytes_per_trial,
                                    device=setup.device,
                                    memory_budget=DEFAULT_CPU_MEMORY_BUDGET - _HESSIAN_BYTES)
        if TRIAL_BLOCK < chunk_size < options.n_trials:
            chunk_size -= chunk_size % TRIAL_BLOCK  # whole blocks of rows in the blocked products
    # One CPU thread, as every mechanism: no BLAS call or reduction is split between threads.
    outputs = setup.run(pipeline, bytes_per_trial=bytes_per_trial, chunk_size=chunk_size)
    return GuoResult(
        config=config,
        learned=model_samples(outputs, "learned") if evaluate_learned else None,
        beta_history=outputs["beta"],
        residual_history=outputs["residual"],
        corollary2_history=outputs["corollary2"],
        retrained_at=outputs["retrained_at"],
        train_residual=outputs["train_residual"],
        X_norms=tuple(v.X_norm for v in versions),
        **result_fields(setup, outputs, GuoResult),
    )


@dataclass(frozen=True)
class Algorithm2Result:
    """Algorithm 2 over a sequence of batches for every trial (plain tensors, one generator)."""

    w: torch.Tensor  # final parameters [trials, d]
    beta: torch.Tensor  # accumulated residual bound at the end (after any reset)
    retrains: torch.Tensor  # number of retrains per trial
    beta_history: torch.Tensor  # [steps, trials] accumulator after each batch (before reset)
    true_residual_history: torch.Tensor  # [steps, trials] ||grad L_b|| after each step


def algorithm2(X: torch.Tensor, y: torch.Tensor, batches: list[torch.Tensor], *, lam: float,
               sigma: float, budget: float, loss: Loss, generator: torch.Generator,
               trials: int, gamma: float | None = None, tol: float = 1e-10) -> Algorithm2Result:
    """Algorithm 2 on tensors: repeated batch removal with the data-dependent accumulator beta.

    ``budget`` is sigma epsilon / c (``guo2020:alg2/budget``). beta starts at the optimiser's
    residual (module docstring), adds Corollary 2 per batch, and when it exceeds the budget the
    trial is retrained from scratch on the remaining data with a fresh b (Algorithm 1) and beta
    is reset to that retrain's optimiser residual. ``batches`` index the original rows.
    (:func:`run_guo` is the per-trial-seeded version the audits use.)
    """
    n, d = X.shape
    dtype, device = X.dtype, X.device
    outer = outer_products(X)
    b = sigma * torch.randn(trials, d, generator=generator, dtype=dtype, device=device)
    trained = train(X, y, lam=lam, b=b, loss=loss, tol=tol, outer=outer)
    w, beta = trained.w, trained.residual.clone()
    weights = torch.ones(n, dtype=dtype, device=device)
    retrains = torch.zeros(trials, dtype=torch.long, device=device)
    betas, residuals = [], []
    for batch in batches:
        step = newton_removal(w, X, y, batch, lam=lam, b=b, loss=loss, gamma=gamma,
                              weights=weights, outer=outer)
        weights = weights.clone()
        weights[batch] = 0.0
        beta = beta + step.corollary2
        betas.append(beta.clone())
        over = beta > budget
        w = torch.where(over[:, None], w, step.w)
        if bool(over.any()):
            fresh_b = sigma * torch.randn(int(over.sum()), d, generator=generator, dtype=dtype,
                                          device=device)
            again = train(X, y, lam=lam, b=fresh_b, loss=loss, tol=tol, weights=weights,
                          outer=outer)
            w = w.clone()
            w[over] = again.w
            b = b.clone()
            b[over] = fresh_b
            beta = beta.clone()
            beta[over] = again.residual
            retrains = retrains + over.long()
        residuals.append(gradient(w, X, y, lam=lam, b=b, loss=loss, weights=weights).norm(dim=1))
    empty = torch.zeros(0, trials, dtype=dtype, device=device)
    return Algorithm2Result(w, beta, retrains, torch.stack(betas) if betas else empty,
                            torch.stack(residuals) if residuals else empty)
