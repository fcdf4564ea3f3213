"""Choosing the tools the model sees: toolset expansion, availability, and byte-stable schemas."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import HermesError, Tool

from ..config.hermes_agent import is_platform_toolset
from ..plugins.registry import Registry

DEFAULT_BUNDLE = "default"
"""Every installed toolset that is enabled by default."""
ALL_BUNDLE = "all"
"""Every installed toolset."""
RESERVED = frozenset({DEFAULT_BUNDLE, ALL_BUNDLE})
UNLISTED = "-"
"""The tool name :func:`describe_tools` shows for a toolset whose ``discover`` failed."""


class ToolsetError(HermesError):
    """An unknown toolset name or a cycle of ``includes``."""


@dataclass(frozen=True)
class ToolInfo:
    """One registered tool as ``hermes tools list`` shows it."""

    tool: Tool
    toolset: str
    plugin: str
    available: bool
    reason: str | None
    enabled: bool

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly view."""
        return {
            "tool": self.tool.name,
            "toolset": self.toolset,
            "plugin": self.plugin,
            "available": self.available,
            "reason": self.reason,
            "enabled": self.enabled,
        }


def availability(tool: Tool, environ: Mapping[str, str] | None = None) -> tuple[bool, str | None]:
    """Whether ``tool`` can be offered now, and why not when it cannot."""
    env = os.environ if environ is None else environ
    missing = [name for name in tool.requires_env if not env.get(name)]
    if missing:
        return False, "missing environment variable " + ", ".join(missing)
    if tool.check is not None:
        try:
            verdict = tool.check()
        except Exception as exc:
            return False, f"check failed: {type(exc).__name__}: {exc}"
        if verdict is False:
            return False, "check failed"
        if isinstance(verdict, str):
            return False, verdict
    return True, None


def expand(registry: Registry, names: Iterable[str]) -> list[str]:
    """Toolset names reachable from ``names`` through ``includes``, in first-seen order.

    ``default`` and ``all`` name the bundles (the Hermes agent's platform toolsets, such as
    ``hermes-cli``, name the default bundle); an unknown name or a cycle raises
    :class:`ToolsetError`.
    """
    toolsets = registry.toolsets
    result: list[str] = []
    seen: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join((*path[path.index(name) :], name))
            raise ToolsetError(f"toolset includes form a cycle: {cycle}")
        if name not in toolsets and is_platform_toolset(name):
            name = DEFAULT_BUNDLE  # the Hermes agent's hermes-cli, hermes-telegram, ...
        if name == DEFAULT_BUNDLE or name == ALL_BUNDLE:
            for member in sorted(toolsets):
                if name == ALL_BUNDLE or toolsets[member].value.enabled_by_default:
                    visit(member, (*path, name))
            return
        if name not in toolsets:
            known = ", ".join(sorted(toolsets)) or "none installed"
            raise ToolsetError(f"unknown toolset {name!r} (installed: {known})")
        if name in seen:
            return
        seen.add(name)
        result.append(name)
        for included in toolsets[name].value.includes:
            visit(included, (*path, name))

    for name in names:
        visit(name, ())
    return result


def enabled_toolsets(registry: Registry, config: Mapping[str, Any]) -> list[str]:
    """The toolsets the configuration enables (``toolsets`` minus ``disabled_toolsets``)."""
    wanted = config.get("toolsets")
    if wanted is None:  # not configured; an empty list means no toolsets at all
        wanted = [DEFAULT_BUNDLE]
    disabled = set(expand(registry, config.get("disabled_toolsets") or []))
    return [name for name in expand(registry, wanted) if name not in disabled]


class ToolBox:
    """The tools one agent offers the model, with their schemas computed once.

    :param tools: the selected tools; unavailable ones are left out by :func:`build_toolbox`.
    """

    def __init__(
        self,
        tools: Sequence[Tool],
        toolsets: Sequence[str] = (),
        toolset_of: Mapping[str, str] | None = None,
    ) -> None:
        self.tools: dict[str, Tool] = {t.name: t for t in sorted(tools, key=lambda t: t.name)}
        self.toolsets = tuple(toolsets)
        self.toolset_of: dict[str, str] = dict(toolset_of or {})
        """The toolset of each tool (tools added by the caller have none)."""
        # A deep copy taken once: plugins mutating their dicts later cannot change the bytes sent.
        self.schemas: list[dict[str, Any]] = [
            copy.deepcopy(t.schema()) for t in self.tools.values()
        ]
        self.names: tuple[str, ...] = tuple(self.tools)
        """The tools whose schemas are sent (all of them unless some are deferred)."""
        self.deferred: tuple[str, ...] = ()
        """The tools reached through tool search instead (see :meth:`defer`)."""
        self.disabled: dict[str, str] = {}
        """Tools switched off during the session, with why: a call is answered with it."""
        self.deferred_schemas: list[dict[str, Any]] = []
        """Their schemas, in name order, each with its ``toolset`` (for a provider that
        defers tools natively)."""

    def defer(self, names: Iterable[str], bridge: Sequence[Tool]) -> None:
        """Send the schemas of ``bridge`` instead of those of the tools ``names``, which stay
        callable; done once, when the agent is built, so the tool array never changes after."""
        hidden = set(names)
        for tool in bridge:
            self.tools[tool.name] = tool
        offered = sorted(n for n in self.tools if n not in hidden)
        by_name = dict(zip(self.names, self.schemas, strict=True))
        self.schemas = [
            by_name[n] if n in by_name else copy.deepcopy(self.tools[n].schema()) for n in offered
        ]
        self.names = tuple(offered)
        self.deferred = tuple(sorted(hidden & set(self.tools)))
        self.deferred_schemas = [
            {**by_name[n], "toolset": self.toolset_of.get(n, "")}
            for n in self.deferred
            if n in by_name
        ]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if offered."""
        return self.tools.get(name)

    def schemas_json(self) -> str:
        """The schemas as sent, serialised (for byte-stability checks and hashing)."""
        return json.dumps(self.schemas, ensure_ascii=False, separators=(",", ":"))


def build_toolbox(
    registry: Registry,
    config: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    extra_tools: Sequence[Tool] = (),
    report: Callable[[str], None] | None = None,
) -> ToolBox:
    """The available tools of the enabled toolsets, plus ``extra_tools`` (e.g. an engine's).

    Toolsets with ``discover`` add their run-time tools (see :meth:`Registry.discover`);
    ``report`` receives each problem line met the first time they are asked."""
    names = enabled_toolsets(registry, config)
    found = registry.discover(names, report)
    off = set(config.get("disabled_tools") or ())
    tools: list[Tool] = []
    toolset_of: dict[str, str] = {}
    for name in names:
        discovered = found[name].tools if name in found else ()
        for tool in [*registry.toolsets[name].value.tools, *discovered]:
            if tool.name not in off and availability(tool, environ)[0]:
                tools.append(tool)
                toolset_of.setdefault(tool.name, name)
    taken = {t.name for t in tools}
    for tool in extra_tools:
        if tool.name in taken:
            raise ToolsetError(f"tool {tool.name!r} is offered twice")
        tools.append(tool)
    return ToolBox(tools, names, toolset_of)


def describe_tools(
    registry: Registry, config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> list[ToolInfo]:
    """Every registered tool with its toolset, plugin, availability and whether it is enabled."""
    try:
        enabled = set(enabled_toolsets(registry, config))
    except ToolsetError:
        enabled = set()
    off = set(config.get("disabled_tools") or ())
    found = registry.discover(registry.toolsets)
    infos = []
    for name, registered in sorted(registry.toolsets.items()):
        discovery = found.get(name)
        if discovery is not None and discovery.failed:
            why = discovery.problems[0]
            placeholder = Tool(UNLISTED, why, {}, handler=_unavailable)
            infos.append(ToolInfo(placeholder, name, registered.plugin, False, why, False))
        tools = [*registered.value.tools, *(discovery.tools if discovery else ())]
        for tool in sorted(tools, key=lambda t: t.name):
            ok, reason = availability(tool, environ)
            on = name in enabled and tool.name not in off
            infos.append(ToolInfo(tool, name, registered.plugin, ok, reason, on))
    return infos


def _unavailable(args: dict[str, Any], ctx: Any) -> Any:
    raise HermesError("this toolset could not list its tools")
