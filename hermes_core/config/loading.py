"""Configuration: where it lives, how layers combine, and what is valid.

Everything lives in ``$HERMES_HOME`` (default ``~/.hermes``): ``config.yaml`` for settings and
``.env`` for secrets. The effective value of a key comes from the first of: a command-line flag,
an environment variable, ``config.yaml``, the built-in default.

PyYAML is imported only inside the functions that read or write YAML, so importing this module
stays cheap for commands such as ``hermes --help``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_hookspecs import HermesError
from hermes_runtime.home import default_home
from hermes_runtime.secrets import mark_secret

from .hermes_agent import is_hermes_agent_key
from .keys import APPROVAL_MODES, core_sections
from .schema import CORE_OWNER, ConfigSchema, check, describe, from_text, is_kind

__all__ = [
    "APPROVAL_MODES",
    "CORE_SCHEMA",
    "DEFAULTS",
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
    "set_value",
    "store_value",
    "unset_value",
    "validate",
    "warn_unknown_keys",
    "write_dotenv",
]

CONFIG_FILE = "config.yaml"
DOTENV_FILE = ".env"


class ConfigError(HermesError):
    """A configuration file, environment variable or value is invalid; the message is one line."""


class ConfigWarning(UserWarning):
    """A configuration key no installed plugin declares (shown once per process)."""


CORE_SCHEMA: ConfigSchema = ConfigSchema((section, CORE_OWNER) for section in core_sections())
"""The keys the core reads (see :mod:`hermes_core.config.keys`); plugins add theirs through
``hermes_register_config`` (``Registry.config_schema``)."""

DEFAULTS: dict[str, Any] = {"model": {}, **CORE_SCHEMA.defaults()}
"""The core's defaults; each plugin's defaults come with its declarations."""

ENV_VARS: dict[str, str] = {
    "HERMES_MODEL": "model.default",
    "HERMES_PROVIDER": "model.provider",
    "HERMES_BASE_URL": "model.base_url",
    "HERMES_API_MODE": "model.api_mode",
    "HERMES_MAX_TURNS": "agent.max_turns",
    "HERMES_TOOLSETS": "toolsets",
    "HERMES_DISABLED_TOOLSETS": "disabled_toolsets",
    "HERMES_CONTEXT_ENGINE": "context.engine",
    "HERMES_TERMINAL_BACKEND": "terminal.backend",
}

_PROFILE_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_DOTENV_KEY = r"[A-Za-z_][A-Za-z0-9_]*"


# ---------------------------------------------------------------------------
# Locations and .env


def resolve_home(profile: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Return the hermes home folder (``$HERMES_HOME`` or ``~/.hermes``), or a profile inside it.

    A profile is a fully separate home at ``<home>/profiles/<profile>``. Nothing is created.
    Raises ConfigError for a profile name outside ``[A-Za-z0-9][A-Za-z0-9_.-]*``.
    """
    home = default_home(environ)
    if profile is None:
        return home
    if not re.fullmatch(_PROFILE_NAME, profile):
        raise ConfigError(
            f"invalid profile name {profile!r}: use letters, digits, '_', '.' and '-', "
            "starting with a letter or digit"
        )
    return home / "profiles" / profile


def load_dotenv(path: Path, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Read ``KEY=VALUE`` lines from a .env file and return them.

    Each key is put into ``environ`` (default ``os.environ``) only when it is not already there,
    so the real environment wins. Every key is marked as a secret variable and every value (but
    those of the ``HERMES_*`` settings in :data:`ENV_VARS`) as a secret value
    (``hermes_runtime.secrets.mark_secret``). A missing file gives ``{}``. A malformed line is
    skipped with a :class:`ConfigWarning` naming the file and line (once per process, never the
    line's content, which may be a secret); every other line is still read. A file that cannot
    be read raises ConfigError.
    """
    import warnings

    env = os.environ if environ is None else environ
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {_one_line(exc)}") from exc
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parsed = _parse_dotenv_line(line)
        if parsed is None:
            continue
        if isinstance(parsed, str):
            problem = f"{path}:{number}: {parsed}; the line is ignored"
            if problem not in _warned:
                _warned.add(problem)
                warnings.warn(problem, ConfigWarning, stacklevel=2)
            continue
        key, value = parsed
        values[key] = value
    for key, value in values.items():
        # Every variable of the file is kept out of commands; every value is redacted, except
        # those of hermes' own settings (HERMES_MODEL=...), which are no secrets and would
        # otherwise blank ordinary words out of tool results.
        setting = key in ENV_VARS or key == "HERMES_HOME"
        mark_secret(key, None if setting else value)
        if key not in env:
            env[key] = value
        elif not setting:
            mark_secret(value=env[key])
    return values


def write_dotenv(path: Path, updates: Mapping[str, str]) -> None:
    """Set ``updates`` in a .env file, keeping its other lines; the file is written atomically
    and readable by its owner only (mode 600), since it holds secrets."""

    for key, value in updates.items():
        if not re.fullmatch(_DOTENV_KEY, key):
            raise ConfigError(f"{path}: invalid variable name {key!r}")
        if "\n" in value or "\r" in value:
            raise ConfigError(f"{path}: the value of {key} must be one line")
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        lines = []
    pending = dict(updates)
    out = []
    for line in lines:
        parsed = _parse_dotenv_line(line)
        if isinstance(parsed, tuple) and parsed[0] in pending:
            key = parsed[0]
            out.append(f"{key}={_quote_dotenv(pending.pop(key))}")
        else:
            out.append(line)
    out.extend(f"{key}={_quote_dotenv(value)}" for key, value in pending.items())
    for key, value in updates.items():
        mark_secret(key, value)
    _atomic_write(path, "\n".join(out) + "\n", mode=0o600)


def _quote_dotenv(value: str) -> str:
    if value and all(c.isalnum() or c in "-_.:/+=@,%" for c in value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _parse_dotenv_line(line: str) -> tuple[str, str] | str | None:
    """Return (key, value), None for a blank or comment line, or a problem description."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    if stripped.startswith("export") and stripped[6:7].isspace():
        stripped = stripped[6:].lstrip()
    key, sep, rest = stripped.partition("=")
    key = key.rstrip()
    if not sep or not re.fullmatch(_DOTENV_KEY, key):
        return "malformed line (expected KEY=VALUE)"
    rest = rest.lstrip()
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        value, end = _read_quoted(rest, quote)
        if end < 0:
            return f"unterminated {quote} quote"
        tail = rest[end + 1 :].strip()
        if tail and not tail.startswith("#"):
            return "unexpected text after the closing quote"
        return key, value
    # An unquoted value ends at a " #" comment; "a#b" keeps its "#".
    comment = re.search(r"\s#", rest)
    if comment:
        rest = rest[: comment.start()]
    return key, rest.rstrip()


def _read_quoted(text: str, quote: str) -> tuple[str, int]:
    """Read a quoted value starting at text[0]; return (value, index of closing quote or -1)."""
    escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
    out: list[str] = []
    i = 1
    while i < len(text):
        char = text[i]
        if char == quote:
            return "".join(out), i
        # Only double quotes interpret escapes; single quotes are literal.
        if quote == '"' and char == "\\" and i + 1 < len(text) and text[i + 1] in escapes:
            out.append(escapes[text[i + 1]])
            i += 2
            continue
        out.append(char)
        i += 1
    return "", -1


def ensure_home(home: Path) -> Path:
    """Create the home folder readable by its owner only (mode 700) when it is missing (and,
    for a profile, the main home too); an existing folder keeps its mode."""
    home = Path(home)
    if not home.is_dir():
        if home.parent.name == "profiles":  # a profile: the main home is made private too
            ensure_home(home.parent.parent)
        home.parent.mkdir(parents=True, exist_ok=True)
        try:
            home.mkdir(mode=0o700)
        except FileExistsError:
            return home  # made by another process meanwhile; its mode is its own
        os.chmod(home, 0o700)  # mkdir's mode is narrowed by the umask, never widened
    return home


# ---------------------------------------------------------------------------
# Secrets in the configuration

_SECRET_KEY = re.compile(
    r"(?:^|_)(?:(?:api|secret|access|private)_?key|token|secret|password|passphrase)$",
    re.IGNORECASE,
)
_SECRET_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def is_secret_key(dotted: str) -> bool:
    """Whether a configuration key holds a secret by its name: its last part ends in ``api_key``,
    ``secret_key``, ``access_key``, ``private_key``, ``token``, ``secret``, ``password`` or
    ``passphrase`` (``model.api_key``, ``auth_token``, ``client_secret``; not ``max_tokens``,
    ``ssh_key`` or ``key_env``)."""
    return bool(_SECRET_KEY.search(str(dotted).rsplit(".", 1)[-1]))


def secret_reference(value: Any) -> str | None:
    """The variable a secret value refers to when it is written ``${NAME}``, else None."""
    if isinstance(value, str):
        match = _SECRET_REF.fullmatch(value.strip())
        if match:
            return match.group(1)
    return None


def mark_config_secrets(data: Any, schema: ConfigSchema | None = None, prefix: str = "") -> None:
    """Mark as secrets (``hermes_runtime.secrets.mark_secret``) the values of every secret key in a
    configuration (at any depth, lists included): keys secret by their name
    (:func:`is_secret_key`) or declared ``secret`` in ``schema``; and the variables every
    ``key_env`` names."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            dotted = f"{prefix}{key}"
            if str(key) == "key_env" and isinstance(value, str) and value:
                mark_secret(name=value)
            elif isinstance(value, str) and (
                is_secret_key(str(key)) or (schema is not None and schema.is_secret(dotted))
            ):
                ref = secret_reference(value)
                if ref:
                    mark_secret(name=ref)
                else:
                    mark_secret(value=value)
            else:
                mark_config_secrets(value, schema, dotted + ".")
    elif isinstance(data, (list, tuple)):
        for item in data:
            mark_config_secrets(item, schema, prefix)


def _resolve_secret_refs(
    data: dict[str, Any],
    env: Mapping[str, str],
    schema: ConfigSchema | None = None,
    prefix: str = "",
) -> None:
    """Replace each secret key (by its name, or declared ``secret`` in ``schema``) written
    ``${NAME}`` by the value of variable NAME (from the environment or ``.env``); the key is left
    out when NAME is not set."""
    for key in list(data):
        value = data[key]
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            _resolve_secret_refs(value, env, schema, dotted + ".")
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    _resolve_secret_refs(item, env, schema, dotted + ".")
        elif is_secret_key(str(key)) or (schema is not None and schema.is_secret(dotted)):
            ref = secret_reference(value)
            if ref is None:
                continue
            if env.get(ref):
                data[key] = env[ref]
            else:
                del data[key]


# ---------------------------------------------------------------------------
# Loading


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


def _read_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Return the mapping a config file holds and its key lines, ``({}, {})`` when it is absent.

    No schema check here, so that ``unset`` can repair a file holding a bad value.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {_one_line(exc)}") from exc
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
        raise ConfigError(f"{where}: invalid YAML: {_one_line(problem)}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_one_line(exc)}") from exc
    finally:
        loader.dispose()
    if node is None or data is None:
        return {}, {}
    if not isinstance(data, dict):
        line = node.start_mark.line + 1
        raise ConfigError(
            f"{path}:{line}: expected a mapping of keys at the top level, got {_describe(data)}"
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


# ---------------------------------------------------------------------------
# Validation


def validate(
    data: Mapping[str, Any],
    path: Path | None = None,
    lines: Mapping[str, int] | None = None,
    schema: ConfigSchema | None = None,
) -> None:
    """Raise ConfigError for the first schema violation in data (in data order); unknown keys pass.

    ``schema`` defaults to the core's keys (:data:`CORE_SCHEMA`). ``path`` and ``lines``
    (dotted key -> 1-based line) only make the message point at the spot.
    """
    for dotted, problem in (schema or CORE_SCHEMA).problems(data):
        line = (lines or {}).get(dotted)
        if path is not None and line is not None:
            where = f"{path}:{line}: "
        elif path is not None:
            where = f"{path}: "
        else:
            where = ""
        raise ConfigError(f"{where}{dotted}: {problem}")


_describe = describe


def _one_line(value: object) -> str:
    """Collapse a message onto one line."""
    return " ".join(str(value).split())


# ---------------------------------------------------------------------------
# Merging


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
                f"cannot set {'.'.join(parts)}: {prefix} holds {_describe(child)}, not a mapping"
            )
        node = child
    node[parts[-1]] = value


# ---------------------------------------------------------------------------
# Editing the file


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
        raise ConfigError(f"{dotted}: cannot parse {raw!r} as YAML: {_one_line(problem)}") from exc
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
