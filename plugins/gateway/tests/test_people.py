"""People of one gateway, through the real gateway (the API server and the signed webhook)
against the test kit's fake model server, with the real SQLite session store: alice and bob
each try to reach what the other keeps (memory, sessions, skills, todo lists, files, sessions
by id), and every attempt leaves the other's canary unread. Also: one person behind two
platform ids, a group that shares its sessions, guests and unknown senders, per-person API
keys, toolsets narrowed per person and approvals that never inherit ``yolo``."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hermes_gateway.belongings import belongings_of
from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
from hermes_gateway.people import guest_id
from hermes_gateway.serve import GatewayThread, build
from hermes_gateway.webhook import sign

from hermes_core.testing import FakeLLM, SQLiteSessionStore, make_runner, tool_call

KEY = "shared-key-123"
SECRET = "webhook-secret"
ALICE_KEY = "alice-own-key-456"

TOOLSETS = ["memory", "session_search", "todo", "skills", "delegation", "file"]
PLUGINS = ["gateway", "openai", "local", "memory", "session_search", "todo", "skills"]
PLUGINS += ["delegation", "file"]

# Canaries: written by one person, never to be seen in anything the other's turns sent.
MEMORY_CANARY = "lockercode-7f3a9c1e"
SESSION_CANARY = "passport-55c0ffee91"
SKILL_CANARY = "vaultcode-d00dfeed42"
TODO_CANARY = "ringshop-0badcafe17"
FILE_CANARY = "diary-1337beef8080"

OFF = {"sandbox": "off"}
"""This machine may have no sandbox: the people of these tests run without one, as the owner
chose explicitly for them (the home guard, not the sandbox, keeps the file tools apart)."""


@dataclass
class Reply:
    """One HTTP answer of the API server, with the model requests its turn made."""

    status: int
    body: dict[str, Any]
    session: str | None
    requests: list[Any]

    @property
    def text(self) -> str:
        return str(self.body["choices"][0]["message"]["content"])

    def sent(self) -> str:
        """Everything the turn sent to the model, as one string."""
        return "\n".join(json.dumps(r.json) for r in self.requests)


class Served:
    """A gateway serving ``gateway_section`` (people included) against ``server``."""

    def __init__(
        self,
        home: Path,
        server: FakeLLM,
        gateway_section: Mapping[str, Any],
        config: Mapping[str, Any] | None = None,
        plugins: list[str] | None = None,
    ) -> None:
        self.home = home
        self.server = server
        self.config = {
            "model": {
                "provider": "custom",
                "base_url": server.openai_base_url,
                "default": "fake-model",
                "api_key": "test",
            },
            "toolsets": TOOLSETS,
            "agent": {"api_max_retries": 0},
            "gateway": dict(gateway_section),
            **(config or {}),
        }
        self.runner = make_runner(
            plugins=plugins or PLUGINS, home=home, config=self.config, scripted=False
        )
        factories = {
            name: entry.value
            for name, entry in self.runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()
        }
        self.log: list[str] = []
        gateway = build(
            home,
            self.config,
            self.runner,
            factories,
            self.log.append,
            session_store=lambda: self.runner.host.session_store,
        )
        self.thread = GatewayThread(gateway, home).start()
        self.gateway = gateway

    def stop(self) -> None:
        self.thread.stop()

    def post(self, path: str, body: dict[str, Any], key: str = KEY, **headers: str) -> Reply:
        """POST ``body`` to the API server; the answer and the model requests it made."""
        before = len(self.server.model_requests)
        request = urllib.request.Request(
            self.gateway.adapters["api"].url.removesuffix("/v1") + path,
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {key}",
                **headers,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, raw, session = (
                    answer.status,
                    answer.read(),
                    answer.headers.get("X-Hermes-Session-Id"),
                )
        except urllib.error.HTTPError as exc:
            status, raw, session = exc.code, exc.read(), exc.headers.get("X-Hermes-Session-Id")
        return Reply(status, json.loads(raw or b"{}"), session, self.server.model_requests[before:])

    def ask(
        self, user: str, text: str, *steps: Any, key: str = KEY, session: str | None = None
    ) -> Reply:
        """One chat completion as ``user``, the fake model answering with ``steps``."""
        self.server.add(*steps)
        headers = {"X-Hermes-Session-Id": session} if session else {}
        body = {"model": "m", "user": user, "messages": [{"role": "user", "content": text}]}
        return self.post("/v1/chat/completions", body, key, **headers)

    def store(self) -> SQLiteSessionStore:
        return SQLiteSessionStore(self.home / "sessions.db")


def _api(**extra: Any) -> dict[str, Any]:
    return {"api": {"adapter": "api_server", "port": 0, "key": KEY, **extra}}


ALICE_AND_BOB = {
    "alice": {"ids": ["api:alice", "hooks:alice"], **OFF},
    "bob": {"ids": ["api:bob", "hooks:bob"], **OFF},
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with FakeLLM() as server:
        gateway = Served(tmp_path, server, {"platforms": _api(), "users": ALICE_AND_BOB})
        try:
            yield gateway
        finally:
            gateway.stop()


def _tool_results(reply: Reply) -> list[str]:
    """The tool results the model received during the turn (all are in its last request)."""
    last = reply.requests[-1].json["messages"]
    start = max(i for i, m in enumerate(last) if m["role"] == "user")
    return [str(m["content"]) for m in last[start:] if m["role"] == "tool"]


def _system(reply: Reply) -> str:
    return str(reply.requests[0].json["messages"][0]["content"])


def _tools(reply: Reply) -> set[str]:
    return {t["function"]["name"] for t in reply.requests[0].json.get("tools") or []}


# --- memory -------------------------------------------------------------------------------------


def test_bob_never_sees_alices_memory(served: Served):
    saved = served.ask(
        "alice",
        "remember my locker code",
        tool_call("memory", {"action": "add", "target": "user", "content": MEMORY_CANARY}),
        "saved",
    )
    assert saved.status == 200 and "Entry added" in _tool_results(saved)[0]
    # bob's next conversation: the system prompt the model received carries nothing of alice's
    hello = served.ask("bob", "hi", "hello bob")
    assert hello.status == 200 and MEMORY_CANARY not in hello.sent()
    # bob's memory tool cannot reach her entry either
    tries = served.ask(
        "bob",
        "change the locker entry",
        tool_call(
            "memory",
            {"action": "replace", "target": "user", "old_text": "lockercode", "content": "x"},
        ),
        tool_call("memory", {"action": "remove", "target": "user", "old_text": "lockercode"}),
        "done",
    )
    assert tries.status == 200
    assert MEMORY_CANARY not in tries.sent()
    assert all("lockercode" in r and "Error" in r for r in _tool_results(tries)), tries.requests
    # alice's next conversation still has it: it was saved, and saved as hers
    again = served.ask("alice", "hi", "hello alice")
    assert MEMORY_CANARY in _system(again)


def test_one_person_behind_two_platform_ids_has_one_memory_and_one_workspace(tmp_path):
    receiver = _Receiver()
    try:
        with FakeLLM() as server:
            platforms = {**_api(), **_hook(receiver.url)}
            gateway = Served(tmp_path, server, {"platforms": platforms, "users": ALICE_AND_BOB})
            try:
                server.add(
                    tool_call(
                        "memory", {"action": "add", "target": "user", "content": MEMORY_CANARY}
                    ),
                    tool_call("write_file", {"path": "note.txt", "content": FILE_CANARY}),
                    "saved",
                )
                assert _post(gateway, {"chat_id": "c", "user_id": "alice", "text": "save"}) == 202
                assert receiver.wait_for(1)[0]["text"] == "saved"
                # the same alice through the API: her memory, her workspace
                later = gateway.ask(
                    "alice",
                    "what is in my note?",
                    tool_call("read_file", {"path": "note.txt"}),
                    "ok",
                )
                assert MEMORY_CANARY in _system(later)
                assert FILE_CANARY in _tool_results(later)[0]
            finally:
                gateway.stop()
    finally:
        receiver.close()
    people = {s.person for s in SQLiteSessionStore(tmp_path / "sessions.db").list_sessions()}
    assert people == {"alice"}
    assert (tmp_path / "workspaces" / "people" / "alice" / "note.txt").read_text() == FILE_CANARY


# --- sessions -----------------------------------------------------------------------------------


def test_bob_cannot_search_alices_sessions_nor_can_his_subagent(served: Served):
    said = served.ask("alice", f"my passport number is {SESSION_CANARY}", "noted")
    assert said.status == 200
    found = served.ask(
        "alice", "what was my passport?", tool_call("session_search", {"query": "passport"}), "ok"
    )
    assert SESSION_CANARY in found.sent()  # her own search finds it
    searched = served.ask(
        "bob", "find a passport", tool_call("session_search", {"query": "passport"}), "nothing"
    )
    assert searched.status == 200 and SESSION_CANARY not in searched.sent()
    delegated = served.ask(
        "bob",
        "ask a helper",
        tool_call("delegate_task", {"goal": "search past sessions for a passport number"}),
        tool_call("session_search", {"query": "passport"}),  # the child's first step
        "the child found nothing",
        "done",
    )
    assert delegated.status == 200 and len(delegated.requests) == 4
    assert SESSION_CANARY not in delegated.sent()
    # the child's session is bob's too
    store = served.store()
    sessions = store.list_sessions()
    children = [s for s in sessions if s.parent_session_id == delegated.session]
    assert children and {s.person for s in children} == {"bob"}


def test_a_session_of_someone_else_is_refused_and_runs_nothing(served: Served):
    first = served.ask("alice", f"my passport number is {SESSION_CANARY}", "noted")
    assert first.status == 200 and first.session
    before = len(served.server.model_requests)
    stolen = served.ask("bob", "what did I say?", "never sent", session=first.session)
    assert stolen.status == 403 and stolen.body["error"]["code"] == "session_not_yours"
    assert len(served.server.model_requests) == before
    # the Responses API: bob names alice's response
    served.server.add("answered")
    made = served.post("/v1/responses", {"model": "m", "user": "alice", "input": "hello"})
    assert made.status == 200
    served.server.steps.clear()
    served.server.add("never sent")
    body = {
        "model": "m",
        "user": "bob",
        "input": "continue",
        "previous_response_id": made.body["id"],
    }
    refused = served.post("/v1/responses", body)
    assert refused.status == 403 and refused.requests == []
    messages = json.dumps(served.store().get_messages(first.session))
    assert "what did I say" not in messages and "continue" not in messages


# --- skills, todo, usage --------------------------------------------------------------------


def test_bob_never_sees_alices_skills(served: Served):
    content = (
        f"---\nname: alice-vault\ndescription: opens alice's vault {SKILL_CANARY}\n---\n"
        f"The vault code is {SKILL_CANARY}."
    )
    made = served.ask(
        "alice",
        "save a skill",
        tool_call("skill_manage", {"action": "create", "name": "alice-vault", "content": content}),
        "saved",
    )
    assert made.status == 200 and "Error" not in _tool_results(made)[0], _tool_results(made)
    assert SKILL_CANARY in _system(served.ask("alice", "hi", "hello"))  # her skills index
    looked = served.ask(
        "bob",
        "which skills are there?",
        tool_call("skills_list", {}),
        tool_call("skill_view", {"name": "alice-vault"}),
        "none of use",
    )
    assert looked.status == 200 and SKILL_CANARY not in looked.sent()
    assert "alice-vault" not in _system(looked)


def test_bob_never_sees_alices_todo_list_and_usage_is_per_person(served: Served):
    items = [{"id": "1", "content": f"buy a ring {TODO_CANARY}", "status": "pending"}]
    wrote = served.ask("alice", "plan", tool_call("todo", {"todos": items}), "planned")
    assert TODO_CANARY in _tool_results(wrote)[0]
    read = served.ask("bob", "my list?", tool_call("todo", {}), "empty")
    assert read.status == 200 and TODO_CANARY not in read.sent()
    store = served.store()
    counts = store.people_counts()
    assert counts.get("alice") == 1 and counts.get("bob") == 1 and None not in counts
    people = served.gateway.people
    alice = belongings_of(served.home, store, people, "alice")
    bob = belongings_of(served.home, store, people, "bob")
    assert alice.session_ids == [wrote.session] and bob.session_ids == [read.session]
    assert alice.tokens > 0 and bob.tokens > 0


# --- files --------------------------------------------------------------------------------------


def test_bob_cannot_read_alices_workspace_with_the_file_tools(served: Served):
    wrote = served.ask(
        "alice",
        "keep a diary",
        tool_call("write_file", {"path": "diary.txt", "content": FILE_CANARY}),
        "kept",
    )
    assert wrote.status == 200
    diary = served.home / "workspaces" / "people" / "alice" / "diary.txt"
    assert diary.read_text() == FILE_CANARY
    attempts = [
        tool_call("read_file", {"path": str(diary)}),
        tool_call("read_file", {"path": "../alice/diary.txt"}),
        tool_call("search_files", {"pattern": "diary", "path": str(served.home)}),
        tool_call("search_files", {"pattern": "diary", "path": "/"}),
        tool_call("write_file", {"path": str(diary), "content": "bob was here"}),
    ]
    tried = served.ask("bob", "read alice's diary", *attempts, "could not")
    assert tried.status == 200 and len(tried.requests) == len(attempts) + 1
    assert FILE_CANARY not in tried.sent()
    results = _tool_results(tried)
    assert len(results) == len(attempts)
    assert all(r.startswith("BLOCKED:") and "person-home" in r for r in results), results
    assert diary.read_text() == FILE_CANARY
    # his own workspace is his to use
    own = served.ask(
        "bob", "write mine", tool_call("write_file", {"path": "mine.txt", "content": "b"}), "ok"
    )
    assert not _tool_results(own)[0].startswith("BLOCKED")
    assert (served.home / "workspaces" / "people" / "bob" / "mine.txt").read_text() == "b"


def _sandbox_missing() -> str | None:
    try:
        from hermes_env_sandbox import unavailable_reason
    except ImportError:
        return "the sandbox library is not installed"
    return unavailable_reason()


@pytest.mark.skipif(_sandbox_missing() is not None, reason=f"no sandbox: {_sandbox_missing()}")
def test_bob_cannot_read_alices_workspace_from_the_terminal(tmp_path):
    users = {"alice": {"ids": ["api:alice"]}, "bob": {"ids": ["api:bob"]}}
    with FakeLLM() as server:
        gateway = Served(
            tmp_path,
            server,
            {"platforms": _api(), "users": users},
            config={"toolsets": ["terminal", "file"]},
            plugins=[*PLUGINS, "terminal", "approvals"],
        )
        try:
            wrote = gateway.ask(
                "alice",
                "keep a diary",
                tool_call("write_file", {"path": "diary.txt", "content": FILE_CANARY}),
                "kept",
            )
            assert wrote.status == 200
            diary = tmp_path / "workspaces" / "people" / "alice" / "diary.txt"
            assert diary.read_text() == FILE_CANARY
            tried = gateway.ask(
                "bob",
                "read it",
                tool_call("terminal", {"command": f"cat {diary}; ls {diary.parent}"}),
                "could not",
            )
        finally:
            gateway.stop()
    assert tried.status == 200 and FILE_CANARY not in tried.sent()
    [result] = _tool_results(tried)
    assert "No such file or directory" in result  # the sandbox hides the home, hers included


# --- groups, guests, keys ---------------------------------------------------------------------


def test_a_group_that_shares_finds_its_members_sessions_and_no_one_elses(tmp_path):
    users = {
        "alice": {"ids": ["api:alice"], "groups": ["team"], **OFF},
        "carol": {"ids": ["api:carol"], "groups": ["team"], **OFF},
        "bob": {"ids": ["api:bob"], **OFF},
    }
    section = {"platforms": _api(), "users": users, "groups": {"team": {"share_sessions": True}}}
    with FakeLLM() as server:
        gateway = Served(tmp_path, server, section)
        try:
            assert gateway.ask("alice", f"passport {SESSION_CANARY}", "noted").status == 200
            search = tool_call("session_search", {"query": "passport"})
            carol = gateway.ask("carol", "alice's passport?", search, "found")
            bob = gateway.ask("bob", "alice's passport?", search, "nothing")
        finally:
            gateway.stop()
    assert SESSION_CANARY in carol.sent()
    assert SESSION_CANARY not in bob.sent()


def test_unknown_senders_are_refused_and_allow_listed_ones_are_guests(tmp_path):
    receiver = _Receiver()
    try:
        with FakeLLM() as server:
            platforms = {**_api(), **_hook(receiver.url, allowed_users=["dave"])}
            section = {"platforms": platforms, "users": ALICE_AND_BOB, "guests": OFF}
            gateway = Served(tmp_path, server, section)
            try:
                refused = gateway.ask("mallory", "hi", "never sent")
                assert refused.status == 403 and refused.requests == []
                body = {"chat_id": "c", "user_id": "mallory", "text": "hi"}
                assert _post(gateway, body) == 403
                server.steps.clear()
                server.add("hello guest")
                assert _post(gateway, {"chat_id": "c", "user_id": "dave", "text": "hi"}) == 202
                assert receiver.wait_for(1)[0]["text"] == "hello guest"
                assert _post(gateway, {"chat_id": "c", "user_id": "dave", "text": "/status"}) == 202
                status = receiver.wait_for(2)[-1]["text"]
            finally:
                gateway.stop()
    finally:
        receiver.close()
    dave = guest_id("hooks", "dave")
    assert f"Person: {dave} (a guest)" in status
    [session] = SQLiteSessionStore(tmp_path / "sessions.db").list_sessions()
    assert session.person == dave
    # a guest's workspace keeps the folder name it had before people existed
    from hermes_gateway.core import workspace_name

    assert (tmp_path / "workspaces" / workspace_name("hooks", "dave")).is_dir()


def test_guests_can_be_refused_whatever_the_allow_list_says(tmp_path):
    with FakeLLM("never sent") as server:
        section = {
            "platforms": _api(allow_all=True),
            "users": ALICE_AND_BOB,
            "guests": {"allowed": False},
        }
        gateway = Served(tmp_path, server, section)
        try:
            refused = gateway.ask("dave", "hi")
            allowed = gateway.ask("alice", "hi")
        finally:
            gateway.stop()
    assert refused.status == 403 and refused.requests == []
    assert allowed.status == 200 and allowed.text == "never sent"  # the step dave did not use


def test_a_persons_own_api_key_beats_the_user_field(tmp_path, monkeypatch):
    monkeypatch.setenv("ALICE_API_KEY", ALICE_KEY)
    users = {
        "alice": {"ids": ["api:alice"], "api_key_env": "ALICE_API_KEY", **OFF},
        "bob": {"ids": ["api:bob"], **OFF},
    }
    with FakeLLM() as server:
        gateway = Served(tmp_path, server, {"platforms": _api(), "users": users})
        try:
            remember = tool_call(
                "memory", {"action": "add", "target": "user", "content": MEMORY_CANARY}
            )
            keyed = gateway.ask("bob", "save", remember, "saved", key=ALICE_KEY)
            shared = gateway.ask("alice", "hi", "never sent")  # the shared key speaks for alice
            wrong = gateway.ask("alice", "hi", key="not-a-key")
            bob = gateway.ask("bob", "hi", "hello bob")
            alice = gateway.ask("whoever", "hi", "hello alice", key=ALICE_KEY)
        finally:
            gateway.stop()
    assert keyed.status == 200
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    assert store.get_session(str(keyed.session)).person == "alice"
    assert shared.status == 403 and shared.requests == []
    assert wrong.status == 401
    assert bob.status == 200 and MEMORY_CANARY not in bob.sent()
    assert MEMORY_CANARY in _system(alice)


def test_a_persons_key_that_is_not_set_stops_the_gateway_with_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("NOBODY_KEY", raising=False)
    users = {"alice": {"ids": ["api:alice"], "api_key_env": "NOBODY_KEY"}}
    from hermes_hookspecs import HermesError

    with FakeLLM() as server, pytest.raises(HermesError, match="NOBODY_KEY, which is not set"):
        Served(tmp_path, server, {"platforms": _api(), "users": users})


# --- what each person may do -------------------------------------------------------------------


def test_toolsets_narrow_per_person_and_group_and_never_widen(tmp_path):
    users = {
        "bob": {"ids": ["api:bob"], "toolsets": ["file"], **OFF},
        "carol": {"ids": ["api:carol"], "groups": ["team"], "toolsets": ["memory", "todo"]},
        "dave": {"ids": ["api:dave"], "toolsets": ["terminal", "web"], "model": "dave-model"},
        "erin": {"ids": ["api:erin"], "memory": False},
    }
    groups = {"team": {"toolsets": ["memory", "file"], "model": "team-model"}}
    with FakeLLM() as server:
        section = {"platforms": _api(), "users": users, "groups": groups}
        gateway = Served(tmp_path, server, section, plugins=[*PLUGINS, "terminal"])
        try:
            bob = gateway.ask("bob", "hi", "ok")
            carol = gateway.ask("carol", "hi", "ok")
            dave = gateway.ask("dave", "hi", "ok")
            erin = gateway.ask("erin", "hi", "ok")
            alice = gateway.ask("nobody", "hi", "never sent")
        finally:
            gateway.stop()
    assert _tools(bob) == {"read_file", "write_file", "patch", "search_files"}
    assert _tools(carol) == {"memory"}  # her list and her group's, intersected
    assert carol.requests[0].json["model"] == "team-model"
    assert _tools(dave) == set()  # terminal and web are not enabled for anyone: no widening
    assert dave.requests[0].json["model"] == "dave-model"
    assert "memory" not in _tools(erin) and "todo" in _tools(erin)
    assert "MEMORY" not in _system(erin) and "USER PROFILE" not in _system(erin)
    assert alice.status == 403


def test_approvals_never_inherit_yolo(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    home = tmp_path / "home"
    users = {
        "alice": {"ids": ["api:alice"], "approvals": "yolo", **OFF},
        "bob": {"ids": ["api:bob"], **OFF},
        "carol": {"ids": ["api:carol"], "groups": ["trusted"], **OFF},
    }
    section = {
        "platforms": _api(),
        "users": users,
        "groups": {"trusted": {"approvals": "yolo"}},
    }
    with FakeLLM() as server:
        gateway = Served(home, server, section, config={"approvals": {"mode": "yolo"}})
        try:
            replies = {
                name: gateway.ask(
                    name,
                    "write outside",
                    tool_call("write_file", {"path": str(outside / name), "content": name}),
                    "done",
                )
                for name in ("alice", "bob", "carol")
            }
        finally:
            gateway.stop()
    assert (outside / "alice").read_text() == "alice"  # set for her explicitly
    assert (outside / "carol").read_text() == "carol"  # set by her group
    assert not (outside / "bob").exists()  # the global yolo is not his
    assert _tool_results(replies["bob"])[0].startswith("BLOCKED:")


# --- the webhook helpers -----------------------------------------------------------------------


class _Receiver:
    """A local HTTP server recording the webhook's signed deliveries."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._changed:
                    receiver.events.append(json.loads(body))
                    receiver._changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/hook"

    def wait_for(self, count: int) -> list[dict[str, Any]]:
        with self._changed:
            self._changed.wait_for(
                lambda: len([e for e in self.events if e["type"] == "message"]) >= count, 30
            )
            return [e for e in self.events if e["type"] == "message"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _hook(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "hooks": {"adapter": "webhook", "port": 0, "secret": SECRET, "deliver_url": url, **extra}
    }


def _post(served: Served, body: dict[str, Any]) -> int:
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        served.gateway.adapters["hooks"].url,
        data=data,
        headers={"Content-Type": "application/json", "X-Hermes-Signature": sign(SECRET, data)},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
