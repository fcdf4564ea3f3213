"""A chat's turn holds its session's lock while it runs (the real SQLite store's lock files), so
a chat resuming a session and another process's turn of it take turns; a wait is announced and
Ctrl-C while waiting runs nothing."""

from __future__ import annotations

import threading
import time

from hermes_core.cli.chat import run_turn
from hermes_core.cli.display import Display
from hermes_core.cli.turn_hold import WAIT_NOTICE_AFTER, hold_turn
from hermes_core.session_store.sqlite_store import SQLiteSessionStore
from hermes_core.testing import make_agent, text, tool_call, toolset_plugin
from hermes_hookspecs import Tool


def test_a_turn_waits_for_the_holder_and_says_so_once(tmp_path):
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    notices: list[str] = []
    release = threading.Event()

    def other_process_turn() -> None:
        with store.hold_session("s1", threading.Event()):
            release.wait(5)

    holder = threading.Thread(target=other_process_turn)
    holder.start()
    time.sleep(0.1)
    threading.Timer(WAIT_NOTICE_AFTER + 0.4, release.set).start()
    started = time.monotonic()
    with hold_turn(store, "s1", threading.Event(), notices.append) as held:
        waited = time.monotonic() - started
    holder.join()
    assert held and waited >= WAIT_NOTICE_AFTER
    assert len(notices) == 1 and "waiting for another turn of session s1" in notices[0]


def test_cancel_while_waiting_holds_nothing(tmp_path):
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    cancel = threading.Event()
    with store.hold_session("s1", threading.Event()):
        threading.Timer(0.2, cancel.set).start()
        with hold_turn(store, "s1", cancel, lambda line: None) as held:
            assert held is False


def test_a_chat_turn_holds_its_session_while_it_runs(hermes_home):
    seen: dict[str, bool] = {}

    def probe(args, ctx) -> str:
        store = ctx.session_store
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()

        def try_lock() -> None:  # another "process": a thread of its own
            with store.hold_session(ctx.session_id, cancel) as held:
                seen["held_by_other"] = held

        other = threading.Thread(target=try_lock)
        other.start()
        other.join()
        return "probed"

    tool = Tool(name="probe", description="probe", parameters={"type": "object"}, handler=probe)
    agent = make_agent(
        tool_call("probe", {}), text("done"), plugins=[toolset_plugin(tool)], home=hermes_home
    )
    try:
        result = run_turn(agent, Display(interactive=False, stream=False, render=False), "go")
    finally:
        agent.close()
    assert result["final_response"] == "done"
    assert seen == {"held_by_other": False}  # the chat's turn held it
