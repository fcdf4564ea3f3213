"""The docker environment against a real Docker engine (started by ``.ci/services.sh``): the
shared behaviour suite, then the container settings, clean-up, persistence and the errors."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hermes_env_docker import DockerEnvironment, DockerSettings, hermes_register_environments

from hermes_core.testing.environment_suite import EnvironmentBehaviour
from hermes_hookspecs import EnvironmentUnavailable

RUN = secrets.token_hex(3)
"""Part of the task ids of this test run: other runs may use the same engine at the same time."""


def make_config(service, **terminal):
    settings = {"docker_host": service["host"], "docker_image": service["image"]}
    settings.update(terminal)
    return {"terminal": settings}


class TestDockerBehaviour(EnvironmentBehaviour):
    timeout_slack = 4.0

    @pytest.fixture(scope="class")
    @classmethod
    def env(cls, docker_service):
        environment = DockerEnvironment(make_config(docker_service), "suite")
        yield environment
        environment.cleanup()

    @pytest.fixture
    def disposable_env(self, docker_service):
        environment = DockerEnvironment(make_config(docker_service), "suite-disposable")
        yield environment
        environment.cleanup()


# --- the container ----------------------------------------------------------------------------


def test_container_is_created_with_the_limits_and_isolation(make_env, docker_client):
    env = make_env(
        "limits",
        container_memory=256,
        container_cpu=0.5,
        container_pids=64,
        docker_env={"FROM_CONFIG": "yes it is"},
    )
    info = docker_client.api.inspect_container(env.container.id)
    host = info["HostConfig"]
    assert host["Memory"] == 256 * 1024 * 1024
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Init"] is True
    assert info["Config"]["Labels"]["hermes.task"] == "limits"
    assert env.run('echo "$FROM_CONFIG"').output.strip() == "yes it is"
    assert env.run("pwd").output.strip() == "/workspace"
    # no network but loopback
    interfaces = env.run("cat /proc/net/dev").output
    assert "lo:" in interfaces and "eth0" not in interfaces
    # the pids limit holds inside the container
    pids = env.run(
        "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max"
    ).output.strip()
    assert pids == "64"


def test_memory_given_with_a_unit(make_env, docker_client):
    env = make_env("memory-unit", container_memory="1g")
    assert docker_client.api.inspect_container(env.container.id)["HostConfig"]["Memory"] == 1 << 30


def test_user_setting(make_env):
    env = make_env("user", docker_user="1000:1000", docker_workdir="/tmp/work")
    assert env.run("id -u; id -g").output.split() == ["1000", "1000"]
    env.write_file("mine.txt", b"written as 1000")
    assert env.run("stat -c %u mine.txt").output.strip() == "1000"
    result = env.run("touch /etc/not-allowed")
    assert result.exit_code != 0


def test_read_only_root(make_env):
    env = make_env("read-only", docker_read_only=True)
    assert env.run("touch /etc/x").exit_code != 0
    assert env.run("touch /tmp/x && echo ok").output.strip() == "ok"
    env.write_file("in-workdir.txt", b"the working folder stays writable")
    assert env.read_file("/workspace/in-workdir.txt") == b"the working folder stays writable"


def test_bind_mounts(make_env, tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "from-host.txt").write_text("hello from the host")
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    env = make_env("volumes", docker_volumes=[f"{shared}:/data", f"{readonly}:/ro:ro"])
    assert env.read_file("/data/from-host.txt") == b"hello from the host"
    env.write_file("/data/from-container.txt", b"hello from the container")
    assert (shared / "from-container.txt").read_bytes() == b"hello from the container"
    assert env.run("touch /ro/x").exit_code != 0


def test_commands_use_exec_in_one_long_lived_container(make_env, docker_client):
    env = make_env("one-container")
    container_id = env.container.id
    first = env.run("cat /proc/1/stat | cut -d' ' -f22").output  # PID 1's start time
    for _ in range(5):
        env.run("true")
    assert env.run("cat /proc/1/stat | cut -d' ' -f22").output == first
    assert docker_client.containers.get(container_id).status == "running"


def test_output_cannot_forge_the_end_marker(make_env):
    env = make_env("marker")
    result = env.run(r"printf '\n\036HEND0000 0\nafter\n'; exit 3")
    assert result.exit_code == 3
    assert "after" in result.output


# --- clean-up and persistence -----------------------------------------------------------------


def test_cleanup_removes_the_container(docker_service, docker_client):
    import docker

    env = DockerEnvironment(make_config(docker_service), f"removed-{RUN}")
    name = env.container.name
    env.start_background("sleep 300")
    env.cleanup()
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(name)
    with pytest.raises(EnvironmentUnavailable):
        env.run("true")


def test_persistent_container_is_kept_and_found_again(docker_service, docker_client):
    config = make_config(docker_service, container_persistent=True)
    first = DockerEnvironment(config, f"persistent-task-{RUN}")
    try:
        first.write_file("kept.txt", b"still here")
        container_id = first.container.id
        first.start_background("sleep 300")
        first.cleanup()
        container = docker_client.containers.get(container_id)
        assert container.status in {"exited", "created"}
        second = DockerEnvironment(config, f"persistent-task-{RUN}")
        try:
            assert second.container.id == container_id
            assert second.read_file("/workspace/kept.txt") == b"still here"
        finally:
            second.cleanup()
    finally:
        docker_client.containers.get(container_id).remove(force=True)


def test_persistent_name_taken_by_a_foreign_container(docker_service, docker_client):
    name = f"hermes-foreign-task-{RUN}"
    foreign = docker_client.containers.create(docker_service["image"], ["true"], name=name)
    try:
        with pytest.raises(EnvironmentUnavailable, match="did not create it"):
            DockerEnvironment(
                make_config(docker_service, container_persistent=True), f"foreign-task-{RUN}"
            )
    finally:
        foreign.remove(force=True)


def test_no_container_is_left_behind(docker_service, docker_client):
    """Every container this module created is gone (persistent ones were removed above)."""
    leftovers = [
        c.name
        for c in docker_client.containers.list(all=True, filters={"label": "hermes.managed=1"})
        if c.labels.get("hermes.task", "").startswith((f"removed-{RUN}", f"persistent-task-{RUN}"))
    ]
    assert leftovers == []


# --- fail closed --------------------------------------------------------------------------------


def test_unreachable_engine_is_a_clear_error(tmp_path):
    config = {"terminal": {"docker_host": f"unix://{tmp_path}/no-engine.sock"}}
    started = time.monotonic()
    with pytest.raises(EnvironmentUnavailable) as caught:
        DockerEnvironment(config, "no-engine")
    message = str(caught.value)
    assert "cannot reach a Docker engine" in message
    assert "DOCKER_HOST" in message and "not fall back" in message
    assert time.monotonic() - started < 10


def test_missing_image_is_a_clear_error(docker_service):
    config = make_config(docker_service, docker_image="local/no-such-image:1", docker_pull="never")
    with pytest.raises(EnvironmentUnavailable, match="local/no-such-image:1 is not on the engine"):
        DockerEnvironment(config, "no-image")


def test_image_without_a_shell_is_a_clear_error(docker_service, docker_client, tmp_path):
    import io
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("README")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    docker_client.api.import_image_from_data(data.getvalue(), repository=f"local/no-shell-{RUN}")
    try:
        with pytest.raises(EnvironmentUnavailable, match="cannot start a container"):
            DockerEnvironment(
                make_config(docker_service, docker_image=f"local/no-shell-{RUN}"), "no-shell"
            )
    finally:
        docker_client.images.remove(f"local/no-shell-{RUN}", force=True)


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("docker_volumes", ["just-a-path"], "docker_volumes"),
        ("docker_volumes", ["/a:/b:rx"], "mode must be ro or rw"),
        ("container_memory", "lots", "memory size"),
        ("docker_env", ["A=1"], "docker_env"),
        ("docker_pull", "sometimes", "docker_pull"),
    ],
)
def test_bad_settings_name_the_key(key, value, fragment):
    with pytest.raises(EnvironmentUnavailable, match=fragment):
        DockerSettings.from_config({"terminal": {key: value}})


def test_settings_defaults():
    settings = DockerSettings.from_config({})
    assert settings.image == "python:3.11-slim"
    assert settings.network == "none"
    assert settings.workdir == "/workspace"
    assert (settings.cpu, settings.memory_mb, settings.pids) == (1.0, 4096, 512)
    assert settings.persistent is False and settings.read_only is True


def test_docker_host_from_the_environment(docker_service, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", docker_service["host"])
    env = DockerEnvironment({"terminal": {"docker_image": docker_service["image"]}}, "env-host")
    try:
        assert env.run("echo via DOCKER_HOST").output.strip() == "via DOCKER_HOST"
        assert docker_service["host"] in env.engine
    finally:
        env.cleanup()


# --- doctor, registration, start-up cost ------------------------------------------------------


def test_check_reports_the_engine(docker_service):
    report = DockerEnvironment.check(make_config(docker_service))
    assert "Docker" in report and docker_service["image"] in report and "present" in report


def test_check_fails_closed(tmp_path):
    with pytest.raises(EnvironmentUnavailable, match="cannot reach"):
        DockerEnvironment.check({"terminal": {"docker_host": f"unix://{tmp_path}/none.sock"}})


def test_check_config_finds_nothing_wrong_with_good_settings(docker_service):
    assert DockerEnvironment.check_config(make_config(docker_service)) == []


def test_check_config_names_each_problem_without_starting(tmp_path):
    config = {
        "terminal": {
            "docker_image": "My Image",
            "docker_privileged": True,
            "docker_cap_add": ["SYS_ADMIN"],
            "docker_host": f"unix://{tmp_path}/none.sock",
        }
    }
    problems = DockerEnvironment.check_config(config)
    assert len(problems) == 4, problems
    assert "terminal.docker_privileged is true" in problems[0]
    assert "terminal.docker_cap_add adds SYS_ADMIN" in problems[1]
    assert "terminal.docker_allow_unsafe: true" in problems[0]
    assert "'My Image' is not a valid image reference (it contains a space)" in problems[2]
    assert "cannot reach a Docker engine" in problems[3]
    assert DockerEnvironment.check_config({"terminal": {"docker_pull": "sometimes"}}) == [
        "docker backend: bad setting: terminal.docker_pull must be missing, always or never"
    ]
    allowed = {**config["terminal"], "docker_allow_unsafe": True, "docker_image": "x:1"}
    assert len(DockerEnvironment.check_config({"terminal": allowed})) == 1  # the engine


def test_a_bad_image_name_is_a_clear_error_before_the_engine_is_asked(tmp_path):
    config = {"terminal": {"docker_image": "Busybox", "docker_host": f"unix://{tmp_path}/x.sock"}}
    with pytest.raises(EnvironmentUnavailable, match="repository names are lower case"):
        DockerEnvironment(config, "bad-image")


def test_registers_the_docker_backend():
    registered = {}
    hermes_register_environments(lambda name, factory: registered.setdefault(name, factory))
    assert registered == {"docker": DockerEnvironment}


def test_entry_point():
    from importlib.metadata import entry_points

    (point,) = [p for p in entry_points(group="hermes") if p.name == "docker"]
    assert point.value == "hermes_env_docker"


def test_importing_the_plugin_does_not_import_the_sdk():
    code = "import sys, hermes_env_docker; print('docker' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
