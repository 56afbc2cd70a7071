"""The heap regime of batched trials: both glibc thresholds raised while trials compute, and a
usable state left behind."""

from __future__ import annotations

import pytest

from empirical.engine import memory


class RecordedMallopt:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, option: int, value: int) -> int:
        self.calls.append((option, value))
        return 1


def test_trials_compute_with_both_thresholds_raised_and_leave_the_mmap_threshold_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mallopt = RecordedMallopt()
    monkeypatch.setattr(memory, "_glibc", lambda name: mallopt if name == "mallopt" else None)
    with memory.heap_top_kept():
        inside = dict(mallopt.calls)
    assert inside == {memory._M_MMAP_THRESHOLD: 32 * 2**20, memory._M_TRIM_THRESHOLD: 2**30}
    # afterwards: glibc's default trim threshold, and no mmap threshold set back to 128 KiB
    assert mallopt.calls[len(inside):] == [(memory._M_TRIM_THRESHOLD, 128 * 1024)]


def test_the_trim_threshold_is_restored_when_the_trials_raise(monkeypatch) -> None:
    mallopt = RecordedMallopt()
    monkeypatch.setattr(memory, "_glibc", lambda name: mallopt if name == "mallopt" else None)
    with pytest.raises(RuntimeError), memory.heap_top_kept():
        raise RuntimeError("a trial failed")
    assert mallopt.calls[-1] == (memory._M_TRIM_THRESHOLD, 128 * 1024)


def test_without_glibc_the_regime_asks_for_it_and_does_nothing_else(monkeypatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(memory, "_glibc", lambda name: asked.append(name))
    entered = False
    with memory.heap_top_kept():
        entered = True
    memory.release_freed_memory()
    assert entered and asked == ["mallopt", "malloc_trim"]
