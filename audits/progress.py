"""Progress lines on stderr for long commands (audits, reproductions, benchmarks).

A command run inside :func:`reporting` prints a heartbeat line naming the current phase
(:func:`phase`) and the elapsed time whenever nothing has been printed for ``interval`` seconds
(``first`` seconds before its first line), so that no long command stays silent for more than a
few seconds. Once it has printed anything, each new phase is printed as it starts; before that
phases are silent, so that a command failing at once still prints its one ``error:`` line and
nothing else. :func:`line` and :func:`announce` print at once. Outside :func:`reporting`
(library use, ``--json``, ``--quiet``) every call is a no-op. Heartbeats go to terminals only
(by default): in a log or a pipe a failing command's stderr stays its ``error:`` line.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["HEARTBEAT_SECONDS", "active", "announce", "line", "phase", "reporting"]

HEARTBEAT_SECONDS = 4.0
FIRST_HEARTBEAT_SECONDS = 1.0  # the first line comes sooner: the toolkit's imports took their time


class _Reporter:
    def __init__(self, label: str, *, interval: float, first: float, stream: TextIO) -> None:
        self.label, self.interval, self.first, self.stream = label, interval, first, stream
        self.start = self.last = time.monotonic()
        self.current = "running"
        self.printed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True)

    def write(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)
            self.last = time.monotonic()
            self.printed = True

    def _beat(self) -> None:
        while not self._stop.wait(min(0.25, self.interval / 4)):
            now = time.monotonic()
            if now - self.last >= (self.interval if self.printed else self.first):
                self.write(f"{self.label}: {self.current} ... {now - self.start:.0f} s")


_ACTIVE: _Reporter | None = None


@contextlib.contextmanager
def reporting(label: str, *, enabled: bool = True, interval: float = HEARTBEAT_SECONDS,
              first: float = FIRST_HEARTBEAT_SECONDS, stream: TextIO | None = None,
              heartbeat: bool | None = None) -> Iterator[None]:
    """Report the phases of the enclosed work under ``label`` (nested calls keep the outer one);
    ``heartbeat`` (default: whether the stream is a terminal) adds the heartbeat lines."""
    global _ACTIVE
    if not enabled or _ACTIVE is not None:
        yield
        return
    reporter = _Reporter(label, interval=interval, first=min(first, interval),
                         stream=stream or sys.stderr)
    if heartbeat is None:
        isatty = getattr(reporter.stream, "isatty", None)
        heartbeat = bool(isatty and isatty())
    _ACTIVE = reporter
    if heartbeat:
        reporter._thread.start()
    try:
        yield
    finally:
        reporter._stop.set()
        if heartbeat:
            reporter._thread.join()
        _ACTIVE = None


def active() -> bool:
    """Whether progress lines are being printed (inside an enabled :func:`reporting`)."""
    return _ACTIVE is not None


def phase(message: str) -> None:
    """Start a phase: name it in later heartbeat lines, and print ``label: message`` when the
    command has already printed progress."""
    if _ACTIVE is not None:
        _ACTIVE.current = message
        if _ACTIVE.printed:
            _ACTIVE.write(f"{_ACTIVE.label}: {message}")


def announce(message: str) -> None:
    """Start a phase and print ``label: message`` at once (news the user should see)."""
    if _ACTIVE is not None:
        _ACTIVE.current = message
        _ACTIVE.write(f"{_ACTIVE.label}: {message}")


def line(text: str) -> None:
    """Print ``label: text`` at once, within the current phase (it resets the heartbeat)."""
    if _ACTIVE is not None:
        _ACTIVE.write(f"{_ACTIVE.label}: {text}")
