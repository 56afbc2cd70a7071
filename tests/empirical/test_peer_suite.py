"""The default (epsilon, delta) statistic against jax-privacy's two-sided Bonferroni auditor on
score laws beyond the Gaussian (a study: slow). The target is the peer's mean bound or more in
every case; the cases measured short of it are marked as such (docs/audits.md, "The default
statistic beside jax-privacy, beyond Gaussians")."""

from __future__ import annotations

import pytest

from empirical.benchmarks.score_laws import SCORE_LAWS, peer_suite

pytest.importorskip("jax_privacy")

# Measured short of the peer (20 draws, seed 77): with a 50-row pilot per side the regions are
# placed coarsely while the peer maximizes over every threshold at the price of its ROC hull's
# few vertices, and so reaches 0.94-0.98 of the mean of a rule fixed with the truth on these
# laws (docs/audits.md, "Why the peer is hard to beat at N = 10³" and "The ceiling a rule fixed
# with the truth sets").
_SHORT = {("laplace", 1_000), ("logistic", 1_000), ("student-t3", 1_000), ("mixture", 1_000)}


def _cases():
    for law in sorted(SCORE_LAWS):
        for n in (1_000, 10_000):
            marks = [pytest.mark.xfail(reason="measured short of the peer", strict=False)] \
                if (law, n) in _SHORT else []
            yield pytest.param(law, n, marks=marks, id=f"{law}-{n}")


@pytest.mark.slow  # 20 draws of both auditors per case, two deltas
@pytest.mark.parametrize(("law", "n"), list(_cases()))
def test_default_statistic_reaches_the_peer(law, n):
    for row in peer_suite(laws=(law,), sizes=(n,), runs=20, seed=77):
        # 3%: about two standard errors of a mean ratio over 20 draws at N = 10^3
        assert row.ratio >= 0.97, row
