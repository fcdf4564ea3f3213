"""``hermes config``: show and change config.yaml (and the secrets kept in .env)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError

from .helpers import current_state, show_json, show_table
from .state import CliState

if TYPE_CHECKING:
    from ..config.schema import ConfigSchema


@click.group("config")
def config_group() -> None:
    """Show and change config.yaml."""


@config_group.command("path")
def config_path() -> None:
    """Print the path of config.yaml."""
    click.echo(str(current_state().home / "config.yaml"))


def _masked(value: Any, key: str = "", schema: ConfigSchema | None = None) -> Any:
    """``value`` (the value at dotted ``key``) with every secret in it masked: the values of
    secret keys (``*api_key``, ``*token``, ``*secret``..., and keys a plugin declares secret)
    and any known secret value."""
    from hermes_runtime.secrets import redact

    from ..config.loading import is_secret_key, secret_reference
    from .setup import mask_secret

    if isinstance(value, Mapping):
        return {k: _masked(v, f"{key}.{k}" if key else str(k), schema) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item, key, schema) for item in value]
    if isinstance(value, str):
        secret = is_secret_key(key) or (schema is not None and schema.is_secret(key))
        if key and secret and secret_reference(value) is None:
            return mask_secret(value)
        return redact(value)
    return value


def _schema(state: CliState) -> ConfigSchema:
    """The keys of the core and the loaded plugins; the core's alone when the plugins cannot
    load because the configuration they depend on is broken (so that ``set`` can repair it)."""
    from ..config.loading import CORE_SCHEMA, ConfigError

    try:
        return state.config_schema
    except ConfigError:
        return CORE_SCHEMA


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--sources", is_flag=True, help="Show where each value comes from.")
@click.option(
    "--defaults",
    "defaults",
    is_flag=True,
    help="List every known key: type, default, the plugin that declares it, what it does.",
)
def config_show(as_json: bool, sources: bool, defaults: bool) -> None:
    """Print the effective configuration (secrets masked)."""
    if defaults:
        _show_declared(_schema(current_state()), as_json)
        return
    config = current_state().config
    if sources:
        if as_json:
            show_json(config.sources)
        else:
            for key, source in sorted(config.sources.items()):
                shown = _masked(config.get(key), key, config.schema)
                click.echo(f"{key} = {json.dumps(shown, default=str)}  ({source})")
        return
    data = _masked(config.data, "", config.schema)
    if as_json:
        show_json(data)
        return
    import yaml

    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())


def _show_declared(schema: ConfigSchema, as_json: bool) -> None:
    """Print every declared key with its type, default, owner and doc."""
    from ..config.schema import type_words

    rows: list[dict[str, Any]] = []
    for path in sorted(schema.keys):
        declared = schema.keys[path]
        key = declared.key
        rows.append(
            {
                "key": path,
                "type": type_words(key),
                "default": key.default if key.has_default else None,
                "has_default": key.has_default,
                "plugin": declared.owner,
                "secret": key.secret,
                "doc": key.doc,
            }
        )
    if as_json:
        show_json(rows)
        return
    show_table(
        [
            [
                r["key"],
                r["type"],
                json.dumps(r["default"], default=str) if r["has_default"] else "-",
                r["plugin"],
                r["doc"] + (" (secret)" if r["secret"] else ""),
            ]
            for r in rows
        ],
        ["KEY", "TYPE", "DEFAULT", "PLUGIN", "MEANING"],
    )


@config_group.command("get")
@click.argument("key")
def config_get(key: str) -> None:
    """Print the effective value of KEY (dotted, e.g. agent.max_turns; secrets masked)."""
    missing = object()
    config = current_state().config
    value = config.get(key, missing)
    if value is missing:
        raise HermesError(f"{key} is not set")
    value = _masked(value, key, config.schema)
    click.echo(value if isinstance(value, str) else json.dumps(value, default=str))


@config_group.command("set")
@click.argument("key")
@click.argument("value", required=False)
@click.option(
    "--force", is_flag=True, help="Write KEY even though no installed plugin declares it."
)
def config_set(key: str, value: str | None, force: bool = False) -> None:
    """Set KEY to VALUE in config.yaml (VALUE is read as YAML: 40, true, [a, b]).

    KEY must be one the core or an installed plugin declares (`hermes config show --defaults`
    lists them); --force writes an unknown key anyway. VALUE is checked against the key's type
    before anything is written. A secret (model.api_key, any *api_key, *token, *secret,
    *password key, or a key a plugin declares secret) goes to $HERMES_HOME/.env instead and is
    never printed; without VALUE it is asked for, hidden.
    """
    from ..config.loading import ConfigError, _split_key, is_secret_key, set_value

    state = current_state()
    schema = _schema(state)
    _split_key(key)
    if not force and not schema.covers(key):
        suggestion = schema.closest(key)
        why = f"did you mean {suggestion!r}?" if suggestion else "no installed plugin declares it"
        raise ConfigError(
            f"unknown config key {key!r} ({why}); nothing written (--force writes it anyway)"
        )
    if is_secret_key(key) or schema.is_secret(key):
        _set_secret(state, key, value)
        return
    if value is None:
        raise click.UsageError("Missing argument 'VALUE'.")
    _check_names(state, key, value)
    parsed = set_value(state.home / "config.yaml", key, value, schema)
    click.echo(f"{key} = {json.dumps(parsed, default=str)}")


_NAMED_KEYS = {"toolsets": "toolset", "disabled_toolsets": "toolset", "terminal.backend": "backend"}
"""Config keys whose values name installed things: checked when set, before anything is written."""


def _check_names(state: CliState, key: str, raw: str) -> None:
    """Refuse (ConfigError, one line with the closest name and the known ones) a toolset or
    backend name that nothing installed provides; other keys and unparsable values pass (the
    schema check reports those)."""
    kind = _NAMED_KEYS.get(key)
    if kind is None:
        return
    import difflib

    import yaml

    from ..config.loading import ConfigError
    from .install_hints import OPTIONAL_BACKENDS

    try:
        value = yaml.safe_load(raw)
        if kind == "toolset":
            from ..config.hermes_agent import is_platform_toolset
            from ..tools.toolsets import RESERVED

            known = sorted(state.registry.toolsets)
            names = [value] if isinstance(value, str) else value
            accepted = set(known) | RESERVED
        else:
            known = sorted(set(state.registry.environments) | set(OPTIONAL_BACKENDS))
            names = [value]
            accepted = set(known)
    except (yaml.YAMLError, HermesError):
        return  # the value or the plugins are broken: the ordinary checks say so
    if not isinstance(names, list):
        return
    for name in names:
        if not isinstance(name, str) or name in accepted:
            continue
        if kind == "toolset" and is_platform_toolset(name):
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"{key}: unknown {kind} {name!r} ({hint}known: {', '.join(known) or 'none'}); "
            "nothing written"
        )


def secret_variable(state: CliState, key: str) -> str:
    """The ``.env`` variable that holds the secret at dotted ``key``: for ``model.api_key`` the
    key variable of the configured provider (``OPENAI_API_KEY``, ``CUSTOM_API_KEY``...); for any
    other key its name in capitals (``auxiliary.vision.api_key``: ``AUXILIARY_VISION_API_KEY``)."""
    import re

    if key != "model.api_key":
        return re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper()
    provider = state.config.get("model.provider")
    if not provider:
        raise HermesError(
            "model.api_key: no provider is configured, so the variable for its key is unknown;"
            " run `hermes setup --provider NAME --api-key KEY` or set model.provider first"
        )
    registered = state.registry.providers.get(str(provider))
    if registered is None:
        installed = ", ".join(sorted(state.registry.providers)) or "none"
        raise HermesError(
            f"model.api_key: provider {provider!r} is not installed (installed: {installed})"
        )
    if not registered.value.key_env:
        raise HermesError(f"model.api_key: provider {provider!r} takes no API key")
    return str(registered.value.key_env)


def _set_secret(state: CliState, key: str, value: str | None) -> None:
    """Store a secret in ``.env`` (never config.yaml, never echoed): see :func:`config_set`."""
    import os

    from ..config.loading import ConfigError, load_dotenv, set_value, unset_value, write_dotenv

    variable = secret_variable(state, key)
    if value is None:
        value = click.prompt(f"{key} ({variable})", hide_input=True, default="", show_default=False)
    value = value.strip()
    if not value:
        raise HermesError(f"{key}: empty value; nothing saved")
    path = state.home / ".env"
    before = load_dotenv(path, environ={}).get(variable)
    outside = os.environ.get(variable)
    write_dotenv(path, {variable: value})
    config_file = state.home / "config.yaml"
    try:
        if key == "model.api_key":  # the provider reads its variable; a key in the file would win
            unset_value(config_file, key)
        else:
            set_value(config_file, key, f"'${{{variable}}}'")
    except ConfigError as exc:
        raise HermesError(f"saved {variable} in {path}, but {exc}") from None
    where = f"saved {key} as {variable} in {path} (mode 600)"
    if key != "model.api_key":
        where += f"; config.yaml refers to it as ${{{variable}}}"
    click.echo(where)
    if outside and outside != before and outside != value:
        click.echo(f"note: {variable} is also set in your environment, which wins over .env")


@config_group.command("unset")
@click.argument("key")
def config_unset(key: str) -> None:
    """Remove KEY from config.yaml."""
    from ..config.loading import unset_value

    if not unset_value(current_state().home / "config.yaml", key):
        raise HermesError(f"{key} is not set in config.yaml")
    click.echo(f"removed {key}")
