"""The benchmarks' timing: each path's fastest run, within a run and time budget."""

from __future__ import annotations

import itertools

import pytest

from empirical.benchmarks import timing


def scripted_clock(monkeypatch: pytest.MonkeyPatch, durations: list[float]) -> None:
    """perf_counter readings such that run i takes durations[i] seconds (dyadic durations, so
    that each difference of readings is exact)."""
    readings = itertools.chain.from_iterable(
        (start, start + d) for start, d in zip(itertools.count(0.0, 100.0), durations))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(readings))


def test_the_fastest_of_the_runs_is_reported_with_every_run(monkeypatch) -> None:
    scripted_clock(monkeypatch, [0.375, 0.125, 0.25, 0.5, 0.1875, 9.0])
    results = iter(range(100))
    timed = timing.fastest_run(lambda: next(results), max_runs=5, budget_seconds=10.0)
    assert timed.runs == (0.375, 0.125, 0.25, 0.5, 0.1875)
    assert timed.seconds == 0.125
    assert timed.result == 0  # the first run's result


def test_runs_stop_once_the_budget_is_spent(monkeypatch) -> None:
    scripted_clock(monkeypatch, [0.5, 0.75, 0.875, 0.125, 0.125])
    timed = timing.fastest_run(lambda: None, max_runs=5, budget_seconds=1.5)
    assert timed.runs == (0.5, 0.75, 0.875)  # 0.5 + 0.75 < 1.5 allows a third run, then stop
    assert timed.seconds == 0.5


def test_a_call_longer_than_the_budget_runs_once(monkeypatch) -> None:
    scripted_clock(monkeypatch, [5.0, 1.0])
    calls = []
    timed = timing.fastest_run(lambda: calls.append(1), budget_seconds=2.0)
    assert timed.runs == (5.0,) and len(calls) == 1


def test_the_accelerator_is_synchronised_before_each_clock_reading(monkeypatch) -> None:
    events = []
    readings = itertools.count()

    def clock() -> float:
        events.append("clock")
        return float(next(readings))

    monkeypatch.setattr(timing.time, "perf_counter", clock)
    timing.fastest_run(lambda: events.append("call"), max_runs=2, budget_seconds=10.0,
                       synchronize=lambda: events.append("sync"))
    assert events == ["clock", "call", "sync", "clock"] * 2


def test_at_least_one_run_is_required() -> None:
    with pytest.raises(ValueError, match="max_runs"):
        timing.fastest_run(lambda: None, max_runs=0)
