"""Koloskova et al. 2025 (seed 004): noisy fine-tuning for certified unlearning of neural nets.

Three unlearning methods from a trained model x_hat = A(D), each followed by ordinary
(noiseless) fine-tuning on the retain set, which is post-processing of the certified x_T:

* gradient clipping, eq. (3): x_0 = Pi_C0(x_hat), x_{t+1} = x_t - gamma (Pi_C1(g_t) + lambda x_t)
  + N(0, sigma^2 I);
* model clipping, eq. (4) in Theorem 4.2's form: x_0 = Pi_C0(x_hat) + N(0, sigma0^2 I),
  x_{t+1} = Pi_C2(x_t - gamma (g_t + lambda x_t)) + N(0, sigma^2 I);
* output perturbation, eq. (1): x = Pi_C0(x_hat) + N(0, sigma^2 I);

and retraining from scratch (the baseline of Figure 1 / Table 2). ``g_t`` is the full-batch
mean cross-entropy gradient on the retain set (a map of x_t that does not read the forget set,
as Theorems 4.1 and 4.2 require; the whole gradient is clipped, not each example).

Each audit trial produces the unlearned model U(A(D), D_r) and the certifying model
U(A(D_r), D_r) of Definition 2.1 (the same unlearning run started from the model trained
without the forget set), with independent noise streams. Everything is batched over trials:
the parameters of N models are rows of an [N, P] tensor; the MLP and the CNN run through
their own batched products with the gradient written out (:class:`empirical.models.networks.StackedNetwork`:
the MLP's hidden layer as blocked products with the shared examples, the CNN's im2col
products; ``vmap`` over ``conv2d`` was no faster than one model at a time on CPU), the head
through ``torch.func`` (``vmap`` of ``grad`` of a ``functional_call``); trial i depends only
on (seed, i), and batched and per-trial runs agree bit for bit on CPU (tested).

Models: the seed's MLP (``mlp``, about 4,000 parameters on MNIST-shaped input), CNN (``cnn``,
about 20,000 parameters on CIFAR-shaped input), and ``head``: a frozen feature extractor that
does not depend on the private data (fixed random ReLU features, a stand-in for a public
pre-trained network) with a 3-layer trainable head.

The ground-truth case (:func:`gaussian_ground_truth`): a linear model with squared loss and no
clipping active has Gaussian iterates with a data-independent covariance, so the exact
hockey-stick divergence between the two runs is known in closed form and every accountant
must lie above it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from empirical.data.datasets import Dataset
from empirical.divergences.gaussian_laws import GaussianLaws
from empirical.engine.trials import TrialRandom, run_trials
from empirical.mechanisms.common import one_cpu_thread
from empirical.models.linear import clip_scale
from empirical.models.networks import FunctionalClassifier, StackedNetwork, TinyCNN, TinyMLP
from empirical.statistics.gdp import gaussian_delta

__all__ = [
    "METHODS",
    "MODELS",
    "KoloskovaConfig",
    "KoloskovaResult",
    "NetworkTask",
    "WorstCaseRecord",
    "build_task",
    "exact_gaussian_delta",
    "output_perturbation_laws",
    "gaussian_ground_truth",
    "project",
    "run_koloskova",
    "run_retrain_budget",
    "run_worst_case_gradient_clipping",
    "start_direction",
    "worst_case_forget_record",
]

METHODS = ("gradient-clipping", "model-clipping", "output-perturbation")
MODELS = ("mlp", "cnn", "head")
HEAD_FEATURES = 64  # width of the frozen random-feature extractor of the ``head`` model
HEAD_HIDDEN = (32, 16)
_SCREEN_BLOCK = 256  # rows whose per-example gradients the worst-case screening holds at once


@dataclass(frozen=True)
class KoloskovaConfig:
    """Hyper-parameters of one unlearning method (names as in Theorems 4.1 and 4.2).

    ``sigma`` is the per-step noise (the output noise for output perturbation);
    ``unlearn_steps`` T (ignored by output perturbation); ``step_size`` gamma; ``l2`` lambda;
    ``C0`` the initial model clipping; ``C1`` the gradient clipping (eq. 3); ``C2`` the model
    clipping (eq. 4); ``sigma0`` the initial noise of eq. (4). ``learn_steps`` /
    ``learn_step_size``: full-batch gradient descent that produces A(D) and A(D_r) from the
    shared initialisation. ``finetune_steps`` of plain gradient descent follow the noisy part.
    ``noise_multiplier_scale`` multiplies every noise draw without changing the certified sigma
    (1 = the real algorithm; < 1 breaks it on purpose, for tests of the audit).
    """

    method: str
    sigma: float
    unlearn_steps: int = 0
    step_size: float = 0.1
    l2: float = 0.0
    C0: float = 1.0
    C1: float | None = None
    C2: float | None = None
    sigma0: float = 0.0
    learn_steps: int = 100
    learn_step_size: float = 0.5
    finetune_steps: int = 0
    finetune_step_size: float = 0.1
    noise_multiplier_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be > 0, got {self.sigma}")
        if self.method != "output-perturbation" and self.unlearn_steps < 1:
            raise ValueError(f"{self.method} needs unlearn_steps T >= 1 (Theorems 4.1/4.2)")
        if self.method == "gradient-clipping" and not (self.C1 and self.C1 > 0):
            raise ValueError("gradient clipping (eq. 3) needs C1 > 0")
        if self.method == "model-clipping" and not (self.C2 and self.C2 > 0):
            raise ValueError("model clipping (eq. 4) needs C2 > 0")
        if not self.C0 > 0:
            raise ValueError(f"C0 must be > 0, got {self.C0}")
        for name in ("learn_steps", "finetune_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.sigma0 < 0 or self.l2 < 0 or self.noise_multiplier_scale < 0:
            raise ValueError("sigma0, l2 and noise_multiplier_scale must be >= 0")


def project(params: torch.Tensor, radius: float) -> torch.Tensor:
    """Pi_C(x) = x min(1, C/||x||) row by row ([N, P]): the l2-ball projection of eqs. (3)-(4)."""
    norms = params.square().sum(-1).sqrt()
    return params * clip_scale(norms, radius)[:, None]


# ----------------------------------------------------------------------------------------------
# Networks and data.


class _FrozenFeatureHead(nn.Module):
    """3-layer head (Dense, ReLU, Dense, ReLU, Dense) on frozen features."""

    def __init__(self, in_features: int, num_classes: int = 2) -> None:
        super().__init__()
        self.layer1 = nn.Linear(in_features, HEAD_HIDDEN[0])
        self.layer2 = nn.Linear(HEAD_HIDDEN[0], HEAD_HIDDEN[1])
        self.layer3 = nn.Linear(HEAD_HIDDEN[1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer3(torch.relu(self.layer2(torch.relu(self.layer1(x.flatten(1))))))


@dataclass(frozen=True, eq=False)
class NetworkTask:
    """A network on flat parameters and the (possibly feature-extracted) data as tensors."""

    model: FunctionalClassifier
    init: torch.Tensor  # [P] shared initialisation
    train_x: torch.Tensor
    train_classes: torch.Tensor
    test_x: torch.Tensor
    test_classes: torch.Tensor
    description: str


def _image_shape(dim: int, model: str) -> tuple[int, ...]:
    if model != "cnn":
        return (dim,)
    for channels in (3, 1):
        side = math.isqrt(dim // channels)
        if channels * side * side == dim:
            return (channels, side, side)
    raise ValueError(f"the CNN needs square images (C x s x s features), got dimension {dim}")


def _frozen_features(x: np.ndarray, *, seed: int) -> np.ndarray:
    """Fixed random ReLU features: drawn from ``seed`` only, so independent of the private data
    (a stand-in for a public pre-trained extractor)."""
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal((x.shape[1], HEAD_FEATURES)) / math.sqrt(x.shape[1])
    return np.maximum(x @ weights, 0.0)


def build_task(dataset: Dataset, *, model: str, dtype: torch.dtype = torch.float64,
               device: str | torch.device = "cpu", init_seed: int = 0) -> NetworkTask:
    """The network ``model`` (mlp, cnn, head) for a binary dataset, with its shared init."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    train = np.asarray(dataset.features, dtype=float)
    test = np.asarray(dataset.test_features, dtype=float)
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(init_seed)  # the module's own initialisation, seeded (restored below)
    try:
        if model == "mlp":
            shape: tuple[int, ...] = (train.shape[1],)
            module: nn.Module = TinyMLP(train.shape[1], hidden=5)
            what = f"Koloskova et al. 2025 MLP (Dense(5), ReLU, Dense(2)) on {train.shape[1]} inputs"
        elif model == "cnn":
            shape = _image_shape(train.shape[1], model)
            module = TinyCNN(shape[0])
            what = f"Koloskova et al. 2025 CNN (conv 32, conv 64, avg-pool, Dense(2)) on {shape}"
        else:
            train = _frozen_features(train, seed=init_seed)
            test = _frozen_features(test, seed=init_seed)
            shape = (HEAD_FEATURES,)
            module = _FrozenFeatureHead(HEAD_FEATURES)
            what = (f"frozen random ReLU features ({HEAD_FEATURES}, data-independent, seed "
                    f"{init_seed}) + 3-layer head {HEAD_HIDDEN}")
    finally:
        torch.random.set_rng_state(generator_state)
    module = module.to(device=device, dtype=dtype)
    net = FunctionalClassifier(module, input_shape=shape, name=model)

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.array(a), dtype=dtype, device=device)

    def classes(labels: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(labels) < 0, dtype=torch.long, device=device)

    return NetworkTask(net, net.initial_params(dtype=dtype).to(device), tensor(train),
                       classes(dataset.labels), tensor(test), classes(dataset.test_labels),
                       f"{what}, {net.num_params} parameters")


class _Functional:
    """Batched mean cross-entropy, its gradient and accuracy of flat parameters [N, P]."""

    def __init__(self, net: FunctionalClassifier) -> None:
        self.net = net

        def logits_one(flat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            inputs = x.reshape((x.shape[0], *net.input_shape))
            return functional_call(net.module, net.unflatten(flat), (inputs,))

        def example_losses(flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(logits_one(flat, x), y, reduction="none")

        # The CNN's own batched products where it has them, else vmap(grad(.)).
        self.gradient = net.mean_loss_gradient
        self.logits = net.logits
        self._example_losses = vmap(example_losses, in_dims=(0, None, None))

    def losses(self, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-example cross-entropy of each parameter set: [N, P], [E, ...], [E] -> [N, E]."""
        if not isinstance(self.net.module, StackedNetwork):
            return self._example_losses(params, x, y)
        logits = self.logits(params, x)
        return nn.functional.cross_entropy(logits.flatten(0, 1), y.repeat(params.shape[0]),
                                           reduction="none").reshape(params.shape[0], -1)

    def accuracy(self, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (self.logits(params, x).argmax(-1) == y[None, :]).to(params.dtype).mean(-1)


def _descend(fn: _Functional, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor, *,
             steps: int, step_size: float) -> torch.Tensor:
    for _ in range(steps):
        params = params - step_size * fn.gradient(params, x, y)
    return params


def _unlearn(fn: _Functional, start: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
             config: KoloskovaConfig, random: TrialRandom, stream: str) -> torch.Tensor:
    """The noisy part of one method (eqs. 1, 3, 4) from A(.) = ``start``, then fine-tuning."""
    scale = config.noise_multiplier_scale
    shape = (start.shape[1],)
    params = project(start, config.C0)
    if config.method == "output-perturbation":
        params = params + scale * config.sigma * random.normal(stream, shape)
    elif config.method == "gradient-clipping":
        for _ in range(config.unlearn_steps):
            gradient = fn.gradient(params, x, y)
            clipped = gradient * clip_scale(gradient.square().sum(-1).sqrt(), config.C1)[:, None]
            params = params - config.step_size * (clipped + config.l2 * params)
            params = params + scale * config.sigma * random.normal(stream, shape)
    else:
        if config.sigma0 > 0:
            params = params + scale * config.sigma0 * random.normal(stream, shape)
        for _ in range(config.unlearn_steps):
            gradient = fn.gradient(params, x, y)
            params = project(params - config.step_size * (gradient + config.l2 * params),
                             config.C2)
            params = params + scale * config.sigma * random.normal(stream, shape)
    return _descend(fn, params, x, y, steps=config.finetune_steps,
                    step_size=config.finetune_step_size)


@dataclass(frozen=True, eq=False)
class KoloskovaResult:
    """Per trial ([N, ...]): forget losses, parameters and test accuracy of both sides."""

    unlearned_forget_losses: np.ndarray
    reference_forget_losses: np.ndarray
    unlearned_params: np.ndarray
    reference_params: np.ndarray
    unlearned_accuracy: np.ndarray
    reference_accuracy: np.ndarray
    unlearned_direction_scores: np.ndarray  # final parameters on the unit start difference
    reference_direction_scores: np.ndarray


def _trained(fn: _Functional, task: NetworkTask, rows: torch.Tensor, *, steps: int,
             step_size: float) -> torch.Tensor:
    """A(data): full-batch gradient descent from the shared init ([1, P]; deterministic)."""
    x, y = task.train_x[rows], task.train_classes[rows]
    return _descend(fn, task.init[None, :], x, y, steps=steps, step_size=step_size)


@functools.lru_cache(maxsize=16)
def _trained_once(task: NetworkTask, rows: tuple[int, ...], steps: int,
                  step_size: float) -> torch.Tensor:
    """:func:`_trained` on the rows ``rows`` of ``task``, computed once per task (tasks hash
    by identity): A(D) and A(D_r) are deterministic, so every call for the same trials
    (chunks, the loop, a resumed audit) starts from the same two models."""
    fn = _Functional(task.model)
    index = torch.tensor(rows, dtype=torch.long, device=task.train_x.device)
    with torch.no_grad(), one_cpu_thread(task.train_x.device):
        return _trained(fn, task, index, steps=steps, step_size=step_size)


def _retain_mask(task: NetworkTask, forget: tuple[int, ...] | list[int]) -> tuple[list[int], torch.Tensor]:
    """The sorted forget rows (checked to be distinct indices of the training set) and the
    boolean mask of the retained rows."""
    n = task.train_x.shape[0]
    forget_rows = sorted({int(i) for i in forget})
    if not forget_rows or forget_rows[-1] >= n or forget_rows[0] < 0:
        raise ValueError(f"forget rows must be distinct indices in [0, {n})")
    keep = torch.ones(n, dtype=torch.bool, device=task.train_x.device)
    keep[forget_rows] = False
    return forget_rows, keep


def run_koloskova(task: NetworkTask, *, forget: tuple[int, ...] | list[int],
                  config: KoloskovaConfig, n_trials: int, seed: int, first_trial: int = 0,
                  mode: str = "batched", chunk_size: int | None = None) -> KoloskovaResult:
    """N trials of U(A(D), D_r) and of the certifying U(A(D_r), D_r) (Definition 2.1).

    A(D) and A(D_r) are deterministic (shared initialisation, full-batch descent), so they are
    computed once per task and kept; all randomness is the unlearning noise, drawn per trial
    from (seed, trial).
    """
    n = task.train_x.shape[0]
    forget_rows, keep = _retain_mask(task, forget)
    device = task.train_x.device
    all_rows = torch.arange(n, device=device)
    retain_rows = all_rows[keep]
    fn = _Functional(task.model)
    full_model = _trained_once(task, tuple(range(n)), config.learn_steps,
                               config.learn_step_size)
    retain_model = _trained_once(task, tuple(retain_rows.tolist()), config.learn_steps,
                                 config.learn_step_size)
    x_retain, y_retain = task.train_x[retain_rows], task.train_classes[retain_rows]
    x_forget, y_forget = task.train_x[forget_rows], task.train_classes[forget_rows]
    direction = _unit_start_difference(full_model, retain_model, config.C0)

    def pipeline(random: TrialRandom) -> Mapping[str, torch.Tensor]:
        out = {}
        for side, start in (("unlearned", full_model), ("reference", retain_model)):
            params = _unlearn(fn, start.expand(random.size, -1), x_retain, y_retain, config,
                              random, f"{side}/noise")
            out[f"{side}/params"] = params
            # row by row, so a score never depends on how the trials were batched
            out[f"{side}/direction"] = (params * direction).sum(-1)
            out[f"{side}/forget_losses"] = fn.losses(params, x_forget, y_forget)
            out[f"{side}/accuracy"] = fn.accuracy(params, task.test_x, task.test_classes)
        return out

    with one_cpu_thread(device):
        outputs = run_trials(pipeline, n_trials=n_trials, seed=seed, device=device,
                             dtype=task.train_x.dtype, mode=mode, chunk_size=chunk_size,
                             first_trial=first_trial)
    return KoloskovaResult(
        outputs["unlearned/forget_losses"], outputs["reference/forget_losses"],
        outputs["unlearned/params"], outputs["reference/params"],
        outputs["unlearned/accuracy"], outputs["reference/accuracy"],
        outputs["unlearned/direction"], outputs["reference/direction"])


def _unit_start_difference(full_model: torch.Tensor, retain_model: torch.Tensor,
                           radius: float) -> torch.Tensor:
    """Pi_C0(A(D)) - Pi_C0(A(D_r)) as a unit vector [P] (zero when the starts coincide)."""
    difference = (project(full_model, radius) - project(retain_model, radius))[0]
    norm = difference.square().sum().sqrt()
    return difference / norm if float(norm) > 0 else difference


def start_direction(task: NetworkTask, *, forget: tuple[int, ...] | list[int],
                    config: KoloskovaConfig) -> tuple[np.ndarray, float]:
    """The unit start difference u = (x_0 - x_0') / ||x_0 - x_0'|| of the unlearned and the
    certifying run (x_0 = Pi_C0(A(D)), x_0' = Pi_C0(A(D_r))) and ||x_0 - x_0'||: the only way the
    forget set enters eqs. (1), (3) and (4), fixed by the data before any trial."""
    n = task.train_x.shape[0]
    keep = torch.ones(n, dtype=torch.bool, device=task.train_x.device)
    keep[sorted({int(i) for i in forget})] = False
    fn = _Functional(task.model)
    rows = torch.arange(n, device=task.train_x.device)
    with torch.no_grad(), one_cpu_thread(task.train_x.device):
        full = _trained(fn, task, rows, steps=config.learn_steps, step_size=config.learn_step_size)
        retain = _trained(fn, task, rows[keep], steps=config.learn_steps,
                          step_size=config.learn_step_size)
        distance = float((project(full, config.C0) - project(retain, config.C0)).norm())
        unit = _unit_start_difference(full, retain, config.C0)
    return unit.cpu().numpy(), distance


# ----------------------------------------------------------------------------------------------
# The worst-case forget set within the theorems' assumptions.


@dataclass(frozen=True)
class WorstCaseRecord:
    """The forgotten record chosen adversarially (:func:`worst_case_forget_record`).

    ``row``: the training row whose feature vector the record copies; ``label_class``: its class
    index (the class A(D_r) does not predict there); ``start_distance`` ||x_0 - x_0'|| with every
    forget slot holding the record (Theorems A.9 and 4.2 and eq. 1 assume only <= 2 C0);
    ``candidates``: (row, class, start distance) of every record trained exactly, best first;
    ``screened``: rows ranked by the screening before the exact training.
    """

    row: int
    label_class: int
    start_distance: float
    bound: float
    candidates: tuple[tuple[int, int, float], ...]
    screened: int

    @property
    def label(self) -> float:
        """The record's label in {-1, +1} (class 1 is label -1, as :func:`build_task` maps them)."""
        return -1.0 if self.label_class == 1 else 1.0


def worst_case_forget_record(task: NetworkTask, *, forget: tuple[int, ...] | list[int],
                             learn_steps: int, learn_step_size: float, C0: float,
                             exact: int = 16) -> WorstCaseRecord:
    """The record (x, y) that every forget slot holds in the worst-case audit of eqs. (1), (3), (4).

    The theorems assume nothing of the data: the forget set reaches the unlearning run only
    through x_0 = Pi_C0(A(D)), and the certificates hold for any start within C0, i.e. for start
    distance ||x_0 - x_0'|| up to 2 C0. So the adversarial choice within the assumptions is the
    forget set, from the data domain, that pushes x_0 furthest from x_0' = Pi_C0(A(D_r)).

    Domain: x is a feature vector of the data (so within its range and normalisation), y a
    label of the data. Rule, deterministic (no randomness; ties to the lower row):

    1. for every row x, y is the class A(D_r) does not predict (the label whose per-example
       cross-entropy gradient at A(D_r) is the larger: the most disagreement with the retain
       set's fit);
    2. screening: the ``exact // 2`` rows with the largest per-example gradient norm at A(D_r),
       and the ``exact // 2`` further rows whose gradient at the shared initialisation points
       most against the retain set's mean gradient there (least cosine);
    3. each screened record is planted in every forget slot, A(D) is trained exactly (the
       audit's own full-batch training) and the record with the largest start distance wins.
    """
    if exact < 2:
        raise ValueError(f"exact must be >= 2, got {exact}")
    n = task.train_x.shape[0]
    forget_rows, keep = _retain_mask(task, forget)
    device = task.train_x.device
    x_all, classes = task.train_x, task.train_classes
    x_retain, y_retain = x_all[keep], classes[keep]
    k, n_retain = len(forget_rows), int(keep.sum())
    fn = _Functional(task.model)
    net = task.model

    def loss_sum(flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        inputs = x.reshape((x.shape[0], *net.input_shape))
        logits = functional_call(net.module, net.unflatten(flat), (inputs,))
        return nn.functional.cross_entropy(logits, y, reduction="sum")

    example_gradient = vmap(lambda flat, x, y: grad(loss_sum)(flat, x[None], y[None]),
                            in_dims=(None, 0, 0))

    def planted_gradient(flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # mean over D = D_r and k copies of (x, y): the audit's A(D) objective
        return (grad(loss_sum)(flat, x_retain, y_retain)
                + k * grad(loss_sum)(flat, x[None], y[None])) / (n_retain + k)

    planted = vmap(planted_gradient)
    with torch.no_grad(), one_cpu_thread(device):
        retain_model = _trained(fn, task, torch.arange(n, device=device)[keep],
                                steps=learn_steps, step_size=learn_step_size)
        wrong = 1 - fn.logits(retain_model, x_all)[0].argmax(-1)
        retain_mean = fn.gradient(task.init[None], x_retain, y_retain)[0]
        sizes, cosines = [], []
        # per-example gradients a block of rows at a time ([rows, P] stays small for the CNN)
        for block in torch.arange(n, device=device).split(_SCREEN_BLOCK):
            sizes.append(example_gradient(retain_model[0], x_all[block], wrong[block])
                         .square().sum(-1).sqrt())
            at_init = example_gradient(task.init, x_all[block], wrong[block])
            cosines.append((at_init @ retain_mean)
                           / (at_init.square().sum(-1).sqrt()
                              * retain_mean.square().sum().sqrt()).clamp_min(1e-300))
        size, cosine = torch.cat(sizes), torch.cat(cosines)
        # stable sorts on rows in order: ties go to the lower row
        by_size = torch.sort(-size, stable=True).indices.tolist()
        by_cosine = torch.sort(cosine, stable=True).indices.tolist()
        chosen: list[int] = by_size[: exact // 2]
        for row in by_cosine:
            if len(chosen) >= exact:
                break
            if row not in chosen:
                chosen.append(row)
        rows = torch.as_tensor(chosen, device=device)
        params = task.init[None, :].expand(len(chosen), -1)
        for _ in range(learn_steps):
            params = params - learn_step_size * planted(params, x_all[rows], wrong[rows])
        distances = (project(params, C0) - project(retain_model, C0)
                     ).square().sum(-1).sqrt().tolist()
    ranked = sorted(zip(chosen, [int(wrong[r]) for r in chosen], distances, strict=True),
                    key=lambda c: (-c[2], c[0]))
    best = ranked[0]
    return WorstCaseRecord(row=best[0], label_class=best[1], start_distance=best[2],
                           bound=2 * C0, candidates=tuple(ranked), screened=len(chosen))


def output_perturbation_laws(task: NetworkTask, *, forget: tuple[int, ...] | list[int],
                             config: KoloskovaConfig) -> GaussianLaws | None:
    """The exact laws of output perturbation (eq. 1) as :func:`run_koloskova` runs it, or None
    where they are not Gaussian: N(Pi_C0(A(D)), (scale sigma)^2 I) and N(Pi_C0(A(D_r)), same).

    A(D) and A(D_r) are deterministic descents from the shared initialisation, so the means
    are their clipped values exactly as the mechanism computes them (one trial with the noise
    switched off). Fine-tuning after the noise (``finetune_steps`` > 0) is a nonlinear map of a
    Gaussian (None); so are the other two methods.
    """
    scale = config.noise_multiplier_scale
    if config.method != "output-perturbation" or config.finetune_steps != 0 or scale == 0:
        return None
    quiet = dataclasses.replace(config, noise_multiplier_scale=0.0)
    run = run_koloskova(task, forget=forget, config=quiet, n_trials=1, seed=0)
    return GaussianLaws(
        unlearned_mean=np.asarray(run.unlearned_params[0], dtype=np.float64),
        retrained_mean=np.asarray(run.reference_params[0], dtype=np.float64),
        variance=(scale * config.sigma) ** 2,
        method=("output perturbation, eq. (1): Pi_C0(A(D)) and Pi_C0(A(D_r)) (deterministic "
                "full-batch descents from the shared initialisation, computed as the mechanism "
                f"computes them) plus N(0, sigma^2 I), sigma = {config.sigma!r} x {scale!r}"),
        assumptions=(
            "A(D) and A(D_r) are deterministic (shared initialisation, full-batch descent) and "
            "no fine-tuning follows the noise (finetune_steps = 0)",
            "the noise is added in exact arithmetic (the float rounding of x + sigma z in the "
            "trial engine is not modelled)",
        ))


def run_retrain_budget(task: NetworkTask, *, forget: tuple[int, ...] | list[int],
                       steps: int, step_size: float) -> float:
    """Test accuracy of retraining from scratch on D_r for ``steps`` gradient steps."""
    n = task.train_x.shape[0]
    keep = torch.ones(n, dtype=torch.bool)
    keep[list(forget)] = False
    fn = _Functional(task.model)
    with torch.no_grad(), one_cpu_thread(task.train_x.device):
        params = _trained(fn, task, torch.arange(n)[keep].to(task.train_x.device), steps=steps,
                          step_size=step_size)
        return float(fn.accuracy(params, task.test_x, task.test_classes)[0])


# ----------------------------------------------------------------------------------------------
# Gaussian ground truth.


def exact_gaussian_delta(*, epsilon: float, mu: float) -> float:
    """delta(eps) of N(0, 1) vs N(mu, 1): the empirical floor's one Gaussian privacy profile
    (:func:`empirical.statistics.gdp.gaussian_delta`), the truth of this module's test beds."""
    return gaussian_delta(mu=mu, epsilon=epsilon)


def gaussian_ground_truth(*, method: str, start_distance: float, steps: int, step_size: float,
                          l2: float, sigma: float, curvature: float = 0.0,
                          sigma0: float = 0.0) -> float:
    """Exact shift mu (in noise units) between the two runs' final laws on the linear model
    f(x) = (curvature/2) ||x - a||^2 with no clipping active.

    Every step is x <- (1 - gamma (curvature + lambda)) x + const + N(0, sigma^2 I) on both runs
    (same retain data), so both laws are Gaussian with the same covariance and means that
    differ by rho^T times the start difference: the pair is N(0, 1) vs N(mu, 1) along that
    direction with mu = rho^T ||x_0 - x_0'|| / s_T, s_T^2 = sigma0^2 rho^(2T) +
    sigma^2 sum_{t<T} rho^(2t). Output perturbation is the case T = 0 with s = sigma.
    """
    if method == "output-perturbation":
        return start_distance / sigma
    rho = 1 - step_size * (curvature + l2)
    variance = sigma0**2 * rho ** (2 * steps) + sigma**2 * sum(rho ** (2 * t) for t in range(steps))
    return abs(rho) ** steps * start_distance / math.sqrt(variance)


# ----------------------------------------------------------------------------------------------
# A worst case of Theorem A.9 in one dimension.


class _PushApartGradient:
    """g(x) = -C1 sign(x): a map of x alone (allowed by eq. 3: any G, non-convex), whose clipped
    step moves each run away from 0 by gamma C1, so two runs started at +C0 and -C0 drift apart
    by 2 gamma C1 per step until noise makes one cross 0: Theorem A.9's shift bound
    B = 2 (C0 + gamma C1 T) is (nearly) attained."""

    def __init__(self, clip: float) -> None:
        self.clip = clip

    def gradient(self, params: torch.Tensor, x: object, y: object) -> torch.Tensor:
        return -self.clip * torch.sign(params)


def run_worst_case_gradient_clipping(*, config: KoloskovaConfig, n_trials: int, seed: int,
                                     first_trial: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3) in one dimension from x_hat = +C0 (unlearned) and -C0 (certifying run) with the
    push-apart gradient map; returns the final x of both runs, [N] each. A test bed for the
    gradient-clipping accountants (erratum K1): no network, the worst case made concrete."""
    if config.method != "gradient-clipping":
        raise ValueError("the worst case is built for gradient clipping (eq. 3)")
    fn = _PushApartGradient(float(config.C1))
    plain = KoloskovaConfig(**{**config.__dict__, "finetune_steps": 0})

    def pipeline(random: TrialRandom) -> Mapping[str, torch.Tensor]:
        out = {}
        for side, sign in (("unlearned", 1.0), ("reference", -1.0)):
            start = torch.full((random.size, 1), sign * config.C0, dtype=random.dtype)
            out[side] = _unlearn(fn, start, None, None, plain, random, f"{side}/noise")[:, 0]
        return out

    outputs = run_trials(pipeline, n_trials=n_trials, seed=seed, device="cpu",
                         first_trial=first_trial)
    return outputs["unlearned"], outputs["reference"]
