"""The exact privacy loss of a mechanism whose two output laws are known Gaussians, and the
likelihood-ratio attack those laws give.

An adapter's ``exact_laws`` hook (:class:`~audits.adapters.protocol.AlgorithmAdapter`) returns
the laws of the final parameters after unlearning and after retraining,
:class:`empirical.gaussian_laws.GaussianLaws` (one shared isotropic covariance), or None where
the mechanism as run is not exactly Gaussian. From them :func:`exact_privacy_loss` computes the
report's ``exact_privacy_loss`` field: epsilon at the certificate's delta and the Rényi curve at
the certificate's orders, exactly (:func:`bounds.papers.gaussian.gaussian_pair_loss`).
:class:`LikelihoodRatioMechanism` adds the ``likelihood-ratio`` score, the Neyman-Pearson
test between the two laws, fixed before any trial runs (so every lower bound on it stays valid).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from audits.fields import SpecError
from audits.protocols import CURVE_ORDERS, Certificate, ModelOutputs, TrialBatch

if TYPE_CHECKING:
    from audits.adapters.protocol import AlgorithmAdapter, PreparedAudit
    from audits.spec import AuditSpec
    from empirical.gaussian_laws import GaussianLaws

__all__ = ["LIKELIHOOD_RATIO", "LikelihoodRatioMechanism", "attach_exact_law",
           "exact_privacy_loss"]

LIKELIHOOD_RATIO = "likelihood-ratio"
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
    laws: Any  # empirical.gaussian_laws.GaussianLaws

    @property
    def device(self) -> str:
        """The wrapped mechanism's device."""
        return str(getattr(self.inner, "device", "cpu"))

    @property
    def description(self) -> str:
        """The wrapped mechanism's description, with the added score named."""
        return (f"{getattr(self.inner, 'description', type(self.inner).__name__)}; score "
                f"{LIKELIHOOD_RATIO} from the exact Gaussian laws")

    def fingerprint(self) -> str:
        """The wrapped mechanism's fingerprint and a digest of the laws."""
        digest = hashlib.sha256()
        for array in (self.laws.unlearned_mean, self.laws.retrained_mean):
            digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(repr(self.laws.variance).encode())
        return repr((self.inner.fingerprint(), LIKELIHOOD_RATIO, digest.hexdigest()))

    def run_trials(self, *, seed: int, first_trial: int, n_trials: int,
                   **options: Any) -> TrialBatch:
        """The wrapped trials (``options`` such as ``mode`` passed on), each side scored by the
        log-likelihood ratio of its parameters."""
        batch = self.inner.run_trials(seed=seed, first_trial=first_trial, n_trials=n_trials,
                                      **options)

        def scored(side: ModelOutputs) -> ModelOutputs:
            if _STATISTIC not in side.statistics:
                raise ValueError(f"the {LIKELIHOOD_RATIO} attack needs the final parameters "
                                 "(statistic 'params') from the mechanism")
            ratio = self.laws.log_likelihood_ratio(side.statistics[_STATISTIC])
            return dataclasses.replace(side, scores={**side.scores, LIKELIHOOD_RATIO: ratio})

        return TrialBatch(scored(batch.unlearned), scored(batch.retrained))


def attach_exact_law(spec: AuditSpec, adapter: AlgorithmAdapter,
                     prepared: PreparedAudit) -> PreparedAudit:
    """``prepared`` with its exact privacy loss (None where the adapter knows no exact law) and,
    when the spec asks for the ``likelihood-ratio`` attack, the mechanism that scores it."""
    laws = adapter.exact_laws(spec, prepared)
    if laws is None:
        if LIKELIHOOD_RATIO in spec.attacks:
            raise SpecError(f"spec.attacks: {LIKELIHOOD_RATIO!r} needs the exact output laws, "
                            f"which the {adapter.name} adapter does not know for this spec "
                            "(see docs/audits.md, exact privacy loss)")
        return prepared
    mechanism = prepared.mechanism
    fingerprint = prepared.fingerprint
    if LIKELIHOOD_RATIO in spec.attacks:
        mechanism = LikelihoodRatioMechanism(prepared.mechanism, laws)
        fingerprint = mechanism.fingerprint()
    return dataclasses.replace(prepared, mechanism=mechanism, fingerprint=fingerprint,
                               exact_privacy_loss=exact_privacy_loss(laws, prepared.certificate))
