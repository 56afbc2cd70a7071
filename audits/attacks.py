"""The attacks an audit can run, each declared once.

An attack turns each trial's two models (unlearned, retrained) into one score per side. Its
declaration says where the score comes from (:class:`AttackSource`): a score the mechanism's
trials return under the attack's name, or a projection of the trials' statistics on a
direction chosen on independent pilot trials; whether every mechanism gives it or only those
whose adapter lists it (``extra_attacks``); and whether it needs the exact output laws
(:mod:`audits.exact_loss`). Spec parsing (:mod:`audits.spec`, :mod:`audits.loader`), the plan,
the analysis and the exact-law hook read the declarations from :func:`attack`; a name appears
only here. Every lower bound on an attack's scores stays valid because the attack is fixed
before the tested trials run (the projection's direction comes from pilot trials with their
own seed).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_ATTACKS",
    "DEFAULT_EXACT_ATTACKS",
    "LIKELIHOOD_RATIO",
    "LOSS",
    "PROJECTION",
    "STATED_DIRECTION",
    "Attack",
    "AttackSource",
    "attack",
    "attack_names",
    "attack_summaries",
    "generic_attacks",
    "pilot_attacks",
    "projects_statistics",
    "register_attack",
]


class AttackSource(enum.StrEnum):
    """Where an attack's scores come from."""

    MECHANISM_SCORE = "mechanism score"  # the trials return a score under the attack's name
    PILOT_PROJECTION = "pilot projection"  # statistics projected on the pilot's mean difference


@dataclass(frozen=True, kw_only=True)
class Attack:
    """One attack. ``generic``: every mechanism's trials give it (else only a mechanism whose
    adapter lists it in ``extra_attacks``); ``needs_exact_laws``: it scores with the exact
    output laws, so only an audit whose adapter knows them runs it."""

    name: str
    summary: str
    source: AttackSource = AttackSource.MECHANISM_SCORE
    generic: bool = False
    needs_exact_laws: bool = False

    @property
    def needs_pilot(self) -> bool:
        """Whether its score is chosen on pilot trials (at least 2 of them)."""
        return self.source is AttackSource.PILOT_PROJECTION


_REGISTRY: dict[str, Attack] = {}


def register_attack(declaration: Attack) -> Attack:
    """Add an attack to the registry (a name is declared once)."""
    if declaration.name in _REGISTRY:
        raise ValueError(f"attack {declaration.name!r} is already declared")
    _REGISTRY[declaration.name] = declaration
    return declaration


def attack(name: str) -> Attack:
    """The declaration of ``name``; ValueError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown attack {name!r}; known: {', '.join(_REGISTRY)}") from None


def attack_names() -> tuple[str, ...]:
    """The declared attacks' names, in declaration order."""
    return tuple(_REGISTRY)


def attack_summaries() -> dict[str, str]:
    """name -> one-line summary, for spec validation and help texts."""
    return {name: a.summary for name, a in _REGISTRY.items()}


def generic_attacks() -> tuple[str, ...]:
    """The attacks every mechanism's trials give (others come from an adapter's
    ``extra_attacks``)."""
    return tuple(name for name, a in _REGISTRY.items() if a.generic)


def pilot_attacks() -> tuple[str, ...]:
    """The attacks whose scores are the trials' statistics projected on a pilot direction."""
    return tuple(name for name, a in _REGISTRY.items() if a.needs_pilot)


def projects_statistics(names: Iterable[str] | None) -> bool:
    """Whether running ``names`` (None: every attack the trials give) projects the trials'
    statistics on a pilot direction, so that chunks store the projections. A name not declared
    here is a score of the caller's mechanism."""
    return names is None or any(name in pilot_attacks() for name in names)


# ----------------------------------------------------------------------------------------------
# The declarations.

LOSS = register_attack(Attack(
    name="loss",
    summary="minus the loss of the forgotten record(s) (Yeom et al. 2018)",
    generic=True,
))

PROJECTION = register_attack(Attack(
    name="projection",
    summary="final parameters projected on the unlearned-minus-retrained mean difference of "
            "independent pilot trials",
    source=AttackSource.PILOT_PROJECTION,
    generic=True,
))

STATED_DIRECTION = register_attack(Attack(
    name="stated-direction",
    summary="final parameters projected on a direction the mechanism fixes from the data before "
            "any trial (white-box; e.g. the difference of the two runs' deterministic starts); "
            "only some algorithms give it",
))

LIKELIHOOD_RATIO = register_attack(Attack(
    name="likelihood-ratio",
    summary="log-likelihood ratio of the final parameters under the exact Gaussian output laws "
            "(where the algorithm's adapter knows them; see exact privacy loss)",
    needs_exact_laws=True,
))

# The attacks a spec that names none runs, resolved when the audit is prepared
# (audits.exact_loss.resolve_attacks); demos run DEFAULT_ATTACKS too. Where the adapter knows the
# exact Gaussian output laws: their likelihood-ratio test alone. By Neyman-Pearson no test of
# the final parameters has more power, and every further attack only splits the audit's level
# (Bonferroni): at N = 10^4 on the three exact examples, seeds 0-9, adding the loss attack
# lowered the mean largest lower bound by 0.002-0.008 of the exact epsilon, adding the
# projection as well by 0.006-0.015 (docs/audits.md, default attacks). Otherwise the loss attack
# and the projection on the pilot trials' mean difference.
DEFAULT_ATTACKS: tuple[str, ...] = (LOSS.name, PROJECTION.name)
DEFAULT_EXACT_ATTACKS: tuple[str, ...] = (LIKELIHOOD_RATIO.name,)
