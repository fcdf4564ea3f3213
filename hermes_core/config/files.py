"""``config.yaml`` on disk: read with the line of every key, edited one key at a time (checked
before anything is written), written atomically."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError, one_line
from .locations import ensure_home
from .merging import _normalize_model, _set_path, _split_key
from .schema import ConfigSchema, describe
from .validation import validate


def _read_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Return the mapping a config file holds and its key lines, ``({}, {})`` when it is absent.

    No schema check here, so that ``unset`` can repair a file holding a bad value.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {one_line(exc)}") from exc
    return _parse_yaml(text, path)


def _parse_yaml(text: str, path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse YAML text into a top-level mapping and the line of every dotted key."""
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = ", ".join(part for part in (exc.context, exc.problem) if part) or "unreadable"
        raise ConfigError(f"{where}: invalid YAML: {one_line(problem)}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {one_line(exc)}") from exc
    finally:
        loader.dispose()
    if node is None or data is None:
        return {}, {}
    if not isinstance(data, dict):
        line = node.start_mark.line + 1
        raise ConfigError(
            f"{path}:{line}: expected a mapping of keys at the top level, got {describe(data)}"
        )
    lines: dict[str, int] = {}
    _collect_lines(node, "", lines, set(), path)
    return data, lines


def _collect_lines(
    node: Any, prefix: str, out: dict[str, int], active: set[int], path: Path
) -> None:
    """Record the 1-based line of each mapping key under node, keyed by dotted path.

    Raises ConfigError for a key written twice in one mapping (at any depth, inside lists too),
    naming the key and both lines, and for a mapping that contains itself (through an alias),
    which no configuration needs and which would make merging endless.
    """
    import yaml

    if isinstance(node, yaml.SequenceNode):
        if id(node) in active:
            raise ConfigError(
                f"{path}:{node.start_mark.line + 1}: invalid YAML: a list contains itself"
            )
        active.add(id(node))
        for index, item in enumerate(node.value):
            _collect_lines(item, f"{prefix.rstrip('.')}[{index}].", out, active, path)
        active.discard(id(node))
        return
    if not isinstance(node, yaml.MappingNode):
        return
    if id(node) in active:
        raise ConfigError(
            f"{path}:{node.start_mark.line + 1}: invalid YAML: a mapping contains itself"
        )
    active.add(id(node))
    seen: dict[str, int] = {}
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            line = key_node.start_mark.line + 1
            dotted = prefix + str(key_node.value)
            if key_node.tag != "tag:yaml.org,2002:merge":
                first = seen.get(str(key_node.value))
                if first is not None:
                    raise ConfigError(
                        f"{path}:{line}: duplicate key {dotted!r} (first written at line {first})"
                    )
                seen[str(key_node.value)] = line
            out[dotted] = line
            _collect_lines(value_node, dotted + ".", out, active, path)
    active.discard(id(node))


def set_value(path: Path, dotted: str, raw: str, schema: ConfigSchema | None = None) -> Any:
    """Set one dotted key in a config file from its YAML text and return the parsed value.

    ``"40"`` becomes 40, ``"true"`` True, ``"[a, b]"`` a list. Missing mappings, folders and the
    file are created. Raises ConfigError (leaving the file untouched) when the text is not YAML or
    the result would not be valid under ``schema`` (default: the core's keys).
    """
    import yaml

    path = Path(path)
    _split_key(dotted)  # a bad key fails before its value is parsed
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or exc
        raise ConfigError(f"{dotted}: cannot parse {raw!r} as YAML: {one_line(problem)}") from exc
    store_value(path, dotted, value, schema)
    return value


def store_value(path: Path, dotted: str, value: Any, schema: ConfigSchema | None = None) -> None:
    """Set one dotted key in a config file to ``value`` (plain data: mappings, lists, scalars).

    Missing mappings, folders and the file are created; key order is kept. Raises ConfigError
    (leaving the file untouched) when the result would not be valid under ``schema`` (default:
    the core's keys).
    """
    path = Path(path)
    parts = _split_key(dotted)
    data = _read_file(path)[0]
    if parts[0] == "model" and len(parts) > 1:
        data = _normalize_model(data)
    _set_path(data, parts, _plain(value), replace=False)
    validate(data, path, schema=schema)
    save_config(path, data)


def unset_value(path: Path, dotted: str) -> bool:
    """Remove one dotted key from a config file; False (file untouched) when it was not there.

    Mappings left empty by the removal are removed too.
    """
    path = Path(path)
    parts = _split_key(dotted)
    if not path.exists():
        return False
    data = _read_file(path)[0]
    if parts[0] == "model" and len(parts) > 1:
        data = _normalize_model(data)
    trail: list[dict[str, Any]] = [data]
    node: Any = data
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return False
        trail.append(node)
    if parts[-1] not in node:
        return False
    del node[parts[-1]]
    # Drop the mappings the removal emptied, innermost first.
    for depth in range(len(parts) - 1, 0, -1):
        if trail[depth]:
            break
        del trail[depth - 1][parts[depth - 1]]
    save_config(path, data)
    return True


def save_config(path: Path, data: Mapping[str, Any]) -> None:
    """Write data to a config file atomically, creating its folder; key order is kept."""
    import yaml

    text = yaml.safe_dump(
        _plain(data), sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    # Write through a symlink to its target so a linked config.yaml stays linked.
    _atomic_write(Path(os.path.realpath(path)), text)


def _atomic_write(target: Path, text: str, mode: int | None = None) -> None:
    """Replace ``target`` with ``text`` in one step (temp file, fsync, rename), creating its
    folder. ``mode`` forces the file's permissions; otherwise an existing file keeps its own
    and a new one is owner-only, since config files may hold keys."""
    import tempfile

    if not target.parent.is_dir():
        ensure_home(target.parent)  # a config folder is a hermes home (or a profile's)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp_name, mode)
        else:
            try:
                os.chmod(tmp_name, target.stat().st_mode & 0o7777)
            except FileNotFoundError:
                pass  # keeps mkstemp's owner-only mode
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise


def _plain(value: Any) -> Any:
    """Convert mappings and sequences to dicts and lists so safe_dump accepts them."""
    if isinstance(value, Mapping):
        return {key: _plain(sub) for key, sub in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
