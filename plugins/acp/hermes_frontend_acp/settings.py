"""What ``hermes acp`` reads from the configuration."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config_schema import MCP_SANDBOX, PERMISSION_TIMEOUT

if TYPE_CHECKING:  # the SDK's models load only when a session needs them
    from .session_state import OpenSession


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class Settings:
    """The configured model and the ``acp.*`` keys.

    :param model: the configured model (``model.default``).
    :param models: the models a session may pick: the configured one and ``acp.models``.
    :param toolsets: ``acp.toolsets`` (a narrowing of the configured toolsets), or ``None``.
    :param permission_timeout: seconds to wait for an answer to a permission request.
    :param options: the configured ``model.options`` (request extras).
    :param mcp_sandbox: ``acp.mcp_sandbox``: how the client's MCP servers run.
    :param protocol_v2: ``acp.protocol_v2``: a client may agree on the draft version 2.
    """

    model: str
    models: tuple[str, ...]
    toolsets: tuple[str, ...] | None
    permission_timeout: float
    options: Mapping[str, Any]
    local: bool = True
    mcp_sandbox: str = MCP_SANDBOX
    protocol_v2: bool = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        """The settings of ``config`` (the effective configuration)."""
        model_section = config.get("model")
        if isinstance(model_section, str):
            model, options = model_section, {}
        else:
            section = model_section if isinstance(model_section, Mapping) else {}
            model = str(section.get("default") or "")
            raw = section.get("options")
            options = dict(raw) if isinstance(raw, Mapping) else {}
        acp = _section(config, "acp")
        extra = [str(m) for m in acp.get("models") or () if str(m) != model]
        toolsets = acp.get("toolsets")
        terminal = _section(config, "terminal")
        return cls(
            model=model,
            models=tuple([model, *dict.fromkeys(extra)] if model else dict.fromkeys(extra)),
            toolsets=tuple(str(t) for t in toolsets) if isinstance(toolsets, list) else None,
            permission_timeout=float(acp.get("permission_timeout") or PERMISSION_TIMEOUT),
            options=options,
            local=(terminal.get("backend") or "local") == "local",
            mcp_sandbox="off"
            if acp.get("mcp_sandbox") is False  # YAML reads a bare `off` as false
            else str(acp.get("mcp_sandbox") or MCP_SANDBOX),
            protocol_v2=acp.get("protocol_v2") is True,
        )

    def model_problem(self) -> str:
        """Why no turn can run (one line), or ``""``."""
        if not self.model:
            return "no model is configured: run `hermes setup` (or set model.default)"
        return ""

    def workspace_problem(self, cwd: str) -> str:
        """Why ``cwd`` cannot be a session's folder (one line), or ``""``: it must be an
        absolute, existing folder and, for the local backend, neither ``/`` nor the home
        folder (as for the chat: all of it would be in the agent's reach)."""
        if not os.path.isabs(cwd):
            return f"cwd must be an absolute path: {cwd!r}"
        if not self.local:
            return ""
        if not os.path.isdir(cwd):
            return f"cwd is not a folder: {cwd}"
        real = os.path.realpath(cwd)
        if real == "/" or real == os.path.realpath(os.path.expanduser("~")):
            where = "the whole file system (/)" if real == "/" else f"your home folder ({real})"
            return (
                f"the workspace would be {where}, which puts everything there in the agent's "
                "reach: open a project folder"
            )
        return ""

    def overrides(self, session: OpenSession) -> dict[str, Any]:
        """The configuration a turn of ``session`` runs with on top of the configured one:
        its folder and its reasoning effort."""
        overrides: dict[str, Any] = {"terminal.cwd": session.cwd}
        if session.effort != "default":
            overrides["model.options"] = {**self.options, "reasoning_effort": session.effort}
        return overrides
