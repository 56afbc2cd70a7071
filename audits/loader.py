"""Audit specs from text, plain data or Python, checked against their algorithm's adapter.

:class:`~audits.spec.AuditSpec` is plain data and knows no algorithm; this module sits above
the registry (:mod:`audits.registry`) and does what needs one: the ``[algorithm]`` table's
``name`` picks the adapter, which parses the rest of the table, says which models and
calibrated parameters it supports and checks its fields against the rest of the spec
(:func:`check_spec`). Every spec the runner audits has passed :func:`load_spec`.

Unknown fields are rejected; every error is a :class:`~audits.fields.SpecError` whose message
starts with the field's path, e.g. ``spec.model.name: must be one of ...``.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audits.attacks import generic_attacks
from audits.fields import SpecError, check_keys, choice, fail, from_fields
from audits.registry import adapters, default_adapter, get_adapter
from audits.spec import AuditSpec, CertificateSpec, DatasetSpec, ModelSpec, RequestSpec, check_work

if TYPE_CHECKING:
    from audits.adapters.protocol import AlgorithmAdapter

__all__ = ["adapter_of", "check_spec", "demo_spec", "load_spec", "spec_from_dict",
           "spec_from_toml"]

_TABLES = {"dataset": DatasetSpec, "model": ModelSpec, "request": RequestSpec,
           "certificate": CertificateSpec}


def adapter_of(spec: AuditSpec) -> AlgorithmAdapter:
    """The adapter whose parameter type ``spec.algorithm`` is; SpecError when none is."""
    known = {a.params_type: a for a in adapters().values()}
    if type(spec.algorithm) not in known:
        raise fail("spec.algorithm", f"must be the parameters of a registered algorithm "
                   f"({', '.join(adapters())}), got {type(spec.algorithm).__name__}")
    return known[type(spec.algorithm)]


def check_spec(spec: AuditSpec) -> AuditSpec:
    """``spec`` once its adapter accepts it: a registered algorithm, a model and a calibrated
    parameter the adapter supports, the adapter's own cross-checks, and an amount of work an
    audit may ask for (:func:`audits.spec.check_work`)."""
    adapter = adapter_of(spec)
    choice(spec.model.name, "spec.model.name", adapter.models)
    choice(spec.certificate.calibrate, "spec.certificate.calibrate", adapter.calibratable)
    if spec.request.forget == "worst-case" and adapter.worst_case_forget is None:
        raise fail("spec.request.forget", f"'worst-case' is not available for algorithm "
                   f"{adapter.name!r}: its adapter states no adversarial record within its "
                   "paper's assumptions; use 'random'")
    given = (*generic_attacks(), *adapter.extra_attacks)
    for name in spec.attacks or ():  # None: the default, resolved when prepared
        if name not in given:
            raise fail("spec.attacks", f"{name!r} is not given by algorithm {adapter.name!r} "
                       f"(it gives {', '.join(given)})")
    adapter.check_spec(spec)
    check_work(spec)
    return spec


def _algorithm_from_dict(data: Any) -> Any:
    path = "spec.algorithm"
    if not isinstance(data, Mapping):
        raise fail(path, f"must be a table with a 'name' field, got {type(data).__name__}")
    adapter = get_adapter(data["name"]) if "name" in data else default_adapter()
    rest = {k: v for k, v in data.items() if k != "name"}
    return adapter.parse_params(rest, path)


def spec_from_dict(data: Mapping[str, Any]) -> AuditSpec:
    """A checked spec from nested plain data (the shape of the TOML file and of
    :meth:`~audits.spec.AuditSpec.to_dict`); a missing ``[algorithm]`` table is the default
    algorithm with its defaults."""
    check_keys(data, "spec", [f.name for f in dataclasses.fields(AuditSpec)])
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "algorithm":
            values[key] = _algorithm_from_dict(value)
        elif key in _TABLES:
            values[key] = from_fields(_TABLES[key], value, f"spec.{key}")
        else:
            values[key] = value
    if "algorithm" not in values:
        values["algorithm"] = default_adapter().params_type()
    return check_spec(AuditSpec(**values))


def spec_from_toml(path: str | Path) -> AuditSpec:
    """A checked spec from a TOML file; the files in ``examples/`` show every field."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"spec: no spec file at {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise SpecError(f"spec: {path} is not UTF-8 text (byte {error.start} cannot be "
                        "decoded); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"spec: {path} is not valid TOML ({error})") from None
    return spec_from_dict(data)


def load_spec(source: AuditSpec | Mapping[str, Any] | str | Path) -> AuditSpec:
    """A checked :class:`~audits.spec.AuditSpec` from itself, a plain dict, or the path of a
    TOML file."""
    if isinstance(source, AuditSpec):
        return check_spec(source)
    if isinstance(source, Mapping):
        return spec_from_dict(source)
    if isinstance(source, str | Path):
        return spec_from_toml(source)
    raise SpecError(f"spec: expected an AuditSpec, a dict or a TOML path, got "
                    f"{type(source).__name__}")


def demo_spec(*, algorithm: str | None = None, trials: int | None = None,
              device: str | None = None) -> AuditSpec:
    """The demo audit of ``algorithm`` (default: the default algorithm), from its adapter."""
    adapter = default_adapter() if algorithm is None else get_adapter(algorithm,
                                                                      path="algorithm")
    return check_spec(adapter.demo_spec(trials=trials, device=device))
