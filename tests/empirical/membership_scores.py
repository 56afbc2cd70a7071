"""Membership-inference scores on plain arrays (numpy in, numpy out; torch tensors accepted):
the reference formulas of the toolkit's score convention, kept with the tests that pin them.

Every score follows one sign convention: higher means "more like a model that trained on the
example", as the audits assume. Scores fed to :mod:`empirical.statistics` follow it.

Public API
----------
``cross_entropy_loss(logits, labels, *, binary=None)``
    per-example loss -log p_y.
``loss_score(logits, labels, *, binary=None)``
    the LOSS attack score, minus the loss (Yeom et al. 2018).
``logit_scaled_confidence(logits, labels, *, binary=None)``
    log(p_y / (1 - p_y)) computed stably from logits (Carlini et al. 2022, LiRA, Sec. 4.3);
    the score of the NeurIPS 2023 unlearning challenge.
``probability_logit(probabilities)``
    the same transform when only the true-class probability is available.
``ulira_log_likelihood_ratio(target_scores, *, unlearned_shadow_scores,
retrained_shadow_scores, fixed_variance=False, min_std=1e-6)``
    U-LiRA (Hayes et al. 2024): per-example Gaussian fits to shadow models that learned then
    unlearned the example and shadow models that never saw it; returns the log-likelihood
    ratio of target scores (positive = unlearned-like).

Logits come in two layouts. Multiclass: ``logits[..., C]`` with integer ``labels[...]`` in
[0, C). Binary single-logit models (logistic regression, labels +-1): ``logits[...]`` with
``labels[...]`` in {-1, +1} (0 is read as -1), and p_y = sigmoid(y * logit). ``binary=None``
infers the layout from shapes (labels shaped like logits: binary; like logits[..., :-1]:
multiclass) and asks for an explicit flag when shapes do not decide; labels broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = [
    "ULiRAResult",
    "cross_entropy_loss",
    "logit_scaled_confidence",
    "loss_score",
    "probability_logit",
    "ulira_log_likelihood_ratio",
]

# LiRA's score.py and the NeurIPS 2023 organisers add this to probabilities before the log.
_PROBABILITY_FLOOR = 1e-45


def _to_numpy(array, name: str, *, integer: bool = False) -> np.ndarray:
    """Convert numpy-likes and torch tensors (any device, any float dtype) without torch."""
    if hasattr(array, "detach") and hasattr(array, "cpu"):
        tensor = array.detach().cpu()
        if not integer and tensor.is_floating_point():
            tensor = tensor.double()  # also handles bfloat16, which numpy lacks
        array = tensor.numpy()
    out = np.asarray(array)
    if integer:
        if out.dtype.kind == "b" or out.dtype.kind not in "iuf":
            raise ValueError(f"{name} must be integer class labels, got dtype {out.dtype}")
        if out.dtype.kind == "f":
            if not np.all(np.isfinite(out)) or not np.all(out == np.round(out)):
                raise ValueError(f"{name} must hold integer values")
        return out.astype(np.int64)
    out = out.astype(np.float64)
    if out.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return out


def _layout(logits: np.ndarray, labels: np.ndarray, binary: bool | None) -> bool:
    if binary is None:
        if labels.shape == logits.shape:
            return True
        if logits.ndim >= 1 and labels.shape == logits.shape[:-1]:
            return False
        raise ValueError(
            f"cannot tell from shapes logits {logits.shape} and labels {labels.shape} whether "
            "the model is binary (one logit) or multiclass; pass binary=True or binary=False"
        )
    return bool(binary)


def _binary_margin(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """y * logit with y in {-1, +1}: log p_y - log(1 - p_y) for a single-logit model."""
    if not np.all(np.isin(labels, (-1, 0, 1))):
        raise ValueError("binary labels must be in {-1, +1} (0 is accepted for -1)")
    signs = np.where(labels == 1, 1.0, -1.0)
    try:
        return np.broadcast_to(signs, np.broadcast_shapes(signs.shape, logits.shape)) * logits
    except ValueError as err:
        raise ValueError(
            f"labels {labels.shape} do not broadcast against logits {logits.shape}"
        ) from err


def _multiclass_parts(logits: np.ndarray, labels: np.ndarray):
    """(true-class logit, log-sum-exp of the other logits, log-sum-exp of all logits)."""
    if logits.ndim < 1 or logits.shape[-1] < 2:
        raise ValueError(f"multiclass logits need a class axis of size >= 2, got {logits.shape}")
    n_classes = logits.shape[-1]
    if np.any((labels < 0) | (labels >= n_classes)):
        raise ValueError(f"labels must lie in [0, {n_classes})")
    try:
        labels = np.broadcast_to(labels, logits.shape[:-1])
    except ValueError as err:
        raise ValueError(
            f"labels {labels.shape} do not broadcast against logits {logits.shape[:-1]}"
        ) from err
    true_logit = np.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    is_true = np.arange(n_classes) == labels[..., None]
    others = special.logsumexp(np.where(is_true, -np.inf, logits), axis=-1)
    return true_logit, others, special.logsumexp(logits, axis=-1)


def cross_entropy_loss(logits, labels, *, binary: bool | None = None) -> np.ndarray:
    """Per-example cross-entropy -log p_y, computed stably from logits."""
    z = _to_numpy(logits, "logits")
    y = _to_numpy(labels, "labels", integer=True)
    if _layout(z, y, binary):
        return np.logaddexp(0.0, -_binary_margin(z, y))
    true_logit, _, total = _multiclass_parts(z, y)
    return total - true_logit


def loss_score(logits, labels, *, binary: bool | None = None) -> np.ndarray:
    """LOSS attack score: minus the cross-entropy, so members score higher (Yeom et al. 2018)."""
    return -cross_entropy_loss(logits, labels, binary=binary)


def logit_scaled_confidence(logits, labels, *, binary: bool | None = None) -> np.ndarray:
    """log(p_y / (1 - p_y)) = z_y - logsumexp_{y' != y} z_y', exact and overflow-free.

    Equal to the organisers' and LiRA's score up to their 1e-45 probability floor, which only
    matters once |score| exceeds about 100.
    """
    z = _to_numpy(logits, "logits")
    y = _to_numpy(labels, "labels", integer=True)
    if _layout(z, y, binary):
        return _binary_margin(z, y)
    true_logit, others, _ = _multiclass_parts(z, y)
    return true_logit - others


def probability_logit(probabilities) -> np.ndarray:
    """log(p / (1 - p)) of true-class probabilities, with LiRA's 1e-45 floor on both terms.

    Prefer :func:`logit_scaled_confidence` on logits: 1 - p loses precision as p approaches 1
    and this score saturates near +-103.6.
    """
    p = _to_numpy(probabilities, "probabilities")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("probabilities must lie in [0, 1]")
    return np.log(p + _PROBABILITY_FLOOR) - np.log((1.0 - p) + _PROBABILITY_FLOOR)


@dataclass(frozen=True)
class ULiRAResult:
    """U-LiRA log-likelihood ratios and the per-example Gaussian fits behind them.

    ``log_likelihood_ratio`` has the shape of the target scores; positive values favour
    "learned then unlearned" over "never trained". The fits are plug-in estimates.
    """

    log_likelihood_ratio: np.ndarray
    unlearned_mean: np.ndarray
    unlearned_std: np.ndarray
    retrained_mean: np.ndarray
    retrained_std: np.ndarray
    n_unlearned_shadows: int
    n_retrained_shadows: int
    fixed_variance: bool
    method: str
    kind: str = "estimate"


def _shadow_matrix(array, name: str) -> np.ndarray:
    matrix = _to_numpy(array, name)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must have shape [n_shadow, n_examples], got {matrix.shape}")
    if matrix.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 shadow models to fit a variance")
    return matrix


def _gaussian_fit(matrix: np.ndarray, *, fixed_variance: bool, min_std: float):
    mean = matrix.mean(axis=0)
    var = matrix.var(axis=0, ddof=1)
    if fixed_variance:
        # Pool the within-example variances of this group only (LiRA's reference code pools
        # the IN scores for both groups, a known bug; ml_privacy_meter PR #121).
        var = np.full_like(var, var.mean())
    return mean, np.maximum(np.sqrt(var), min_std)


def ulira_log_likelihood_ratio(
    target_scores,
    *,
    unlearned_shadow_scores,
    retrained_shadow_scores,
    fixed_variance: bool = False,
    min_std: float = 1e-6,
) -> ULiRAResult:
    """U-LiRA per-example Gaussian likelihood-ratio test (Hayes et al. 2024, Sec. 4).

    Args:
      target_scores: scores of the audited model(s), shape [n_examples] or
        [n_targets, n_examples].
      unlearned_shadow_scores: [n_shadow_u, n_examples], shadow models that trained on each
        example and then unlearned it.
      retrained_shadow_scores: [n_shadow_r, n_examples], shadow models that never saw it.
      fixed_variance: pool variances over examples (per group), the better choice with few
        shadows (Carlini et al. 2022 find per-example variances pay off from about 64).
      min_std: floor on fitted standard deviations so that constant columns stay finite.

    Means are sample means and variances unbiased sample variances (ddof = 1).
    """
    min_std = float(min_std)
    if not (np.isfinite(min_std) and min_std > 0):
        raise ValueError(f"min_std must be positive and finite, got {min_std!r}")
    unlearned = _shadow_matrix(unlearned_shadow_scores, "unlearned_shadow_scores")
    retrained = _shadow_matrix(retrained_shadow_scores, "retrained_shadow_scores")
    if unlearned.shape[1] != retrained.shape[1]:
        raise ValueError(
            f"shadow matrices disagree on n_examples: {unlearned.shape[1]} vs {retrained.shape[1]}"
        )
    target = _to_numpy(target_scores, "target_scores")
    if target.ndim not in (1, 2) or target.shape[-1] != unlearned.shape[1]:
        raise ValueError(
            f"target_scores must have shape [n_examples] or [n_targets, n_examples] with "
            f"n_examples={unlearned.shape[1]}, got {target.shape}"
        )
    mu_u, sd_u = _gaussian_fit(unlearned, fixed_variance=fixed_variance, min_std=min_std)
    mu_r, sd_r = _gaussian_fit(retrained, fixed_variance=fixed_variance, min_std=min_std)
    z_u = (target - mu_u) / sd_u
    z_r = (target - mu_r) / sd_r
    llr = 0.5 * (z_r**2 - z_u**2) + np.log(sd_r) - np.log(sd_u)
    for arr in (llr, mu_u, sd_u, mu_r, sd_r):
        arr.setflags(write=False)
    variance = "pooled variance" if fixed_variance else "per-example variance"
    return ULiRAResult(
        log_likelihood_ratio=llr,
        unlearned_mean=mu_u,
        unlearned_std=sd_u,
        retrained_mean=mu_r,
        retrained_std=sd_r,
        n_unlearned_shadows=unlearned.shape[0],
        n_retrained_shadows=retrained.shape[0],
        fixed_variance=bool(fixed_variance),
        method=f"U-LiRA Gaussian log-likelihood ratio, {variance}",
    )
