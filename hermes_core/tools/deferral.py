"""Which tools are deferred (``tools.defer``): sent as a line of the catalogue instead of a
full schema, and reached through search.

By default every MCP tool (a toolset named ``mcp-...``) and every tool of a toolset listed in
``tools.defer.toolsets`` is deferrable; the deferrable tools are deferred once there are more
than ``min_tools`` of them or their schemas would take more than ``min_share`` of the model's
context window. The core tools (terminal, files, memory, todo, clarify, delegation) are sent
in full unless named in ``tools.defer.tools``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import HermesError

MCP_PREFIX = "mcp-"
"""The toolsets of MCP servers are named ``mcp-<server>``."""
MODES = ("auto", "always", "never")
BACKENDS = ("auto", "portable", "native")
DEFAULT_MIN_TOOLS = 20
DEFAULT_MIN_SHARE = 0.10
BYTES_PER_TOKEN = 4
"""The estimate of bytes per token used for the context-window share."""


class DeferralError(HermesError):
    """A ``tools.defer`` setting that cannot be used."""


@dataclass(frozen=True)
class DeferralPolicy:
    """``tools.defer`` as read from the configuration.

    :param mode: ``auto`` (defer above the thresholds), ``always`` or ``never``.
    :param toolsets: toolsets whose tools are deferrable, besides the MCP ones.
    :param tools: single tools that are deferrable.
    :param keep: tools always sent in full, whatever their toolset.
    :param mcp: whether MCP tools are deferrable.
    :param min_tools: defer when more tools than this are deferrable...
    :param min_share: ...or their schemas exceed this share of the context window.
    :param backend: ``auto`` (native where the provider has it), ``portable`` or ``native``.
    """

    mode: str = "auto"
    toolsets: frozenset[str] = frozenset()
    tools: frozenset[str] = frozenset()
    keep: frozenset[str] = frozenset()
    mcp: bool = True
    min_tools: int = DEFAULT_MIN_TOOLS
    min_share: float = DEFAULT_MIN_SHARE
    backend: str = "auto"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> DeferralPolicy:
        """The policy of ``tools.defer`` in ``config`` (defaults where unset).

        :raises DeferralError: a value of the wrong kind, naming the setting.
        """
        raw = (config.get("tools") or {}).get("defer")
        if raw is None:
            return cls()
        if raw is False or raw is True:
            return cls(mode="always" if raw else "never")
        if not isinstance(raw, Mapping):
            raise DeferralError("tools.defer must be a mapping (or true/false)")
        mode = _choice(raw, "mode", MODES)
        backend = _choice(raw, "backend", BACKENDS)
        min_tools = raw.get("min_tools", DEFAULT_MIN_TOOLS)
        if not isinstance(min_tools, int) or isinstance(min_tools, bool) or min_tools < 0:
            raise DeferralError("tools.defer.min_tools must be a whole number, 0 or more")
        share = raw.get("min_share", DEFAULT_MIN_SHARE)
        if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 <= share <= 1:
            raise DeferralError("tools.defer.min_share must be a number from 0 to 1")
        mcp = raw.get("mcp", True)
        if not isinstance(mcp, bool):
            raise DeferralError("tools.defer.mcp must be true or false")
        return cls(
            mode=mode,
            toolsets=_names(raw, "toolsets"),
            tools=_names(raw, "tools"),
            keep=_names(raw, "keep"),
            mcp=mcp,
            min_tools=min_tools,
            min_share=float(share),
            backend=backend,
        )

    def deferrable(self, name: str, toolset: str) -> bool:
        """Whether tool ``name`` of ``toolset`` may be deferred."""
        if name in self.keep:
            return False
        if name in self.tools or toolset in self.toolsets:
            return True
        return self.mcp and toolset.startswith(MCP_PREFIX)

    def choose(
        self,
        tools: Sequence[tuple[str, str, dict[str, Any]]],
        context_window: int | None,
    ) -> set[str]:
        """The names to defer among ``tools`` (name, toolset, schema as sent)."""
        if self.mode == "never":
            return set()
        candidates = [(n, s) for n, t, s in tools if self.deferrable(n, t)]
        if not candidates:
            return set()
        if self.mode == "always":
            return {n for n, _ in candidates}
        schema_bytes = sum(len(json.dumps(s, separators=(",", ":"))) for _, s in candidates)
        over_share = bool(context_window) and (
            schema_bytes / BYTES_PER_TOKEN > self.min_share * float(context_window or 0)
        )
        if len(candidates) > self.min_tools or over_share:
            return {n for n, _ in candidates}
        return set()


def _choice(raw: Mapping[str, Any], key: str, allowed: Sequence[str]) -> str:
    value = raw.get(key, allowed[0])
    if value not in allowed:
        raise DeferralError(f"tools.defer.{key} must be one of {', '.join(allowed)}")
    return str(value)


def _names(raw: Mapping[str, Any], key: str) -> frozenset[str]:
    value = raw.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DeferralError(f"tools.defer.{key} must be a list of names")
    return frozenset(value)
