"""Choosing the context engine named in ``context.engine``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import ContextEngine, HermesError

from ..plugins.registry import Registry

DEFAULT_ENGINE = "compressor"


def make_engine(registry: Registry, config: Mapping[str, Any]) -> ContextEngine | None:
    """A new instance of the configured engine; ``None`` when none is configured and the
    default one is not installed. A configured name that is not installed is an error."""
    name = (config.get("context") or {}).get("engine")
    engines = registry.engines
    if name is None:
        if DEFAULT_ENGINE not in engines:
            return None
        name = DEFAULT_ENGINE
    registered = engines.get(name)
    if registered is None:
        installed = ", ".join(sorted(engines)) or "none"
        raise HermesError(f"unknown context engine {name!r} (installed: {installed})")
    return registered.value(dict(config.get("compression") or {}))
