"""Names: the toolset of a server and the name the model sees for each of its tools."""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
"""The longest tool name every provider accepts."""


def sanitize(text: str) -> str:
    """``text`` with every character but letters, digits, ``_`` and ``-`` replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "_"


def toolset_name(server: str) -> str:
    """The toolset of server ``server``: ``mcp-<server>``."""
    return f"mcp-{server}"


def tool_name(server: str, tool: str) -> str:
    """The name the model sees for ``tool`` of ``server``: ``mcp_<server>_<tool>``, sanitized.
    A name longer than 64 characters is cut and ends with a short hash of the whole, so that
    it stays unique."""
    name = f"mcp_{sanitize(server)}_{sanitize(tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"
