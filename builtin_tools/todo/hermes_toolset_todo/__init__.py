"""The ``todo`` toolset: one tool that keeps the agent's task list for the current session.

The list lives in the session's metadata (``todo``) in the host's session store
(``ctx.session_store``), so it is saved with the session and comes back when the session is
resumed. Without a session store (a hand-built tool context) it is kept in this process, per
person and session id.

For a person a gateway serves, ``ctx.session_store`` holds only their own sessions (and those
shared with them): the tool reads and writes the list of one of the person's *own* sessions and
refuses any other, so no call can read or change another person's list.

The tool is ``sequential``: two todo calls in one batch are applied in the order the model wrote
them.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import Tool, ToolError, Toolset, hookimpl

if TYPE_CHECKING:
    from hermes_hookspecs import SessionInfo, ToolContext

STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed", "cancelled")
"""Item statuses, in the order counts are shown."""
MARKS: dict[str, str] = {
    "pending": "[ ]",
    "in_progress": "[>]",
    "completed": "[x]",
    "cancelled": "[-]",
}
"""How each status is drawn in the rendered list."""
METADATA_KEY = "todo"
"""The session metadata field that holds the list."""
MAX_ITEMS = 100
MAX_CONTENT_CHARS = 1_000
MAX_ID_CHARS = 64

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": (
                "Items to write. Without merge: the whole new list (it replaces the old one; an "
                "empty list clears it). With merge: only the items to change or add, by id."
            ),
            "items": {
                "type": "object",
                "properties": {
                    "id": {
                        "type": "string",
                        "description": 'A short unique id, e.g. "1" or "tests".',
                    },
                    "content": {
                        "type": "string",
                        "description": "The task, in one line. Required for new items.",
                    },
                    "status": {
                        "type": "string",
                        "enum": list(STATUSES),
                        "description": "Defaults to pending for new items.",
                    },
                },
                "required": ["id"],
                "additionalProperties": False,
            },
        },
        "merge": {
            "type": "boolean",
            "description": (
                "true: update the given items by id (content and/or status) and append new "
                "ones, keeping the rest. false (default): replace the whole list."
            ),
        },
    },
    "additionalProperties": False,
}

DESCRIPTION = (
    "Your task list for this session. Use it for work with three or more steps: write the plan, "
    "keep the item you are working on in_progress (at most one at a time), and mark items "
    "completed as soon as they are done, or cancelled when no longer needed. Pass `todos` to "
    "replace the whole list, `todos` with `merge: true` to update items by id, or nothing to "
    "read the list. Returns the current list with counts."
)

_lock = threading.Lock()
_local: dict[tuple[str | None, str], list[dict[str, str]]] = {}
"""Lists of sessions that have no session store, by person and session id."""


# --- validation --------------------------------------------------------------------------------


def _text_field(item: Mapping[str, Any], key: str, where: str, limit: int) -> str | None:
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ToolError(f"{where}: {key} must be a string, got {type(value).__name__}")
    text = " ".join(str(value).split())
    if not text:
        raise ToolError(f"{where}: {key} is empty")
    if len(text) > limit:
        raise ToolError(f"{where}: {key} is {len(text):,} characters long; the limit is {limit:,}")
    return text


def _parse_items(raw: Any) -> list[dict[str, str | None]]:
    """The items of a call, checked one by one; fields not given are ``None``."""
    if not isinstance(raw, list | tuple):
        raise ToolError(f"todos must be a list of items, got {type(raw).__name__}")
    items: list[dict[str, str | None]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"todos[{index}]"
        if not isinstance(item, Mapping):
            raise ToolError(
                f"{where}: each item must be an object with id, content and status,"
                f" got {type(item).__name__}"
            )
        unknown = sorted(set(item) - {"id", "content", "status"})
        if unknown:
            raise ToolError(f"{where}: unknown field(s) {', '.join(unknown)}")
        item_id = _text_field(item, "id", where, MAX_ID_CHARS)
        if item_id is None:
            raise ToolError(f"{where}: id is missing")
        if item_id in seen:
            raise ToolError(f"{where}: id {item_id!r} appears more than once")
        seen.add(item_id)
        status = item.get("status")
        if status is not None and status not in STATUSES:
            raise ToolError(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
        items.append(
            {
                "id": item_id,
                "content": _text_field(item, "content", where, MAX_CONTENT_CHARS),
                "status": status,
            }
        )
    return items


def _new_item(item: Mapping[str, str | None], where: str) -> dict[str, str]:
    if item["content"] is None:
        raise ToolError(f"{where}: new item {item['id']!r} needs content")
    return {
        "id": str(item["id"]),
        "content": item["content"],
        "status": item["status"] or "pending",
    }


def replace_list(raw: Any) -> list[dict[str, str]]:
    """The new list for a call without ``merge``."""
    return [_new_item(item, f"todos[{i}]") for i, item in enumerate(_parse_items(raw))]


def merge_list(current: Sequence[Mapping[str, str]], raw: Any) -> list[dict[str, str]]:
    """``current`` with the call's items applied by id; new ids are appended in call order."""
    result = [dict(item) for item in current]
    by_id = {item["id"]: item for item in result}
    for index, item in enumerate(_parse_items(raw)):
        existing = by_id.get(str(item["id"]))
        if existing is None:
            added = _new_item(item, f"todos[{index}]")
            result.append(added)
            by_id[added["id"]] = added
            continue
        for key in ("content", "status"):
            if item[key] is not None:
                existing[key] = str(item[key])
    return result


def check_list(items: Sequence[Mapping[str, str]]) -> None:
    """Raise :class:`ToolError` when the list as a whole is not allowed."""
    if len(items) > MAX_ITEMS:
        raise ToolError(f"the list would have {len(items)} items; the limit is {MAX_ITEMS}")
    active = [item["id"] for item in items if item["status"] == "in_progress"]
    if len(active) > 1:
        ids = ", ".join(repr(i) for i in active)
        raise ToolError(
            f"{len(active)} items would be in_progress ({ids}); at most one may be. Mark the"
            " others pending or completed. The list was not changed."
        )


# --- storage ---------------------------------------------------------------------------------


def _clean(stored: Any) -> list[dict[str, str]]:
    """A stored list, keeping only well-formed items (the metadata may come from elsewhere)."""
    if not isinstance(stored, list):
        return []
    items = []
    for item in stored:
        if (
            isinstance(item, Mapping)
            and isinstance(item.get("id"), str)
            and isinstance(item.get("content"), str)
            and item.get("status") in STATUSES
        ):
            items.append({"id": item["id"], "content": item["content"], "status": item["status"]})
    return items


def _session(ctx: ToolContext) -> SessionInfo | None:
    """The call's session in the store; ``None`` when the list is kept in this process (no
    store, or the owner's session is not stored). A person's call whose session is not one of
    their own is refused."""
    store = ctx.session_store
    session = store.get_session(ctx.session_id) if store is not None else None
    if ctx.person is not None and store is not None:
        if session is None or session.person != ctx.person:
            raise ToolError(
                f"session {ctx.session_id!r} is not one of your sessions; its todo list is "
                "not available"
            )
    return session


def load(ctx: ToolContext) -> list[dict[str, str]]:
    """The session's list (a copy)."""
    session = _session(ctx)
    if session is None:
        return copy.deepcopy(_local.get((ctx.person, ctx.session_id), []))
    return _clean(copy.deepcopy(session.metadata.get(METADATA_KEY)))


def save(ctx: ToolContext, items: list[dict[str, str]]) -> None:
    """Store the session's list; a failure is a :class:`ToolError`."""
    store = ctx.session_store
    if store is None or _session(ctx) is None:
        _local[(ctx.person, ctx.session_id)] = copy.deepcopy(items)
        return
    try:
        store.update_session(ctx.session_id, **{METADATA_KEY: copy.deepcopy(items)})
    except Exception as exc:
        raise ToolError(f"the todo list could not be saved: {exc}") from exc


# --- the tool ----------------------------------------------------------------------------------


def render(items: Sequence[Mapping[str, str]]) -> str:
    """The list as the model sees it: a count line, then one line per item."""
    if not items:
        return "Todo list is empty."
    counts = [
        f"{n} {status.replace('_', ' ')} {MARKS[status]}"
        for status in STATUSES
        if (n := sum(1 for item in items if item["status"] == status))
    ]
    noun = "item" if len(items) == 1 else "items"
    lines = [f"Todo list, {len(items)} {noun}: {', '.join(counts)}"]
    lines += [f"{MARKS[item['status']]} {item['id']}: {item['content']}" for item in items]
    return "\n".join(lines)


def todo(args: dict[str, Any], ctx: ToolContext) -> str:
    """Read, replace or merge the session's task list and return it rendered."""
    with _lock:
        current = load(ctx)
        if args.get("todos") is not None:
            if args.get("merge"):
                updated = merge_list(current, args["todos"])
            else:
                updated = replace_list(args["todos"])
            check_list(updated)
            save(ctx, updated)
            current = updated
    return render(current)


TODO_TOOL = Tool(
    name="todo",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    handler=todo,
    sequential=True,
)


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``todo`` toolset."""
    register(Toolset(name="todo", description="A task list for the session", tools=[TODO_TOOL]))
