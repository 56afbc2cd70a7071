"""Audit specs: every bad field gives a message naming it; canonical form and hashing."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from audits.loader import check_spec, demo_spec, load_spec, spec_from_dict, spec_from_toml
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, ModelSpec, RequestSpec, SpecError
from empirical.mechanisms.chien2024_params import PNSGDParams
from empirical.mechanisms.parameters import ParameterError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pnsgd_digits.toml"


def _merge(base: dict, change: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


BASE = demo_spec(trials=100).to_dict()

# (change to the demo spec, exact start of the error message)
BAD_FIELDS = [
    ({"trials": -3}, "spec.trials: must be a positive integer, got -3"),
    ({"trials": 2.5}, "spec.trials: must be a positive integer, got 2.5"),
    ({"trials": True}, "spec.trials: must be a positive integer, got True"),
    ({"trials": 1}, "spec.trials: must be at least 2, got 1"),
    ({"pilot_trials": -1}, "spec.pilot_trials: must be a non-negative integer, got -1"),
    ({"pilot_trials": 0}, "spec.pilot_trials: must be at least 2 for the projection attack"),
    ({"confidence": 1.5}, "spec.confidence: must be a number in (0, 1), e.g. 0.95, got 1.5"),
    ({"confidence": "high"}, "spec.confidence: must be a number in (0, 1)"),
    ({"seed": -1}, "spec.seed: must be a non-negative integer, got -1"),
    ({"device": "tpu"}, "spec.device: must be 'cpu', 'cuda', 'cuda:N' or 'auto', got 'tpu'"),
    ({"dtype": "float16"}, "spec.dtype: must be one of 'float64', 'float32', got 'float16'"),
    ({"chunk_size": 0}, "spec.chunk_size: must be a positive integer, got 0"),
    ({"name": " "}, "spec.name: must be a non-empty string"),
    ({"attacks": ["lira"]},
     "spec.attacks[0]: must be one of 'loss', 'projection', 'stated-direction', "
     "'likelihood-ratio', got 'lira'"),
    ({"attacks": []}, "spec.attacks: must name at least one of"),
    ({"attacks": ["loss", "loss"]}, "spec.attacks: lists a name twice"),
    ({"attacks": "loss"}, "spec.attacks: must be a list of names, got 'loss'"),
    ({"statistics": ["gdp"]}, "spec.statistics[0]: must be one of"),
    ({"estimators": ["magic"]}, "spec.estimators[0]: must be one of"),
    ({"bogus": 1}, "spec.bogus: unknown field; known fields:"),
    ({"algorithm": {"name": "sgd"}}, "spec.algorithm.name: unknown algorithm 'sgd'"),
    ({"algorithm": {"foo": 1}}, "spec.algorithm.foo: unknown field"),
    ({"algorithm": 3}, "spec.algorithm: must be a table with a 'name' field"),
    ({"algorithm": {"unlearn_epochs": 0}},
     "spec.algorithm.unlearn_epochs: must be a positive integer, got 0"),
    ({"algorithm": {"unlearn_epochs": []}},
     "spec.algorithm.unlearn_epochs: must list at least one K"),
    ({"algorithm": {"unlearn_epochs": [1, -2]}},
     "spec.algorithm.unlearn_epochs[1]: must be a positive integer, got -2"),
    ({"algorithm": {"unlearn_epochs": [1, 2]}},
     "spec.algorithm.unlearn_epochs: lists 2 values of K for 1 requests"),
    ({"algorithm": {"learn_epochs": -1}},
     "spec.algorithm.learn_epochs: must be a non-negative integer, got -1"),
    ({"algorithm": {"batch_size": 0}}, "spec.algorithm.batch_size: must be a positive integer"),
    ({"algorithm": {"batch_size": "half"}}, "spec.algorithm.batch_size: must be a positive"),
    ({"algorithm": {"step_size": "2/L"}},
     "spec.algorithm.step_size: must be a positive number or '1/L', got '2/L'"),
    ({"algorithm": {"step_size": -0.1}}, "spec.algorithm.step_size: must be a positive number"),
    ({"algorithm": {"l2": 0}}, "spec.algorithm.l2: must be a positive number"),
    ({"algorithm": {"clip": 0}}, "spec.algorithm.clip: must be a positive number (M)"),
    ({"algorithm": {"radius": -1}}, "spec.algorithm.radius: must be a positive number (R)"),
    ({"algorithm": {"partition": "random"}},
     "spec.algorithm.partition: must be one of 'per_trial', 'fixed'"),
    ({"algorithm": {"init": "gaussian"}}, "spec.algorithm.init: must be 'zero'"),
    ({"algorithm": {"noise_multiplier_scale": -0.5}},
     "spec.algorithm.noise_multiplier_scale: must be a number >= 0"),
    ({"algorithm": {"sigma": 0.1}}, "spec.algorithm.sigma: is calibrated from"),
    ({"certificate": {"target_epsilon": None}},
     "spec.algorithm.sigma: is required when spec.certificate.target_epsilon is not given"),
    ({"algorithm": {"sigma": -1.0}, "certificate": {"target_epsilon": None}},
     "spec.algorithm.sigma: must be a positive number"),
    ({"certificate": {"calibrate": "K"}}, "spec.algorithm.sigma: is required when K is"),
    ({"certificate": {"calibrate": "K"}, "algorithm": {"sigma": 0.01, "unlearn_epochs": 2}},
     "spec.algorithm.unlearn_epochs: is calibrated"),
    ({"certificate": {"calibrate": "K"}, "algorithm": {"sigma": 0.01},
      "request": {"requests": 2, "indices": None}},
     "spec.certificate.calibrate: K calibration is not supported for a sequence"),
    ({"certificate": {"target_epsilon": 0}},
     "spec.certificate.target_epsilon: must be a positive number, got 0"),
    ({"certificate": {"delta": 1.5}}, "spec.certificate.delta: must be a number in (0, 1)"),
    ({"certificate": {"delta": "1/m"}}, "spec.certificate.delta: must be a number in (0, 1) or"),
    ({"certificate": {"calibrate": "T"}}, "spec.certificate.calibrate: must be one of"),
    ({"certificate": {"conversion": "exact"}}, "spec.certificate.conversion: must be one of"),
    ({"certificate": {"bound": "thm3.2"}}, "spec.certificate.bound: must be a bound id"),
    ({"certificate": {"foo": 1}}, "spec.certificate.foo: unknown field"),
    ({"dataset": 3}, "spec.dataset: must be a table of fields, got int"),
    ({"dataset": {"name": "imagenet"}}, "spec.dataset.name: must be one of"),
    ({"dataset": {"name": "mnist"}}, "spec.dataset.path: dataset 'mnist' is read from your"),
    ({"dataset": {"path": "/data"}}, "spec.dataset.path: dataset 'digits' is built in"),
    ({"dataset": {"classes": [3, 8]}}, "spec.dataset.classes: applies to the file datasets"),
    ({"dataset": {"name": "mnist", "path": "x.npz", "classes": [3, 3]}},
     "spec.dataset.classes: must be two different labels"),
    ({"dataset": {"name": "mnist", "path": "x.npz", "classes": [3]}},
     "spec.dataset.classes: must be two class labels"),
    ({"dataset": {"name": "mnist", "path": "x.npz", "n_train": 0}},
     "spec.dataset.n_train: must be a positive integer"),
    ({"dataset": {"name": "synthetic-gaussian", "n": 100}},
     "spec.dataset.d: is required for the synthetic-gaussian dataset"),
    ({"dataset": {"name": "synthetic-gaussian", "n": -5, "d": 3}},
     "spec.dataset.n: must be a positive integer, got -5"),
    ({"dataset": {"n": 10}}, "spec.dataset.n: applies to the synthetic-gaussian dataset only"),
    ({"model": {"name": "mlp"}}, "spec.model.name: must be one of 'logistic-regression'"),
    ({"request": {"kind": "delete"}}, "spec.request.kind: must be one of 'replace', 'remove'"),
    ({"request": {"replacement": "zero"}}, "spec.request.replacement: must be one of"),
    ({"request": {"size": 0}}, "spec.request.size: must be a positive integer, got 0"),
    ({"request": {"requests": 0}}, "spec.request.requests: must be a positive integer, got 0"),
    ({"request": {"indices": [0, 0], "size": 2}}, "spec.request.indices: must be distinct"),
    ({"request": {"indices": [0], "size": 2}},
     "spec.request.indices: must list size * requests = 2 rows, got 1"),
    ({"request": {"indices": [-1]}}, "spec.request.indices[0]: must be a row index >= 0"),
    ({"request": {"indices": "0"}}, "spec.request.indices: must be a list of row indices"),
    ({"request": {"seed": -2}}, "spec.request.seed: must be a non-negative integer, got -2"),
    ({"request": {"what": 1}}, "spec.request.what: unknown field"),
]


@pytest.mark.parametrize("change, message", BAD_FIELDS,
                         ids=[m.split(":")[0] + f"#{i}" for i, (_, m) in enumerate(BAD_FIELDS)])
def test_bad_field_names_the_field(change, message):
    with pytest.raises(SpecError) as info:
        spec_from_dict(_merge(BASE, change))
    assert str(info.value).startswith(message), str(info.value)


def test_spec_error_is_a_value_error():
    assert issubclass(SpecError, ValueError)


def test_python_objects_are_validated_too():
    with pytest.raises(SpecError, match=r"^spec\.trials: must be a positive integer, got -3$"):
        AuditSpec(algorithm=PNSGDParams(), trials=-3)
    with pytest.raises(SpecError, match=r"^spec\.request\.size: "):
        RequestSpec(size=-1)
    with pytest.raises(ParameterError, match=r"^clip: must be a positive number \(M\)"):
        PNSGDParams(clip=float("nan"))
    with pytest.raises(SpecError, match=r"^spec\.certificate\.delta: "):
        CertificateSpec(delta=0.0)
    with pytest.raises(SpecError, match=r"^spec\.dataset: must be a DatasetSpec"):
        AuditSpec(algorithm=PNSGDParams(), dataset={"name": "digits"})
    with pytest.raises(SpecError, match=r"^spec\.algorithm: must be the parameters of an algorithm"):
        AuditSpec(algorithm={"name": "pnsgd"})


def test_the_adapter_checks_a_python_spec_when_it_is_loaded():
    # plain data: the spec alone cannot know which models the algorithm trains
    spec = AuditSpec(algorithm=PNSGDParams(), model=ModelSpec(name="mlp"))
    with pytest.raises(SpecError, match=r"^spec\.model\.name: must be one of 'logistic-regression'"):
        load_spec(spec)
    with pytest.raises(SpecError, match=r"^spec\.model\.name: "):
        check_spec(spec)
    assert load_spec(demo_spec()) == demo_spec()


def test_round_trip_through_the_canonical_dict():
    spec = demo_spec(trials=123)
    again = spec_from_dict(spec.to_dict())
    assert again == spec
    assert again.canonical_json() == spec.canonical_json()


def test_example_toml_is_the_demo():
    assert spec_from_toml(EXAMPLE) == demo_spec()
    assert load_spec(str(EXAMPLE)) == demo_spec()


def test_defaults_fill_missing_fields():
    spec = spec_from_dict({"trials": 10})
    assert spec.algorithm == PNSGDParams()
    assert spec.dataset == DatasetSpec(name="digits")
    assert spec.certificate.target_epsilon == 1.0 and spec.certificate.delta == "1/n"
    assert spec.to_dict()["algorithm"]["name"] == "pnsgd"


def test_aliases_and_lists_are_normalised():
    spec = spec_from_dict({"dataset": {"name": "digits-3-vs-8"},
                                "request": {"indices": [5, 2], "size": 2},
                                "algorithm": {"unlearn_epochs": [3]}})
    assert spec.dataset.name == "digits"
    assert spec.request.indices == (5, 2)
    assert spec.algorithm.unlearn_epochs == (3,)


def test_digest_depends_on_every_field_and_the_code_version():
    spec = demo_spec(trials=100)
    base = spec.digest("v1")
    assert base == spec_from_dict(dict(reversed(list(spec.to_dict().items())))).digest("v1")
    assert spec.digest("v2") != base
    assert spec.replace(seed=1).digest("v1") != base
    assert spec.replace(chunk_size=7).digest("v1") != base
    changed = _merge(spec.to_dict(), {"algorithm": {"clip": 0.04}})
    assert spec_from_dict(changed).digest("v1") != base


def test_toml_errors(tmp_path):
    with pytest.raises(SpecError, match="no spec file"):
        spec_from_toml(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("trials = [\n")
    with pytest.raises(SpecError, match="is not valid TOML"):
        spec_from_toml(broken)
    bad = tmp_path / "bad.toml"
    bad.write_text("trials = 100\n[request]\nsize = -1\n")
    with pytest.raises(SpecError, match=r"^spec\.request\.size: must be a positive integer"):
        spec_from_toml(bad)
    with pytest.raises(SpecError, match="expected an AuditSpec"):
        load_spec(42)


def test_replace_revalidates():
    with pytest.raises(SpecError, match=r"^spec\.device: "):
        demo_spec().replace(device="gpu")
    assert demo_spec().replace(device="cuda:1").device == "cuda:1"


def test_synthetic_dataset_options():
    ds = DatasetSpec(name="synthetic", n=64, d=3, seed=4)
    assert ds.name == "synthetic-gaussian"
    assert ds.loader_options() == {"n": 64, "d": 3, "seed": 4}
    assert DatasetSpec(name="mnist", path="m.npz", classes=[1, 7]).loader_options() == {
        "path": "m.npz", "classes": (1, 7)}
