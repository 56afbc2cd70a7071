"""The exact privacy loss of a mechanism whose two output laws are known Gaussians, and the
likelihood-ratio attack those laws give.

An adapter's ``exact_laws`` hook (:class:`~audits.adapters.protocol.AlgorithmAdapter`) returns
the laws of the final parameters after unlearning and after retraining,
:class:`empirical.divergences.gaussian_laws.GaussianLaws` (one shared isotropic covariance), or None where
the mechanism as run is not exactly Gaussian. From them :func:`exact_privacy_loss` computes the
report's ``exact_privacy_loss`` field: epsilon at the certificate's delta and the Rényi curve at
the certificate's orders, exactly (:func:`bounds.papers.gaussian.gaussian_pair_loss`).
:class:`LikelihoodRatioMechanism` adds the ``likelihood-ratio`` score, the Neyman-Pearson
test between the two laws, fixed before any trial runs (so every lower bound on it stays valid).
:func:`resolve_attacks` settles the attacks of a spec that names none: with exact laws the
likelihood-ratio test is the default white-box attack, else the projection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from audits.attacks import DEFAULT_ATTACKS, DEFAULT_EXACT_ATTACKS, LIKELIHOOD_RATIO, attack
from audits.fields import SpecError
from audits.protocols import CURVE_ORDERS, Certificate, ModelOutputs, TrialBatch
from audits.spec import AuditSpec, check_projection_pilot

if TYPE_CHECKING:
    from audits.adapters.protocol import AlgorithmAdapter, PreparedAudit
    from empirical.divergences.gaussian_laws import GaussianLaws

__all__ = ["LikelihoodRatioMechanism", "attach_exact_law",
           "exact_privacy_loss", "resolve_attacks"]

_STATISTIC = "params"


def exact_privacy_loss(laws: GaussianLaws, certificate: Certificate) -> dict[str, Any]:
    """The report's ``exact_privacy_loss`` of ``laws``: epsilon at the certificate's delta, the
    Mahalanobis distance mu, the Rényi curve at the certificate's orders (its grid, or
    :data:`~audits.protocols.CURVE_ORDERS` for a certificate without one), method and
    assumptions. epsilon is the smallest float not below the exact value; at delta = 0 it is
    infinite unless the laws coincide."""
    from bounds.papers.gaussian import gaussian_pair_loss

    mu = laws.mahalanobis()
    orders = ([a for a, _ in certificate.renyi_curve] if certificate.renyi_curve
              else list(CURVE_ORDERS))
    delta = certificate.delta
    if delta > 0:
        loss = gaussian_pair_loss(mu=mu, delta=delta, orders=orders)
        epsilon, renyi = loss.epsilon, loss.renyi
    else:
        epsilon = 0.0 if mu == 0 else math.inf
        renyi = tuple((float(a), float(a) * mu**2 / 2) for a in orders)
    return {
        "epsilon": epsilon if math.isfinite(epsilon) else "inf",  # the report's infinity
        "delta": delta,
        "gaussian_mu": mu,
        "renyi": [[a, v] for a, v in renyi],
        "method": (f"{laws.method}. The two laws share the covariance {laws.variance!r} I, so "
                   "epsilon(delta) is the Gaussian pair's exact hockey-stick curve at the "
                   "Mahalanobis distance mu = ||m_1 - m_0|| / sqrt(v) (Balle and Wang 2018, "
                   "Theorem 8; the smallest float not below it) and D_alpha = alpha mu^2 / 2 in "
                   "both directions (Mironov 2017, Proposition 7); mu from float64 means"),
        "assumptions": list(laws.assumptions),
    }


@dataclass(frozen=True)
class LikelihoodRatioMechanism:
    """A mechanism with the ``likelihood-ratio`` score added to both sides: log N(x; m_1, v I)
    - log N(x; m_0, v I) of the final parameters x (its statistic ``params``)."""

    inner: Any
    laws: Any  # empirical.divergences.gaussian_laws.GaussianLaws

    @property
    def device(self) -> str:
        """The wrapped mechanism's device."""
        return str(getattr(self.inner, "device", "cpu"))

    @property
    def description(self) -> str:
        """The wrapped mechanism's description, with the added score named."""
        return (f"{getattr(self.inner, 'description', type(self.inner).__name__)}; score "
                f"{LIKELIHOOD_RATIO.name} from the exact Gaussian laws")

    def fingerprint(self) -> str:
        """The wrapped mechanism's fingerprint and a digest of the laws."""
        digest = hashlib.sha256()
        for array in (self.laws.unlearned_mean, self.laws.retrained_mean):
            digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(repr(self.laws.variance).encode())
        return repr((self.inner.fingerprint(), LIKELIHOOD_RATIO.name, digest.hexdigest()))

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int,
                   **options: Any) -> TrialBatch:
        """The wrapped trials (``options`` such as ``mode`` passed on), each side scored by the
        log-likelihood ratio of its parameters."""
        batch = self.inner.run_trials(seed=seed, first_trial=first_trial, n_trials=n_trials,
                                      **options)

        def scored(side: ModelOutputs) -> ModelOutputs:
            if _STATISTIC not in side.statistics:
                raise ValueError(f"the {LIKELIHOOD_RATIO.name} attack needs the final parameters "
                                 "(statistic 'params') from the mechanism")
            ratio = self.laws.log_likelihood_ratio(side.statistics[_STATISTIC])
            return dataclasses.replace(side, scores={**side.scores, LIKELIHOOD_RATIO.name: ratio})

        return TrialBatch(scored(batch.unlearned), scored(batch.retrained))


def resolve_attacks(spec: AuditSpec, *, exact_laws: bool) -> tuple[tuple[str, ...], str]:
    """The attacks an audit of ``spec`` runs, and the rule that chose them (for the report).

    A list in the spec is run as written. A spec that names none (``attacks`` None) runs the
    most powerful white-box attack its mechanism gives: where the output laws are exactly
    Gaussian (``exact_laws``) their likelihood-ratio test alone (by Neyman-Pearson no test of
    the final parameters is more powerful, and a second attack would only split the level;
    :data:`~audits.attacks.DEFAULT_EXACT_ATTACKS`), else the loss attack and the projection on the
    pilot trials' mean difference (:data:`~audits.attacks.DEFAULT_ATTACKS`; at least 2 pilot
    trials)."""
    if spec.attacks is not None:
        return tuple(spec.attacks), "named by the spec"
    if exact_laws:
        return DEFAULT_EXACT_ATTACKS, (
            "the default (the spec names no attacks): the mechanism's output laws are exactly "
            f"Gaussian, so the {LIKELIHOOD_RATIO.name} test of those laws, the most powerful test of "
            "the final parameters")
    check_projection_pilot(spec.pilot_trials,
                           why=", the default white-box attack where the spec names no attacks "
                               "and the mechanism's output laws are not known exactly")
    return DEFAULT_ATTACKS, (
        "the default (the spec names no attacks): the mechanism's output laws are not known "
        "exactly, so its white-box attack is the projection on the pilot trials' mean "
        "difference, beside the loss attack")


def attach_exact_law(spec: AuditSpec, adapter: AlgorithmAdapter,
                     prepared: PreparedAudit) -> PreparedAudit:
    """``prepared`` with its exact privacy loss (None where the adapter knows no exact law), its
    attacks resolved (:func:`resolve_attacks`) and, when they include the ``likelihood-ratio``
    attack, the mechanism that scores it."""
    laws = adapter.exact_laws(spec, prepared)
    # the default takes the exact-law attacks only from an adapter that gives them
    attacks, rule = resolve_attacks(spec, exact_laws=laws is not None and all(
        name in adapter.extra_attacks for name in DEFAULT_EXACT_ATTACKS))
    exact = [name for name in attacks if attack(name).needs_exact_laws]
    if laws is None:
        if exact:
            raise SpecError(f"spec.attacks: {exact[0]!r} needs the exact output laws, "
                            f"which the {adapter.name} adapter does not know for this spec "
                            "(see docs/audits.md, exact privacy loss)")
        return dataclasses.replace(prepared, attacks=attacks, attacks_rule=rule)
    mechanism = prepared.mechanism
    fingerprint = prepared.fingerprint
    if LIKELIHOOD_RATIO.name in attacks:
        mechanism = LikelihoodRatioMechanism(prepared.mechanism, laws)
        fingerprint = mechanism.fingerprint()
    return dataclasses.replace(prepared, mechanism=mechanism, fingerprint=fingerprint,
                               exact_privacy_loss=exact_privacy_loss(laws, prepared.certificate),
                               attacks=attacks, attacks_rule=rule)
