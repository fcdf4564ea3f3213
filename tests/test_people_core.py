"""People in the core: sessions record whose they are, a person's tools see only their own
sessions, a person's runs carry their limits, and a subagent acts for its caller's person."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes_core.host import Host
from hermes_core.loop.runner import HostRunner
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.session_store.memory_store import MemorySessionStore
from hermes_core.session_store.personal_view import PersonalView
from hermes_core.session_store.schema import APPLICATION_ID, MIGRATIONS
from hermes_core.testing import ScriptedModel, make_agent, tool_call
from hermes_hookspecs import (
    AgentTask,
    HermesError,
    PersonalSessionStore,
    PersonScope,
    PromptLayer,
    SearchableSessionStore,
    SessionInfo,
    Tool,
    ToolContext,
    Toolset,
    check_person,
    hookimpl,
    person_home,
)

ALICE_CANARY = "alice-canary-7d1f"
BOB_CANARY = "bob-canary-93aa"


def _seed(store: Any) -> None:
    for sid, person, words in (
        ("s-owner", None, "owner notes zebra"),
        ("s-alice", "alice", f"private {ALICE_CANARY} zebra"),
        ("s-bob", "bob", f"private {BOB_CANARY} zebra"),
    ):
        store.create_session(SessionInfo(id=sid, started_at=1.0, person=person))
        store.append_message(sid, {"role": "user", "content": words})


@pytest.fixture(params=["sqlite", "memory"])
def store(request: Any, tmp_path: Path) -> Any:
    made = SQLiteSessionStore(tmp_path / "state.db") if request.param == "sqlite" else None
    yield made if made is not None else MemorySessionStore()
    if made is not None:
        made.close()


# --- the contract's helpers ---------------------------------------------------------------------


def test_person_ids_are_folder_names_that_cannot_climb_out(tmp_path: Path) -> None:
    assert person_home(tmp_path, None) == tmp_path
    assert person_home(tmp_path, "alice") == tmp_path / "people" / "alice"
    for bad in ("../x", "Alice", "a/b", "", ".hidden", "a..b", "x" * 65, "a b"):
        with pytest.raises(HermesError, match="is not a person id"):
            check_person(bad)


def test_data_home_follows_the_person(tmp_path: Path) -> None:
    assert ToolContext(task_id="t", hermes_home=tmp_path).data_home == tmp_path
    ctx = ToolContext(task_id="t", hermes_home=tmp_path, person="bob")
    assert ctx.data_home == tmp_path / "people" / "bob"
    assert ToolContext(task_id="t", person="bob").data_home is None


# --- the stores -----------------------------------------------------------------------------


def test_a_store_keeps_each_sessions_person_and_searches_by_people(store: Any) -> None:
    assert isinstance(store, PersonalSessionStore)
    _seed(store)
    assert store.get_session("s-alice").person == "alice"
    assert store.get_session("s-owner").person is None
    assert {h.session_id for h in store.search("zebra")} == {"s-owner", "s-alice", "s-bob"}
    assert {h.session_id for h in store.search_people(["bob"], "zebra")} == {"s-bob"}
    assert store.search_people(["bob"], ALICE_CANARY) == []
    assert {h.session_id for h in store.search_people(["alice", None], "zebra")} == {
        "s-owner",
        "s-alice",
    }
    assert [s.id for s in store.list_people_sessions(["alice"])] == ["s-alice"]
    assert store.people_counts() == {None: 1, "alice": 1, "bob": 1}


def test_a_sessions_person_cannot_change_or_be_invalid(store: Any) -> None:
    _seed(store)
    with pytest.raises(HermesError):
        store.update_session("s-alice", person="bob")
    assert store.get_session("s-alice").person == "alice"
    with pytest.raises(HermesError, match="is not a person id"):
        store.create_session(SessionInfo(id="s-x", person="../bob"))


def test_forgetting_a_person_deletes_their_sessions_only(store: Any) -> None:
    _seed(store)
    assert store.forget_person("alice") == 1
    assert store.get_session("s-alice") is None
    assert store.search(ALICE_CANARY) == []
    assert store.get_session("s-bob") is not None and store.search(BOB_CANARY)
    assert store.forget_person("alice") == 0


def test_substring_search_keeps_to_the_people_too(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    _seed(store)
    store.append_message("s-alice", {"role": "user", "content": "see alice.example/secret-7"})
    assert store.search("alice.example/secret-7")
    assert store.search_people(["bob"], "alice.example/secret-7") == []
    assert store.search_people(["alice"], "alice.example/secret-7")


def test_a_version_3_store_gets_the_person_column_and_keeps_its_sessions(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for migrate in MIGRATIONS[:3]:
        migrate(conn)
    conn.execute("PRAGMA user_version = 3")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("INSERT INTO sessions (id, started_at, title) VALUES ('old', 1.0, 'kept')")
    conn.close()
    with SQLiteSessionStore(db) as store:
        old = store.get_session("old")
        assert old is not None and old.title == "kept" and old.person is None
        assert store.people_counts() == {None: 1}


# --- a person's view of the store ---------------------------------------------------------------


def test_a_personal_view_shows_only_the_persons_sessions(store: Any) -> None:
    _seed(store)
    view = PersonalView(store, "bob")
    assert isinstance(view, SearchableSessionStore)
    assert view.get_session("s-alice") is None and view.get_messages("s-alice") == []
    assert view.get_session("s-owner") is None
    assert view.get_messages("s-bob")[0]["content"].endswith("zebra")
    assert {h.session_id for h in view.search("zebra")} == {"s-bob"}
    with pytest.raises(HermesError, match="does not exist"):
        view.append_message("s-alice", {"role": "user", "content": "planted"})
    with pytest.raises(HermesError, match="does not exist"):
        view.update_session("s-alice", todo=["planted"])
    with pytest.raises(HermesError, match="belongs to the person"):
        view.create_session(SessionInfo(id="s-new", person="alice"))
    assert [m["content"] for m in store.get_messages("s-alice")] == [
        f"private {ALICE_CANARY} zebra"
    ]
    assert "todo" not in store.get_session("s-alice").metadata


def test_a_view_shares_search_with_the_people_given(store: Any) -> None:
    _seed(store)
    view = PersonalView(store, "bob", shared=["alice"])
    assert {h.session_id for h in view.search("zebra")} == {"s-alice", "s-bob"}
    with pytest.raises(HermesError):  # shared for reading, never for writing
        view.append_message("s-alice", {"role": "user", "content": "planted"})


class _PlainStore(MemorySessionStore):
    """A searchable store that cannot tell people apart."""

    search_people = None  # type: ignore[assignment]


def test_a_store_that_cannot_keep_people_apart_gives_a_person_no_search() -> None:
    store = _PlainStore()
    assert not isinstance(store, PersonalSessionStore)
    store.create_session(SessionInfo(id="s-alice", person="alice"))
    store.append_message("s-alice", {"role": "user", "content": ALICE_CANARY})
    with pytest.raises(HermesError, match="cannot keep people's sessions apart"):
        PersonalView(store, "bob").search(ALICE_CANARY)


# --- runs for a person -----------------------------------------------------------------------


class _Probe:
    """Tools that report what a person's call sees, a prompt layer that records whose
    session it builds, and (when given) a scope for every person."""

    def __init__(self, scope: Any = None) -> None:
        self.scope = scope
        self.contexts: list[ToolContext] = []
        self.prompt_people: list[str | None] = []
        self.scope_calls: list[str] = []

    def peek(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.contexts.append(ctx)
        store = ctx.session_store
        assert store is not None
        found = store.get_messages(args["session"]) if args.get("session") else []
        return f"person={ctx.person} messages={found}"

    def spawn(self, args: dict[str, Any], ctx: ToolContext) -> str:
        assert ctx.agents is not None
        outcome = ctx.agents.run(
            AgentTask(prompt="child", source="subagent", person="bob", shared_people=["bob"])
        )
        return outcome.session_id

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        params = {"type": "object", "properties": {"session": {"type": "string"}}}
        register(
            Toolset(
                name="probe",
                tools=[
                    Tool("peek", "see", params, handler=self.peek),
                    Tool("spawn", "child", params, handler=self.spawn),
                ],
            )
        )
        register(Toolset(name="other", tools=[Tool("other_tool", "x", params, self.peek)]))

    @hookimpl
    def hermes_prompt_layers(self, context: Any) -> PromptLayer:
        self.prompt_people.append(context.person)
        return PromptLayer(name="probe", text=f"for {context.person}")

    @hookimpl
    def hermes_person_scope(self, person: str, config: Any) -> Any:
        self.scope_calls.append(person)
        if isinstance(self.scope, Exception):
            raise self.scope
        return self.scope


def _runner(model: ScriptedModel, plugin: _Probe, tmp_path: Path) -> HostRunner:
    agent = make_agent(model=model, plugins=[plugin], toolsets=["probe", "other"])
    store = SQLiteSessionStore(tmp_path / "state.db")
    _seed(store)
    return HostRunner(
        Host(config=agent.config, plugins=agent.plugins, session_store=store, client=model)
    )


def test_a_persons_run_is_theirs_and_their_tools_see_only_their_sessions(tmp_path: Path) -> None:
    probe = _Probe()
    model = ScriptedModel(tool_call("peek", {"session": "s-alice"}), "done")
    runner = _runner(model, probe, tmp_path)
    outcome = runner.run(AgentTask(prompt="look", person="bob"))
    assert outcome.status == "completed"
    assert runner.session_store.get_session(outcome.session_id).person == "bob"
    (ctx,) = probe.contexts
    assert ctx.person == "bob"
    assert ALICE_CANARY not in model.requests[1].messages[-1]["content"]
    assert model.requests[1].messages[-1]["content"] == "person=bob messages=[]"
    assert probe.prompt_people == ["bob"]
    assert "for bob" in model.requests[0].messages[0]["content"]


def test_a_person_cannot_continue_someone_elses_session(tmp_path: Path) -> None:
    model = ScriptedModel("should not be asked")
    runner = _runner(model, _Probe(), tmp_path)
    before = runner.session_store.get_messages("s-alice")
    outcome = runner.run(AgentTask(prompt="go on", session_id="s-alice", person="bob"))
    assert outcome.status == "error" and "belongs to someone else" in outcome.error
    assert model.requests == []
    assert runner.session_store.get_messages("s-alice") == before
    with pytest.raises(HermesError, match="is not a person id"):
        check_person("Bob")
    invalid = runner.run(AgentTask(prompt="x", person="../alice"))
    assert invalid.status == "error" and "is not a person id" in invalid.error


def test_an_agent_acting_for_a_person_refuses_their_neighbours_session(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "state.db")
    _seed(store)
    agent = make_agent("never", session_store=store, session_id="s-alice", person="bob")
    result = agent.run_conversation("hello")
    assert result["exit_reason"] == "error" and "belongs to someone else" in result["error"]
    assert len(store.get_messages("s-alice")) == 1


def test_a_subagent_acts_for_its_callers_person_whatever_it_asks(tmp_path: Path) -> None:
    probe = _Probe()
    model = ScriptedModel(tool_call("spawn", {}), "child done", "parent done")
    runner = _runner(model, probe, tmp_path)
    outcome = runner.run(AgentTask(prompt="delegate", person="alice"))
    assert outcome.status == "completed"
    child_id = model.requests[2].messages[-1]["content"]
    child = runner.session_store.get_session(child_id)
    assert child is not None and child.person == "alice"
    assert child.parent_session_id == outcome.session_id
    assert probe.scope_calls == ["alice", "alice"]


def test_the_scope_narrows_toolsets_and_its_settings_win(tmp_path: Path) -> None:
    probe = _Probe(PersonScope(toolsets=["probe"], config_overrides={"agent.max_turns": 1}))
    model = ScriptedModel(tool_call("peek", {}), "summary")
    runner = _runner(model, probe, tmp_path)
    outcome = runner.run(
        AgentTask(prompt="x", person="alice", toolsets=["probe", "other"], max_iterations=50)
    )
    names = {t["function"]["name"] for t in model.requests[0].tools}
    assert names == {"peek", "spawn"}
    assert outcome.status == "max_iterations"  # the scope's budget beat the task's 50
    owner = runner.run(AgentTask(prompt="y", toolsets=["probe", "other"]))
    assert owner.status == "error"  # the script is spent: the owner's run was not limited
    assert "other_tool" in {t["function"]["name"] for t in model.requests[-1].tools}


def test_the_scopes_budget_never_raises_what_a_run_asked_for(tmp_path: Path) -> None:
    probe = _Probe(PersonScope(config_overrides={"agent.max_turns": 50}))
    model = ScriptedModel(tool_call("peek", {}), "summary")
    runner = _runner(model, probe, tmp_path)
    outcome = runner.run(AgentTask(prompt="x", person="alice", max_iterations=1))
    assert outcome.status == "max_iterations" and len(model.requests) == 2


def test_the_scope_shares_search_with_a_group(tmp_path: Path) -> None:
    probe = _Probe(PersonScope(shared_people=["alice"]))
    model = ScriptedModel(tool_call("peek", {"session": "s-alice"}), "done")
    runner = _runner(model, probe, tmp_path)
    runner.run(AgentTask(prompt="look", person="bob"))
    assert ALICE_CANARY in model.requests[1].messages[-1]["content"]


@pytest.mark.parametrize("answer", [RuntimeError("config unreadable"), "not a scope"])
def test_a_scope_that_cannot_be_read_fails_the_run_before_anything_runs(
    tmp_path: Path, answer: Any
) -> None:
    model = ScriptedModel("should not be asked")
    runner = _runner(model, _Probe(answer), tmp_path)
    outcome = runner.run(AgentTask(prompt="x", person="alice"))
    assert outcome.status == "error" and "nothing ran" in outcome.error
    assert model.requests == []


def test_only_toolsets_narrows_and_never_widens(tmp_path: Path) -> None:
    model = ScriptedModel("a", "b")
    runner = _runner(model, _Probe(), tmp_path)
    runner.run(AgentTask(prompt="x", toolsets=["probe", "other"], only_toolsets=["other"]))
    assert {t["function"]["name"] for t in model.requests[0].tools} == {"other_tool"}
    runner.run(AgentTask(prompt="y", toolsets=["probe"], only_toolsets=["probe", "other"]))
    assert {t["function"]["name"] for t in model.requests[1].tools} == {"peek", "spawn"}


# --- the owner's view on the command line ---------------------------------------------------


def test_hermes_sessions_marks_and_filters_by_person(hermes_cli: Any, hermes_home: Path) -> None:
    store = SQLiteSessionStore(hermes_home / "sessions.db")
    _seed(store)
    store.close()
    listed = hermes_cli("--plugins", "", "sessions", "list")
    assert listed.exit_code == 0, listed.stderr
    lines = {line.split()[0]: line.split()[3] for line in listed.stdout.splitlines()[1:]}
    assert lines == {"s-owner": "owner", "s-alice": "alice", "s-bob": "bob"}
    only = hermes_cli("--plugins", "", "sessions", "search", "zebra", "--person", "bob")
    assert "s-bob" in only.stdout and "s-alice" not in only.stdout
    bad = hermes_cli("--plugins", "", "sessions", "list", "--person", "../x")
    assert bad.exit_code == 1 and "is not a person id" in bad.stderr
    assert "Traceback" not in bad.stderr
