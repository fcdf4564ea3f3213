"""Tools and toolsets: what plugins register."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .approval import ApprovalRequest
    from .calls import ToolContext

ToolHandler = Callable[[dict[str, Any], "ToolContext"], Any]
"""``handler(args, ctx)``: sync or ``async``; returns a str, or anything JSON-serialisable."""

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Names every provider accepts for functions."""


@dataclass
class Tool:
    """A function the model can call.

    :param name: unique across all installed toolsets; letters, digits, ``_`` and ``-``, at most 64.
    :param description: what the tool does, written for the model.
    :param parameters: the JSON schema of the arguments object.
    :param handler: ``handler(args, ctx)``, sync or async. Its return value becomes the tool
        result: a ``str`` as is, anything else as JSON. Raise :class:`~hermes_hookspecs.ToolError`
        to report a failure to the model in one line.
    :param sequential: the tool must not run beside others (e.g. it asks the user something); a
        batch that contains it runs one call at a time.
    :param requires_env: environment variables that must be set for the tool to be offered.
    :param check: availability probe, called when the tool list is built; returns ``True`` or
        ``None`` when available, ``False`` or a reason string when not. An exception counts as
        unavailable, with the exception as the reason.
    :param max_result_chars: cap on the result's length; longer results are cut with a visible
        marker. ``None`` uses the host's default (``tools.max_result_chars``).
    :param needs_approval: ``needs_approval(args)`` returns an :class:`ApprovalRequest` when this
        particular call needs a human's consent before it runs, else ``None``.
    :param timeout: seconds the host waits for the handler before it answers the call with a
        timeout error; ``None`` uses the host's default (``tools.timeout``), ``0`` sets no host
        limit, for a tool that bounds its own work (a command with its own timeout). The user's
        ``tools.timeouts.<name>`` overrides it. An interrupt stops the wait either way.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    sequential: bool = False
    requires_env: Sequence[str] = ()
    check: Callable[[], bool | str | None] | None = None
    max_result_chars: int | None = None
    needs_approval: Callable[[dict[str, Any]], ApprovalRequest | None] | None = None
    timeout: float | None = None

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ToolOutput:
    """What a handler returns when its result includes images: the text the model reads and
    image files it is shown with it (a screenshot, a chart the tool drew).

    :param text: the result's text, as a handler's ``str`` return value would be.
    :param images: paths of PNG, JPEG, GIF or WebP files. The host copies each into the home's
        ``images/`` folder and sends it to models that accept images; for a model configured
        with ``model.vision: false`` it sends a description by the ``auxiliary.vision`` model
        instead. A file that cannot be read is named in a note added to the text.
    """

    text: str
    images: Sequence[str | os.PathLike[str]] = ()


@dataclass
class Toolset:
    """A named group of tools, the unit users enable and disable.

    :param name: unique across installed toolsets.
    :param description: one line for ``hermes tools list``.
    :param tools: the tools it holds (may be empty for a pure bundle).
    :param includes: names of other toolsets this one contains, expanded recursively.
    :param enabled_by_default: part of the ``default`` bundle the model sees when ``toolsets``
        is not configured.
    :param discover: for tools only known at run time (e.g. those of an MCP server):
        ``discover()`` returns them and they join ``tools``. The host calls it once per process,
        the first time it builds a tool list that includes this toolset (several such toolsets
        at the same time, one thread each). An exception leaves the toolset without those tools
        and is reported to the user once, in one line (``toolset 'NAME' unavailable: <message>``);
        a returned tool whose name is invalid or taken is left out and reported the same way.
    """

    name: str
    description: str = ""
    tools: list[Tool] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    enabled_by_default: bool = True
    discover: Callable[[], Sequence[Tool]] | None = None


__all__ = ["TOOL_NAME_RE", "Tool", "ToolHandler", "ToolOutput", "Toolset"]
