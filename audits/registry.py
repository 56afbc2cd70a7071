"""The algorithm registry: ``algorithm = "<name>"`` in a spec -> its :class:`AlgorithmAdapter`.

A dict plus :func:`register_adapter`, as in opacus's accountant registry. Imports run one way:
adapter modules import this module to register themselves; this module imports no adapter by
name. Before the first look-up it imports every module of :mod:`audits.adapters` (in name
order; the adapter modules register themselves, the kit's modules register nothing), then the
third-party adapters of the entry-point group ``unlearn_verify.algorithms``
(:mod:`bounds.plugins`): an entry point names a module that registers its adapter on import, or
an adapter object, which is registered here. A broken plug-in is a note, never an error.
"""

from __future__ import annotations

import importlib
import pkgutil
import types
from typing import TYPE_CHECKING, Any

from audits.fields import SpecError
from bounds.plugins import ALGORITHMS_GROUP, load_group
from bounds.registry import load_plugins

if TYPE_CHECKING:
    from audits.adapters.protocol import AlgorithmAdapter

__all__ = ["adapter_names", "adapters", "default_adapter", "get_adapter", "register_adapter"]

_ADAPTERS: dict[str, AlgorithmAdapter] = {}
_DEFAULT: list[str] = []  # the adapter used when a spec's [algorithm] table has no name
_ADAPTER_PACKAGE = "audits.adapters"
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


def _register_plugin(target: Any) -> None:
    from audits.adapters.protocol import AlgorithmAdapter

    if isinstance(target, AlgorithmAdapter):
        register_adapter(target)
    elif not isinstance(target, types.ModuleType):
        raise TypeError(f"it names {type(target).__name__}, neither a module nor an "
                        "AlgorithmAdapter")


def builtin_modules() -> tuple[str, ...]:
    """The modules of :mod:`audits.adapters`, in the order they are imported."""
    package = importlib.import_module(_ADAPTER_PACKAGE)
    return tuple(f"{_ADAPTER_PACKAGE}.{info.name}"
                 for info in pkgutil.iter_modules(package.__path__))


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in builtin_modules():
            importlib.import_module(module)
        load_plugins()  # the plug-in bounds first: an adapter's bound fails under its own name
        load_group(ALGORITHMS_GROUP, _register_plugin)


def adapters() -> dict[str, AlgorithmAdapter]:
    """Every registered adapter by name: the built-ins in the order of their modules, then the
    others in order of registration (the same order whichever module a process imported first)."""
    _load_builtins()
    rank = {module: i for i, module in enumerate(builtin_modules())}
    order = list(_ADAPTERS)

    def key(name: str) -> tuple[int, int]:
        module = type(_ADAPTERS[name]).__module__
        return rank.get(module, len(rank)), order.index(name)

    return {name: _ADAPTERS[name] for name in sorted(_ADAPTERS, key=key)}


def adapter_names() -> tuple[str, ...]:
    """Names of every registered adapter, in registration order."""
    return tuple(adapters())


def get_adapter(name: str, *, path: str = "spec.algorithm.name") -> AlgorithmAdapter:
    """The adapter registered as ``name``; SpecError naming ``path`` when there is none."""
    _load_builtins()
    if not isinstance(name, str) or name not in _ADAPTERS:
        raise SpecError(f"{path}: unknown algorithm {name!r}; known: {', '.join(adapters())}")
    return _ADAPTERS[name]


def default_adapter() -> AlgorithmAdapter:
    """The adapter of a spec whose ``[algorithm]`` table gives no name."""
    _load_builtins()
    if not _DEFAULT:
        raise SpecError("spec.algorithm.name: no default algorithm is registered; name one "
                        f"of {', '.join(adapters())}")
    return _ADAPTERS[_DEFAULT[0]]
