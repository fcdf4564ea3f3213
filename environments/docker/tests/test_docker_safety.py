"""The docker backend's hardening against a real engine: a read-only root with a writable
working folder and /tmp, dropped capabilities, and the refusal of settings that would let the
container reach the host unless ``terminal.docker_allow_unsafe`` is true."""

from __future__ import annotations

import os
import secrets
from urllib.parse import urlparse

import pytest
from hermes_env_docker import DockerEnvironment, DockerSettings
from hermes_env_docker.safety import unsafe_mount

from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable

RUN = secrets.token_hex(3)
"""Part of the task ids of this test run: other runs may use the same engine at the same time."""


def config(service, **terminal):
    settings = {"docker_host": service["host"], "docker_image": service["image"]}
    settings.update(terminal)
    return {"terminal": settings}


def containers_of(client, task):
    return client.containers.list(all=True, filters={"label": f"hermes.task={task}"})


def refusal(service, docker_client, task, **terminal) -> str:
    """The one-line refusal of ``terminal``; no container was made for ``task``."""
    with pytest.raises(EnvironmentRefused) as caught:
        DockerEnvironment(config(service, **terminal), task)
    assert caught.value.rule == "docker-unsafe-settings"
    message = str(caught.value)
    assert "\n" not in message
    assert "terminal.docker_allow_unsafe: true" in message
    assert containers_of(docker_client, task) == []
    return message


# --- the defaults ---------------------------------------------------------------------------


def test_root_is_read_only_and_workdir_and_tmp_are_writable(make_env, docker_client):
    env = make_env("ro-default")
    host = docker_client.api.inspect_container(env.container.id)["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == 512 and host["Memory"] == 4096 << 20 and host["NanoCpus"] == 10**9
    assert host["Privileged"] is False and host["NetworkMode"] == "none"
    for target in ("/canary", "/etc/canary", "/bin/canary"):
        result = env.run(f"echo x > {target}")
        assert result.exit_code != 0, target
        assert "Read-only file system" in result.output
    with pytest.raises(OSError):
        env.write_file("/etc/canary", b"x")
    assert env.run("ls / /etc | grep -c canary").output.strip() == "0"
    assert env.run("pwd").output.strip() == "/workspace"
    env.write_file("in-workdir.txt", b"work")
    assert env.run("cat /workspace/in-workdir.txt").output == "work"
    assert env.run("echo tmp > /tmp/t && cat /tmp/t").output == "tmp\n"
    assert env.run("mkdir -p /workspace/a/b && echo ok > /workspace/a/b/c && cat a/b/c").output == (
        "ok\n"
    )


def test_read_only_can_be_turned_off(make_env, docker_client):
    env = make_env("ro-off", docker_read_only=False)
    host = docker_client.api.inspect_container(env.container.id)["HostConfig"]
    assert host["ReadonlyRootfs"] is False
    assert env.run("echo x > /etc/writable && cat /etc/writable").output == "x\n"


def test_workdir_is_a_volume_removed_with_the_container(docker_service, docker_client):
    env = DockerEnvironment(config(docker_service), "ro-volume")
    info = docker_client.api.inspect_container(env.container.id)
    (mount,) = [m for m in info["Mounts"] if m["Destination"] == "/workspace"]
    assert mount["Type"] == "volume"
    env.cleanup()
    volumes = [v.name for v in docker_client.volumes.list()]
    assert mount["Name"] not in volumes


def test_a_mounted_workdir_is_not_replaced(make_env, tmp_path):
    env = make_env("ro-bind", docker_volumes=[f"{tmp_path}:/workspace"])
    env.write_file("from-container.txt", b"through the bind mount")
    assert (tmp_path / "from-container.txt").read_bytes() == b"through the bind mount"


def test_allowed_extra_capability_and_run_option(make_env, docker_client):
    env = make_env(
        "ro-extras", docker_cap_add=["net_bind_service"], docker_run_options={"shm_size": "128m"}
    )
    host = docker_client.api.inspect_container(env.container.id)["HostConfig"]
    assert "NET_BIND_SERVICE" in host["CapAdd"] or "CAP_NET_BIND_SERVICE" in host["CapAdd"]
    assert host["ShmSize"] == 128 << 20


# --- refusals -------------------------------------------------------------------------------


def test_privileged_is_refused(docker_service, docker_client):
    message = refusal(docker_service, docker_client, "unsafe-privileged", docker_privileged=True)
    assert "terminal.docker_privileged" in message


def test_allow_unsafe_lets_privileged_through(docker_service, docker_client):
    """The request reaches the engine with ``Privileged`` set. (An engine that itself runs
    without every capability, as in the test services, cannot start privileged containers; its
    own error then comes back, not hermes' refusal.)"""
    import time

    since = int(time.time()) - 1
    try:
        env = DockerEnvironment(
            config(docker_service, docker_privileged=True, docker_allow_unsafe=True),
            "unsafe-allowed",
        )
    except EnvironmentUnavailable as exc:
        message = str(exc)
        assert "refusing" not in message
        assert "cannot start a container" in message and "caps" in message
        events = docker_client.events(
            since=since,
            until=int(time.time()) + 1,
            filters={"label": "hermes.task=unsafe-allowed", "event": "create"},
            decode=True,
        )
        assert len(list(events)) == 1  # the engine got the request (and the container is gone)
        assert containers_of(docker_client, "unsafe-allowed") == []
    else:
        try:
            host = docker_client.api.inspect_container(env.container.id)["HostConfig"]
            assert host["Privileged"] is True
            assert env.run("echo still works").output == "still works\n"
        finally:
            env.cleanup()


def test_privileged_request_carries_the_flag_only_when_allowed(docker_service):
    kwargs = DockerEnvironment._create_kwargs
    allowed = DockerSettings.from_config(
        {"terminal": {"docker_privileged": True, "docker_allow_unsafe": True}}
    )
    assert allowed.unsafe == ["terminal.docker_privileged is true (full access to the host)"]
    fake = type("Env", (), {"settings": allowed, "task_id": "t"})()
    assert kwargs(fake, "n")["privileged"] is True
    fake.settings = DockerSettings.from_config({})
    assert "privileged" not in kwargs(fake, "n")


def test_allow_unsafe_lets_other_unsafe_options_run(make_env, docker_client):
    env = make_env(
        "unsafe-caps",
        docker_cap_add=["SYS_PTRACE"],
        docker_run_options={"pid_mode": "host"},
        docker_allow_unsafe=True,
    )
    host = docker_client.api.inspect_container(env.container.id)["HostConfig"]
    assert "SYS_PTRACE" in host["CapAdd"] or "CAP_SYS_PTRACE" in host["CapAdd"]
    assert host["PidMode"] == "host"
    assert len(env.settings.unsafe) == 2
    # the host's process list is visible: more processes than this container's own
    # (2>/dev/null: a host process may end between the glob and ls, which then complains)
    assert int(env.run("ls -d /proc/[0-9]* 2>/dev/null | wc -l").output) > 10


def test_mount_of_the_host_root_is_refused(docker_service, docker_client):
    for spec in ("/:/host", "/:/host:ro", "/etc/..:/host"):
        message = refusal(docker_service, docker_client, "unsafe-root", docker_volumes=[spec])
        assert "terminal.docker_volumes" in message and "root folder" in message


@pytest.mark.parametrize(
    "host_path",
    ["/var/run/docker.sock", "/run/docker.sock", "/var/run", "/run", "/var"],
)
def test_docker_socket_and_its_parents_are_refused(docker_service, docker_client, host_path):
    message = refusal(
        docker_service, docker_client, "unsafe-sock", docker_volumes=[f"{host_path}:/s"]
    )
    assert "terminal.docker_volumes" in message and "socket" in message


def test_the_socket_of_the_engine_in_use_is_refused(docker_service, docker_client):
    socket_path = urlparse(docker_service["host"]).path
    assert socket_path, "the test engine listens on a unix socket"
    for host_path in (socket_path, os.path.dirname(socket_path)):
        message = refusal(
            docker_service, docker_client, "unsafe-own", docker_volumes=[f"{host_path}:/s"]
        )
        assert socket_path in message


def test_host_kernel_folders_are_refused(docker_service, docker_client):
    for path in ("/proc", "/sys/fs/cgroup", "/dev"):
        message = refusal(
            docker_service, docker_client, "unsafe-kernel", docker_volumes=[f"{path}:/k"]
        )
        assert "terminal.docker_volumes" in message


@pytest.mark.parametrize(
    ("terminal", "named"),
    [
        ({"docker_network": "host"}, "terminal.docker_network is host"),
        ({"docker_network": "container:other"}, "terminal.docker_network"),
        ({"docker_cap_add": ["SYS_ADMIN"]}, "terminal.docker_cap_add adds SYS_ADMIN"),
        ({"docker_cap_add": ["cap_sys_ptrace"]}, "SYS_PTRACE"),
        ({"docker_cap_add": "ALL"}, "ALL"),
        ({"docker_run_options": {"pid_mode": "host"}}, "docker_run_options.pid_mode"),
        ({"docker_run_options": {"ipc_mode": "host"}}, "docker_run_options.ipc_mode"),
        ({"docker_run_options": {"userns_mode": "host"}}, "docker_run_options.userns_mode"),
        ({"docker_run_options": {"devices": ["/dev/sda:/dev/sda"]}}, "devices"),
        ({"docker_run_options": {"security_opt": ["seccomp=unconfined"]}}, "seccomp=unconfined"),
        ({"docker_run_options": {"runtime": "other"}}, "not known to be safe"),
        ({"container_memory": 0}, "terminal.container_memory is 0"),
        ({"container_memory": "0g"}, "terminal.container_memory"),
        ({"container_memory": -1}, "terminal.container_memory is -1"),
        ({"container_memory": None}, "terminal.container_memory is empty"),
        ({"container_cpu": 0}, "terminal.container_cpu is 0"),
        ({"container_cpu": -0.5}, "terminal.container_cpu"),
        ({"container_cpu": ""}, "terminal.container_cpu is empty"),
        ({"container_pids": 0}, "terminal.container_pids is 0"),
        ({"container_pids": -1}, "terminal.container_pids is -1"),
        ({"container_pids": None}, "terminal.container_pids is empty"),
    ],
)
def test_unsafe_settings_are_refused_and_named(terminal, named):
    with pytest.raises(EnvironmentUnavailable) as caught:
        DockerSettings.from_config({"terminal": terminal})
    message = str(caught.value)
    assert named in message
    assert "set terminal.docker_allow_unsafe: true to allow them" in message
    assert "\n" not in message
    allowed = DockerSettings.from_config({"terminal": {**terminal, "docker_allow_unsafe": True}})
    assert allowed.unsafe


def test_limits_off_when_allowed(make_env, docker_client):
    env = make_env(
        "unsafe-nolimits",
        container_memory=0,
        container_cpu=0,
        container_pids=0,
        docker_allow_unsafe=True,
    )
    host = docker_client.api.inspect_container(env.container.id)["HostConfig"]
    assert host["Memory"] == 0 and host["NanoCpus"] == 0
    assert host["PidsLimit"] in (None, 0, -1)


@pytest.mark.parametrize("key", ["docker_allow_unsafe", "docker_privileged", "docker_read_only"])
def test_a_flag_that_is_not_yes_or_no_names_its_key(key):
    with pytest.raises(EnvironmentUnavailable, match=f"bad setting: terminal.{key}: not a yes/no"):
        DockerSettings.from_config({"terminal": {key: "maybe"}})


def test_every_unsafe_setting_is_named_at_once():
    with pytest.raises(EnvironmentUnavailable) as caught:
        DockerSettings.from_config(
            {"terminal": {"docker_privileged": True, "docker_network": "host"}}
        )
    assert "docker_privileged" in str(caught.value) and "docker_network" in str(caught.value)


def test_run_options_cannot_set_what_hermes_manages():
    for key, owner in [
        ("privileged", "terminal.docker_privileged"),
        ("network_mode", "terminal.docker_network"),
        ("cap_drop", "hermes"),
        ("read_only", "terminal.docker_read_only"),
        ("volumes", "terminal.docker_volumes"),
        ("pids_limit", "terminal.container_pids"),
    ]:
        with pytest.raises(EnvironmentUnavailable, match=f"docker_run_options.{key} is set by"):
            DockerSettings.from_config({"terminal": {"docker_run_options": {key: True}}})
        with pytest.raises(EnvironmentUnavailable, match=owner):
            DockerSettings.from_config(
                {"terminal": {"docker_run_options": {key: True}, "docker_allow_unsafe": True}}
            )


def test_safe_settings_pass():
    settings = DockerSettings.from_config(
        {
            "terminal": {
                "docker_network": "bridge",
                "docker_volumes": ["/srv/project:/workspace", "named-volume:/data"],
                "docker_cap_add": ["NET_BIND_SERVICE", "SYS_CHROOT"],
                "docker_run_options": {"ipc_mode": "private", "security_opt": "no-new-privileges"},
                "container_memory": "512m",
                "container_cpu": 0.5,
                "container_pids": 64,
            }
        }
    )
    assert settings.unsafe == []


def test_mount_check_follows_symbolic_links(tmp_path):
    link = tmp_path / "innocent"
    link.symlink_to("/")
    assert "root folder" in unsafe_mount(str(link), [])
    sock_dir = tmp_path / "engine"
    sock_dir.mkdir()
    (tmp_path / "via").symlink_to(sock_dir)
    assert "socket" in unsafe_mount(str(tmp_path / "via"), [str(sock_dir / "docker.sock")])
    assert unsafe_mount(str(tmp_path), [str(sock_dir / "docker.sock")]) is not None
    assert unsafe_mount(str(tmp_path / "elsewhere"), [str(sock_dir / "docker.sock")]) is None


def test_any_unix_socket_is_refused(tmp_path):
    import socket

    path = tmp_path / "service.socket"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        assert "unix socket" in unsafe_mount(str(path), [])
    finally:
        server.close()


def test_doctor_reports_isolation_and_allowed_unsafe_settings(docker_service):
    plain = DockerEnvironment.check(config(docker_service))
    assert "network none, read-only root" in plain and "UNSAFE" not in plain
    allowed = DockerEnvironment.check(
        config(docker_service, docker_privileged=True, docker_allow_unsafe=True)
    )
    assert "UNSAFE" in allowed and "terminal.docker_privileged" in allowed


def test_doctor_check_refuses_too():
    with pytest.raises(EnvironmentUnavailable, match="docker_privileged"):
        DockerEnvironment.check({"terminal": {"docker_privileged": True}})


def test_the_model_sees_the_refusal_and_nothing_runs(docker_service, docker_client, tmp_path):
    canary = tmp_path / "canary"
    agent = make_agent(
        tool_call("terminal", {"command": f"touch /host/{canary.name}"}),
        text("done"),
        plugins=["docker", "terminal"],
        config={
            "terminal": {
                "backend": "docker",
                "docker_host": docker_service["host"],
                "docker_image": docker_service["image"],
                "docker_volumes": [f"{tmp_path}:/host", "/:/rootfs"],
            },
            "approvals": {"mode": "yolo"},
        },
    )
    try:
        agent.chat("make the file")
        (result,) = [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()
    # a refusal by policy, not an outage: the model is told not to retry
    assert result.startswith("BLOCKED: the execution environment was refused: docker backend")
    assert "(rule docker-unsafe-settings)" in result and "Do not retry" in result
    assert "refusing unsafe settings" in result and "terminal.docker_allow_unsafe" in result
    assert "root folder" in result
    assert not canary.exists()
    assert [c for c in docker_client.containers.list(all=True) if "/:/rootfs" in str(c.attrs)] == []


# --- lifetime ------------------------------------------------------------------------------

TIED_PROGRAM = """
import json, sys, time
from hermes_env_docker import DockerEnvironment
config = {"terminal": {"docker_host": sys.argv[1], "docker_image": sys.argv[2]}}
env = DockerEnvironment(config, "tied-to-hermes")
env.start_background("sleep 300")
print(json.dumps({"id": env.container.id}), flush=True)
time.sleep(600)
"""


def test_container_goes_when_hermes_is_killed(docker_service, docker_client, tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    import docker

    script = tmp_path / "hermes_like.py"
    script.write_text(TIED_PROGRAM)
    proc = subprocess.Popen(
        [sys.executable, str(script), docker_service["host"], docker_service["image"]],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the program ended early (exit {proc.wait()})"
    container_id = json.loads(line)["id"]
    try:
        time.sleep(1)
        assert docker_client.containers.get(container_id).status == "running"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                docker_client.containers.get(container_id)
            except docker.errors.NotFound:
                break
            time.sleep(0.1)
        with pytest.raises(docker.errors.NotFound):
            docker_client.containers.get(container_id)
    finally:
        proc.kill()
        try:
            docker_client.containers.get(container_id).remove(force=True)
        except docker.errors.NotFound:
            pass


def test_persistent_container_made_with_unsafe_settings_is_not_reused_without_them(
    docker_service, docker_client
):
    unsafe = config(
        docker_service,
        container_persistent=True,
        docker_cap_add=["SYS_PTRACE"],
        docker_allow_unsafe=True,
    )
    first = DockerEnvironment(unsafe, f"persistent-settings-{RUN}")
    container_id = first.container.id
    try:
        first.write_file("kept.txt", b"kept")
        first.cleanup()
        plain = config(docker_service, container_persistent=True)
        with pytest.raises(EnvironmentUnavailable) as caught:
            DockerEnvironment(plain, f"persistent-settings-{RUN}")
        message = str(caught.value)
        assert "created with other settings" in message and "docker rm -f" in message
        assert "\n" not in message
        assert docker_client.containers.get(container_id).status != "running"
        again = DockerEnvironment(unsafe, f"persistent-settings-{RUN}")
        try:
            assert again.container.id == container_id
            assert again.read_file("/workspace/kept.txt") == b"kept"
        finally:
            again.cleanup()
    finally:
        docker_client.containers.get(container_id).remove(force=True, v=True)


def test_the_lifeline_to_a_remote_engine_is_kept_alive():
    import socket

    from hermes_env_docker.engine import keep_alive as _keep_alive

    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    try:
        assert client.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0
        _keep_alive(client)
        assert client.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        unix = socket.socket(socket.AF_UNIX)
        _keep_alive(unix)  # nothing to do on a unix socket, and no error
        unix.close()
    finally:
        client.close()
        server.close()


PERSISTENT_PROGRAM = """
import json, sys, threading, time
from hermes_env_docker import DockerEnvironment
config = {"terminal": {"docker_host": sys.argv[1], "docker_image": sys.argv[2],
                       "container_persistent": True}}
env = DockerEnvironment(config, "persistent-tied-" + sys.argv[3])
env.start_background("exec sleep 301")
threading.Thread(target=env.run, args=("sleep 302",), daemon=True).start()
while "sleep 302" not in env.run("ps -o args 2>/dev/null || ps").output:
    time.sleep(0.1)
print(json.dumps({"id": env.container.id}), flush=True)
time.sleep(600)
"""


def test_persistent_container_stays_but_its_processes_go_when_hermes_is_killed(
    docker_service, docker_client, tmp_path
):
    import json
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "hermes_like.py"
    script.write_text(PERSISTENT_PROGRAM)
    proc = subprocess.Popen(
        [sys.executable, str(script), docker_service["host"], docker_service["image"], RUN],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the program ended early (exit {proc.wait()})"
    container = docker_client.containers.get(json.loads(line)["id"])

    def sleeps() -> list[str]:
        out = container.exec_run(["ps", "-o", "args"]).output.decode()
        return [row for row in out.splitlines() if row.startswith("sleep 30")]

    try:
        assert sorted(sleeps()) == ["sleep 301", "sleep 302"]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while sleeps() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sleeps() == []
        container.reload()
        assert container.status == "running"  # persistent: the container itself is kept
    finally:
        proc.kill()
        container.remove(force=True, v=True)


def test_hermes_home_and_credential_folders_are_never_mounted(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".hermes").mkdir()
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    assert "credential folder" in unsafe_mount(str(home / ".ssh"), [])
    assert "credential folder" in unsafe_mount(str(home / ".hermes" / "sessions"), [])
    assert "credential folder" in unsafe_mount(str(home), [])  # it holds ~/.ssh
    (home / "link").symlink_to(home / ".hermes")
    assert "credential folder" in unsafe_mount(str(home / "link"), [])
    assert unsafe_mount(str(home / "project"), []) is None
