"""Audits in your own test suite (pytest or any runner that reports AssertionError).

::

    from audits.testing import assert_consistent

    def test_my_port_keeps_its_certificate():
        assert_consistent("audits/my_algorithm.toml", trials=400)

    def test_my_mechanism():
        assert_consistent(MyMechanism(), certified_epsilon=1.0, delta=1e-3, trials=500)

:func:`assert_consistent` runs a reduced audit and raises ``AssertionError`` carrying the
report summary when an empirical lower bound exceeds the certificate, and also when the audit is
INCONCLUSIVE (too few trials to ever show a violation: a pass would be vacuous) unless
``allow_inconclusive=True``. A pass is absence of evidence at the given confidence, and only as
strong as the design allows: the returned :class:`~audits.runner.AuditResult` says how large a
violation its tests would have caught in named families (``report["verdict"]["detectable"]``:
the smallest noise shortfall, point-mass leak and tail leak caught in 8 of 10 simulated audits)
and what they would show on each attack's scores pulled apart
(``report["empirical"]["max_certifiable_epsilon"]`` and the Rényi curves' ``ceiling``). A pass
promises no more than that: a leak the attacks' scores do not carry, or one smaller than those
figures, can pass. :func:`assert_violation` is the reverse, for tests that check an audit
catches a deliberately broken mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from audits.loader import load_spec
from audits.protocols import Certificate, TrialMechanism
from audits.runner import AuditResult, audit_mechanism, run_audit
from audits.spec import AuditSpec
from audits.statistics import ScoreOrientation

__all__ = [
    "DEFAULT_TEST_TRIALS",
    "assert_consistent",
    "assert_violation",
    "run_reduced_audit",
]

# Trials of a reduced audit when the caller gives none: a few seconds for the default demo
# settings on one CPU core, and enough to refute a certificate a few times too small.
DEFAULT_TEST_TRIALS = 500


def run_reduced_audit(
    spec_or_mechanism: AuditSpec | Mapping[str, Any] | str | Path | TrialMechanism,
    *,
    certified_epsilon: float | None = None,
    delta: float | None = None,
    certificate: Certificate | None = None,
    trials: int | None = None,
    pilot_trials: int | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    out_dir: str | Path | None = None,
    direction: ScoreOrientation = ScoreOrientation.BOTH,
) -> AuditResult:
    """Run a reduced audit of a spec (TOML path, dict, :class:`AuditSpec`) or a mechanism.

    For a spec the certificate comes from the bound engine; ``trials`` (default
    :data:`DEFAULT_TEST_TRIALS`, never more than the spec's), ``pilot_trials`` (default one
    per five trials, at most the spec's), ``confidence`` and ``seed`` override the spec's. For a
    mechanism give ``certificate`` or ``certified_epsilon`` and ``delta``; ``direction`` (score
    orientation: "both", "greater", "less") applies to mechanisms.
    """
    if isinstance(spec_or_mechanism, TrialMechanism) and not isinstance(
        spec_or_mechanism, AuditSpec | Mapping | str | Path
    ):
        if certificate is None:
            if certified_epsilon is None or delta is None:
                raise ValueError("auditing a mechanism needs certified_epsilon and delta "
                                 "(or a Certificate)")
            certificate = Certificate(epsilon=certified_epsilon, delta=delta)
        elif certified_epsilon is not None or delta is not None:
            raise ValueError("give either certificate or certified_epsilon and delta, not both")
        n = DEFAULT_TEST_TRIALS if trials is None else trials
        return audit_mechanism(
            spec_or_mechanism, certificate=certificate, trials=n,
            pilot_trials=0 if pilot_trials is None else pilot_trials,
            confidence=0.95 if confidence is None else confidence,
            seed=0 if seed is None else seed, out_dir=out_dir, direction=direction,
        )
    if direction != ScoreOrientation.BOTH:
        raise ValueError("a spec audit tests both score directions; direction= is for mechanisms")
    if certified_epsilon is not None or delta is not None or certificate is not None:
        raise ValueError("a spec's certificate comes from the bound engine; put the target in "
                         "the spec's [certificate] table instead of passing certified_epsilon")
    spec = load_spec(spec_or_mechanism)
    n = min(spec.trials, DEFAULT_TEST_TRIALS) if trials is None else trials
    changes: dict[str, Any] = {"trials": n}
    if pilot_trials is not None:
        changes["pilot_trials"] = pilot_trials
    elif spec.pilot_trials:
        changes["pilot_trials"] = max(2, min(spec.pilot_trials, n // 5))
    if confidence is not None:
        changes["confidence"] = confidence
    if seed is not None:
        changes["seed"] = seed
    return run_audit(spec.replace(**changes), out_dir=out_dir)


def assert_consistent(
    spec_or_mechanism: AuditSpec | Mapping[str, Any] | str | Path | TrialMechanism,
    *,
    allow_inconclusive: bool = False,
    **options: Any,
) -> AuditResult:
    """Run a reduced audit; raise AssertionError with the summary on a VIOLATION, and on an
    INCONCLUSIVE audit (it could not have seen a violation) unless ``allow_inconclusive``.

    Options as :func:`run_reduced_audit`. Returns the result for further checks.
    """
    result = run_reduced_audit(spec_or_mechanism, **options)
    if result.status == "VIOLATION":
        raise AssertionError("unlearning audit found a VIOLATION\n" + result.summary())
    if result.status == "INCONCLUSIVE" and not allow_inconclusive:
        needed = result.report["verdict"].get("trials_needed")
        hint = f" (about {needed} trials would be needed)" if needed else ""
        raise AssertionError("unlearning audit is INCONCLUSIVE: too few trials to show a "
                             f"violation{hint}; pass more trials or allow_inconclusive=True\n"
                             + result.summary())
    return result


def assert_violation(
    spec_or_mechanism: AuditSpec | Mapping[str, Any] | str | Path | TrialMechanism,
    **options: Any,
) -> AuditResult:
    """Run a reduced audit; raise AssertionError unless it reports a VIOLATION.

    For tests of the audit itself: a deliberately broken mechanism must be caught.
    """
    result = run_reduced_audit(spec_or_mechanism, **options)
    if result.status != "VIOLATION":
        raise AssertionError("the audit did not detect a violation\n" + result.summary())
    return result
