"""Certificate plumbing every adapter shares: how delta is labelled, the note of a deliberately
broken mechanism, the usual calibration rules and the directed float roundings that keep a step
size or a noise on the safe side of its exact value."""

from __future__ import annotations

import dataclasses

from audits.fields import fail
from audits.protocols import Certificate
from audits.spec import AuditSpec, CertificateSpec

PARAMS_PATH = "spec.algorithm"

__all__ = [
    "broken_note",
    "check_sigma_calibration",
    "delta_label",
    "mark_broken",
]

def delta_label(certificate: CertificateSpec) -> str:
    """How the report names the certificate's delta: ``"1/n"`` or ``"given"``."""
    return "1/n" if certificate.delta == "1/n" else "given"


def broken_note(scale: float, what: str = "noise") -> dict[str, str]:
    """Provenance entry of a deliberately broken mechanism (empty for the real one)."""
    if scale == 1.0:
        return {}
    return {"deliberately_broken": (
        f"noise_multiplier_scale = {scale}: the mechanism draws {scale} times the {what} this "
        "certificate assumes (a test of the audit itself)")}


def mark_broken(certificate: Certificate, scale: float, what: str = "noise") -> Certificate:
    """``certificate`` with :func:`broken_note` added to its provenance."""
    note = broken_note(scale, what)
    if not note:
        return certificate
    return dataclasses.replace(certificate, provenance={**certificate.provenance, **note})


def check_sigma_calibration(spec: AuditSpec, *, sigma_field: str = "sigma",
                            steps: tuple[str, str] | None = None) -> None:
    """The usual rules between a noise level, a step count and the certificate's target.

    Without a target the noise must be given; with one, the calibrated parameter must be left
    out. ``steps`` = (calibrate name, field name), e.g. ("K", "unlearn_epochs"): calibrating
    the step count needs the noise given and the count left out.
    """
    params, cert = spec.algorithm, spec.certificate
    path = f"{PARAMS_PATH}.{sigma_field}"
    sigma = getattr(params, sigma_field)
    if cert.target_epsilon is None:
        if sigma is None:
            raise fail(path, "is required when spec.certificate.target_epsilon is not given "
                       "(nothing to calibrate it from)")
        return
    if cert.calibrate == sigma_field and sigma is not None:
        raise fail(path, "is calibrated from spec.certificate.target_epsilon: leave it out, or "
                   "leave out the target")
    if steps is not None and cert.calibrate == steps[0]:
        name, field = steps
        if sigma is None:
            raise fail(path, f"is required when {name} is calibrated (spec.certificate."
                       f"calibrate = {name!r})")
        if getattr(params, field) is not None:
            raise fail(f"{PARAMS_PATH}.{field}", f"is calibrated (spec.certificate.calibrate "
                       f"= {name!r}): leave it out")
