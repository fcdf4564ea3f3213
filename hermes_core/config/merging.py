"""Combining configuration layers and setting dotted keys in nested mappings."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError
from .schema import describe


def _normalize_model(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return data with the ``model: <name>`` shorthand spelled as ``model: {default: <name>}``."""
    result = dict(data)
    if isinstance(result.get("model"), str):
        result["model"] = {"default": result["model"]}
    return result


def _merge(
    data: dict[str, Any],
    sources: dict[str, str],
    at: tuple[str, ...],
    value: Any,
    origin: str,
) -> None:
    """Deep-merge value into data at path ``at``, recording origin for every leaf written."""
    dotted = ".".join(at)
    if isinstance(value, Mapping):
        _ensure_mapping(data, sources, at)
        for key, sub in value.items():
            _merge(data, sources, at + (str(key),), sub, origin)
        return
    parent = _ensure_mapping(data, sources, at[:-1])
    existing = parent.get(at[-1])
    if value is None and isinstance(existing, dict):
        return  # an empty section in the file keeps the defaults under it
    parent[at[-1]] = copy.deepcopy(value)
    for key in [key for key in sources if key.startswith(dotted + ".")]:
        del sources[key]
    sources[dotted] = origin


def _merge_under(
    data: dict[str, Any], sources: dict[str, str], at: tuple[str, ...], defaults: Mapping[str, Any]
) -> None:
    """Put the leaves of ``defaults`` into ``data`` wherever data has nothing yet (a default
    never replaces a value); each one recorded as coming from ``default``."""
    for key, value in defaults.items():
        here = at + (str(key),)
        if isinstance(value, Mapping) and value:
            if key not in data or data[key] is None:
                data[key] = {}
            if isinstance(data[key], dict):
                _merge_under(data[key], sources, here, value)
        elif key not in data:
            data[key] = copy.deepcopy(value)
            sources[".".join(here)] = "default"


def _ensure_mapping(
    data: dict[str, Any], sources: dict[str, str], at: tuple[str, ...]
) -> dict[str, Any]:
    """Return the dict at path ``at``, creating it (over any non-mapping) as needed."""
    node = data
    for depth, part in enumerate(at):
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
            sources.pop(".".join(at[: depth + 1]), None)
        node = child
    return node


def _split_key(dotted: str) -> list[str]:
    """Split a dotted key into its parts; ConfigError when a part is empty."""
    parts = dotted.split(".")
    if not dotted or any(not part for part in parts):
        raise ConfigError(f"invalid key {dotted!r}: expected names separated by dots")
    return parts


def _set_path(data: dict[str, Any], parts: list[str], value: Any, *, replace: bool) -> None:
    """Set value at parts inside data, creating mappings; non-mapping parents only if replace."""
    node = data
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None or (replace and not isinstance(child, dict)):
            child = {}
            node[part] = child
        elif not isinstance(child, dict):
            prefix = ".".join(parts[: depth + 1])
            raise ConfigError(
                f"cannot set {'.'.join(parts)}: {prefix} holds {describe(child)}, not a mapping"
            )
        node = child
    node[parts[-1]] = value
