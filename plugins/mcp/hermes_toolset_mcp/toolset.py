"""The toolset of one configured MCP server: its tools, as the server lists them."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import HermesError, Tool, ToolContext, ToolError, Toolset
from hermes_runtime.secrets import redact

from .names import tool_name, toolset_name
from .settings import ServerConfig, ServerConfigError


def server_toolset(server: ServerConfig, config: Mapping[str, Any]) -> Toolset:
    """The toolset ``mcp-<name>`` of ``server``; the server starts when its tools are first
    needed."""

    def discover() -> list[Tool]:
        from .runtime import RUNTIME, ServerUnavailable

        connection = RUNTIME.connection(server, config)
        try:
            listed = connection.start()
        except ServerUnavailable as exc:
            raise HermesError(str(exc)) from None
        return hermes_tools(server, listed, config)

    return Toolset(
        name=toolset_name(server.name),
        description=f"MCP server {server.name} ({server.transport}: {server.target})",
        discover=discover,
    )


def broken_toolset(problem: ServerConfigError) -> Toolset:
    """A toolset for an entry that cannot be used: its discovery reports the problem."""

    def discover() -> list[Tool]:
        raise HermesError(str(problem))

    return Toolset(
        name=toolset_name(problem.server or "invalid"),
        description="MCP server (invalid entry)",
        discover=discover,
    )


def hermes_tools(server: ServerConfig, listed: list[Any], config: Mapping[str, Any]) -> list[Tool]:
    """The hermes tools for the server's listed tools that ``tools.include``/``exclude`` keep."""
    tools = []
    for listed_tool in listed:
        if server.wants(listed_tool.name):
            tools.append(_tool(server, listed_tool, config))
    return tools


def _tool(server: ServerConfig, listed: Any, config: Mapping[str, Any]) -> Tool:
    original = str(listed.name)
    description = (listed.description or getattr(listed, "title", None) or "").strip()
    description = description or f"The {original} tool of the MCP server {server.name}."

    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        from .results import result_text
        from .runtime import RUNTIME

        connection = RUNTIME.connection(server, config)
        # No secret (a provider key, a value from ${VAR}, a header) goes back to the model.
        try:
            return redact(result_text(connection.call(original, args, lambda: ctx.cancelled)))
        except ToolError as exc:
            raise ToolError(redact(str(exc))) from None

    needs_approval = None
    if server.require_approval:

        def needs_approval(args: dict[str, Any]) -> Any:
            from hermes_hookspecs import ApprovalRequest

            shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
            return ApprovalRequest(
                action=f"{server.name}.{original} {shown}",
                reason=f"MCP server {server.name!r} asks for approval of every call",
                key=f"mcp:{server.name}:{original}",
            )

    return Tool(
        name=tool_name(server.name, original),
        description=description,
        parameters=_parameters(getattr(listed, "input_schema", None)),
        handler=handler,
        needs_approval=needs_approval,
    )


def _parameters(schema: Any) -> dict[str, Any]:
    """The server's input schema as a JSON-schema object every provider accepts."""
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    result = copy.deepcopy(dict(schema))
    result["type"] = "object"
    if not isinstance(result.get("properties"), Mapping):
        result["properties"] = {}
    return result
