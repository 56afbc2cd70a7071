"""Every certificate holds against the exact loss of the mechanism as run, on random small
instances inside its theorem's assumptions (audits.exact_truth, empirical.exact_laws).

A failure is a wrong theorem or a wrong implementation: hypothesis shrinks it to a small
instance, which `violations` names.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audits.adapters import exact_cases as cases
from audits.exact_truth import evaluate_case, violations
from bounds.conversions import gaussian_epsilon

EXAMPLES = 8
features = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=4, max_size=4)
labels = st.lists(st.sampled_from([-1.0, 1.0]), min_size=4, max_size=4)
forget = st.integers(0, 3)


def _holds(case) -> dict:
    row = evaluate_case(case)
    assert not violations(row), violations(row)
    assert math.isfinite(row["exact_error"]) and row["exact_error"] < 1e-3
    return row


@settings(max_examples=EXAMPLES, deadline=None)
@given(x=features, y=labels, forget=forget, lam=st.floats(0.1, 2.0), clip=st.floats(0.05, 1.0),
       sigma=st.floats(0.1, 0.4), T=st.integers(1, 3), K=st.integers(1, 2),
       radius=st.floats(0.2, 1.0), partition=st.sampled_from(["random", [(0, 1), (2, 3)]]))
def test_pnsgd_theorem_3_2_and_its_improved_forms_hold_against_the_exact_loss(
        x, y, forget, lam, clip, sigma, T, K, radius, partition) -> None:
    _holds(cases.pnsgd_case(x=x, y=y, forget=forget, lam=lam, clip=clip, sigma=sigma,
                            batch_size=2, learn_epochs=T, unlearn_epochs=K, radius=radius,
                            delta=1e-3, partition=partition))


@settings(max_examples=EXAMPLES, deadline=None)
@given(x=features, y=labels, forget=forget, lam=st.floats(0.1, 2.0), clip=st.floats(0.05, 1.0),
       sigma=st.floats(0.1, 0.4), K=st.integers(1, 2), radius=st.floats(0.2, 1.0),
       b=st.sampled_from([2, 4]))
def test_corollaries_3_7_and_3_8_hold_from_the_stationary_law(
        x, y, forget, lam, clip, sigma, K, radius, b) -> None:
    _holds(cases.pnsgd_stationary_case(x=x, y=y, forget=forget, lam=lam, clip=clip,
                                       sigma=sigma, batch_size=b, unlearn_epochs=K,
                                       radius=radius, delta=1e-3))


@settings(max_examples=EXAMPLES, deadline=None)
@given(x=features, y=labels, forget=forget, lam=st.floats(0.1, 2.0), clip=st.floats(0.05, 1.0),
       sigma=st.floats(0.1, 0.4), K=st.integers(1, 3), radius=st.floats(0.2, 1.0))
def test_langevin_eq98_holds_from_the_limit_law(x, y, forget, lam, clip, sigma, K,
                                                radius) -> None:
    _holds(cases.langevin_case(x=x, y=y, forget=forget, lam=lam, clip=clip, sigma=sigma,
                               unlearn_steps=K, radius=radius, delta=1e-3))


@settings(max_examples=EXAMPLES, deadline=None)
@given(x=features, y=labels, forget=forget, lam=st.floats(0.2, 2.0), clip=st.floats(0.05, 0.5),
       sigma=st.floats(0.1, 0.4), KA=st.integers(1, 6), K=st.integers(1, 3))
def test_noisy_gd_deletion_curve_holds(x, y, forget, lam, clip, sigma, KA, K) -> None:
    _holds(cases.noisy_gd_case(x=x, y=y, forget=forget, lam=lam, clip=clip, sigma=sigma,
                               learn_steps=KA, unlearn_steps=K, delta=1e-3))


@settings(max_examples=EXAMPLES, deadline=None)
@given(x=features, y=labels, forget=forget, x_hat=st.floats(-3, 3), x_hat_r=st.floats(-3, 3),
       c0=st.floats(0.2, 2.0), c1=st.floats(0.1, 1.0), gamma=st.floats(0.1, 1.0),
       sigma=st.floats(0.3, 1.0), steps=st.integers(1, 5),
       lam=st.sampled_from([0.0, 0.3]))
def test_gradient_clipping_theorem_a9_holds(x, y, forget, x_hat, x_hat_r, c0, c1, gamma, sigma,
                                            steps, lam) -> None:
    _holds(cases.gradient_clipping_case(x=x, y=y, forget=forget, x_hat=x_hat, x_hat_r=x_hat_r,
                                        c0=c0, c1=c1, gamma=gamma, sigma=sigma, steps=steps,
                                        delta=1e-3, lam=lam))


@settings(max_examples=EXAMPLES, deadline=None)
@given(x=features, y=labels, forget=forget, x_hat=st.floats(-3, 3), x_hat_r=st.floats(-3, 3),
       c0=st.floats(0.2, 1.5), c2=st.floats(0.2, 1.0), gamma=st.floats(0.1, 1.0),
       sigma=st.floats(0.4, 1.0))
def test_model_clipping_adaptive_accountant_holds(x, y, forget, x_hat, x_hat_r, c0, c2, gamma,
                                                  sigma) -> None:
    _holds(cases.model_clipping_case(x=x, y=y, forget=forget, x_hat=x_hat, x_hat_r=x_hat_r,
                                     c0=c0, c2=c2, gamma=gamma, sigma=sigma, epsilon=1.0,
                                     delta=1e-3))


@settings(max_examples=EXAMPLES, deadline=None)
@given(x_hat=st.floats(-3, 3), x_hat_r=st.floats(-3, 3), c0=st.floats(0.1, 2.0),
       epsilon=st.floats(0.2, 3.0))
def test_output_perturbation_holds_and_matches_the_gaussian_closed_form(x_hat, x_hat_r, c0,
                                                                        epsilon) -> None:
    case = cases.output_perturbation_case(x_hat=x_hat, x_hat_r=x_hat_r, c0=c0,
                                          epsilon=epsilon, delta=1e-3)
    row = _holds(case)
    clip = [min(max(v, -c0), c0) for v in (x_hat, x_hat_r)]
    mu = abs(clip[0] - clip[1]) / case.instance["sigma"]
    if mu > 1e-3:
        assert row["exact_epsilon"] == pytest.approx(gaussian_epsilon(delta=1e-3, mu=mu),
                                                     rel=1e-5)


def test_d2d_theorem_9_holds_and_its_laws_are_the_gaussian_pair() -> None:
    from empirical.exact_laws.neel2021 import descent
    from empirical.exact_laws.noisy_gradient import Records, StepRule

    case = cases.DEFAULT_CASES["d2d"]()
    row = _holds(case)
    inst = case.instance
    learn = Records(tuple(inst["x"]), tuple(inst["y"]), (1.0,) * 4)
    final = learn.without(inst["forget"])
    rule = StepRule(eta=inst["eta"], l2=inst["lambda"], clip=inst["M"])
    learned = descent(0.0, rule, learn, steps=inst["T"], radius=inst["R"])
    gap = (descent(learned, rule, final, steps=inst["I"], radius=inst["R"])
           - descent(0.0, rule, final, steps=inst["T"], radius=inst["R"]))
    mu = abs(gap) / inst["sigma"]
    assert row["exact_epsilon"] == pytest.approx(gaussian_epsilon(delta=1e-3, mu=mu), rel=1e-5)


def test_every_default_instance_has_a_row_and_no_violation() -> None:
    assert set(cases.DEFAULT_CASES) >= {"pnsgd", "noisy-gd", "langevin", "d2d",
                                        "output-perturbation", "koloskova-gradient-clipping",
                                        "koloskova-model-clipping"}


def test_a_certificate_below_the_exact_loss_is_reported() -> None:
    row = evaluate_case(cases.DEFAULT_CASES["output-perturbation"]())
    broken = {**row, "certificates": [{**row["certificates"][0],
                                       "certified_epsilon": row["exact_epsilon"] / 2}]}
    assert not violations(row)
    assert violations(broken)


def test_bench_exact_prints_one_row_per_instance_with_the_documented_fields(capsys) -> None:
    import json

    from audits.cli import main

    assert main(["bench", "exact", "--algorithm", "output-perturbation,d2d", "--json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)["rows"]
    assert [r["algorithm"] for r in rows] == ["output-perturbation", "d2d"]
    for row in rows:
        assert {"algorithm", "instance", "delta", "certified_epsilon", "exact_epsilon",
                "exact_error", "renyi_ratio", "violations"} <= set(row)
        assert row["certified_epsilon"] >= row["exact_epsilon"] + row["exact_error"]
    assert "bench exact: d2d: certified" in err
