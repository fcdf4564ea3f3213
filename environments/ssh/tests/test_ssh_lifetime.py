"""What the ssh environment starts on the host does not outlive hermes: a lifeline session kills
it when the connection closes, also when hermes is killed with SIGKILL. The test sshd runs on
this machine, so the remote processes are visible here."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from hermes_env_ssh import SSHEnvironment

HERMES_LIKE = """
import json, sys, threading, time
from hermes_env_ssh import SSHEnvironment
SSHEnvironment.lifeline_grace = float(sys.argv[3])
config, mark = json.loads(sys.argv[1]), sys.argv[2]
env = SSHEnvironment(config, "lifeline-" + mark)
env.start_background(f"exec sleep {mark}1")
threading.Thread(target=env.run, args=(f"sleep {mark}2",), daemon=True).start()
threading.Thread(
    target=env.run, args=(f"while :; do sleep 0.2; done # loop-{mark}",), daemon=True
).start()
while True:
    seen = env.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\\\0' ' '").output
    if all(text in seen for text in (f"sleep {mark}1", f"sleep {mark}2", f"loop-{mark}")):
        break
    time.sleep(0.1)
print(json.dumps({"state": env.state_dir}), flush=True)
time.sleep(600)
"""


def make_config(service, **terminal):
    settings = {
        "ssh_host": service["host"],
        "ssh_port": int(service["port"]),
        "ssh_user": service["user"],
        "ssh_key": service["key"],
        "ssh_known_hosts": service["known_hosts"],
    }
    settings.update(terminal)
    return {"terminal": settings}


def processes_marked(mark: str) -> list[str]:
    """Command lines of this machine's processes that mention ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if mark in line:
            found.append(line)
    return found


def wait_until(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def start_hermes_like(
    tmp_path, ssh_service, mark: str, grace: float
) -> tuple[subprocess.Popen, str]:
    script = tmp_path / "hermes_like.py"
    script.write_text(HERMES_LIKE)
    proc = subprocess.Popen(
        [sys.executable, str(script), json.dumps(make_config(ssh_service)), mark, str(grace)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the program ended early (exit {proc.wait()})"
    return proc, json.loads(line)["state"]


def test_remote_processes_die_when_hermes_is_killed(ssh_service, tmp_path):
    mark = str(secrets.randbelow(90000) + 10000)
    proc, state = start_hermes_like(tmp_path, ssh_service, mark, grace=0.5)
    try:
        assert {f"sleep {mark}1", f"sleep {mark}2"} <= {p.strip() for p in processes_marked(mark)}
        assert os.path.isdir(state)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # the background process, the foreground command and a loop in the shell itself
        assert wait_until(lambda: not processes_marked(mark), 10), processes_marked(mark)
        assert wait_until(lambda: not os.path.exists(state), 10)
    finally:
        proc.kill()
        for line in processes_marked(mark):
            print("left behind:", line)


def test_cleanup_ends_the_lifeline(ssh_service):
    env = SSHEnvironment(make_config(ssh_service), f"lifeline-cleanup-{secrets.token_hex(3)}")
    script_mark = f"hermes-lifeline-{env.env_id}"
    assert wait_until(lambda: processes_marked(script_mark), 5)  # the lifeline waits
    env.cleanup()
    assert wait_until(lambda: not processes_marked(script_mark), 10)
    assert not os.path.exists(env.state_dir)


def test_a_dropped_connection_stops_its_processes_and_keeps_the_state(ssh_service):
    env = SSHEnvironment(make_config(ssh_service), f"lifeline-drop-{secrets.token_hex(3)}")
    mark = f"{secrets.randbelow(90000) + 10000}3"
    try:
        env.run("mkdir -p drop-dir && cd drop-dir && export KEPT=yes")
        process_id = env.start_background(f"exec sleep {mark}")
        assert wait_until(lambda: processes_marked(mark), 5)
        old_id = env.env_id
        env.client.get_transport().close()
        # the host stops what the lost connection started (it cannot tell a drop from a death)
        assert wait_until(lambda: not processes_marked(mark), 10)
        result = env.run('pwd; echo "$KEPT"')
        assert result.output.split()[0].endswith("/drop-dir")
        assert result.output.split()[-1] == "yes"
        assert env.connections == 2 and env.env_id != old_id
        assert env.poll(process_id).running is False
        # the new connection has a lifeline of its own
        assert wait_until(lambda: processes_marked(f"hermes-lifeline-{env.env_id}"), 5)
        env.run("cd .. && rm -rf drop-dir")
    finally:
        env.cleanup()
