"""``hermes plugins``, ``tools``, ``providers``, ``config``, ``doctor`` and ``version``."""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError

from .. import __version__
from .state import CliState

if TYPE_CHECKING:
    from ..config.schema import ConfigSchema


def _state() -> CliState:
    state: CliState = click.get_current_context().find_root().obj
    return state


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _table(rows: list[list[str]], headers: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# --- plugins -----------------------------------------------------------------------------------


@click.group("plugins")
def plugins_group() -> None:
    """Installed plugins and their state."""


@plugins_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins_list(as_json: bool) -> None:
    """List plugins: name, version, dist, hooks, status or error."""
    state = _state()
    state.registry.collect_all()  # registration errors show up too
    records = state.plugins.list_records()
    hosted = _hosted_reports(state)
    if as_json:
        _print_json(
            [
                {**r.as_dict(), "hosted": [h.as_dict() for h in hosted.get(r.name, [])]}
                for r in records
            ]
        )
        return
    rows = []
    for r in records:
        status = r.status if not r.hook_errors else "hook errors"
        rows.append(
            [
                r.name,
                r.version or "-",
                r.dist or r.source,
                status,
                ", ".join(h.removeprefix("hermes_") for h in r.hooks) or "-",
            ]
        )
        for h in hosted.get(r.name, []):
            rows.append([f"  {h.name}", h.version or "-", f"via {r.name}", h.status, "-"])
    _table(rows, ["NAME", "VERSION", "DIST", "STATUS", "HOOKS"])
    for r in records:
        if r.error:
            click.echo(f"error: {r.name}: {r.error}")
        for message in r.hook_errors:
            click.echo(f"error: {r.name}: {message}")
        for h in hosted.get(r.name, []):
            if h.provides:
                click.echo(f"{r.name}/{h.name}: provides {', '.join(h.provides)}")
            if h.error:
                click.echo(f"{r.name}/{h.name}: {h.status}: {h.error}")
            for note in h.notes:
                click.echo(f"{r.name}/{h.name}: note: {note}")


def _hosted_reports(state: CliState) -> dict[str, list[Any]]:
    """What each plugin reports through ``hermes_describe_plugins`` about plugins it hosts; a
    report that is not a ``PluginReport`` is a hook error of the plugin."""
    from hermes_hookspecs import PluginReport

    plugins = state.plugins
    hosted: dict[str, list[Any]] = {}
    for record, hook in plugins.implementations("hermes_describe_plugins", load_order=True):

        def report(item: Any, _name: str = record.name) -> None:
            if not isinstance(item, PluginReport):
                raise HermesError(f"expected a PluginReport, got {type(item).__name__}")
            hosted.setdefault(_name, []).append(item)

        try:
            hook(report=report)
        except Exception as exc:
            plugins.record_error(record, "hermes_describe_plugins", exc)
    return hosted


# --- tools -------------------------------------------------------------------------------------


@click.group("tools")
def tools_group() -> None:
    """Tools and toolsets the model can use."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tools_list(as_json: bool) -> None:
    """List every tool: toolset, whether it is available (and why not), which plugin."""
    from ..tools.toolsets import ToolsetError, describe_tools, enabled_toolsets

    state = _state()
    try:
        enabled_toolsets(state.registry, state.config.data)
    except ToolsetError as exc:
        click.echo(f"warning: {exc}; no tool is enabled until this is fixed", err=True)
    infos = describe_tools(state.registry, state.config.data)
    if as_json:
        _print_json([i.as_dict() for i in infos])
        return
    if not infos:
        click.echo("no tools installed")
        return
    rows = []
    for i in infos:
        status = (
            ("enabled" if i.enabled else "disabled") if i.available else f"unavailable: {i.reason}"
        )
        rows.append([i.toolset, i.tool.name, status, i.plugin])
    _table(rows, ["TOOLSET", "TOOL", "STATUS", "PLUGIN"])


def _toolset_names(state: CliState, name: str) -> None:
    from ..tools.toolsets import RESERVED

    if name not in state.registry.toolsets and name not in RESERVED:
        known = ", ".join(sorted(state.registry.toolsets)) or "none installed"
        raise HermesError(f"unknown toolset or tool {name!r} (toolsets: {known})")


def _toolset_of_tool(state: CliState, name: str) -> str | None:
    """The toolset holding the tool called ``name``, when ``name`` is a tool and not a toolset."""
    if name in state.registry.toolsets:
        return None
    for toolset, registered in state.registry.toolsets.items():
        if any(tool.name == name for tool in registered.value.tools):
            return toolset
    # Not a static tool: perhaps one a toolset only knows at run time (an MCP server's).
    for toolset, found in state.registry.discover(state.registry.toolsets).items():
        if any(tool.name == name for tool in found.tools):
            return toolset
    return None


def _save_list(data: dict[str, Any], key: str, values: list[str]) -> None:
    if values:
        data[key] = values
    else:
        data.pop(key, None)


@tools_group.command("enable")
@click.argument("name")
def tools_enable(name: str) -> None:
    """Enable toolset NAME, or the single tool NAME (edits config.yaml)."""
    from ..config.loading import save_config
    from ..tools.toolsets import enabled_toolsets

    state = _state()
    data = dict(state.config.file_data)
    toolset = _toolset_of_tool(state, name)
    if toolset is not None:
        _save_list(
            data, "disabled_tools", [n for n in data.get("disabled_tools") or [] if n != name]
        )
        save_config(state.config.path, data)
        on = toolset in enabled_toolsets(state.registry, state.config.data)
        hint = "" if on else f"; its toolset is disabled: `hermes tools enable {toolset}`"
        click.echo(f"enabled tool {name} (toolset {toolset}){hint}")
        return
    _toolset_names(state, name)
    disabled = [n for n in data.get("disabled_toolsets") or [] if n != name]
    _save_list(data, "disabled_toolsets", disabled)
    probe = {**state.config.data, "disabled_toolsets": disabled, "toolsets": data.get("toolsets")}
    if name not in enabled_toolsets(state.registry, probe):
        data["toolsets"] = list(data.get("toolsets") or ["default"]) + [name]
    save_config(state.config.path, data)
    click.echo(f"enabled toolset {name}")


@tools_group.command("disable")
@click.argument("name")
def tools_disable(name: str) -> None:
    """Disable toolset NAME, or only the tool NAME (edits config.yaml)."""
    from ..config.loading import save_config

    state = _state()
    data = dict(state.config.file_data)
    toolset = _toolset_of_tool(state, name)
    key, what = ("disabled_tools", "tool") if toolset is not None else ("disabled_toolsets", "")
    if toolset is None:
        _toolset_names(state, name)
    values = list(data.get(key) or [])
    if name not in values:
        values.append(name)
    data[key] = values
    save_config(state.config.path, data)
    if toolset is not None:
        click.echo(f"disabled {what} {name} (toolset {toolset}; the rest of it stays enabled)")
    else:
        click.echo(f"disabled toolset {name}")


# --- providers ---------------------------------------------------------------------------------


@click.group("providers")
def providers_group() -> None:
    """Model providers."""


@providers_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def providers_list(as_json: bool) -> None:
    """List installed providers: name, API mode, default endpoint, key variable, plugin."""
    state = _state()
    rows: list[dict[str, Any]] = []
    for name, reg in sorted(state.registry.providers.items()):
        p = reg.value
        rows.append(
            {
                "name": name,
                "api_mode": p.api_mode,
                "base_url": p.default_base_url,
                "key_env": p.key_env,
                "plugin": reg.plugin,
                "description": p.description,
            }
        )
    if as_json:
        _print_json(rows)
    elif not rows:
        click.echo("no providers installed")
    else:
        _table(
            [
                [r["name"], r["api_mode"], r["base_url"] or "-", r["key_env"] or "-", r["plugin"]]
                for r in rows
            ],
            ["NAME", "API MODE", "BASE URL", "KEY", "PLUGIN"],
        )


# --- config ------------------------------------------------------------------------------------


@click.group("config")
def config_group() -> None:
    """Show and change config.yaml."""


@config_group.command("path")
def config_path() -> None:
    """Print the path of config.yaml."""
    click.echo(str(_state().home / "config.yaml"))


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
        _show_declared(_schema(_state()), as_json)
        return
    config = _state().config
    if sources:
        if as_json:
            _print_json(config.sources)
        else:
            for key, source in sorted(config.sources.items()):
                shown = _masked(config.get(key), key, config.schema)
                click.echo(f"{key} = {json.dumps(shown, default=str)}  ({source})")
        return
    data = _masked(config.data, "", config.schema)
    if as_json:
        _print_json(data)
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
        _print_json(rows)
        return
    _table(
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
    config = _state().config
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

    state = _state()
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

    if not unset_value(_state().home / "config.yaml", key):
        raise HermesError(f"{key} is not set in config.yaml")
    click.echo(f"removed {key}")


# --- doctor and version ------------------------------------------------------------------------


@click.command("doctor")
@click.option(
    "--no-network",
    "network",
    flag_value=False,
    default=True,
    help="Do not send the model a one-token request.",
)
def doctor(network: bool = True) -> None:
    """Check config, plugins, tools, provider and execution backend.

    The home folder must be writable, .env and state.db readable by their owner only, no key
    of config.yaml may be a misspelling of a known one, and the provider must answer a
    one-token request (skipped with --no-network). The execution backend's configuration is
    checked without starting it (one line per problem), then probed. Prints one line per check
    and exits 1 when any failed.
    """
    import warnings

    from ..config.loading import ConfigWarning, warn_unknown_keys
    from ..models.providers import resolve_provider
    from ..tools.environments import EnvironmentManager
    from ..tools.toolsets import UNLISTED, describe_tools, enabled_toolsets
    from .doctor_checks import backend_report, home_writable, private_files, probe_provider

    state = _state()
    problems = 0

    def report(ok: bool, text: str) -> None:
        nonlocal problems
        problems += 0 if ok else 1
        click.echo(f"{'ok ' if ok else 'ERR'}  {text}")

    click.echo(f"hermes {__version__}, Python {platform.python_version()}, home {state.home}")
    report(*home_writable(state.home))
    for ok, line in private_files(state.home, state.home / "config.yaml"):
        report(ok, line)
    try:
        with warnings.catch_warnings():  # reported below as lines of their own
            warnings.simplefilter("ignore", ConfigWarning)
            config = state.config
        report(True, f"config {config.path}" + ("" if config.path.exists() else " (not created)"))
    except HermesError as exc:
        report(False, str(exc))
        raise click.exceptions.Exit(1) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        unknown = warn_unknown_keys(config)
    for line in unknown:
        if "did you mean" in line:  # a misspelt key: its setting is not applied
            report(False, line)
        else:
            click.echo(f"--   {line}")
    from ..config.hermes_agent import is_hermes_agent_key, not_honoured
    from ..config.loading import _read_file

    raw, _ = _read_file(config.path)
    for dotted, problem in config.schema.problems(raw):
        if is_hermes_agent_key(dotted):  # left out when the configuration was read
            click.echo(f"--   {config.where(dotted)}Hermes agent value of {dotted!r} not used "
                       f"({problem}): the default applies")  # fmt: skip
    for dotted, instead in not_honoured(config.data, config.schema.covers):
        click.echo(
            f"--   {config.where(dotted)}Hermes agent key {dotted!r} not honoured: {instead}"
        )
    registry = state.registry
    registry.collect_all()
    for record in state.plugins.list_records():
        if record.status == "error":
            report(False, f"plugin {record.name}: {record.error}")
        elif record.hook_errors:
            report(False, f"plugin {record.name}: {'; '.join(record.hook_errors)}")
        elif record.status == "loaded":
            report(True, f"plugin {record.name} {record.version or ''}".rstrip())
        else:
            click.echo(f"--   plugin {record.name} ({record.status})")
    for host_name, reports in _hosted_reports(state).items():
        for h in reports:
            name = f"plugin {host_name}/{h.name}"
            if h.status == "error":
                report(False, f"{name}: {h.error}")
            elif h.status == "loaded":
                report(True, f"{name} {h.version}".rstrip())
            else:
                click.echo(f"--   {name} ({h.status}: {h.error})" if h.error else f"--   {name}")
    try:
        enabled = set(enabled_toolsets(registry, config.data))
        report(True, f"toolsets enabled: {', '.join(sorted(enabled)) or 'none'}")
    except HermesError as exc:
        report(False, str(exc))
        enabled = set()
    for info in describe_tools(registry, config.data):
        if info.toolset in enabled and not info.available:
            if info.tool.name == UNLISTED:  # a toolset that could not list its run-time tools
                click.echo(f"--   {info.reason}")
            else:
                click.echo(f"--   tool {info.tool.name} unavailable: {info.reason}")
    try:
        provider, settings = resolve_provider(registry, config.get("model") or {})
        report(True, f"provider {provider.name}, model {settings.model}, api {settings.api_mode}")
        if network:
            report(*probe_provider(registry, config.data))
    except HermesError as exc:
        report(False, f"provider: {exc}")
    backend = EnvironmentManager(registry, config.data).backend
    registered_env = registry.environments.get(backend)
    if registered_env is not None:
        for ok, line in backend_report(backend, registered_env.value, config.data):
            report(ok, line)
    else:
        from .install_hints import missing_backend_message

        message = missing_backend_message(backend, list(registry.environments))
        if backend != "local":  # chosen by the user: chat would fail on the first command
            report(False, message)
        else:
            click.echo(f"--   {message}")
    if problems:
        click.echo(f"{problems} problem(s) found")
        raise click.exceptions.Exit(1)
    click.echo("no problems found")


@click.command("version")
def version() -> None:
    """Print the versions of hermes, its contract and Python."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        hookspecs = dist_version("hermes-hookspecs")
    except PackageNotFoundError:
        hookspecs = "not installed"
    click.echo(
        f"hermes {__version__} (hermes-hookspecs {hookspecs}, Python "
        f"{platform.python_version()} on {sys.platform})"
    )


def _add_toggle_commands() -> None:
    from .plugins_toggle import plugins_disable, plugins_enable

    plugins_group.add_command(plugins_enable)
    plugins_group.add_command(plugins_disable)


_add_toggle_commands()
