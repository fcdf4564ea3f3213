"""Configuration: where it lives, how layers combine, and what is valid.

Everything lives in ``$HERMES_HOME`` (default ``~/.hermes``): ``config.yaml`` for settings and
``.env`` for secrets. The effective value of a key comes from the first of: a command-line flag,
an environment variable, ``config.yaml``, the built-in default.

This module builds the effective :class:`Config` and is where the rest of hermes imports the
configuration's functions from; each lives in the module of its concern: :mod:`.locations`
(the home folder), :mod:`.dotenv`, :mod:`.files` (``config.yaml`` read, edited, written),
:mod:`.secret_keys`, :mod:`.merging` (layers) and :mod:`.validation` (the core's schema).

PyYAML is imported only inside the functions that read or write YAML, so importing this module
stays cheap for commands such as ``hermes --help``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .dotenv import load_dotenv, write_dotenv
from .errors import ConfigError, ConfigWarning
from .files import _read_file as _read_file  # the CLI reads files unchecked too
from .files import save_config, set_value, store_value, unset_value
from .hermes_agent import is_hermes_agent_key
from .keys import APPROVAL_MODES
from .locations import CONFIG_FILE, DOTENV_FILE, ensure_home, resolve_home
from .merging import _merge, _merge_under, _normalize_model, _set_path
from .merging import _split_key as _split_key  # the CLI checks keys with it too
from .schema import ConfigSchema, check, from_text, is_kind
from .secret_keys import (
    _resolve_secret_refs,
    is_secret_key,
    mark_config_secrets,
    secret_reference,
)
from .validation import CORE_SCHEMA, DEFAULTS, ENV_VARS, validate

__all__ = [
    "APPROVAL_MODES",
    "CONFIG_FILE",
    "CORE_SCHEMA",
    "DEFAULTS",
    "DOTENV_FILE",
    "ENV_VARS",
    "Config",
    "ConfigError",
    "ConfigWarning",
    "ensure_home",
    "is_secret_key",
    "load_config",
    "load_dotenv",
    "mark_config_secrets",
    "resolve_home",
    "save_config",
    "secret_reference",
    "set_value",
    "store_value",
    "unset_value",
    "validate",
    "warn_unknown_keys",
    "write_dotenv",
]


@dataclass
class Config(Mapping[str, Any]):
    """The effective configuration of one hermes home, with where each value came from.

    It reads as a mapping of the effective top-level sections (``config["agent"]``), so it is
    what plugin commands get as ``CommandContext.config``; :meth:`get` also takes dotted keys.
    """

    home: Path
    path: Path
    file_data: dict[str, Any]
    data: dict[str, Any]
    sources: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)
    """The line of each dotted key in config.yaml (for messages)."""
    schema: ConfigSchema = CORE_SCHEMA
    """The declarations the configuration was checked against: the core's, plus the loaded
    plugins' after :meth:`with_schema`."""

    def get(self, dotted: str, default: Any = None) -> Any:
        """Return the effective value at a dotted key such as ``"agent.max_turns"``, or default."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def section(self, name: str) -> dict[str, Any]:
        """Return a copy of one top-level section as a dict; ``{}`` when absent or not a mapping."""
        value = self.data.get(name)
        return copy.deepcopy(dict(value)) if isinstance(value, Mapping) else {}

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """A copy with dotted-key ``overrides`` (``{"terminal.timeout": 5}``) applied on top and
        validated; ``self`` when there are none. A part of the path that is not a mapping is
        replaced by one."""
        if not overrides:
            return self
        data = copy.deepcopy(self.data)
        for dotted, value in overrides.items():
            *parents, leaf = str(dotted).split(".")
            node = data
            for part in parents:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[leaf] = value
        validate(data, schema=self.schema)
        return dataclasses.replace(self, data=data)

    def with_schema(self, schema: ConfigSchema) -> Config:
        """A copy checked against ``schema`` (the core's and the loaded plugins' declarations),
        with the plugins' defaults under every value already set; ``self`` when it already was.

        Raises ConfigError naming the key, where it was set, the value and the type expected.
        Unknown keys are not errors (see :func:`warn_unknown_keys`)."""
        if schema is self.schema:
            return self
        data = copy.deepcopy(self.data)
        sources = dict(self.sources)
        _merge_under(data, sources, (), schema.defaults())
        mark_config_secrets(data, schema)
        _resolve_secret_refs(data, os.environ, schema)
        dropped = False
        for dotted, problem in list(schema.problems(data)):
            if is_hermes_agent_key(dotted) and _of_another_type(schema, data, dotted):
                # a value shaped as the Hermes agent writes it: default used, doctor lists it
                dropped = _drop(data, sources, dotted) or dropped
                continue
            raise ConfigError(f"{self.where(dotted)}{dotted}: {problem}")
        if dropped:
            _merge_under(data, sources, (), schema.defaults())
        mark_config_secrets(data, schema)
        return dataclasses.replace(self, data=data, sources=sources, schema=schema)

    def where(self, dotted: str) -> str:
        """Where the value at ``dotted`` was set, as a message prefix (``path:line: ``,
        ``environment variable NAME: ``, ``command line: ``), or ``""``."""
        source = ""
        parts = dotted.split(".")
        for depth in range(len(parts), 0, -1):  # a value set as part of a mapping
            source = self.sources.get(".".join(parts[:depth]), "")
            if source:
                break
        if not source:  # a section: where its keys were set
            inner = [v for k, v in self.sources.items() if k.startswith(dotted + ".")]
            source = next((v for v in inner if v != "default"), "")
        if source.startswith("env:"):
            return f"environment variable {source[4:]}: "
        if source == "cli":
            return "command line: "
        line = self.lines.get(dotted)
        if source == "file" and line is not None and str(self.path) != os.devnull:
            return f"{self.path}:{line}: "
        return ""


def load_config(
    home: Path,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    file_data: Mapping[str, Any] | None = None,
    references: Mapping[str, str] | None = None,
) -> Config:
    """Build the effective configuration of ``home``: defaults < config.yaml < env vars < overrides.

    ``overrides`` maps dotted keys to values from command-line flags; None values are ignored.
    ``file_data``, when given, is used in place of reading config.yaml (for embedding, or to
    re-layer a Config already loaded). The .env file is not read here (call load_dotenv first).
    A secret key (:func:`is_secret_key`) written ``${NAME}`` takes the value of variable NAME
    from ``references`` (default: ``environ``); every secret value and every variable a
    ``key_env`` names is marked as a secret.
    Raises ConfigError for an invalid file, environment variable or override.
    """
    env = os.environ if environ is None else environ
    home = Path(home)
    path = home / CONFIG_FILE
    if file_data is None:
        file_data, lines = _read_file(path)
        validate(file_data, path, lines)
    else:
        file_data = copy.deepcopy(dict(file_data))
        lines = {}
        validate(file_data)

    data: dict[str, Any] = {}
    sources: dict[str, str] = {}
    _merge(data, sources, (), DEFAULTS, "default")
    _merge(data, sources, (), _normalize_model(file_data), "file")

    for var, dotted in ENV_VARS.items():
        raw = env.get(var)
        if not raw:  # unset and empty both mean "not given"
            continue
        key = CORE_SCHEMA.keys[dotted].key
        value = from_text(key, raw)
        problem = check(key, value)
        if problem:
            raise ConfigError(f"environment variable {var} ({dotted}): {problem}")
        _merge(data, sources, tuple(dotted.split(".")), value, f"env:{var}")

    nested: dict[str, Any] = {}
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        declared = CORE_SCHEMA.get(dotted)
        if isinstance(value, tuple):
            value = list(value)
        elif declared is not None and isinstance(value, str):
            value = from_text(declared.key, value)
        _set_path(nested, _split_key(dotted), value, replace=True)
    nested = _normalize_model(nested)
    for dotted, problem in CORE_SCHEMA.problems(nested):
        raise ConfigError(f"command line: {dotted}: {problem}")
    _merge(data, sources, (), nested, "cli")

    mark_config_secrets(data)
    _resolve_secret_refs(data, env if references is None else references)
    mark_config_secrets(data)
    return Config(
        home=home, path=path, file_data=file_data, data=data, sources=sources, lines=lines
    )


_warned: set[str] = set()


def _of_another_type(schema: ConfigSchema, data: Mapping[str, Any], dotted: str) -> bool:
    """Whether the value at ``dotted`` is of a type the declared key never takes (how the
    Hermes agent writes some keys); a value of the right type but out of bounds or not among
    the choices is the person's mistake, and an error."""
    declared = schema.get(dotted)
    node: Any = data
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if declared is None or node is None:
        return True
    return not any(is_kind(kind, node) for kind in declared.key.type)


def _drop(data: dict[str, Any], sources: dict[str, str], dotted: str) -> bool:
    """Remove the value at ``dotted`` from ``data`` (and its source); whether there was one."""
    *parents, leaf = dotted.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or leaf not in node:
        return False
    del node[leaf]
    sources.pop(dotted, None)
    return True


def warn_unknown_keys(config: Config) -> list[str]:
    """Warn (:class:`ConfigWarning`, once per process for each line) about every key of the
    configuration that neither the core nor a loaded plugin declares; return the lines.

    A key close to a declared one names it (``unknown config key 'agnet' (did you mean
    'agent'?)``); any other says no installed plugin declares it: it is kept, since the plugin
    may simply not be installed here."""
    import warnings

    found = sorted(
        config.schema.unknown(config.data),
        key=lambda item: config.lines.get(item[0], 1 << 30),
    )
    lines = []
    for dotted, message in found:
        line = f"{config.where(dotted)}{message}"
        lines.append(line)
        if line not in _warned:
            _warned.add(line)
            warnings.warn(line, ConfigWarning, stacklevel=2)
    return lines
