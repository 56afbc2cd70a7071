"""The algorithm registry: ``algorithm = "<name>"`` in a spec -> its :class:`AlgorithmAdapter`.

A dict plus :func:`register_adapter`, as in opacus's accountant registry. Imports run one way:
adapter modules import this module to register themselves; this module imports no adapter.
The built-in adapters are listed in one place, :mod:`audits.adapters.builtin`, which
:func:`get_adapter` loads (by module name, once) before the first look-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from audits.fields import SpecError

if TYPE_CHECKING:
    from audits.adapters.protocol import AlgorithmAdapter

__all__ = ["adapter_names", "adapters", "default_adapter", "get_adapter", "register_adapter"]

_ADAPTERS: dict[str, AlgorithmAdapter] = {}
_DEFAULT: list[str] = []  # the adapter used when a spec's [algorithm] table has no name
_BUILTINS = "audits.adapters.builtin"
_loaded = False


def register_adapter(adapter: AlgorithmAdapter, *, default: bool = False,
                     replace: bool = False) -> AlgorithmAdapter:
    """Make ``adapter`` known under ``adapter.name``; returns it (usable as a decorator)."""
    from audits.adapters.protocol import AlgorithmAdapter

    if not isinstance(adapter, AlgorithmAdapter):
        raise TypeError(f"{adapter!r} does not implement audits.adapters.protocol.AlgorithmAdapter")
    name = adapter.name
    if not isinstance(name, str) or not name:
        raise ValueError("an adapter needs a non-empty name")
    if name in _ADAPTERS and _ADAPTERS[name] is not adapter and not replace:
        raise ValueError(f"an adapter named {name!r} is already registered (replace=True "
                         "to override)")
    _ADAPTERS[name] = adapter
    if default:
        _DEFAULT[:] = [name]
    return adapter


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(_BUILTINS)


def adapters() -> dict[str, AlgorithmAdapter]:
    """Every registered adapter by name (built-ins first, then in order of registration)."""
    _load_builtins()
    return dict(_ADAPTERS)


def adapter_names() -> tuple[str, ...]:
    """Names of every registered adapter, in registration order."""
    return tuple(adapters())


def get_adapter(name: str, *, path: str = "spec.algorithm.name") -> AlgorithmAdapter:
    """The adapter registered as ``name``; SpecError naming ``path`` when there is none."""
    _load_builtins()
    if not isinstance(name, str) or name not in _ADAPTERS:
        raise SpecError(f"{path}: unknown algorithm {name!r}; known: {', '.join(_ADAPTERS)}")
    return _ADAPTERS[name]


def default_adapter() -> AlgorithmAdapter:
    """The adapter of a spec whose ``[algorithm]`` table gives no name."""
    _load_builtins()
    if not _DEFAULT:
        raise SpecError("spec.algorithm.name: no default algorithm is registered; name one "
                        f"of {', '.join(_ADAPTERS)}")
    return _ADAPTERS[_DEFAULT[0]]
