"""``unlearn bench bounds`` for every algorithm: a published table's point where the adapter has
one, else the inputs of its demo's certificate."""

from __future__ import annotations

import json

import pytest

from audits.cli import main
from audits.cli.bench import _demo_point
from audits.registry import adapters


@pytest.mark.parametrize("name", sorted(adapters()))
def test_every_demo_certificate_gives_a_point_of_its_bound(name):
    adapter = adapters()[name]
    bound, point = _demo_point(adapter)
    certificate = adapter.prepare(adapter.demo_spec(), device="cpu").certificate
    assert bound.id == certificate.bound
    assert set(point) == set(bound.parameter_names)
    bound.evaluate(precision="interval", **point)  # the demo's inputs meet every precondition


def test_an_algorithm_without_a_published_table_is_benchmarked_at_its_demo(capsys):
    assert main(["bench", "bounds", "--algorithm", "langevin", "--points", "20000",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == "langevin" and out["bound"] == "chien2024lu:eq98"
    assert out["point"] == "demo" and out["reproduction"] is None
    assert out["vectorised_matches_loop"] is True
    assert out["float_vectorised_evals_per_s"] > 0 and out["interval50_evals_per_s"] > 0
