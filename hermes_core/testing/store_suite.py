"""A behaviour suite every :class:`~hermes_hookspecs.SessionStore` implementation runs.

Subclass :class:`SessionStoreBehaviour` in a test module and provide a pytest fixture named
``store`` that yields a fresh, empty store (and closes it, and throws its data away,
afterwards)::

    import pytest
    from hermes_core.testing.store_suite import SessionStoreBehaviour

    class TestMyStore(SessionStoreBehaviour):
        @pytest.fixture
        def store(self, tmp_path):
            store = MyStore(tmp_path / "db")
            yield store
            store.close()

Every test of the suite is then collected for the subclass. The suite checks what the core
and the CLI rely on, by capability:

- always (the :class:`~hermes_hookspecs.SessionStore` protocol): a session comes back with the
  fields it was created with; updates set fields and merge metadata; messages come back
  exactly as appended (every key, ``_``-prefixed ones included, in their order; nested values;
  any text, NUL and lone surrogates included), in order, each session's apart;
- ``batch()``: the writes of a block are committed together, a block that raises (or whose
  write fails) keeps nothing, nested blocks join the outer one, and another thread's writes
  are not part of a block;
- ``get_clean_messages``: lone surrogates replaced by U+FFFD, everything else as appended;
- ``newest_in_lineage``: compression children of the same source, over generations;
- ``list_sessions``, ``latest_session_id``, ``find_sessions``, ``add_usage``, ``set_title``,
  ``delete_session``, ``prune``, ``stats``: what ``hermes sessions`` and the loop use;
- :class:`~hermes_hookspecs.SearchableSessionStore`: search basics that hold for any search
  (a word, every term before any, quoted phrases, file names and error codes inside longer
  tokens, CJK inside a run, tool calls, leaving a session out, the limit, hit fields);
- :class:`~hermes_hookspecs.PersonalSessionStore`: a session's person is kept and never
  changes, invalid person ids are refused, searches and listings kept to some people see
  nothing of the others, counts by person, and forgetting a person;
- :class:`~hermes_hookspecs.LockingSessionStore`: one holder of a session's lock at a time
  among many threads, a waiter holds it once the holder lets go (also when the holder's block
  raised), a cancel while waiting yields ``False`` and leaves nothing held, and the locks of
  different sessions do not block each other. (That the lock also holds across processes,
  and dies with its holder's process, each store tests with processes of its own.)

A test of a capability the store does not have (no such method, not an instance of the
protocol) is skipped, saying so. Three class attributes describe what cannot be looked up:

- ``refuses_unknown_sessions`` (default ``True``): appending to or updating a session that
  was never created, or creating one twice, raises :class:`~hermes_hookspecs.HermesError`;
- ``titles_from_first_user_message`` (default ``True``): an untitled session takes its title
  from its first user message with text;
- ``counts_in_metadata`` (default ``True``): ``SessionInfo.metadata`` reports
  ``message_count`` and ``tool_call_count`` (and, with ``add_usage``, the token counters and
  ``estimated_cost_usd``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from hermes_hookspecs import (
    HermesError,
    SearchableSessionStore,
    SessionInfo,
    SessionStore,
)

from .store_checks import StoreChecks, key_order, replay_messages
from .store_suite_locks import LockBehaviour
from .store_suite_search import PeopleBehaviour, SearchBehaviour

__all__ = ["SessionStoreBehaviour", "StoreChecks", "replay_messages"]


class SessionStoreBehaviour(SearchBehaviour, PeopleBehaviour, LockBehaviour):
    """The behaviour suite; see the module's docstring. Subclasses provide the ``store``
    fixture: a fresh, empty store for each test."""

    # --- the SessionStore protocol ----------------------------------------------------------

    def test_is_a_session_store(self, store: Any) -> None:
        """The store implements the :class:`~hermes_hookspecs.SessionStore` protocol."""
        assert isinstance(store, SessionStore)

    def test_a_session_comes_back_as_created(self, store: SessionStore) -> None:
        """Every field of a created session comes back as given, the system prompt byte for byte."""
        prompt = "You are hermes.\n\nToday is 2026-12-07.  \n  ✓ 数据 \t end"
        store.create_session(
            SessionInfo(
                id="s-created",
                source="gateway",
                model="model-x",
                provider="openai",
                system_prompt=prompt,
                parent_session_id="s-parent",
                started_at=1_700_000_000.25,
                title="A title",
                metadata={"fallbacks": ["a", "b"], "todo": [{"id": 1, "done": False}]},
            )
        )
        got = store.get_session("s-created")
        assert got is not None
        assert (got.id, got.source, got.model, got.provider) == (
            "s-created",
            "gateway",
            "model-x",
            "openai",
        )
        assert got.system_prompt == prompt  # replayed byte for byte
        assert got.parent_session_id == "s-parent"
        assert got.started_at == 1_700_000_000.25
        assert got.title == "A title" and got.person is None
        assert got.ended_at is None and got.end_reason is None
        assert got.metadata["fallbacks"] == ["a", "b"]
        assert got.metadata["todo"] == [{"id": 1, "done": False}]

    def test_an_unknown_session_is_none(self, store: SessionStore) -> None:
        """An unknown session is ``None`` and has no messages."""
        assert store.get_session("no-such-session") is None
        assert store.get_messages("no-such-session") == []

    def test_update_sets_fields_and_merges_metadata(self, store: SessionStore) -> None:
        """``update_session`` sets fields; keys that are not fields go into the metadata, beside
        what it held."""
        self.session(store, "s-upd", metadata={"keep": 1})
        store.update_session("s-upd", system_prompt="new prompt", ended_at=1_800_000_000.5)
        store.update_session("s-upd", end_reason="completed", todo=["x"])
        store.update_session("s-upd", metadata={"more": {"n": 2}})
        got = store.get_session("s-upd")
        assert got is not None
        assert got.system_prompt == "new prompt" and got.ended_at == 1_800_000_000.5
        assert got.end_reason == "completed"
        assert got.metadata["keep"] == 1 and got.metadata["todo"] == ["x"]
        assert got.metadata["more"] == {"n": 2}, "a metadata dict is merged, not nested"

    def test_messages_replay_exactly(self, store: SessionStore) -> None:
        """Messages come back equal to what was appended, with every key in its order."""
        messages = replay_messages()
        self.session(store, "s-exact")
        for message in messages:
            store.append_message("s-exact", message)
        got = store.get_messages("s-exact")
        assert got == messages
        assert key_order(got) == key_order(messages), (
            "keys come back in the order they were appended"
        )

    def test_stored_messages_are_copies(self, store: SessionStore) -> None:
        """Changing an appended dict, or a returned one, changes nothing stored."""
        self.session(store, "s-copy")
        message: dict[str, Any] = {"role": "user", "content": "original", "_meta": {"n": 1}}
        store.append_message("s-copy", message)
        message["content"] = "changed after"
        message["_meta"]["n"] = 2
        first = store.get_messages("s-copy")
        first[0]["content"] = "changed the copy"
        assert store.get_messages("s-copy") == [
            {"role": "user", "content": "original", "_meta": {"n": 1}}
        ]

    def test_messages_keep_their_order_and_session(self, store: SessionStore) -> None:
        """Messages keep the order they were appended in, each session its own."""
        self.session(store, "s-one")
        self.session(store, "s-two")
        for index in range(120):
            target = "s-one" if index % 3 else "s-two"
            store.append_message(target, {"role": "user", "content": f"message {index}"})
        one = [m["content"] for m in store.get_messages("s-one")]
        two = [m["content"] for m in store.get_messages("s-two")]
        assert one == [f"message {i}" for i in range(120) if i % 3]
        assert two == [f"message {i}" for i in range(120) if not i % 3]

    def test_clean_messages_replace_lone_surrogates_only(self, store: Any) -> None:
        """``get_clean_messages`` replaces lone surrogates by U+FFFD and nothing else."""
        self.needs(store, "get_clean_messages")
        messages = replay_messages()
        self.session(store, "s-clean")
        for message in messages:
            store.append_message("s-clean", message)
        clean = store.get_clean_messages("s-clean")
        assert clean[:-2] == messages[:-2]
        assert clean[-2]["content"] == "a lone \ufffd surrogate"
        assert clean[-2]["_note"] == "\ufffd"
        assert clean[-1] == messages[-1]
        assert store.get_messages("s-clean") == messages  # the stored text is unchanged

    def test_unknown_sessions_and_twice_created_ones_are_refused(self, store: SessionStore) -> None:
        """Writing to a session never created, or creating one twice, is an error."""
        if not self.refuses_unknown_sessions:
            pytest.skip(f"{type(store).__name__} accepts writes to unknown sessions")
        with pytest.raises(HermesError):
            store.append_message("never-created", {"role": "user", "content": "x"})
        with pytest.raises(HermesError):
            store.update_session("never-created", title="x")
        self.session(store, "s-twice")
        with pytest.raises(HermesError):
            store.create_session(SessionInfo(id="s-twice"))
        assert store.get_messages("never-created") == []

    def test_a_title_comes_from_the_first_user_message(self, store: SessionStore) -> None:
        """An untitled session takes the first user message's text, on one line, as title."""
        if not self.titles_from_first_user_message:
            pytest.skip(f"{type(store).__name__} does not title sessions")
        self.session(store, "s-title")
        store.append_message("s-title", {"role": "system", "content": "system text"})
        store.append_message("s-title", {"role": "user", "content": "  How do I\nrotate logs? "})
        store.append_message("s-title", {"role": "user", "content": "a later question"})
        got = store.get_session("s-title")
        assert got is not None and got.title == "How do I rotate logs?"
        self.session(store, "s-titled", title="Given")
        store.append_message("s-titled", {"role": "user", "content": "not the title"})
        titled = store.get_session("s-titled")
        assert titled is not None and titled.title == "Given"

    def test_counters_follow_the_messages(self, store: SessionStore) -> None:
        """``message_count`` and ``tool_call_count`` count what was appended."""
        if not self.counts_in_metadata:
            pytest.skip(f"{type(store).__name__} keeps no counters")
        self.session(store, "s-count")
        for message in replay_messages():
            store.append_message("s-count", message)
        got = store.get_session("s-count")
        assert got is not None
        assert got.metadata["message_count"] == len(replay_messages())
        assert got.metadata["tool_call_count"] == 1

    # --- batch ------------------------------------------------------------------------------

    def test_a_batch_commits_its_writes_together(self, store: Any) -> None:
        """The writes of a ``batch()`` block are all there when it ends."""
        self.needs(store, "batch")
        with store.batch():
            store.create_session(SessionInfo(id="s-batch", started_at=time.time()))
            store.append_message("s-batch", {"role": "user", "content": "one"})
            store.append_message("s-batch", {"role": "assistant", "content": "two"})
            store.update_session("s-batch", end_reason="completed")
        got = store.get_session("s-batch")
        assert got is not None and got.end_reason == "completed"
        assert [m["content"] for m in store.get_messages("s-batch")] == ["one", "two"]

    def test_a_batch_that_raises_keeps_nothing(self, store: Any) -> None:
        """A block that raises keeps none of its writes."""
        self.needs(store, "batch")
        self.session(store, "s-kept", "before")
        with pytest.raises(RuntimeError):
            with store.batch():
                store.create_session(SessionInfo(id="s-never", started_at=time.time()))
                store.append_message("s-kept", {"role": "assistant", "content": "inside"})
                store.update_session("s-kept", end_reason="never")
                raise RuntimeError("the step failed")
        assert store.get_session("s-never") is None
        assert [m["content"] for m in store.get_messages("s-kept")] == ["before"]
        kept = store.get_session("s-kept")
        assert kept is not None and kept.end_reason is None

    def test_nested_batches_join_the_outer_one(self, store: Any) -> None:
        """An inner block's writes are committed (or dropped) with the outer block's."""
        self.needs(store, "batch")
        self.session(store, "s-nest")
        with pytest.raises(RuntimeError):
            with store.batch():
                with store.batch():
                    store.append_message("s-nest", {"role": "user", "content": "inner"})
                store.append_message("s-nest", {"role": "user", "content": "outer"})
                raise RuntimeError("after the inner block ended")
        assert store.get_messages("s-nest") == []
        with store.batch():
            with store.batch():
                store.append_message("s-nest", {"role": "user", "content": "inner"})
            store.append_message("s-nest", {"role": "user", "content": "outer"})
        assert [m["content"] for m in store.get_messages("s-nest")] == ["inner", "outer"]

    def test_a_batch_with_a_failing_write_keeps_nothing(self, store: Any) -> None:
        """A block with a write that fails raises, and keeps none of its writes."""
        self.needs(store, "batch")
        if not self.refuses_unknown_sessions:
            pytest.skip(f"{type(store).__name__} accepts writes to unknown sessions")
        self.session(store, "s-good")
        with pytest.raises(HermesError):
            with store.batch():
                store.append_message("s-good", {"role": "user", "content": "good"})
                store.append_message("s-missing", {"role": "user", "content": "bad"})
        assert store.get_messages("s-good") == []

    def test_another_threads_writes_are_not_part_of_a_batch(self, store: Any) -> None:
        """A block holds only its own thread's writes."""
        self.needs(store, "batch")
        self.session(store, "s-mine")
        self.session(store, "s-theirs")
        done = threading.Event()

        def other() -> None:
            store.append_message("s-theirs", {"role": "user", "content": "theirs"})
            done.set()

        with pytest.raises(RuntimeError):
            with store.batch():
                store.append_message("s-mine", {"role": "user", "content": "mine"})
                thread = threading.Thread(target=other)
                thread.start()
                thread.join(30)
                assert done.is_set()
                raise RuntimeError("this thread's block fails")
        assert store.get_messages("s-mine") == []
        assert [m["content"] for m in store.get_messages("s-theirs")] == ["theirs"]

    # --- lineage, listing, usage ------------------------------------------------------------

    def test_the_newest_in_a_lineage(self, store: Any) -> None:
        """``newest_in_lineage`` follows compression children of the same source."""
        self.needs(store, "newest_in_lineage")
        now = time.time()
        self.session(store, "root", started_at=now - 30, source="cli")
        self.session(store, "child", started_at=now - 20, source="cli", parent_session_id="root")
        self.session(
            store, "grandchild", started_at=now - 10, source="cli", parent_session_id="child"
        )
        self.session(
            store, "subagent", started_at=now - 5, source="subagent", parent_session_id="child"
        )
        self.session(store, "alone", started_at=now - 1, source="cli")
        assert store.newest_in_lineage("root") == "grandchild"
        assert store.newest_in_lineage("child") == "grandchild"
        assert store.newest_in_lineage("grandchild") == "grandchild"
        assert store.newest_in_lineage("alone") == "alone"
        assert store.newest_in_lineage("not-stored-yet") == "not-stored-yet"

    def test_listing_newest_first(self, store: Any) -> None:
        """``list_sessions`` and ``latest_session_id``: newest first, by source, paged."""
        self.needs(store, "list_sessions", "latest_session_id")
        now = time.time()
        self.session(store, "old", started_at=now - 300, source="cli")
        self.session(store, "mid", started_at=now - 200, source="cron")
        self.session(store, "new", started_at=now - 100, source="cli")
        assert [s.id for s in store.list_sessions()] == ["new", "mid", "old"]
        assert [s.id for s in store.list_sessions(source="cli")] == ["new", "old"]
        assert [s.id for s in store.list_sessions(limit=1, offset=1)] == ["mid"]
        assert store.latest_session_id() == "new"
        assert store.latest_session_id(source="cron") == "mid"
        assert store.latest_session_id(source="nobody") is None

    def test_finding_a_session_by_id_prefix_or_title(self, store: Any) -> None:
        """``find_sessions``: an exact id, else an id prefix (``%`` and ``_`` literal), else a
        title (any case)."""
        self.needs(store, "find_sessions")
        self.session(store, "20261207_ab_1", title="Deploy notes")
        self.session(store, "20261207_ab_2")
        self.session(store, "2026x%_c", title="Other")
        assert [s.id for s in store.find_sessions("20261207_ab_1")] == ["20261207_ab_1"]
        assert {s.id for s in store.find_sessions("20261207_ab")} == {
            "20261207_ab_1",
            "20261207_ab_2",
        }
        assert [s.id for s in store.find_sessions("2026x%")] == ["2026x%_c"]
        assert [s.id for s in store.find_sessions("deploy NOTES")] == ["20261207_ab_1"]
        assert store.find_sessions("nothing like it") == []

    def test_usage_adds_up(self, store: Any) -> None:
        """``add_usage`` adds token counts and costs to the session's totals."""
        self.needs(store, "add_usage")
        self.session(store, "s-usage")
        store.add_usage("s-usage", {"input_tokens": 100, "output_tokens": 7}, cost_usd=0.25)
        store.add_usage("s-usage", {"input_tokens": 1, "reasoning_tokens": 3, "other": 9})
        store.add_usage("s-usage", {"cache_read_tokens": 5}, cost_usd=0.5)
        got = store.get_session("s-usage")
        assert got is not None
        counts = {k: got.metadata[k] for k in ("input_tokens", "output_tokens", "reasoning_tokens")}
        assert counts == {"input_tokens": 101, "output_tokens": 7, "reasoning_tokens": 3}
        assert got.metadata["cache_read_tokens"] == 5
        assert got.metadata["estimated_cost_usd"] == pytest.approx(0.75)

    def test_set_title(self, store: Any) -> None:
        """``set_title`` sets a title on one line, and ``None`` clears it."""
        self.needs(store, "set_title")
        self.session(store, "s-set")
        store.set_title("s-set", "  A   new\ntitle ")
        got = store.get_session("s-set")
        assert got is not None and got.title == "A new title"
        store.set_title("s-set", None)
        cleared = store.get_session("s-set")
        assert cleared is not None and cleared.title is None

    # --- deletion, pruning, statistics ------------------------------------------------------

    def test_deleting_a_session(self, store: Any) -> None:
        """``delete_session`` removes a session, its messages and their search entries only."""
        self.needs(store, "delete_session")
        self.session(store, "s-del", "zanzibar quokka")
        self.session(store, "s-del-child", "quokka child", parent_session_id="s-del")
        assert store.delete_session("s-del") is True
        assert store.get_session("s-del") is None and store.get_messages("s-del") == []
        assert store.delete_session("s-del") is False
        assert [m["content"] for m in store.get_messages("s-del-child")] == ["quokka child"]
        if isinstance(store, SearchableSessionStore):
            assert store.search("zanzibar") == []

    def test_pruning_old_sessions(self, store: Any) -> None:
        """``prune`` deletes old sessions that have had no message since."""
        self.needs(store, "prune")
        day = 86400
        now = time.time()
        self.session(store, "s-ancient", started_at=now - 40 * day)
        self.session(store, "s-old-but-active", started_at=now - 40 * day)
        store.append_message("s-old-but-active", {"role": "user", "content": "still here"})
        self.session(store, "s-recent", started_at=now - 1 * day)
        assert store.prune(30) == 1
        assert store.get_session("s-ancient") is None
        assert store.get_session("s-old-but-active") is not None
        assert store.get_session("s-recent") is not None
        with pytest.raises(HermesError):
            store.prune(-1)

    def test_statistics(self, store: Any) -> None:
        """``stats`` counts sessions and messages and gives the oldest and newest start."""
        self.needs(store, "stats")
        self.session(store, "s-st1", "a", "b", started_at=1_700_000_000.0)
        self.session(store, "s-st2", "c", started_at=1_700_000_100.0)
        stats = store.stats()
        assert stats["sessions"] == 2 and stats["messages"] == 3
        assert stats["oldest"] == 1_700_000_000.0 and stats["newest"] == 1_700_000_100.0
        assert isinstance(stats["schema_version"], int)
