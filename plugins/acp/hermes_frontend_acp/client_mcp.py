"""The MCP servers a client passes in ``session/new``, ``load`` and ``resume``: started for
that session through the MCP plugin (``hermes-toolset-mcp``), in the command sandbox
(``acp.mcp_sandbox``), and offered to its turns besides the configured toolsets.

A server is named ``editor-<name>`` (its tools ``mcp_editor-<name>_<tool>``), so that it never
takes the place of a configured server of the same name. Its command, arguments and
environment are used as the client sent them: a ``${NAME}`` in them is refused rather than
filled in from hermes's environment (which holds the provider's keys).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_hookspecs import Tool

log = logging.getLogger("hermes.acp")

PREFIX = "editor-"
"""What a client's server name is prefixed with."""

_REFERENCE = re.compile(r"\$\{")


def _plain(value: Any) -> dict[str, Any]:
    if hasattr(value, "model_dump"):
        dumped: dict[str, Any] = value.model_dump(by_alias=True, exclude_none=True)
        return dumped
    return dict(value) if isinstance(value, Mapping) else {}


def entries(servers: Sequence[Any] | None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The ``mcp_servers`` entries of the client's ``servers`` (by hermes name), and one line
    for each server that is not used and why."""
    found: dict[str, dict[str, Any]] = {}
    refused: list[str] = []
    for raw in servers or ():
        server = _plain(raw)
        name = str(server.get("name") or "?")
        kind = server.get("type") or "stdio"
        if kind != "stdio" or not server.get("command"):
            refused.append(f"{name}: only stdio servers are supported (this one is {kind})")
            continue
        words = [str(server["command"]), *[str(a) for a in server.get("args") or ()]]
        env = {str(e.get("name")): str(e.get("value", "")) for e in server.get("env") or ()}
        if any(_REFERENCE.search(w) for w in [*words, *env.values()]):
            refused.append(f"{name}: '${{' in its command or environment is not filled in")
            continue
        key = PREFIX + (re.sub(r"[^A-Za-z0-9_-]", "-", name)[:32] or "server")
        if key in found:
            refused.append(f"{name}: a second server of the same name")
            continue
        found[key] = {"command": words[0], "args": words[1:], "env": env}
    return found, refused


def start_tools(
    servers: Sequence[Any] | None, config: Mapping[str, Any], sandbox: str
) -> tuple[list[Tool], list[str]]:
    """Start the client's ``servers`` (each in ``sandbox``, the session folder
    ``terminal.cwd`` of ``config`` as its workspace) and return their tools, and one line per
    server that could not be used."""
    wanted, problems = entries(servers)
    if not wanted:
        return [], problems
    try:
        from hermes_toolset_mcp.settings import ServerConfigError, parse_server
        from hermes_toolset_mcp.toolset import server_toolset
    except ImportError:
        names = ", ".join(wanted)
        return [], [*problems, f"{names}: install hermes-toolset-mcp to use the editor's servers"]
    tools: list[Tool] = []
    for name, entry in wanted.items():
        try:
            server = parse_server(name, {**entry, "sandbox": sandbox})
            discover = server_toolset(server, config).discover
            assert discover is not None
            tools.extend(discover())
        except (ServerConfigError, Exception) as exc:  # one server's trouble spares the rest
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            problems.append(f"{name.removeprefix(PREFIX)}: {text}")
    return tools, problems
