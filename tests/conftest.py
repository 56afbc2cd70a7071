"""Hypothesis profiles, so that CI is reproducible and nightly runs can search harder.

- ``ci``: derandomized (the same examples on every run, so a red build is not a lottery), prints
  the reproduction blob of a failing example, no per-example deadline (shared CI machines are
  slow and uneven), a modest number of examples.
- ``dev``: random examples (a fresh seed each run), as many as ``ci`` and with no deadline, so
  that a user's ``python -m pytest`` does the same amount of work as CI, only on other draws.
- ``explore``: many more examples, for nightly or manual runs hunting rare failures.

Selection: ``HYPOTHESIS_PROFILE`` when set (so a nightly job on a CI runner can ask for
``explore``); otherwise ``ci`` when the ``CI`` environment variable is set (CI services set
``CI=true``); otherwise ``dev``. ``pytest --hypothesis-profile=NAME`` overrides both. Tests that
fix ``max_examples`` in their own ``@settings`` keep that number under every profile.
See docs/testing.md.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings

settings.register_profile(
    "ci",
    derandomize=True,
    # A failing example saved in .hypothesis/ by an earlier local run must not make a CI run
    # (or its local reproduction) red: CI tests exactly its own derandomized draws.
    database=None,
    print_blob=True,
    deadline=None,
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
)
# Hypothesis changes its own defaults when it sees a CI variable; spell out what dev and explore
# mean so that they behave the same everywhere.
settings.register_profile("dev", derandomize=False, max_examples=50, deadline=None,
                          print_blob=False)
settings.register_profile(
    "explore",
    derandomize=False,
    max_examples=2_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _profile_name() -> str:
    explicit = os.environ.get("HYPOTHESIS_PROFILE", "").strip()
    if explicit:
        return explicit
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return "ci"
    return "dev"


settings.load_profile(_profile_name())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--only-hypothesis", action="store_true",
                     help="run only the hypothesis property tests (for the seed sweep of "
                          "docs/testing.md)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--only-hypothesis"):
        return
    kept = [item for item in items if is_hypothesis_test(getattr(item, "obj", None))]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


# A CONSISTENT verdict simulates what it could have seen (audits/detectable.py, seconds per
# design); the suite's many small audits skip it, and the tests of that simulation turn it on.
os.environ.setdefault("UNLEARN_DETECTABLE", "0")
