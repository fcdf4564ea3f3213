"""What ``hermes acp`` reads from the configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config_schema import PERMISSION_TIMEOUT

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
    """

    model: str
    models: tuple[str, ...]
    toolsets: tuple[str, ...] | None
    permission_timeout: float
    options: Mapping[str, Any]

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
        return cls(
            model=model,
            models=tuple([model, *dict.fromkeys(extra)] if model else dict.fromkeys(extra)),
            toolsets=tuple(str(t) for t in toolsets) if isinstance(toolsets, list) else None,
            permission_timeout=float(acp.get("permission_timeout") or PERMISSION_TIMEOUT),
            options=options,
        )

    def model_problem(self) -> str:
        """Why no turn can run (one line), or ``""``."""
        if not self.model:
            return "no model is configured: run `hermes setup` (or set model.default)"
        return ""

    def overrides(self, session: OpenSession) -> dict[str, Any]:
        """The configuration a turn of ``session`` runs with on top of the configured one:
        its folder and its reasoning effort."""
        overrides: dict[str, Any] = {"terminal.cwd": session.cwd}
        if session.effort != "default":
            overrides["model.options"] = {**self.options, "reasoning_effort": session.effort}
        return overrides
