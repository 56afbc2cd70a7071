"""Leaks beyond shifts (empirical/benchmarks/leaks.py): the verdict against the best set one
could fix in advance knowing the truth, and stating a Rényi curve never seeing less than the
same (epsilon, delta) alone. A study: slow."""

from __future__ import annotations

import math

import pytest

from audits.leak_suite import leak_certificates, leak_suite
from empirical.benchmarks.leaks import LEAKS, truth_chosen_power
from empirical.statistics.pilot_window import LEAD_SHARE

PLAIN, CURVE = leak_certificates()
RUNS = 10
SEED = 31_337  # the test's draws, not the measurements' (audits.leak_suite.DEFAULT_SEED)


def _suite_row(leak, n: int, runs: int = RUNS):
    (row,) = leak_suite(sizes=(n,), runs=runs, seed=SEED, leaks=[leak.name])
    return row


def _slack(rate: float, runs: int) -> float:
    """Two standard errors of a rate estimated from ``runs`` draws (at least one draw)."""
    return max(1.0 / runs, 2.0 * math.sqrt(max(rate * (1 - rate), 0.0) / runs))


# Cells whose truth-chosen set the default statistic does not reach with (epsilon, delta) alone
# (docs/audits.md; draws [9000, N, seed]): the multimodal leak at 2,000 trials per side, 6 of 20
# against 0.83. No design whose best rule holds a third of the level reaches it there: the
# truth-chosen set itself, tested on the 1,900 rows a 5% pilot leaves at a third of the level,
# refutes in 0.59 of draws (test_the_truth_chosen_set_at_the_leads_share_of_the_level below).
_NOT_YET = {("multimodal", 2_000)}


def _cases():
    for leak in LEAKS:
        if leak.no_privacy:
            continue
        for n in (2_000, 20_000):
            short = any(leak.name.startswith(name) and n == size for name, size in _NOT_YET)
            marks = [pytest.mark.xfail(reason="below 0.8 of the truth-chosen set (docs/audits.md)",
                                       strict=False)] if short else []
            yield pytest.param(leak, n, marks=marks, id=f"{leak.name}-{n}")


@pytest.mark.slow  # 6 leaks x 2 sizes x 2 certificates x 10 audits, up to 20,000 per side
@pytest.mark.parametrize(("leak", "n"), list(_cases()))
def test_the_verdict_sees_what_a_set_chosen_with_the_truth_sees(leak, n):
    row = _suite_row(leak, n)
    truth = row.truth_chosen
    plain = row.plain["VIOLATION"] / row.runs
    with_curve = row.curve["VIOLATION"] / row.runs
    assert plain >= 0.8 * truth - _slack(truth, RUNS), (plain, truth)
    # stating more never sees less
    assert with_curve >= plain - _slack(plain, RUNS), (with_curve, plain)


@pytest.mark.slow
def test_a_mechanism_whose_scores_interleave_the_worlds_is_never_consistent():
    leak = next(leak for leak in LEAKS if leak.no_privacy)
    row = _suite_row(leak, 20_000, runs=5)
    assert row.plain["CONSISTENT"] == row.curve["CONSISTENT"] == 0, row


@pytest.mark.parametrize(("name", "whole", "at_the_lead"), [("multimodal", 0.83, 0.59),
                                                           ("scale", 0.25, 0.08)])
def test_the_truth_chosen_set_at_the_leads_share_of_the_level(name, whole, at_the_lead):
    """The ceiling of a pilot design at 2,000 trials a side: the set chosen with the truth, on
    the 1,900 rows a 5% pilot leaves and at the third of the level the best rule holds, refutes
    the certificate far less often than at the whole level on all 2,000 rows; below 0.8 of it
    on the multimodal and scale leaks, where the target is then out of any such design's
    reach."""
    leak = next(leak for leak in LEAKS if leak.name.startswith(name))
    full, _ = truth_chosen_power(leak, n=2_000, epsilon=PLAIN.epsilon, delta=PLAIN.delta)
    lead, _ = truth_chosen_power(leak, n=1_900, epsilon=PLAIN.epsilon, delta=PLAIN.delta,
                                 alpha=0.05 * LEAD_SHARE)
    assert full == pytest.approx(whole, abs=0.01)
    assert lead == pytest.approx(at_the_lead, abs=0.01)
    assert lead < 0.8 * full
