"""The session_search toolset, through its real entry point, against both of the host's stores
(SQLite and in memory) through the contract's ``SearchableSessionStore``."""

from __future__ import annotations

import pytest

from hermes_core.testing import (
    MemorySessionStore,
    SQLiteSessionStore,
    load_plugin,
    make_agent,
    text,
    tool_call,
)
from hermes_hookspecs import SearchableSessionStore, SessionInfo, SessionStore


@pytest.fixture(params=["sqlite", "memory"])
def store(request, tmp_path):
    if request.param == "memory":
        yield MemorySessionStore()
        return
    store = SQLiteSessionStore(tmp_path / "state.db")
    yield store
    store.close()


def test_both_stores_are_searchable(store):
    assert isinstance(store, SearchableSessionStore)


def past_session(store, session_id, *messages, started_at=1_700_000_000.0):
    store.create_session(SessionInfo(id=session_id, model="m", started_at=started_at))
    for message in messages:
        store.append_message(session_id, message)


def run_search(store, **args):
    agent = make_agent(
        tool_call("session_search", args),
        text("done"),
        plugins=["session_search"],
        session_store=store,
    )
    agent.chat("what did we do before?")
    result = agent.messages[2]
    assert result["role"] == "tool"
    return agent, result["content"]


def test_loads_through_its_entry_point():
    record = load_plugin("session_search")
    assert "hermes_register_toolsets" in record.hooks


def test_finds_a_past_session_with_id_title_date_and_snippet(store):
    past_session(
        store,
        "past-1",
        {"role": "user", "content": "Why is the postgres connection refused?"},
        {"role": "assistant", "content": "The server was not listening on port 5432."},
    )
    _, result = run_search(store, query="postgres")
    assert "session past-1" in result
    if isinstance(store, SQLiteSessionStore):  # it titles a session by its first user message
        assert "| Why is the postgres connection refused?" in result
    assert "2023-11-1" in result  # the date of started_at, local time
    assert "[postgres]" in result


def test_finds_cjk_urls_file_names_and_error_codes(store):
    past_session(
        store,
        "past-cjk",
        {"role": "user", "content": "数据库连接失败怎么办"},
        {"role": "tool", "tool_call_id": "c", "tool_name": "terminal",
         "content": "GET https://example.com/path/to/page -> error E1234 in config.yaml"},
    )  # fmt: skip
    for query, marked in [
        ("连接失败", "[连接失败]"),
        ("example.com/path", "[example.com/path]"),
        ("config.yaml", "[config.yaml]"),
        ("E1234", "[E1234]"),
    ]:
        _, result = run_search(store, query=query)
        assert "session past-cjk" in result, query
        assert marked in result, (query, result)


def test_leaves_out_the_current_session(store):
    past_session(store, "past-1", {"role": "user", "content": "tell me about kubernetes"})
    agent = make_agent(
        tool_call("session_search", {"query": "kubernetes"}),
        text("done"),
        plugins=["session_search"],
        session_store=store,
    )
    agent.chat("kubernetes again: what did we say?")
    result = agent.messages[2]["content"]
    assert "session past-1" in result
    assert agent.session_id not in result


def test_limits_sessions_and_snippets(store):
    for n in range(8):
        past_session(
            store,
            f"past-{n}",
            *[{"role": "user", "content": f"rabbitmq question number {i}"} for i in range(6)],
            started_at=1_700_000_000.0 + n,
        )
    _, result = run_search(store, query="rabbitmq", limit=2)
    assert result.count("session past-") == 2
    blocks = result.split("session past-")[1:]
    assert all(1 <= block.count("   - ") <= 3 for block in blocks)  # three snippets at most


def test_snippets_are_short(store):
    past_session(
        store,
        "past-long",
        {"role": "tool", "tool_call_id": "c", "tool_name": "terminal",
         "content": "filler " * 2000 + "needle " + "filler " * 2000},
    )  # fmt: skip
    _, result = run_search(store, query="needle")
    snippet_lines = [line for line in result.splitlines() if line.startswith("   - ")]
    assert snippet_lines and all(len(line) < 260 for line in snippet_lines)
    assert "[needle]" in result
    assert len(result) < 1000


def test_no_match_is_an_answer_not_an_error(store):
    past_session(store, "past-1", {"role": "user", "content": "hello"})
    _, result = run_search(store, query="zebra")
    assert result == "No past sessions match 'zebra'."


def test_query_text_is_not_fts_syntax(store):
    past_session(store, "past-1", {"role": "user", "content": 'he said "NEAR(a b)" AND OR *'})
    for query in ["NEAR(a b)", '"unbalanced', "AND OR NOT", "*", "a:b", "col:x ^y"]:
        _, result = run_search(store, query=query)
        assert not result.startswith("Error"), (query, result)


class StoreWithoutSearch:
    """A session store of the plain protocol: it keeps sessions but cannot search them."""

    def __init__(self):
        self.inner = MemorySessionStore()

    def create_session(self, session):
        self.inner.create_session(session)

    def get_session(self, session_id):
        return self.inner.get_session(session_id)

    def update_session(self, session_id, **fields):
        self.inner.update_session(session_id, **fields)

    def append_message(self, session_id, message):
        self.inner.append_message(session_id, message)

    def get_messages(self, session_id):
        return self.inner.get_messages(session_id)


def test_a_store_without_search_is_a_clear_tool_error():
    plain = StoreWithoutSearch()
    assert isinstance(plain, SessionStore) and not isinstance(plain, SearchableSessionStore)
    agent = make_agent(
        tool_call("session_search", {"query": "anything"}),
        text("done"),
        plugins=["session_search"],
        session_store=plain,
    )
    agent.chat("search")
    result = agent.messages[2]["content"]
    assert result.startswith("Error: session search is unavailable")
    assert "StoreWithoutSearch" in result and "cannot search" in result


def test_the_default_store_of_an_agent_without_a_home_searches_its_sessions():
    agent = make_agent(text("noted"), plugins=["session_search"])
    agent.chat("the flamingo password is pink")
    agent.session = None
    agent.session_id = "second"
    agent.client.add(tool_call("session_search", {"query": "flamingo"}), text("done"))
    agent.chat("what was the password?")
    result = agent.messages[-2]["content"]
    assert "[flamingo]" in result and "second" not in result.split("\n", 1)[1]


def test_a_limit_out_of_range_is_refused_by_the_schema(store):
    _, result = run_search(store, query="x", limit=50)
    assert result.startswith("Error")
    assert "limit" in result


def test_guidance_layer_only_when_the_tool_is_offered():
    from hermes_core.testing import make_agent, text

    agent = make_agent(text("ok"), plugins=["session_search"])
    agent.chat("hi")
    assert "session_search tool" in agent.client.last_request.system_prompt
    agent = make_agent(text("ok"), plugins=["session_search"], toolsets=[])
    agent.chat("hi")
    assert agent.client.last_request.system_prompt is None


def test_a_big_result_stays_within_its_size_limit(store):
    for n in range(20):
        past_session(
            store,
            f"past-{n:02d}",
            *[
                {"role": "user", "content": f"{'words ' * 60} flamingo {'more ' * 60} {i}"}
                for i in range(4)
            ],
            started_at=1_700_000_000.0 + n,
        )
    _, result = run_search(store, query="flamingo", limit=20)
    assert len(result) <= 8000
    assert "more matching sessions not shown; narrow the query" in result
    assert 5 <= result.count("session past-") < 20
