"""The search and people parts of the session store behaviour suite (see
:mod:`hermes_core.testing.store_suite`)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from hermes_hookspecs import (
    HermesError,
    SessionInfo,
    SessionStore,
)

from .store_checks import StoreChecks

__all__ = ["PeopleBehaviour", "SearchBehaviour"]


class SearchBehaviour(StoreChecks):
    """Search basics that hold for any :class:`~hermes_hookspecs.SearchableSessionStore`."""

    # --- search -----------------------------------------------------------------------------

    def _corpus(self, store: SessionStore) -> None:
        """Sessions for the search tests."""
        now = time.time()
        self.session(
            store,
            "s-db",
            "How do I connect to the postgres database?",
            "Use a connection string; see /etc/app/config.yaml for the credentials.",
            started_at=now - 50,
            title="Database help",
        )
        self.session(
            store,
            "s-err",
            "The build failed with ERR_E1234 again",
            "That error code means the cache is stale.",
            started_at=now - 40,
        )
        self.session(
            store, "s-cjk", "数据库连接失败了怎么办", "检查防火墙设置", started_at=now - 30
        )
        self.session(
            store,
            "s-words",
            "the red car is parked",
            "a car that is red",
            "alpha beta gamma",
            "alpha only here",
            started_at=now - 20,
        )
        store.create_session(SessionInfo(id="s-tool", started_at=now - 10))
        store.append_message("s-tool", {"role": "user", "content": "please look"})
        store.append_message(
            "s-tool",
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_9",
                        "type": "function",
                        "function": {
                            "name": "web_extract",
                            "arguments": '{"url": "https://example.com/zebra-docs"}',
                        },
                    }
                ],
            },
        )

    @staticmethod
    def _texts(store: SessionStore, hits: list[Any]) -> list[str]:
        """Each hit as ``session:role:snippet``, for the messages of failed assertions."""
        out = []
        for hit in hits:
            assert hit.snippet, "every hit has a snippet"
            out.append(f"{hit.session_id}:{hit.role}:{hit.snippet[:60]}")
        return out

    def test_search_finds_a_word(self, store: Any) -> None:
        """A word finds its message, with the session's title and a marked snippet."""
        store = self.searchable(store)
        self._corpus(store)
        hits = store.search("postgres")
        assert [h.session_id for h in hits] == ["s-db"], self._texts(store, hits)
        hit = hits[0]
        assert hit.role == "user" and hit.title == "Database help"
        assert hit.started_at > 0 and "[" in hit.snippet and "postgres" in hit.snippet.lower()

    def test_search_wants_every_term_before_any(self, store: Any) -> None:
        """Messages holding every term come first; when none does, any term may match."""
        store = self.searchable(store)
        self._corpus(store)
        every = store.search("alpha beta")
        assert [h.snippet.count("[") >= 2 for h in every] == [True], self._texts(store, every)
        either = store.search("alpha zzzunknownword")
        assert len(either) == 2, self._texts(store, either)

    def test_search_quoted_phrases(self, store: Any) -> None:
        """A quoted phrase matches its words in that order only."""
        store = self.searchable(store)
        self._corpus(store)
        phrase = store.search('"red car"')
        assert len(phrase) == 1 and phrase[0].role == "user", self._texts(store, phrase)
        words = store.search("red car")
        assert len(words) == 2, self._texts(store, words)

    def test_search_inside_file_names_urls_and_codes(self, store: Any) -> None:
        """File names, error codes, word prefixes and CJK are found inside longer text."""
        store = self.searchable(store)
        self._corpus(store)
        assert [h.session_id for h in store.search("config.yaml")] == ["s-db"]
        assert [h.session_id for h in store.search("E1234")] == ["s-err"]
        assert [h.session_id for h in store.search("connect")] == ["s-db"] * 2
        assert [h.session_id for h in store.search("数据库")] == ["s-cjk"]

    def test_search_reads_tool_calls(self, store: Any) -> None:
        """The tool calls' names and arguments are searched."""
        store = self.searchable(store)
        self._corpus(store)
        hits = store.search("zebra")
        assert [(h.session_id, h.role) for h in hits] == [("s-tool", "assistant")]

    def test_search_leaves_a_session_out_and_keeps_to_the_limit(self, store: Any) -> None:
        """``exclude_session`` and ``limit`` are kept; a message is one hit."""
        store = self.searchable(store)
        self._corpus(store)
        assert store.search("connect", exclude_session="s-db") == []
        assert len(store.search("car", limit=1)) == 1
        ids = [h.message_id for h in store.search("a")]
        assert len(ids) == len(set(ids)), "a message is one hit"

    def test_search_without_a_match_or_a_query(self, store: Any) -> None:
        """No match, or an empty query, gives no hits."""
        store = self.searchable(store)
        self._corpus(store)
        assert store.search("qwertyuiopasdf") == []
        assert store.search("") == [] and store.search("   ") == []


class PeopleBehaviour(StoreChecks):
    """What a :class:`~hermes_hookspecs.PersonalSessionStore` keeps apart."""

    # --- people -----------------------------------------------------------------------------

    def _people(self, store: SessionStore) -> None:
        now = time.time()
        self.session(store, "owner-1", "banana bread recipe", started_at=now - 50)
        self.session(
            store, "alice-1", "banana secret canary-7781", started_at=now - 40, person="alice"
        )
        self.session(store, "alice-2", "alice plans", started_at=now - 30, person="alice")
        self.session(store, "bob-1", "banana for bob", started_at=now - 20, person="bob")

    def test_a_sessions_person_is_kept_and_never_changes(self, store: Any) -> None:
        """A session's person is kept, cannot change, and must be a valid person id."""
        self.personal(store)
        self._people(store)
        got = store.get_session("alice-1")
        assert got is not None and got.person == "alice"
        with pytest.raises(HermesError):
            store.update_session("alice-1", person="bob")
        still = store.get_session("alice-1")
        assert still is not None and still.person == "alice"
        with pytest.raises(HermesError):
            store.create_session(SessionInfo(id="bad-person", person="../etc"))
        assert store.get_session("bad-person") is None

    def test_searches_of_some_people_see_only_theirs(self, store: Any) -> None:
        """``search_people`` finds only the sessions of the people it is given."""
        personal = self.personal(store)
        self._people(store)
        groups: dict[str, list[str | None]] = {
            "bob": ["bob"],
            "owner": [None],
            "alice+bob": ["alice", "bob"],
            "nobody": [],
        }
        sessions = {
            who: {h.session_id for h in personal.search_people(people, "banana")}
            for who, people in groups.items()
        }
        assert sessions == {
            "bob": {"bob-1"},
            "owner": {"owner-1"},
            "alice+bob": {"alice-1", "bob-1"},
            "nobody": set(),
        }
        assert personal.search_people(["bob"], "canary-7781") == []
        assert personal.search_people(["bob"], "alice") == []
        with pytest.raises(HermesError):
            personal.search_people(["../x"], "banana")

    def test_listings_and_counts_by_person(self, store: Any) -> None:
        """``list_people_sessions`` and ``people_counts`` keep to the people given."""
        personal = self.personal(store)
        self._people(store)
        assert [s.id for s in personal.list_people_sessions(["alice"])] == ["alice-2", "alice-1"]
        assert [s.id for s in personal.list_people_sessions([None, "bob"])] == [
            "bob-1",
            "owner-1",
        ]
        assert personal.list_people_sessions([]) == []
        assert personal.people_counts() == {None: 1, "alice": 2, "bob": 1}

    def test_forgetting_a_person(self, store: Any) -> None:
        """``forget_person`` deletes that person's sessions, messages and search entries only."""
        personal = self.personal(store)
        self._people(store)
        assert personal.forget_person("alice") == 2
        assert store.get_session("alice-1") is None and store.get_messages("alice-1") == []
        assert personal.search("canary-7781") == []
        assert personal.people_counts() == {None: 1, "bob": 1}
        assert {h.session_id for h in personal.search("banana")} == {"owner-1", "bob-1"}
        assert personal.forget_person("alice") == 0
