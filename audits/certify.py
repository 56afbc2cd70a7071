"""The one path from a declared bound to an audit's :class:`Certificate`.

A Rényi bound is converted to (epsilon, delta) at its best order and also keeps its whole
certified curve alpha -> eps(alpha) (interval upper ends on a grid of orders), which the verdict
tests directly; a bound that is already an
(epsilon, delta) guarantee (``eps_delta_unlearning``, e.g. a Gaussian loss-perturbation theorem)
is evaluated in interval arithmetic as it stands, with delta among its own parameters.

Every adapter computes its certificate here: calibrate the free parameter to the spec's target
(:func:`bounds.calibration.calibrate`, which returns the safe side and re-checks it), then
evaluate the bound at the exact numbers the mechanism will run with and convert it to
(epsilon, delta) at the best Rényi order (:func:`bounds.conversions.best_epsilon`, interval upper
end). The adapter supplies the bound, its fixed inputs, the value of the free parameters when
they are given, and the assumptions that tie its mechanism to the theorem; this module knows no
algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audits.fields import SpecError
from audits.protocols import Certificate, certified_renyi_curve

__all__ = ["CertifiedRun", "certify"]


@dataclass(frozen=True)
class CertifiedRun:
    """A certificate and the values of its free parameters the mechanism must run with."""

    certificate: Certificate
    values: Mapping[str, Any]


def certify(
    bound: Any,
    *,
    inputs: Mapping[str, Any],
    free: Mapping[str, Any],
    delta: float,
    target_epsilon: float | None,
    solve: str | None,
    conversion: str,
    cast: Callable[[Any], Any] = float,
    assumptions: Sequence[str] = (),
    derivation: Sequence[str] = (),
    delta_label: str = "given",
    extra_provenance: Mapping[str, Any] | None = None,
    calibration: Mapping[str, Any] | None = None,
) -> CertifiedRun:
    """Calibrate (when a target is given), certify, and assemble the :class:`Certificate`.

    ``inputs``: the bound's fixed parameters. ``free``: its remaining parameters in the order
    the report lists them (e.g. sigma, K), None where ``solve`` names the one to calibrate.
    ``solve`` None certifies the given values (then ``target_epsilon`` must be None). ``cast``
    turns the calibrated value into the mechanism's type (float, or int for an epoch count).
    A bound-engine refusal becomes a :class:`~audits.fields.SpecError` on ``spec.certificate``.

    An (epsilon, delta) bound (no Rényi order) takes ``delta`` as its own parameter: pass it in
    ``inputs`` (it must equal ``delta``); its epsilon is the interval upper end at the given
    values, no conversion. Such a bound is calibrated by the adapter's own safe-side solver
    (``solve`` None), whose record is passed as ``calibration``.
    """
    from bounds.calibration import calibrate
    from bounds.conversions import CONVERSION_CITATIONS, best_epsilon
    from bounds.errors import BoundError

    values = dict(free)
    renyi = bound.guarantee.renyi_order is not None
    if not renyi:
        return _certify_eps_delta(
            bound, inputs=inputs, values=values, delta=delta, solve=solve,
            assumptions=assumptions, derivation=derivation, delta_label=delta_label,
            extra_provenance=extra_provenance, calibration=calibration)
    try:
        if target_epsilon is not None and solve is not None:
            given = {k: v for k, v in values.items() if k != solve}
            cal = calibrate(bound, solve=solve, epsilon=target_epsilon, delta=delta,
                            conversion=conversion, **given, **inputs)
            if cal.value is None:
                raise SpecError(f"spec.certificate: {solve} cannot be calibrated: "
                                f"{'; '.join(cal.notes)}")
            values[solve] = cast(cal.value)
            calibration = {"parameter": cal.parameter, "value": cal.value,
                           "target_epsilon": cal.target_epsilon, "neighbour": cal.neighbour,
                           "neighbour_epsilon": cal.neighbour_epsilon,
                           "certified_epsilon_at_value": cal.certified_epsilon}
        # The final certificate is evaluated at the exact numbers the mechanism runs with.
        conv = best_epsilon(bound, delta=delta, conversion=conversion, **values, **inputs)
    except BoundError as error:
        raise SpecError(f"spec.certificate: the bound engine refused the inputs: {error}") \
            from None
    provenance = {
        **conv.provenance,
        "conversion": CONVERSION_CITATIONS[conversion],
        "audit_assumptions": list(assumptions),
        "derivation": list(derivation),
        "delta": delta_label,
        **(extra_provenance or {}),
    }
    # The whole certified curve at the same numbers, for the Rényi-native test (each order's
    # value is the interval upper end; orders the theorem refuses are left out and noted).
    curve, direction, curve_notes = certified_renyi_curve(bound, {**values, **inputs})
    if curve_notes:
        provenance["renyi_curve_notes"] = curve_notes
    certificate = Certificate(
        epsilon=conv.epsilon, delta=delta, bound=bound.id, alpha=conv.alpha,
        conversion=conversion, calibration=calibration,
        inputs={**inputs, **values, "delta": delta}, provenance=provenance,
        renyi_curve=curve, renyi_direction=direction,
    )
    if target_epsilon is not None and conv.epsilon > target_epsilon:
        raise SpecError(f"spec.certificate: the calibrated certificate {conv.epsilon} exceeds "
                        f"the target {target_epsilon}")  # pragma: no cover
    return CertifiedRun(certificate, values)


def _certify_eps_delta(bound: Any, *, inputs: Mapping[str, Any], values: Mapping[str, Any],
                       delta: float, solve: str | None, assumptions: Sequence[str],
                       derivation: Sequence[str], delta_label: str,
                       extra_provenance: Mapping[str, Any] | None,
                       calibration: Mapping[str, Any] | None) -> CertifiedRun:
    """An (epsilon, delta) bound: its interval upper end at the exact values, no conversion."""
    from bounds.errors import BoundError

    if bound.guarantee.kind != "eps_delta_unlearning":
        raise SpecError(f"spec.certificate.bound: {bound.id} bounds a {bound.guarantee.kind}, "
                        "not a privacy loss")
    if solve is not None:
        raise SpecError(f"spec.certificate: {bound.id} is an (epsilon, delta) bound; calibrate "
                        "it with the adapter's solver and pass calibration=")
    if "delta" in bound.parameter_names and float(inputs.get("delta", math.nan)) != delta:
        raise SpecError(f"spec.certificate: {bound.id} takes delta as a parameter; pass the "
                        f"certificate's delta {delta} in its inputs")
    try:
        evaluation = bound.evaluate(precision="interval", **values, **inputs)
    except BoundError as error:
        raise SpecError(f"spec.certificate: the bound engine refused the inputs: {error}") \
            from None
    epsilon = float(evaluation.certified_upper)
    provenance = {
        **bound.provenance(),
        "conversion": "none: the bound is an (epsilon, delta) guarantee, evaluated in interval "
                      "arithmetic (upper end)",
        "audit_assumptions": list(assumptions),
        "derivation": list(derivation),
        "delta": delta_label,
        **(extra_provenance or {}),
    }
    certificate = Certificate(
        epsilon=epsilon, delta=delta, bound=bound.id, alpha=None, conversion=None,
        calibration=None if calibration is None else dict(calibration),
        inputs={**inputs, **values, "delta": delta}, provenance=provenance,
    )
    return CertifiedRun(certificate, dict(values))
