"""Every builtin tool acts for the person a run is for, and the test kit's people check catches a
tool that does not keep people apart.

The first half drives one agent run for the person ``alice`` through the core runner, with every
builtin plugin installed, and has the scripted model call every tool of the default toolsets
(a subagent's included): a ``hermes_pre_tool_call`` hook records ``context.person`` of each call.
The second half checks :func:`hermes_core.testing.check_keeps_people_apart` itself, with tools
that keep people apart and tools that do not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from hermes_core.testing import (
    ScriptedModel,
    Turn,
    check_keeps_people_apart,
    make_runner,
    text,
    tool_call,
)
from hermes_core.tools.toolsets import availability, enabled_toolsets
from hermes_hookspecs import AgentTask, Tool, ToolCall, ToolContext, ToolError, hookimpl

CANARY = "alice-canary-93be1d"

SKILL = "---\nname: notes\ndescription: Alice's notes.\n---\n# notes\n\nRemember {}.\n"

ARGS: dict[str, dict[str, Any]] = {
    "memory": {"action": "add", "target": "user", "content": f"Name: {CANARY}"},
    "todo": {"todos": [{"id": "1", "content": CANARY, "status": "in_progress"}]},
    "skill_manage": {"action": "create", "name": "notes", "content": SKILL.format(CANARY)},
    "skills_list": {},
    "skill_view": {"name": "notes"},
    "cronjob": {"action": "create", "schedule": "every 1h", "prompt": CANARY, "name": "nightly"},
    "session_search": {"query": "lighthouse"},
    "write_file": {"path": "notes.txt", "content": f"{CANARY}\n"},
    "read_file": {"path": "notes.txt"},
    "patch": {"path": "notes.txt", "old_string": CANARY, "new_string": "patched"},
    "search_files": {"pattern": "patched"},
    "terminal": {"command": "echo hello"},
    "process": {"action": "list"},
    "clarify": {"question": "Which one?"},
    "web_search": {"query": "hermes"},
    "web_extract": {"urls": ["http://127.0.0.1:9/"]},
    "browser_navigate": {"url": "http://127.0.0.1:9/"},
    "browser_snapshot": {},
    "browser_click": {"ref": "e1"},
    "browser_type": {"ref": "e1", "text": "hello"},
    "browser_press": {"key": "Enter"},
    "browser_scroll": {"direction": "down"},
    "browser_back": {},
    "browser_get_images": {},
    "browser_screenshot": {},
    "browser_close": {},
    "delegate_task": {"goal": "Check the todo list.", "toolsets": ["todo", "skills", "memory"]},
}
"""Arguments for one call of each tool of the default toolsets, in the order they are called
(what a tool reads is written before)."""

CHILD_CALLS = ("todo", "skill_view")
"""What the subagent of ``delegate_task`` calls before it answers."""


def builtin_plugins() -> list[str]:
    """The entry point names of every installed plugin but the examples of the repository."""
    return sorted(
        {
            ep.name
            for ep in entry_points(group="hermes")
            if ep.dist is not None and not ep.dist.name.startswith("hermes-example-")
        }
    )


class Recorder:
    """Records the person of every tool call's context, and its data folder."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, Path | None]] = []

    @hookimpl
    def hermes_pre_tool_call(self, call: ToolCall, context: ToolContext) -> None:
        self.calls.append((call.name, context.person, context.data_home))


def script(tools: list[str]) -> Callable[[Any], Turn]:
    """A model that calls ``tools`` one per turn in the order of :data:`ARGS` (those it has no
    arguments for left out), ``delegate_task`` last: its subagent then makes the
    :data:`CHILD_CALLS` and answers. Then it answers."""
    steps: list[Turn] = []
    for name in sorted((t for t in tools if t in ARGS), key=list(ARGS).index):
        steps.append(tool_call(name, ARGS[name]))
        if name == "delegate_task":
            steps += [tool_call(child, ARGS[child]) for child in CHILD_CALLS]
            steps.append(text("child done"))
    steps.append(text("all done"))
    queue = iter(steps)
    return lambda request: next(queue)


@pytest.fixture(scope="module")
def run_as_alice(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One run for alice that calls every offered tool; what it recorded and where."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("SEARXNG_URL", "http://127.0.0.1:9")  # offered; the call fails fast
        yield _run_as_alice(tmp_path_factory.mktemp("people"))


def _run_as_alice(root: Path) -> dict[str, Any]:
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir()
    recorder = Recorder()
    config = {"terminal": {"cwd": str(workspace)}, "agent": {"api_max_retries": 0}}
    probe = make_runner(plugins=[*builtin_plugins(), recorder], home=home, config=config)
    registry, defaults = probe.host.registry, enabled_toolsets(probe.host.registry, config)
    every = [t for name in defaults for t in registry.toolsets[name].value.tools]
    probe.host.close()
    offered = [t.name for t in every if availability(t)[0]]
    skipped = {t.name: availability(t)[1] for t in every if not availability(t)[0]}
    model = ScriptedModel(fn=script(offered))
    runner = make_runner(
        model=model, plugins=[*builtin_plugins(), recorder], home=home, config=config
    )
    try:
        outcome = runner.run(AgentTask(prompt="use every tool", person="alice"))
        sessions = {s.id: s for s in runner.host.session_store.list_sessions()}
    finally:
        runner.host.close()
    return {
        "home": home,
        "outcome": outcome,
        "every": every,
        "offered": offered,
        "skipped": skipped,
        "calls": recorder.calls,
        "sessions": sessions,
        "model": model,
    }


@pytest.mark.parametrize("tool", list(ARGS))
def test_each_default_tool_acts_for_alice(run_as_alice, tool):
    run = run_as_alice
    assert tool in {t.name for t in run["every"]}, f"{tool} is no default tool: drop it from ARGS"
    if tool in run["skipped"]:
        pytest.skip(f"{tool} cannot run here: {run['skipped'][tool]}")
    people = [person for name, person, _ in run["calls"] if name == tool]
    assert people and set(people) == {"alice"}, people


def test_every_default_tool_acts_for_the_runs_person(run_as_alice):
    run = run_as_alice
    assert run["outcome"].status == "completed", run["outcome"].error
    missing = [t.name for t in run["every"] if t.name not in ARGS]
    assert not missing, f"no arguments known for the tool(s) {missing}: add them to ARGS"
    called = {name for name, _, _ in run["calls"]}
    assert called == set(run["offered"]), set(run["offered"]) ^ called
    people = {(name, person) for name, person, _ in run["calls"]}
    assert {person for _, person in people} == {"alice"}, sorted(people, key=str)
    alice_home = run["home"] / "people" / "alice"
    assert {data_home for _, _, data_home in run["calls"]} == {alice_home}
    # the subagent's calls, the last ones, were alice's too
    names = [name for name, _, _ in run["calls"]]
    assert names[-len(CHILD_CALLS) - 1 :] == ["delegate_task", *CHILD_CALLS]
    assert {s.person for s in run["sessions"].values()} == {"alice"}
    assert len(run["sessions"]) == 2  # alice's run and her subagent's


def test_the_subagent_worked_on_alices_data(run_as_alice):
    child = [r for r in run_as_alice["model"].requests if "Your task:" in (r.system_prompt or "")]
    assert child, "the subagent made no request"
    assert CANARY in (child[0].system_prompt or "")  # alice's memory, saved before delegating
    results = [m["content"] for m in child[-1].messages if m["role"] == "tool"]
    assert results[0].startswith("Todo list, 1 item")  # kept in its own session (alice's)
    assert "Skill notes (" in results[1] and CANARY in results[1]  # alice's own skill
    todos = {
        s.parent_session_id is None: s.metadata.get("todo")
        for s in run_as_alice["sessions"].values()
    }
    assert todos[True] == todos[False] == ARGS["todo"]["todos"]


def test_what_alices_tools_stored_is_in_her_folder_only(run_as_alice):
    home = run_as_alice["home"]
    alice = home / "people" / "alice"
    assert CANARY in (alice / "memories" / "USER.md").read_text()
    assert CANARY in (alice / "skills" / "notes" / "SKILL.md").read_text()
    assert CANARY in (alice / "cron" / "jobs.json").read_text()
    for path in home.rglob("*"):
        if (
            path.is_file()
            and not path.is_relative_to(alice)
            and not path.name.startswith("sessions.db")
        ):
            assert CANARY.encode() not in path.read_bytes(), path


# --- the kit's check ------------------------------------------------------------------------


Where = Callable[[ToolContext], Path]
"""Where a notes tool keeps its file for a call."""


def _notes_tool(where: Where, *, copy_to: Where | None = None) -> Tool:
    """A notes tool: ``{"add": text}`` appends a line to ``notes.txt`` in the folder ``where``
    gives (and to ``copy.txt`` in the folder ``copy_to`` gives, when given); ``{}`` returns
    ``notes.txt``."""

    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        if "add" not in args:
            path = where(ctx) / "notes.txt"
            if not path.exists():
                raise ToolError("no notes yet")
            return path.read_text()
        for folder, name in ((where(ctx), "notes.txt"), (copy_to and copy_to(ctx), "copy.txt")):
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
                with (folder / name).open("a") as handle:
                    handle.write(args["add"] + "\n")
        return "saved"

    return Tool(
        name="notes",
        description="keeps notes",
        parameters={"type": "object", "properties": {"add": {"type": "string"}}},
        handler=handler,
    )


def _data_home(ctx: ToolContext) -> Path:
    assert ctx.data_home is not None
    return ctx.data_home


def _hermes_home(ctx: ToolContext) -> Path:
    assert ctx.hermes_home is not None
    return ctx.hermes_home


def check(tool: Tool, home: Path, **kwargs: Any) -> dict[str | None, str]:
    return check_keeps_people_apart(
        tool, write_args={"add": CANARY}, read_args={}, secret=CANARY, home=home, **kwargs
    )


def test_a_tool_that_keeps_its_data_under_data_home_passes(tmp_path):
    reads = check(_notes_tool(_data_home), tmp_path / "home", owner=True)
    assert reads["alice"] == f"{CANARY}\n"
    assert reads["bob"].startswith("bob") and CANARY not in reads["bob"]
    assert reads["guest"] == reads[None] == "Error: no notes yet"


def test_a_tool_that_ignores_the_person_is_caught(tmp_path):
    with pytest.raises(AssertionError) as caught:
        check(_notes_tool(_hermes_home), tmp_path / "home")
    message = str(caught.value)
    assert message.startswith("notes leaks between people: what alice stored reached bob's result")
    assert CANARY in message


def test_a_tool_that_also_copies_into_the_shared_home_is_caught(tmp_path):
    with pytest.raises(AssertionError) as caught:
        check(_notes_tool(_data_home, copy_to=_hermes_home), tmp_path / "home")
    message = str(caught.value)
    assert "notes leaks between people: what alice stored is in " in message
    assert "copy.txt, in the home's shared files" in message


def test_a_tool_that_writes_into_another_persons_folder_is_caught(tmp_path):
    def bobs(ctx: ToolContext) -> Path:
        return _hermes_home(ctx) / "people" / "bob"

    with pytest.raises(AssertionError, match="copy.txt, in the data_home of 'bob'"):
        check(_notes_tool(_data_home, copy_to=bobs), tmp_path / "home")


def test_the_owner_is_checked_when_asked(tmp_path):
    def alices_for_the_owner(ctx: ToolContext) -> Path:  # the owner reads alice's notes
        return _data_home(ctx) if ctx.person else _hermes_home(ctx) / "people" / "alice"

    tool = _notes_tool(alices_for_the_owner)
    check(tool, tmp_path / "one")
    with pytest.raises(AssertionError, match="reached the owner's result"):
        check(tool, tmp_path / "two", owner=True)


def test_a_check_that_could_prove_nothing_is_refused(tmp_path):
    def write_only(args: dict[str, Any], ctx: ToolContext) -> str:
        (_data_home(ctx)).mkdir(parents=True, exist_ok=True)
        (_data_home(ctx) / "x.txt").write_text(args.get("add", ""))
        return "ok"

    tool = Tool(name="sink", description="", parameters={"type": "object"}, handler=write_only)
    with pytest.raises(AssertionError, match="alice's read does not show the secret"):
        check(tool, tmp_path / "home")
    with pytest.raises(ValueError, match="write_args must contain the secret"):
        check_keeps_people_apart(
            tool, write_args={"add": "x"}, read_args={}, secret=CANARY, home=tmp_path
        )
    with pytest.raises(ValueError, match="read_args must not contain the secret"):
        check_keeps_people_apart(
            tool, write_args={"add": CANARY}, read_args={"q": CANARY}, secret=CANARY, home=tmp_path
        )


def test_an_async_handler_and_a_json_result_are_checked_too(tmp_path):
    async def handler(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        folder = _hermes_home(ctx)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "shared.json"
        notes = json.loads(path.read_text()) if path.exists() else []
        if "add" in args:
            path.write_text(json.dumps([*notes, args["add"]]))
            return {"saved": True}
        return {"notes": notes}

    tool = Tool(name="anotes", description="", parameters={"type": "object"}, handler=handler)
    with pytest.raises(AssertionError, match="reached bob's result"):
        check(tool, tmp_path / "home")
