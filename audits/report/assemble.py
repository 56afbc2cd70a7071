"""The report data (schema ``report.json``, :mod:`audits.report.schema`) of a finished audit.

:func:`build_report` puts together the plan (:mod:`audits.plan`), the trials' analysis
(:func:`audits.analysis.analyse`) and the verdict (:func:`audits.verdict.decide`); it computes
no bound and decides nothing itself.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from audits.analysis import analyse
from audits.report.schema import SCHEMA_ID, SCHEMA_VERSION
from audits.results import finite
from audits.verdict import decide
from audits.versions import code_version, toolkit_version

if TYPE_CHECKING:
    from audits.execution import ChunkResults
    from audits.plan import AuditPlan

__all__ = ["build_report"]


def build_report(plan: AuditPlan, chunks: ChunkResults) -> dict:
    """The report dict of ``plan`` run as ``chunks``: certificate, lower bounds, estimates,
    verdict, utility, plots, seeds, timing and notes."""
    analysis = analyse(plan, chunks)
    verdict = decide(plan, analysis)
    settings = plan.settings
    pilot_seed = {} if chunks.pilot_seed is None else {"pilot_seed": chunks.pilot_seed}
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "code_version": code_version(),
        "toolkit_version": toolkit_version(),
        "spec": dict(plan.spec),
        "spec_hash": plan.cache_key,
        "certificate": plan.certificate.to_dict(),
        "empirical": {
            "n_trials": analysis.n_trials,
            "pilot_trials": analysis.pilot_trials,
            "confidence": settings.confidence,
            "device": plan.device,
            "lower_bounds": [entry.to_dict() for entry in analysis.lower_bounds],
            "estimates": [entry.to_dict() for entry in analysis.estimates],
            "max_certifiable_epsilon": finite(analysis.reach),
            "direction": settings.direction,
            "attacks": [attack.name for attack in analysis.attacks],
            "attacks_rule": plan.attacks_rule or "named by the caller",
            "renyi": [entry.to_dict() for entry in analysis.renyi],
        },
        "exact_privacy_loss": (None if plan.exact_privacy_loss is None
                               else dict(plan.exact_privacy_loss)),
        "verdict": verdict,
        "utility": analysis.utility,
        "plots": analysis.plots,
        "seeds": {"seed": int(settings.seed), **pilot_seed, **plan.seeds},
        "timing": {"wall_seconds": float(time.perf_counter() - plan.started),
                   "chunks": int(chunks.chunks), "chunks_resumed": int(chunks.resumed)},
        "notes": analysis.notes,
    }
