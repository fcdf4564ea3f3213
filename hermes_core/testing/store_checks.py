"""The pieces the session store behaviour suite (:mod:`hermes_core.testing.store_suite`) is made
of: messages that must replay exactly, and the base of every part of the suite."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from hermes_hookspecs import (
    LockingSessionStore,
    PersonalSessionStore,
    SearchableSessionStore,
    SessionInfo,
    SessionStore,
)

__all__ = ["StoreChecks", "replay_messages"]


def replay_messages() -> list[dict[str, Any]]:
    """Messages a store must give back exactly: every kind the loop writes, internal ``_`` keys,
    unusual key orders, nested values, and text of every kind (NUL, emoji, CJK, right-to-left,
    trailing spaces, a lone surrogate)."""
    return [
        {"role": "system", "content": "You are hermes.\n  Trailing spaces stay.  \n"},
        {"role": "user", "content": "Hello 👋 世界 שלום \x00 done", "_origin": {"via": "cli"}},
        {
            "content": None,
            "role": "assistant",
            "reasoning": "think first",
            "finish_reason": "tool_calls",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
            "_provider_replay": {"z": 1, "a": [1, 2.5, True, None, "x"], "m": {"k": "v"}},
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "line 1\n"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
            ],
        },
        {"role": "assistant", "content": "", "token_count": 12, "_big": 2**70, "_neg": -0.0},
        {"role": "assistant", "content": "a lone \ud83d surrogate", "_note": "\udfff"},
        {"_first": True, "role": "user", "content": "keys in any order", "zeta": [], "alpha": {}},
    ]


def key_order(value: Any) -> Any:
    """The keys of every dict in ``value``, in order, nested (what ``==`` does not compare)."""
    if isinstance(value, dict):
        return [(k, key_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_order(item) for item in value]
    return None


class StoreChecks:
    """What every part of the suite uses: the flags of a store (see
    :mod:`hermes_core.testing.store_suite`) and helpers that skip a test when the store lacks
    a capability or make its sessions."""

    refuses_unknown_sessions = True
    titles_from_first_user_message = True
    counts_in_metadata = True

    # --- helpers ----------------------------------------------------------------------------

    @staticmethod
    def needs(store: Any, *methods: str) -> None:
        """Skip the test when ``store`` lacks one of ``methods``."""
        missing = [name for name in methods if not callable(getattr(store, name, None))]
        if missing:
            pytest.skip(f"{type(store).__name__} has no {', '.join(missing)}")

    @staticmethod
    def searchable(store: Any) -> SearchableSessionStore:
        """``store``, or a skip when it cannot search."""
        if not isinstance(store, SearchableSessionStore):
            pytest.skip(f"{type(store).__name__} is not a SearchableSessionStore")
        return store

    @staticmethod
    def personal(store: Any) -> PersonalSessionStore:
        """``store``, or a skip when it cannot keep people apart."""
        if not isinstance(store, PersonalSessionStore):
            pytest.skip(f"{type(store).__name__} is not a PersonalSessionStore")
        return store

    @staticmethod
    def locking(store: Any) -> LockingSessionStore:
        """``store``, or a skip when it cannot hold a session's lock."""
        if not isinstance(store, LockingSessionStore):
            pytest.skip(f"{type(store).__name__} is not a LockingSessionStore")
        return store

    @staticmethod
    def takes_lock(store: LockingSessionStore, session_id: str, within: float) -> bool:
        """Whether another thread gets ``session_id``'s lock within ``within`` seconds (it
        lets go at once; a thread still waiting then is cancelled)."""
        cancel = threading.Event()
        got: list[bool] = []

        def take() -> None:
            with store.hold_session(session_id, cancel) as held:
                got.append(held)

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        taker.join(within)
        if taker.is_alive():
            cancel.set()
            taker.join(30)
        return got == [True]

    @staticmethod
    def session(
        store: SessionStore,
        session_id: str,
        *texts: str,
        started_at: float | None = None,
        **fields: Any,
    ) -> str:
        """Create ``session_id`` (with ``fields``) and append ``texts`` as alternating user and
        assistant messages."""
        store.create_session(
            SessionInfo(id=session_id, started_at=started_at or time.time(), **fields)
        )
        for index, text in enumerate(texts):
            role = "user" if index % 2 == 0 else "assistant"
            store.append_message(session_id, {"role": role, "content": text})
        return session_id
