"""The shared adapter plumbing (audits.adapters.base): exact roundings, field checks, spec data."""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from audits.adapters.base import AdapterBase, demo_audit_spec
from audits.adapters.certificates import broken_note, mark_broken
from audits.adapters.data import spec_data
from audits.adapters.mechanism import time_batched_and_loop
from audits.fields import SpecError
from audits.protocols import Certificate
from audits.registry import adapters
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, RequestSpec
from empirical.benchmarks.timing import MAX_RUNS
from empirical.mechanisms.parameters import (
    AlgorithmParameters,
    ParameterError,
    config_from,
    counts,
    one_of,
    parameter,
    positive,
)


@dataclass(frozen=True)
class _Params(AlgorithmParameters):
    name: ClassVar[str] = "toy"

    steps: int | tuple[int, ...] | None = parameter(
        None, help="steps per request", check=counts(empty="must list at least one step count"))
    scale: float = parameter(1.0, help="a scale", check=positive("a positive number (s)"))
    mode: str = parameter("a", help="a or b", check=one_of("a", "b"))


class _ToyAdapter(AdapterBase):
    params_type = _Params


def test_params_round_trip_and_errors_name_their_spec_path() -> None:
    adapter = _ToyAdapter()
    params = adapter.parse_params({"steps": [2, 3]}, "spec.algorithm")
    assert params.steps == (2, 3)  # lists become tuples on the frozen dataclass
    assert params.to_dict() == {"name": "toy", "steps": [2, 3], "scale": 1.0, "mode": "a"}
    table = {k: v for k, v in params.to_dict().items() if k != "name"}
    assert adapter.parse_params(table, "spec.algorithm") == params
    for table, message in (({"colour": 1}, r"colour: unknown field"),
                           ({"steps": [2, 0]}, r"steps\[1\]: must be a positive integer, got 0"),
                           ({"steps": []}, r"steps: must list at least one step count"),
                           ({"scale": 0.0}, r"scale: must be a positive number \(s\), got 0.0"),
                           ({"scale": True}, r"scale: must be a positive number \(s\)"),
                           ({"mode": "c"}, r"mode: must be one of 'a', 'b', got 'c'")):
        with pytest.raises(SpecError, match=r"^spec\.algorithm\." + message):
            adapter.parse_params(table, "spec.algorithm")
    with pytest.raises(ParameterError, match=r"^scale: must be a positive"):
        _Params(scale=-1.0)  # Python objects are checked on construction too


def test_declared_help_is_what_the_algorithm_listing_prints() -> None:
    docs = {doc.name: (doc.default, doc.description) for doc in _ToyAdapter().parameters()}
    assert docs == {"steps": (None, "steps per request"), "scale": (1.0, "a scale"),
                    "mode": ("a", "a or b")}


def test_an_adapter_cannot_give_its_algorithm_a_second_name() -> None:
    with pytest.raises(TypeError, match="one name"):
        type("Renamed", (AdapterBase,), {"name": "other", "params_type": _Params})


def test_every_builtin_parameter_declares_its_help_and_the_algorithm_has_one_name() -> None:
    for name, adapter in adapters().items():
        assert adapter.params_type.name == name
        for doc in adapter.parameters():
            assert doc.description, f"{name}.{doc.name} declares no help"


def test_config_from_copies_the_shared_fields_and_takes_the_resolved_ones() -> None:
    @dataclass(frozen=True)
    class Config:
        steps: Any
        scale: float
        rate: float

    config = config_from(Config, _Params(steps=3, scale=2.0), rate=0.5, steps=(4,))
    assert config == Config(steps=(4,), scale=2.0, rate=0.5)


def test_broken_note_only_for_a_broken_mechanism() -> None:
    assert broken_note(1.0) == {}
    note = broken_note(0.5, "b")["deliberately_broken"]
    assert "0.5 times the b" in note
    certificate = Certificate(epsilon=1.0, delta=1e-5, bound="x:y", alpha=None, conversion=None,
                              calibration=None, inputs={}, provenance={"keep": 1})
    assert mark_broken(certificate, 1.0) is certificate
    marked = mark_broken(certificate, 0.25)
    assert marked.provenance["keep"] == 1 and "deliberately_broken" in marked.provenance
    assert marked.epsilon == certificate.epsilon


def test_demo_defaults_are_the_shared_audit_settings() -> None:
    default = adapters()["pnsgd"].params_type()
    spec = demo_audit_spec(algorithm=default, name="t", trials=None, default_trials=30,
                           device=None)
    assert spec.trials == 30 and spec.pilot_trials == 3 and spec.device == "cpu"
    assert spec.request == RequestSpec(kind="replace", replacement="flip", indices=(0,))
    assert spec.certificate == CertificateSpec(target_epsilon=1.0, delta="1/n",
                                               calibrate="sigma", conversion="mironov")
    assert spec.dataset == DatasetSpec(name="digits")
    assert spec.chunk_size == 2500 and spec.confidence == 0.95 and spec.seed == 0


def test_spec_data_drops_the_tail_and_caches() -> None:
    base = AuditSpec(algorithm=adapters()["pnsgd"].params_type(),
                     request=RequestSpec(kind="remove", indices=(3,)))
    whole = spec_data(base.canonical_json())
    batched = base.replace(algorithm=base.algorithm.__class__(batch_size=100))
    dropped = spec_data(batched.canonical_json(), batch_size_field="batch_size")
    assert dropped.batch_size == 100 and dropped.dataset.n == (whole.dataset.n // 100) * 100
    assert whole.batch_size is None and whole.indices == (3,)
    assert spec_data(base.canonical_json()) is whole  # cached on the fields it depends on
    norms = np.linalg.norm(whole.dataset.features, axis=1)
    assert whole.max_norm == pytest.approx(float(norms.max()))
    too_big = base.replace(algorithm=base.algorithm.__class__(batch_size=10**6))
    with pytest.raises(SpecError, match=r"^spec\.algorithm\.batch_size: 1000000 exceeds"):
        spec_data(too_big.canonical_json(), batch_size_field="batch_size")


def test_time_batched_and_loop_times_the_same_trials() -> None:
    calls = []

    def run(*, seed: int, first_trial: int, n_trials: int, mode: str = "batched") -> list[int]:
        calls.append((n_trials, mode))
        return list(range(first_trial, first_trial + n_trials))

    timing = time_batched_and_loop(run, n_trials=10, loop_trials=4, warmup_trials=2)
    rates = timing.rates()
    batched_runs, loop_runs = rates["timed_runs"]["batched"], rates["timed_runs"]["loop"]
    assert 1 <= batched_runs <= MAX_RUNS and 1 <= loop_runs <= MAX_RUNS
    assert calls == [(2, "batched")] + [(10, "batched")] * batched_runs + [(4, "loop")] * loop_runs
    assert timing.batched == list(range(10)) and timing.looped == list(range(4))
    assert rates["loop_trials_timed"] == 4 and rates["n_trials"] == 10
    assert rates["speedup"] == pytest.approx(rates["batched_trials_per_s"]
                                             / rates["loop_trials_per_s"])
    with pytest.raises(ValueError, match="n_trials"):
        time_batched_and_loop(run, n_trials=0, loop_trials=1)


def test_a_demo_names_its_attacks_and_none_leaves_them_to_the_default_rule() -> None:
    from audits.adapters.base import DemoSettings
    from audits.attacks import DEFAULT_ATTACKS
    from audits.runner import prepare_audit

    class _Demo(AdapterBase):
        params_type = _Params
        demo = DemoSettings(params=_Params(), trials=10, name="toy", attacks=None)

    assert _Demo().demo_spec().attacks is None
    assert DemoSettings(params=_Params(), trials=10, name="toy").attacks == DEFAULT_ATTACKS
    d2d = adapters()["d2d"]  # exact Gaussian laws at its demo: their likelihood-ratio test too
    prepared = prepare_audit(d2d.demo_spec(trials=10))
    assert prepared.attacks == ("loss", "projection", "likelihood-ratio")


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10),
                 st.booleans(), st.text(max_size=3), st.none()))
def test_a_positive_check_accepts_exactly_the_finite_numbers_above_zero(value) -> None:
    valid = (not isinstance(value, bool) and isinstance(value, int | float)
             and math.isfinite(value) and value > 0)
    try:
        positive("a positive number").apply(value, "x")
    except ParameterError as error:
        assert not valid and str(error) == f"x: must be a positive number, got {value!r}"
        assert pickle.loads(pickle.dumps(error)).problem == error.problem
    else:
        assert valid
