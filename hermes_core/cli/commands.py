"""``hermes plugins``, ``tools``, ``providers``, ``config``, ``doctor`` and ``version``."""

from __future__ import annotations

import json
import platform
import sys
from typing import Any

import click

from hermes_hookspecs import HermesError

from .. import __version__
from .state import CliState


def _state() -> CliState:
    return click.get_current_context().find_root().obj  # type: ignore[no-any-return]


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
    _ = state.registry.toolsets, state.registry.providers  # registration errors show up too
    _ = state.registry.environments, state.registry.engines, state.registry.platform_adapters
    records = state.plugins.list_records()
    if as_json:
        _print_json([r.as_dict() for r in records])
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
    _table(rows, ["NAME", "VERSION", "DIST", "STATUS", "HOOKS"])
    for r in records:
        if r.error:
            click.echo(f"error: {r.name}: {r.error}")
        for message in r.hook_errors:
            click.echo(f"error: {r.name}: {message}")


# --- tools -------------------------------------------------------------------------------------


@click.group("tools")
def tools_group() -> None:
    """Tools and toolsets the model can use."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tools_list(as_json: bool) -> None:
    """List every tool: toolset, whether it is available (and why not), which plugin."""
    from ..toolsets import ToolsetError, describe_tools, enabled_toolsets

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
    from ..toolsets import RESERVED

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
    from ..config import save_config
    from ..toolsets import enabled_toolsets

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
    from ..config import save_config

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
    rows = []
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


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--sources", is_flag=True, help="Show where each value comes from.")
def config_show(as_json: bool, sources: bool) -> None:
    """Print the effective configuration."""
    config = _state().config
    if sources:
        if as_json:
            _print_json(config.sources)
        else:
            for key, source in sorted(config.sources.items()):
                click.echo(f"{key} = {json.dumps(config.get(key), default=str)}  ({source})")
        return
    if as_json:
        _print_json(config.data)
        return
    import yaml

    click.echo(yaml.safe_dump(config.data, sort_keys=False, allow_unicode=True).rstrip())


@config_group.command("get")
@click.argument("key")
def config_get(key: str) -> None:
    """Print the effective value of KEY (dotted, e.g. agent.max_turns)."""
    missing = object()
    value = _state().config.get(key, missing)
    if value is missing:
        raise HermesError(f"{key} is not set")
    click.echo(value if isinstance(value, str) else json.dumps(value, default=str))


@config_group.command("set")
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> None:
    """Set KEY to VALUE in config.yaml (VALUE is read as YAML: 40, true, [a, b])."""
    from ..config import set_value

    parsed = set_value(_state().home / "config.yaml", key, value)
    click.echo(f"{key} = {json.dumps(parsed, default=str)}")


@config_group.command("unset")
@click.argument("key")
def config_unset(key: str) -> None:
    """Remove KEY from config.yaml."""
    from ..config import unset_value

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

    The home folder must be writable, and the provider must answer a one-token request
    (skipped with --no-network). Prints one line per check and exits 1 when any failed.
    """
    from ..environments import EnvironmentManager
    from ..providers import resolve_provider
    from ..toolsets import describe_tools, enabled_toolsets
    from .doctor_checks import home_writable, probe_provider

    state = _state()
    problems = 0

    def report(ok: bool, text: str) -> None:
        nonlocal problems
        problems += 0 if ok else 1
        click.echo(f"{'ok ' if ok else 'ERR'}  {text}")

    click.echo(f"hermes {__version__}, Python {platform.python_version()}, home {state.home}")
    report(*home_writable(state.home))
    try:
        config = state.config
        report(True, f"config {config.path}" + ("" if config.path.exists() else " (not created)"))
    except HermesError as exc:
        report(False, str(exc))
        raise click.exceptions.Exit(1) from None
    registry = state.registry
    _ = registry.toolsets, registry.providers, registry.environments, registry.engines
    _ = registry.platform_adapters
    for record in state.plugins.list_records():
        if record.status == "error":
            report(False, f"plugin {record.name}: {record.error}")
        elif record.hook_errors:
            report(False, f"plugin {record.name}: {'; '.join(record.hook_errors)}")
        elif record.status == "loaded":
            report(True, f"plugin {record.name} {record.version or ''}".rstrip())
        else:
            click.echo(f"--   plugin {record.name} ({record.status})")
    try:
        enabled = set(enabled_toolsets(registry, config.data))
        report(True, f"toolsets enabled: {', '.join(sorted(enabled)) or 'none'}")
    except HermesError as exc:
        report(False, str(exc))
        enabled = set()
    for info in describe_tools(registry, config.data):
        if info.toolset in enabled and not info.available:
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
        check = getattr(registered_env.value, "check", None)
        if callable(check):  # an optional probe: can the backend start with this config?
            try:
                report(True, f"execution backend {backend}: {check(config.data)}")
            except HermesError as exc:
                report(False, f"execution backend {backend}: {exc}")
        else:
            report(True, f"execution backend {backend}")
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
