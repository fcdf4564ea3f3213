"""Tools of Hermes agent plugins as hermes tools: the schema, the ``handler(args, **kwargs)``
calling convention, ``check_fn`` and ``requires_env``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import current
from .callbacks import accepted_kwargs, resolve

EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass
class HermesTool:
    """One tool a Hermes agent plugin registered with ``ctx.register_tool``."""

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    plugin: str
    check_fn: Callable[[], Any] | None = None
    requires_env: list[str] = field(default_factory=list)
    is_async: bool = False
    description: str = ""

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (the schema's ``parameters``)."""
        parameters = self.schema.get("parameters")
        return parameters if isinstance(parameters, dict) else dict(EMPTY_PARAMETERS)

    @property
    def model_description(self) -> str:
        """What the model is told the tool does."""
        return str(self.schema.get("description") or self.description or self.name)

    def call(self, args: dict[str, Any], payload: dict[str, Any]) -> str:
        """Run the handler with ``args`` and the keyword arguments it accepts from ``payload``;
        return its result as the string the model sees."""
        value = resolve(self.handler(args, **accepted_kwargs(self.handler, payload)))
        return as_text(value)

    def check(self) -> bool | str:
        """Availability as hermes reads it: ``check_fn`` says whether the tool works here."""
        if self.check_fn is None:
            return True
        ok = resolve(self.check_fn())
        return True if ok else "its plugin's check_fn says it is not available here"

    def to_tool(self) -> Any:
        """The hermes ``Tool``."""
        from hermes_hookspecs import Tool

        return Tool(
            name=self.name,
            description=self.model_description,
            parameters=self.parameters,
            handler=self._handle,
            requires_env=tuple(self.requires_env),
            check=self.check if self.check_fn is not None else None,
        )

    def _handle(self, args: dict[str, Any], ctx: Any) -> str:
        payload = {
            "task_id": ctx.task_id,
            "session_id": ctx.session_id,
            "tool_call_id": ctx.call_id,
        }
        with current.inside(ctx):
            return self.call(args, payload)


def as_text(value: Any) -> str:
    """A handler's result as text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def toolsets(tools: Iterable[HermesTool], descriptions: dict[str, str]) -> list[Any]:
    """hermes ``Toolset`` s for ``tools``, one per Hermes toolset name, enabled by default (the
    plugin itself is opt-in)."""
    from hermes_hookspecs import Toolset

    grouped: dict[str, list[HermesTool]] = {}
    for tool in tools:
        grouped.setdefault(tool.toolset, []).append(tool)
    return [
        Toolset(
            name=name,
            description=descriptions.get(name) or f"Tools of a Hermes agent plugin ({name})",
            tools=[t.to_tool() for t in sorted(members, key=lambda t: t.name)],
            enabled_by_default=True,
        )
        for name, members in sorted(grouped.items())
    ]
