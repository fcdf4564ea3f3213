"""How a hermes tool call looks in the editor: its kind, title, locations and content."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
)

KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "skill_view": "read",
    "skills_list": "read",
    "write_file": "edit",
    "patch": "edit",
    "skill_manage": "edit",
    "memory": "edit",
    "search_files": "search",
    "session_search": "search",
    "web_search": "search",
    "terminal": "execute",
    "process": "execute",
    "web_extract": "fetch",
    "browser": "fetch",
    "todo": "think",
    "delegate_task": "think",
    "clarify": "think",
}
"""The ACP kind of each builtin tool; any other tool is ``other``."""

MAX_OUTPUT_CHARS = 20_000
"""The most of a tool's result shown in the editor (the model gets it whole)."""


def kind_of(name: str) -> ToolKind:
    """The ACP tool kind of the hermes tool ``name``."""
    if name.startswith("mcp_"):
        return "other"
    return KINDS.get(name, "other")


def _path(arguments: Mapping[str, Any], cwd: str) -> str | None:
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return None
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd, path))


def title_of(name: str, arguments: Mapping[str, Any], cwd: str) -> str:
    """A one-line title: the command a terminal call runs, the path a file tool touches."""
    command = arguments.get("command")
    if name in ("terminal", "process") and isinstance(command, str):
        return command if len(command) <= 200 else command[:199] + "…"
    path = _path(arguments, cwd)
    if path is not None:
        return f"{name} {os.path.relpath(path, cwd) if path.startswith(cwd) else path}"
    for key in ("query", "pattern", "url", "goal"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {value[:120]}"
    return name


def locations_of(name: str, arguments: Mapping[str, Any], cwd: str) -> list[ToolCallLocation]:
    """The files a call reads or changes (the editor can follow them)."""
    path = _path(arguments, cwd)
    if path is None:
        return []
    line = arguments.get("offset") if name == "read_file" else None
    return [ToolCallLocation(path=path, line=line if isinstance(line, int) and line > 0 else None)]


def diff_of(
    name: str, arguments: Mapping[str, Any], cwd: str, before: str | None
) -> list[FileEditToolCallContent]:
    """The structured diff of a file edit (``write_file``, a ``patch`` replace); ``before`` is
    the file's text before the call (``None`` for a new file)."""
    path = _path(arguments, cwd)
    if path is None:
        return []
    if name == "write_file" and isinstance(arguments.get("content"), str):
        return [
            FileEditToolCallContent(
                type="diff", path=path, old_text=before, new_text=arguments["content"]
            )
        ]
    old, new = arguments.get("old_string"), arguments.get("new_string")
    if name == "patch" and isinstance(old, str) and isinstance(new, str):
        return [FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)]
    return []


def text_content(result: Any) -> list[ContentToolCallContent]:
    """A tool's result as the editor shows it (clipped)."""
    if result is None or result == "":
        return []
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n… ({len(text) - MAX_OUTPUT_CHARS} more characters)"
    return [
        ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))
    ]


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as a dict (the model may have written them as a JSON string)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return dict(value) if isinstance(value, Mapping) else {}
    return {}
