"""``hermes mcp ...``: list, add, remove and test the configured MCP servers."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from hermes_hookspecs import CommandContext, HermesError

from .names import tool_name, toolset_name
from .settings import (
    NAME_RE,
    SECTION,
    ServerConfig,
    ServerConfigError,
    parse_server,
    parse_servers,
    server_entries,
)


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().obj
    return context


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise HermesError(f"{option} takes NAME=VALUE, got {value!r}")
        pairs[key.strip()] = text
    return pairs


def _filter(server: ServerConfig) -> str:
    if server.include:
        return "only " + ", ".join(server.include)
    if server.exclude:
        return "all but " + ", ".join(server.exclude)
    return "all"


def _known_servers(ctx: CommandContext) -> str:
    return ", ".join(sorted(server_entries(ctx.config))) or "none"


def _find(ctx: CommandContext, name: str) -> ServerConfig:
    entries = server_entries(ctx.config)
    if name not in entries:
        raise HermesError(
            f"no MCP server {name!r} in config.yaml (configured: {_known_servers(ctx)})"
        )
    try:
        return parse_server(name, entries[name])
    except ServerConfigError as exc:
        raise HermesError(str(exc)) from None


@click.group("mcp")
def mcp_group() -> None:
    """MCP servers: list, add, remove, test."""


@mcp_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the servers as JSON.")
def list_servers(as_json: bool) -> None:
    """List the configured servers (without starting them)."""
    ctx = _context()
    servers = parse_servers(ctx.config)
    if as_json:
        rows: list[dict[str, Any]] = []
        for server in servers:
            if isinstance(server, ServerConfigError):
                rows.append({"name": server.server, "error": str(server)})
            else:
                rows.append(
                    {
                        "name": server.name,
                        "toolset": toolset_name(server.name),
                        "transport": server.transport,
                        "target": server.target,
                        "enabled": server.enabled,
                        "include": list(server.include),
                        "exclude": list(server.exclude),
                        "require_approval": server.require_approval,
                        "unknown_keys": list(server.extra),
                    }
                )
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    if not servers:
        click.echo(
            "no MCP servers configured (add one: hermes mcp add NAME --command CMD -- ARGS..., "
            "or hermes mcp add NAME --url URL)"
        )
        return
    table = [["NAME", "TRANSPORT", "STATUS", "TOOLS", "TARGET"]]
    notes: list[str] = []
    for server in servers:
        if isinstance(server, ServerConfigError):
            table.append([server.server, "-", "invalid", "-", str(server)])
            continue
        status = "enabled" if server.enabled else "disabled"
        if server.require_approval:
            status += ", asks"
        table.append([server.name, server.transport, status, _filter(server), server.target])
        if server.extra:
            notes.append(
                f"note: mcp_servers.{server.name}: unknown keys ignored: {', '.join(server.extra)}"
            )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]))
    for note in notes:
        click.echo(note)


@mcp_group.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--command", "command", metavar="CMD", help="Start a local server: CMD [ARGS...].")
@click.option("--url", metavar="URL", help="Connect to a streamable HTTP server.")
@click.option("-e", "--env", "env", multiple=True, metavar="NAME=VALUE", help="Server env.")
@click.option("-H", "--header", "headers", multiple=True, metavar="NAME=VALUE", help="HTTP header.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per call.")
@click.option("--include", multiple=True, metavar="TOOL", help="Offer only these tools.")
@click.option("--exclude", multiple=True, metavar="TOOL", help="Do not offer these tools.")
@click.option("--require-approval", is_flag=True, help="Ask before every call.")
@click.option("--disabled", is_flag=True, help="Add it switched off (enabled: false).")
@click.option("--replace", is_flag=True, help="Replace a server of that name.")
def add(
    name: str,
    args: tuple[str, ...],
    command: str | None,
    url: str | None,
    env: tuple[str, ...],
    headers: tuple[str, ...],
    timeout: float | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    require_approval: bool,
    disabled: bool,
    replace: bool,
) -> None:
    """Add server NAME to config.yaml: `hermes mcp add NAME --command CMD -- ARGS...` or
    `hermes mcp add NAME --url URL`."""
    ctx = _context()
    if not NAME_RE.match(name):
        raise HermesError(
            f"invalid server name {name!r}: use letters, digits, '_' and '-' (at most 40)"
        )
    if bool(command) == bool(url):
        raise HermesError("give either --command CMD (a local server) or --url URL (HTTP)")
    if url and args:
        raise HermesError(f"arguments are for --command servers, not --url: {' '.join(args)}")
    if name in server_entries(ctx.config) and not replace:
        raise HermesError(f"MCP server {name!r} is already configured (use --replace)")
    entry: dict[str, Any] = {"command": command, "args": list(args)} if command else {"url": url}
    if env:
        entry["env"] = _pairs(env, "--env")
    if headers:
        entry["headers"] = _pairs(headers, "--header")
    if timeout is not None:
        entry["timeout"] = timeout
    if include or exclude:
        filters = (("include", include), ("exclude", exclude))
        entry["tools"] = {key: list(values) for key, values in filters if values}
    if require_approval:
        entry["require_approval"] = True
    if disabled:
        entry["enabled"] = False
    try:
        server = parse_server(name, entry)
    except ServerConfigError as exc:
        raise HermesError(str(exc)) from None
    ctx.set_config(f"{SECTION}.{name}", entry)
    click.echo(
        f"added MCP server {name} ({server.transport}: {server.target}) as toolset "
        f"{toolset_name(name)}; `hermes mcp test {name}` connects and lists its tools"
    )
    wanted = ctx.config.get("toolsets")
    if isinstance(wanted, list) and not {toolset_name(name), "all", "default"} & set(wanted):
        click.echo(
            f"note: config.yaml lists `toolsets`; add {toolset_name(name)} to it "
            f"(hermes tools enable {toolset_name(name)}) to offer these tools"
        )


@mcp_group.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Remove server NAME from config.yaml."""
    ctx = _context()
    if not ctx.unset_config(f"{SECTION}.{name}"):
        raise HermesError(
            f"no MCP server {name!r} in config.yaml (configured: {_known_servers(ctx)})"
        )
    click.echo(f"removed MCP server {name}")


@mcp_group.command("test")
@click.argument("name")
def test(name: str) -> None:
    """Start server NAME, list its tools (as the model would see them), and stop it."""
    from .runtime import RUNTIME, ServerUnavailable

    ctx = _context()
    server = _find(ctx, name)
    connection = RUNTIME.connection(server, ctx.config)
    started = time.perf_counter()
    try:
        listed = connection.start()
    except ServerUnavailable as exc:
        raise HermesError(str(exc)) from None
    finally:
        elapsed = time.perf_counter() - started
    try:
        offered = [t for t in listed if server.wants(t.name)]
        state = "" if server.enabled else " (disabled in config.yaml)"
        click.echo(
            f"connected to {name}{state} ({server.transport}) in {elapsed:.1f}s: "
            f"{len(listed)} tools, {len(offered)} offered as toolset {toolset_name(name)}"
        )
        for listed_tool in listed:
            mark = "" if server.wants(listed_tool.name) else "  (excluded)"
            summary = (listed_tool.description or "").strip().splitlines()
            line = summary[0] if summary else ""
            line = line if len(line) <= 70 else line[:69] + "…"
            click.echo(f"  {tool_name(name, listed_tool.name)}{mark}  {line}".rstrip())
    finally:
        connection.stop()
