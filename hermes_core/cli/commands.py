"""``hermes plugins``, ``tools``, ``providers`` and ``version``."""

from __future__ import annotations

import platform
import sys
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError

from .. import __version__
from .helpers import current_state, hosted_reports, show_json, show_table
from .state import CliState

if TYPE_CHECKING:
    pass


# --- plugins -----------------------------------------------------------------------------------


@click.group("plugins")
def plugins_group() -> None:
    """Installed plugins and their state."""


@plugins_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins_list(as_json: bool) -> None:
    """List plugins: name, version, dist, hooks, status or error."""
    state = current_state()
    state.registry.collect_all()  # registration errors show up too
    records = state.plugins.list_records()
    hosted = hosted_reports(state)
    if as_json:
        show_json(
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
    show_table(rows, ["NAME", "VERSION", "DIST", "STATUS", "HOOKS"])
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


# --- tools -------------------------------------------------------------------------------------


@click.group("tools")
def tools_group() -> None:
    """Tools and toolsets the model can use."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tools_list(as_json: bool) -> None:
    """List every tool: toolset, whether it is available (and why not), which plugin."""
    from ..tools.toolsets import ToolsetError, describe_tools, enabled_toolsets

    state = current_state()
    try:
        enabled_toolsets(state.registry, state.config.data)
    except ToolsetError as exc:
        click.echo(f"warning: {exc}; no tool is enabled until this is fixed", err=True)
    infos = describe_tools(state.registry, state.config.data)
    if as_json:
        show_json([i.as_dict() for i in infos])
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
    show_table(rows, ["TOOLSET", "TOOL", "STATUS", "PLUGIN"])


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

    state = current_state()
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

    state = current_state()
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
    state = current_state()
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
        show_json(rows)
    elif not rows:
        click.echo("no providers installed")
    else:
        show_table(
            [
                [r["name"], r["api_mode"], r["base_url"] or "-", r["key_env"] or "-", r["plugin"]]
                for r in rows
            ],
            ["NAME", "API MODE", "BASE URL", "KEY", "PLUGIN"],
        )


# --- version -----------------------------------------------------------------------------------


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
