"""The portable back end of tool search: three bridge tools (``find_tools``, ``describe_tool``,
``call_tool``) whose schemas never change, so the tool array and the system prompt stay
byte-stable for the whole session whatever the model discovers.

A ``call_tool`` call naming a usable deferred tool is turned, as soon as the model's message
arrives, into a direct call of that tool (:meth:`Bridge.unwrap`): the dispatcher, the
approvals, the policy hooks, the sandbox and the transcript see the real call, which keeps
the bridge call in :data:`~hermes_core.loop.scan.VIA_FIELD` so the history sent back to the
model holds the bytes it wrote. A call the bridge cannot turn (unknown name, malformed
arguments, a tool no longer available) reaches ``call_tool``'s own handler, which explains it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import Tool, ToolError
from hermes_hookspecs.providers import FOUND_TOOLS_FIELD, TOOL_SEARCH_NAME

from ..loop.scan import VIA_FIELD
from .catalogue import Catalogue, Entry
from .deferral import DeferralPolicy
from .toolsets import ToolBox, ToolsetError, availability

FIND = TOOL_SEARCH_NAME
DESCRIBE = "describe_tool"
CALL = "call_tool"
BRIDGE_NAMES = (FIND, DESCRIBE, CALL)
DETAILED_HITS = 3
"""How many of the best search hits come with their parameters schema."""
MAX_HITS = 20

_FIND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "words describing the tool you need"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_HITS,
            "description": "most tools to return (default 5)",
        },
    },
    "required": ["query"],
}
_DESCRIBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "the tool's exact name"}},
    "required": ["name"],
}
_CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the exact name of a catalogue tool"},
        "arguments": {"type": "object", "description": "the tool's arguments, per its schema"},
    },
    "required": ["name", "arguments"],
}


class Bridge:
    """The bridge tools of one agent over its catalogue of deferred tools.

    :param toolbox: the agent's tools (the deferred ones included).
    :param catalogue: the deferred tools.
    """

    def __init__(self, toolbox: ToolBox, catalogue: Catalogue) -> None:
        self.toolbox = toolbox
        self.catalogue = catalogue
        self.disabled = toolbox.disabled
        """Tools switched off during the session, with why (the toolbox's: a direct call of
        one is refused as well)."""
        self._found: dict[str, list[str]] = {}
        """The tools each search call found, by call id, until its answer is annotated."""

    def tools(self) -> list[Tool]:
        """The three bridge tools."""
        return [
            Tool(
                FIND,
                "Search the tool catalogue (listed in the system prompt) by words; returns the "
                "best matches, the first ones with their parameters.",
                _FIND_SCHEMA,
                self._find,
            ),
            Tool(
                DESCRIBE,
                "Show a catalogue tool's full description and parameters schema.",
                _DESCRIBE_SCHEMA,
                self._describe,
            ),
            Tool(
                CALL,
                "Call a catalogue tool by its exact name with arguments matching its schema.",
                _CALL_SCHEMA,
                self._call,
            ),
        ]

    def prompt_text(self) -> str:
        """What the system prompt says of the catalogue: how to use it, and the listing."""
        return (
            "# Tool catalogue\n"
            f"These tools are not loaded. Find one with {FIND} (words; its parameters come "
            f"with the best hits) or {DESCRIBE}, then run it with {CALL} "
            '{"name": "<tool>", "arguments": {...}}. Each [toolset] line shows the prefix of '
            "its tools' names, listed below it without it.\n" + self.catalogue.listing()
        )

    def disable(self, name: str, reason: str) -> None:
        """Switch tool ``name`` off for the rest of the session (search no longer finds it;
        a call is answered with ``reason``)."""
        self.disabled[name] = reason

    def resolve(self, name: str) -> str:
        """The full name of tool ``name`` (which may lack its toolset's prefix, as the
        catalogue lists it); ``name`` itself when it names no catalogue tool."""
        return self.catalogue.resolve(name) or name

    def problem(self, name: str) -> str | None:
        """Why tool ``name`` cannot be called through the bridge now, else ``None``."""
        tool = self.toolbox.tools.get(name)
        if tool is None or name in BRIDGE_NAMES:
            hits = self._usable(self.catalogue.near(name, 3))
            hint = f" Closest: {', '.join(e.name for e in hits)}." if hits else ""
            return f"Error: unknown tool '{name}'. Search the catalogue with {FIND}.{hint}"
        if name in self.disabled:
            return f"Error: tool '{name}' was disabled during this session: {self.disabled[name]}."
        ok, reason = availability(tool)
        if not ok:
            return f"Error: tool '{name}' is not available now: {reason}."
        return None

    def annotate(self, answer: dict[str, Any]) -> None:
        """Add to the tool result ``answer`` of a search the names it found
        (:data:`~hermes_hookspecs.providers.FOUND_TOOLS_FIELD`), for a provider that turns
        them into tool references."""
        found = self._found.pop(str(answer.get("tool_call_id")), None)
        if found:
            answer[FOUND_TOOLS_FIELD] = found

    def unwrap(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The direct call of the tool a well-formed ``call_tool`` call names (the bridge call
        kept in :data:`VIA_FIELD`); any other call as it is."""
        function = raw.get("function") or {}
        if function.get("name") != CALL:
            return raw
        original = function.get("arguments")
        name, arguments = _parts(original)
        if name is None or arguments is None:
            return raw
        name = self.resolve(name)
        if self.problem(name) is not None:
            return raw
        direct = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
        return {**raw, "function": direct, VIA_FIELD: {"name": CALL, "arguments": original}}

    def _usable(self, entries: list[Entry]) -> list[Entry]:
        return [e for e in entries if e.name not in self.disabled]

    def _find(self, args: Mapping[str, Any], ctx: Any) -> str:
        query = str(args.get("query") or "")
        limit = int(args.get("limit") or 5)
        hits = self._usable(self.catalogue.search(query, limit + len(self.disabled)))[:limit]
        if not hits:
            return (
                f'No catalogue tool matches "{query}". Try other words, or read the catalogue '
                "in the system prompt."
            )
        call_id = getattr(ctx, "call_id", None)
        if call_id:
            self._found[str(call_id)] = [entry.name for entry in hits]
        lines = [f'{len(hits)} tool(s) for "{query}"; call one with {CALL}:']
        for rank, entry in enumerate(hits):
            lines.append(f"- {entry.name} [{entry.toolset}]: {entry.tool.description.strip()}")
            if rank < DETAILED_HITS:
                lines.append("  parameters: " + _schema_text(entry.tool.parameters))
        return "\n".join(lines)

    def _describe(self, args: Mapping[str, Any], ctx: Any) -> str:
        name = self.resolve(str(args.get("name") or ""))
        problem = self.problem(name)
        if problem is not None:
            raise ToolError(problem.removeprefix("Error: "))
        tool = self.toolbox.tools[name]
        return f"{name}: {tool.description.strip()}\nparameters: {_schema_text(tool.parameters)}"

    def _call(self, args: Mapping[str, Any], ctx: Any) -> str:
        # Reached only for calls unwrap() left alone: say why.
        name = args.get("name")
        if not isinstance(name, str) or not name:
            raise ToolError(f"{CALL} needs the tool's exact name in 'name'")
        problem = self.problem(self.resolve(name))
        if problem is not None:
            raise ToolError(problem.removeprefix("Error: "))
        raise ToolError(
            f"{CALL} needs the tool's arguments as a JSON object in 'arguments' "
            f"(see {DESCRIBE} for '{name}')"
        )


def _parts(arguments: Any) -> tuple[str | None, dict[str, Any] | None]:
    """The tool name and arguments object of a ``call_tool`` call's arguments text."""
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except ValueError:
        return None, None
    if not isinstance(parsed, dict):
        return None, None
    name = parsed.get("name")
    inner = parsed.get("arguments", {})
    if isinstance(inner, str):  # some models encode the object twice
        try:
            inner = json.loads(inner) if inner.strip() else {}
        except ValueError:
            return None, None
    if not isinstance(name, str) or not isinstance(inner, dict):
        return None, None
    return name, inner


def _schema_text(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def install_bridge(
    toolbox: ToolBox, config: Mapping[str, Any], context_window: int | None
) -> Bridge | None:
    """Defer the tools ``tools.defer`` chooses in ``toolbox`` behind the bridge tools; the
    bridge, or ``None`` when nothing is deferred.

    :raises ToolsetError: a tool of the toolbox has a bridge tool's name.
    """
    policy = DeferralPolicy.from_config(config)
    rows = [
        (name, toolbox.toolset_of.get(name, ""), schema)
        for name, schema in zip(toolbox.names, toolbox.schemas, strict=True)
    ]
    deferred = policy.choose(rows, context_window)
    if not deferred:
        return None
    taken = [n for n in BRIDGE_NAMES if n in toolbox.tools]
    if taken:
        raise ToolsetError(
            f"tool {taken[0]!r} has the name of a tool-search bridge tool; rename it or set "
            "tools.defer.mode: never"
        )
    catalogue = Catalogue((toolbox.tools[n], toolbox.toolset_of.get(n, "")) for n in deferred)
    bridge = Bridge(toolbox, catalogue)
    toolbox.defer(deferred, bridge.tools())
    return bridge
