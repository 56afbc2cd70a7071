"""Koloskova et al. 2025, Figure 1 / Table 2's shape: accuracy against compute budget.

Noisy fine-tuning (gradient clipping, model clipping or output perturbation) followed by
noiseless fine-tuning up to a budget of B gradient steps, against retraining from scratch on
the retain set with B steps. The Koloskova adapters draw it in their reports
(``report_figures = true``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["FIGURE_BUDGETS", "FIGURE_TRIALS", "accuracy_budget_plot"]

FIGURE_BUDGETS = (25, 50, 100, 200)
FIGURE_TRIALS = 8


def accuracy_budget_plot(task: Any, *, config: Any, forget: tuple[int, ...], model: str,
                         seed: int, name: str, budgets: tuple[int, ...] = FIGURE_BUDGETS,
                         trials: int = FIGURE_TRIALS) -> dict[str, Any]:
    """Mean test accuracy of a method (``config``, a KoloskovaConfig) with a total of B gradient
    steps (T noisy steps + B - T fine-tuning) against retraining from scratch with B steps, on
    ``task`` (a built KoloskovaTask); ``name`` is the algorithm's, for the figure id."""
    from empirical.mechanisms.koloskova2025 import run_koloskova, run_retrain_budget

    noisy = config.unlearn_steps if config.method != "output-perturbation" else 0
    method_x, method_y, retrain_y = [], [], []
    for budget in budgets:
        retrain_y.append(run_retrain_budget(task, forget=forget, steps=budget,
                                            step_size=config.learn_step_size))
        if budget < noisy:
            continue
        run = run_koloskova(task, forget=forget, n_trials=trials, seed=seed,
                            config=dataclasses.replace(config, finetune_steps=budget - noisy))
        method_x.append(budget)
        method_y.append(float(np.mean(run.unlearned_accuracy)))
    return {
        "id": f"{name}-accuracy-budget",
        "title": "Accuracy against compute budget (Koloskova et al. Fig. 1 / Table 2 shape)",
        "caption": (f"{config.method} (T = {noisy} noisy steps, sigma = {config.sigma:.4g}, then "
                    f"fine-tuning to the budget; mean of {trials} trials) against retraining "
                    f"from scratch on the retain set with the same number of full-batch "
                    f"gradient steps; model {model}."),
        "x_label": "compute budget (gradient steps)", "y_label": "test accuracy",
        "log_x": True, "log_y": False,
        "series": [{"label": config.method, "x": method_x, "y": method_y},
                   {"label": "retrain from scratch", "x": list(budgets), "y": retrain_y}],
    }
