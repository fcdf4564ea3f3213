"""Every stop stops: Ctrl-C during ``hermes chat -q`` stops the subagents that run at once, the
queued ones never start, and their sessions are recorded ``interrupted``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PROVIDER = textwrap.dedent(
    '''
    """The parent delegates four tasks; each child runs `sleep 12`, then answers."""
    from hermes_hookspecs import Provider, hookimpl


    def answer(request):
        from hermes_core.testing import Call, Turn

        last = request.messages[-1]
        if "child task" not in str(request.messages):
            if last["role"] == "user":
                tasks = [{"goal": f"child task {i}"} for i in range(4)]
                return Turn(calls=[Call("delegate_task", {"tasks": tasks})])
            return Turn(text="parent done")
        if last["role"] == "user":
            return Turn(calls=[Call("terminal", {"command": "sleep 12"})])
        return Turn(text="child done")


    @hookimpl
    def hermes_register_providers(register):
        from hermes_core.testing import ScriptedModel

        model = ScriptedModel(fn=answer)
        register(Provider(name="scripted", api_mode="chat_completions",
                          create_client=lambda settings: model, default_model="script"))
    '''
)


@pytest.mark.skipif(sys.platform != "linux", reason="the local sandbox runs on Linux")
def test_ctrl_c_stops_running_subagents_at_once_and_queued_ones_never_start(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    info = site / "sub_scripted-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "sub_scripted.py").write_text(PROVIDER)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sub-scripted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[hermes]\nsub_scripted = sub_scripted\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(
        HERMES_HOME=str(home),
        HERMES_PLUGINS="sub_scripted,terminal,approvals,local,delegation",
        PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]),
    )
    hermes = str(Path(sys.executable).with_name("hermes"))
    chat = subprocess.Popen(
        [hermes, "chat", "-t", "terminal,delegation", "-q", "go"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    db = home / "sessions.db"  # hermes's own store (state.db is the Hermes agent's name)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # three children (max_concurrent_children) are running
        time.sleep(0.2)
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    count = conn.execute(
                        "select count(*) from sessions where source = 'subagent'"
                    ).fetchone()[0]
            except sqlite3.OperationalError:  # made, but its tables not yet
                continue
            if count == 3:
                break
    time.sleep(1)
    stopped_at = time.monotonic()
    chat.send_signal(signal.SIGINT)
    _out, err = chat.communicate(timeout=30)
    took = time.monotonic() - stopped_at
    assert chat.returncode == 130, err
    assert took < 5, f"hermes went on for {took:.1f} s after Ctrl-C"
    with sqlite3.connect(db) as conn:
        children = conn.execute(
            "select end_reason from sessions where source = 'subagent'"
        ).fetchall()
    assert [reason for (reason,) in children] == ["interrupted"] * 3  # the fourth never started
