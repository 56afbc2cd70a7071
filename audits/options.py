"""How an audit is executed: one options object, built once (by the command line or the
caller) and passed down through the runner (:mod:`audits.runner`), the chunk execution
(:mod:`audits.execution`) and the Ray runner (:mod:`audits.ray_runner`).

None of these options changes a number of the report: where chunks run, what is shown while
they run, and what the output folder may hold (the spec's settings decide the numbers).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Backend", "ExecutionOptions"]


class Backend(enum.StrEnum):
    """Where chunks of trials run: in this process, or as tasks of a Ray cluster."""

    LOCAL = "local"
    RAY = "ray"

    # Written as the plain value (help texts and error messages show it as a word).
    __repr__ = str.__repr__


@dataclass(frozen=True, kw_only=True)
class ExecutionOptions:
    """``backend`` where chunks run (``ray_address`` a running Ray cluster's, else a local
    instance or RAY_ADDRESS); ``device`` overrides the spec's (None: the spec's); ``progress``
    progress lines on stderr; ``replace`` deletes an output folder holding another audit
    instead of refusing it; ``resume`` recomputes stored chunks failing their checks instead of
    refusing them; ``keep_statistics`` stores every trial's statistics too (by default the store
    keeps what the report needs: their projections)."""

    backend: Backend = Backend.LOCAL
    ray_address: str | None = None
    device: str | None = None
    progress: bool = False
    replace: bool = False
    resume: bool = False
    keep_statistics: bool = False

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "backend", Backend(self.backend))
        except ValueError:
            raise ValueError(f"backend must be one of {', '.join(map(repr, Backend))}, got "
                             f"{self.backend!r}") from None
