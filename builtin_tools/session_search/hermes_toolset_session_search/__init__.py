"""The ``session_search`` toolset: one tool that searches past conversations.

It asks the host's session store (``ctx.session_store``, when it is a
:class:`~hermes_hookspecs.SearchableSessionStore`) to ``search`` its index, leaving out the
current session (it is already in the model's context), groups the hits by session and returns,
for each session, its id, title, date and a few highlighted snippets (matches marked ``[`` ...
``]``). Results and snippets are bounded so a search never floods the context.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import (
    HermesError,
    SearchableSessionStore,
    Tool,
    ToolError,
    Toolset,
    hookimpl,
)

if TYPE_CHECKING:
    from hermes_hookspecs import SearchHit, ToolContext

DEFAULT_SESSIONS = 5
MAX_SESSIONS = 20
SNIPPETS_PER_SESSION = 3
SNIPPET_CHARS = 200
HITS_PER_SESSION = 6
"""Hits asked of the store per session wanted: several hits often come from one session."""
MAX_RESULT_CHARS = 8000

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Words to look for. Words match word beginnings; put a phrase in double "
                "quotes; file names, URLs, error codes and CJK text match as substrings."
            ),
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SESSIONS,
            "default": DEFAULT_SESSIONS,
            "description": "How many sessions to return at most.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def _date(timestamp: Any) -> str:
    try:
        return _dt.datetime.fromtimestamp(float(timestamp)).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError, OverflowError, OSError):
        return "unknown date"


def _clip(text: str, size: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= size else text[: size - 1] + "…"


def session_search(args: dict[str, Any], ctx: ToolContext) -> str:
    """Search past sessions for ``query``; return up to ``limit`` sessions with snippets."""
    query = str(args.get("query") or "").strip()
    if not query:
        raise ToolError("the query is empty; say what to look for")
    try:
        limit = int(args.get("limit") or DEFAULT_SESSIONS)
    except (TypeError, ValueError):
        raise ToolError("limit must be a whole number from 1 to 20") from None
    limit = max(1, min(limit, MAX_SESSIONS))
    store = ctx.session_store
    if store is None:
        raise ToolError("session search is unavailable: this agent has no session store")
    if not isinstance(store, SearchableSessionStore):
        raise ToolError(
            f"session search is unavailable: the session store in use "
            f"({type(store).__name__}) cannot search; past sessions are searchable when "
            "they are kept in a store that can (the SQLite store, state.db, does)"
        )
    try:
        hits: list[SearchHit] = store.search(
            query,
            limit=min(limit * HITS_PER_SESSION, 120),
            snippet_chars=SNIPPET_CHARS,
            exclude_session=ctx.session_id or None,
        )
    except HermesError as exc:
        raise ToolError(f"session search failed: {exc}") from None

    sessions: dict[str, dict[str, Any]] = {}
    for hit in hits:
        entry = sessions.get(hit.session_id)
        if entry is None:
            if len(sessions) >= limit:
                continue
            entry = sessions[hit.session_id] = {"hit": hit, "snippets": []}
        if len(entry["snippets"]) < SNIPPETS_PER_SESSION:
            entry["snippets"].append(f"{hit.role}: {_clip(hit.snippet, SNIPPET_CHARS + 10)}")
    if not sessions:
        return f"No past sessions match {query!r}."

    lines = [f"Past sessions matching {query!r} (best first; matches are in [brackets]):"]
    size = len(lines[0])
    shown = 0
    for entry in sessions.values():
        hit = entry["hit"]
        title = _clip(hit.title or "(untitled)", 80)
        block = [
            "",
            f"{shown + 1}. session {hit.session_id} | {_date(hit.started_at)} | {title}",
            *(f"   - {snippet}" for snippet in entry["snippets"]),
        ]
        block_size = sum(len(line) + 1 for line in block)
        if shown and size + block_size > MAX_RESULT_CHARS - 200:
            break
        lines.extend(block)
        size += block_size
        shown += 1
    if shown < len(sessions):
        lines.append("")
        lines.append(
            f"({len(sessions) - shown} more matching sessions not shown; narrow the query)"
        )
    return "\n".join(lines)


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``session_search`` toolset."""
    register(
        Toolset(
            name="session_search",
            description="Search past conversations",
            tools=[
                Tool(
                    name="session_search",
                    description=(
                        "Search earlier conversations with the user (not this one) by keywords. "
                        "Use it when the user refers to something discussed before, or when a "
                        "past session may hold a solution, a command, a file name or an error "
                        "seen earlier. Returns session ids, titles, dates and snippets."
                    ),
                    parameters=PARAMETERS,
                    handler=session_search,
                    max_result_chars=MAX_RESULT_CHARS,
                )
            ],
        )
    )


GUIDANCE = (
    "Past conversations are searchable with the session_search tool. When the user refers to "
    'earlier work ("like last time", "the bug we fixed yesterday") or you need a detail you '
    "may have discussed before, search for distinctive words, names, file names or error codes "
    "before asking the user to repeat themselves."
)


@hookimpl
def hermes_prompt_layers(context: Any) -> Any:
    """Guidance on searching past sessions, when the tool is offered."""
    if "session_search" not in context.tool_names:
        return None
    from hermes_hookspecs import PromptLayer

    return PromptLayer(name="session_search.guidance", text=GUIDANCE, tier="stable", order=305)
