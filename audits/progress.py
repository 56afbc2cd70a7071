"""Progress lines on stderr for long commands (audits, reproductions, benchmarks).

A command run inside :func:`reporting` prints a heartbeat line naming the current phase
(:func:`phase`) and the elapsed time whenever nothing has been printed for ``interval`` seconds
(``first`` seconds before its first line), so that no long command stays silent for more than a
few seconds. Once it has printed anything, each new phase is printed as it starts; before that
phases are silent, so that a command failing at once still prints its one ``error:`` line and
nothing else. :func:`line` and :func:`announce` print at once; :func:`counted` prints how many
units of work (chunks) are done with the time left estimated from the rate so far, and later
heartbeat lines carry that estimate too. Outside :func:`reporting` (library use, ``--quiet``)
every call is a no-op. Heartbeats go to terminals only (by default): in a log or a pipe a failing
command's stderr stays its ``error:`` line.

With ``as_json`` (``--json``, whose stdout holds one JSON object) every line is one JSON object
instead: ``{"progress": label, "message": ..., "elapsed_s": ...}``, plus ``done``, ``total`` and
``eta_s`` once work is counted.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

__all__ = ["HEARTBEAT_SECONDS", "active", "announce", "counted", "duration", "json_lines", "line",
           "phase", "reporting"]

HEARTBEAT_SECONDS = 4.0
FIRST_HEARTBEAT_SECONDS = 1.0  # the first line comes sooner: the toolkit's imports took their time


def duration(seconds: float) -> str:
    """A time span in words a reader takes in at once: ``45 s``, ``12 min``, ``3.5 h``, ``9 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"


class _Reporter:
    def __init__(self, label: str, *, interval: float, first: float, stream: TextIO,
                 as_json: bool = False) -> None:
        self.label, self.interval, self.first, self.stream = label, interval, first, stream
        self.as_json = as_json
        self.start = self.last = time.monotonic()
        self.current = "running"
        self.printed = False
        # counted work: (done, total, when counting started, when ``done`` was reached)
        self.counts: tuple[int, int, float, float] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="progress-heartbeat", daemon=True)

    def eta(self, now: float) -> float | None:
        """Seconds left at ``now`` at the rate the counted work went so far (None before the
        first unit is done)."""
        if self.counts is None or self.counts[0] == 0:
            return None
        done, total, began, reached = self.counts
        per_unit = (reached - began) / done
        return max(per_unit * (total - done) - (now - reached), 0.0)

    def write(self, text: str, *, with_eta: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            eta = self.eta(now) if self.counts is not None else None
            if self.as_json:
                record: dict = {"progress": self.label, "message": text,
                                "elapsed_s": round(now - self.start, 1)}
                if self.counts is not None:
                    record.update(done=self.counts[0], total=self.counts[1],
                                  eta_s=None if eta is None else round(eta, 1))
                print(json.dumps(record), file=self.stream, flush=True)
            else:
                if with_eta and self.counts is not None and self.counts[0] < self.counts[1]:
                    text += (", time left unknown until the first chunk is done" if eta is None
                             else f", about {duration(eta)} left")
                print(f"{self.label}: {text}", file=self.stream, flush=True)
            self.last = now
            self.printed = True

    def _beat(self) -> None:
        while not self._stop.wait(min(0.25, self.interval / 4)):
            now = time.monotonic()
            if now - self.last >= (self.interval if self.printed else self.first):
                self.write(f"{self.current} ... {now - self.start:.0f} s", with_eta=True)


_ACTIVE: _Reporter | None = None


@contextlib.contextmanager
def reporting(label: str, *, enabled: bool = True, interval: float = HEARTBEAT_SECONDS,
              first: float = FIRST_HEARTBEAT_SECONDS, stream: TextIO | None = None,
              heartbeat: bool | None = None, as_json: bool = False) -> Iterator[None]:
    """Report the phases of the enclosed work under ``label`` (nested calls keep the outer one);
    ``heartbeat`` (default: whether the stream is a terminal) adds the heartbeat lines;
    ``as_json`` writes each line as one JSON object."""
    global _ACTIVE
    if not enabled or _ACTIVE is not None:
        yield
        return
    reporter = _Reporter(label, interval=interval, first=min(first, interval),
                         stream=stream or sys.stderr, as_json=as_json)
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
        _ACTIVE.counts = None  # the counted work (and its time left) belonged to the last phase
        if _ACTIVE.printed:
            _ACTIVE.write(message)


def announce(message: str) -> None:
    """Start a phase and print ``label: message`` at once (news the user should see)."""
    if _ACTIVE is not None:
        _ACTIVE.current = message
        _ACTIVE.write(message)


def line(text: str) -> None:
    """Print ``label: text`` at once, within the current phase (it resets the heartbeat)."""
    if _ACTIVE is not None:
        _ACTIVE.write(text)


def json_lines() -> bool:
    """Whether progress lines are JSON objects (``--json``): no terminal bar then."""
    return _ACTIVE is not None and _ACTIVE.as_json


def counted(done: int, total: int, text: str, *, began: float | None = None) -> None:
    """Record that ``done`` of ``total`` units of work are finished (counting from ``began``, a
    :func:`time.monotonic` time, or from the first call with ``done`` 0) and print ``text`` with
    the time left at the rate so far."""
    if _ACTIVE is None:
        return
    now = time.monotonic()
    if began is None:
        began = now if _ACTIVE.counts is None or done == 0 else _ACTIVE.counts[2]
    _ACTIVE.counts = (done, total, began, now)
    _ACTIVE.write(text, with_eta=True)
