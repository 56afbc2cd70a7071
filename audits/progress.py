"""Progress lines on stderr for long commands (audits, reproductions, benchmarks).

A command run inside :func:`reporting` prints one line per phase (:func:`phase`) and, whenever
nothing has been printed for ``interval`` seconds, a heartbeat line naming the current phase and
the elapsed time, so that no long command stays silent for more than a few seconds. Outside
:func:`reporting` (library use, ``--json``, ``--quiet``) every call here is a no-op.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["HEARTBEAT_SECONDS", "active", "line", "phase", "reporting"]

HEARTBEAT_SECONDS = 4.0


class _Reporter:
    def __init__(self, label: str, *, interval: float, stream: TextIO) -> None:
        self.label, self.interval, self.stream = label, interval, stream
        self.start = self.last = time.monotonic()
        self.current = "running"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True)

    def write(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)
            self.last = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(min(0.25, self.interval / 4)):
            now = time.monotonic()
            if now - self.last >= self.interval:
                self.write(f"{self.label}: {self.current} ... {now - self.start:.0f} s")


_ACTIVE: _Reporter | None = None


@contextlib.contextmanager
def reporting(label: str, *, enabled: bool = True, interval: float = HEARTBEAT_SECONDS,
              stream: TextIO | None = None) -> Iterator[None]:
    """Report the phases of the enclosed work under ``label`` (nested calls keep the outer one)."""
    global _ACTIVE
    if not enabled or _ACTIVE is not None:
        yield
        return
    reporter = _Reporter(label, interval=interval, stream=stream or sys.stderr)
    _ACTIVE = reporter
    phase("running")
    reporter._thread.start()
    try:
        yield
    finally:
        reporter._stop.set()
        reporter._thread.join()
        _ACTIVE = None


def active() -> bool:
    """Whether progress lines are being printed (inside an enabled :func:`reporting`)."""
    return _ACTIVE is not None


def phase(message: str) -> None:
    """Start a phase: print ``label: message`` and name it in later heartbeat lines."""
    if _ACTIVE is not None:
        _ACTIVE.current = message
        _ACTIVE.write(f"{_ACTIVE.label}: {message}")


def line(text: str) -> None:
    """Print a line of progress the caller formatted itself (it resets the heartbeat)."""
    if _ACTIVE is not None:
        _ACTIVE.write(text)
