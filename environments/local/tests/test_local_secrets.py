"""The local environment keeps secrets out of the commands it runs: whatever
``hermes_runtime.secrets.secret_names`` holds, unless ``terminal.env_passthrough`` names it."""

from __future__ import annotations

import os

import pytest
from hermes_env_local import LocalEnvironment, create
from hermes_env_sandbox import SandboxSettings

from hermes_core.testing.environment_suite import wait_for
from hermes_runtime import secrets

SECRET = "local-secret-value-2c8e"

OFF = SandboxSettings(profile="off")
"""These tests are about the unsandboxed path (the sandbox's own: test_sandbox.py)."""


@pytest.fixture(autouse=True)
def clean_secrets(monkeypatch):
    secrets.forget_secrets()
    monkeypatch.setenv("ACME_LOCAL_TOKEN", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-openai-77aa")
    monkeypatch.setenv("ACME_PLAIN", "plain-value")
    secrets.mark_secret("ACME_LOCAL_TOKEN", SECRET)
    yield
    secrets.forget_secrets()


@pytest.fixture
def make(tmp_path):
    made = []

    def factory(**kwargs):
        env = LocalEnvironment(str(tmp_path), **{"sandbox": OFF, **kwargs})
        made.append(env)
        return env

    yield factory
    for env in made:
        env.cleanup()


def names(output: str) -> set[str]:
    return {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}


def test_secret_variables_are_left_out_and_others_kept(make):
    result = make().run("env")
    assert {"ACME_LOCAL_TOKEN", "OPENAI_API_KEY"}.isdisjoint(names(result.output))
    assert SECRET not in result.output
    assert "ACME_PLAIN=plain-value" in result.output


def test_a_secret_passed_for_one_command_is_left_out_too(make):
    result = make().run("env", env={"OPENAI_API_KEY": "sk-passed-4444", "ONE_OFF": "yes"})
    assert "sk-passed-4444" not in result.output
    assert "ONE_OFF=yes" in result.output


def test_a_secret_marked_after_the_environment_was_made_is_left_out(make, monkeypatch):
    monkeypatch.setenv("LATE_SECRET", "late-secret-9999")
    env = make()
    assert "LATE_SECRET=late-secret-9999" in env.run("env").output
    secrets.mark_secret("LATE_SECRET", "late-secret-9999")
    assert "late-secret-9999" not in env.run("env").output


def test_an_explicit_starting_environment_is_filtered(make):
    env = make(env={"PATH": os.environ["PATH"], "ACME_LOCAL_TOKEN": SECRET, "KEEP": "1"})
    assert env.run("printenv ACME_LOCAL_TOKEN").exit_code == 1
    assert env.run("printenv KEEP").output == "1\n"


def test_passthrough_keeps_the_named_secrets(make):
    env = make(env_passthrough=["ACME_LOCAL_TOKEN"])
    out = env.run("env").output
    assert f"ACME_LOCAL_TOKEN={SECRET}" in out
    assert "OPENAI_API_KEY" not in names(out)


def test_the_factory_reads_env_passthrough(tmp_path):
    config = {"terminal": {"cwd": str(tmp_path), "env_passthrough": ["OPENAI_API_KEY"]}}
    env = create(config, "task")
    try:
        out = env.run("env").output
        assert "OPENAI_API_KEY=sk-local-openai-77aa" in out
        assert "ACME_LOCAL_TOKEN" not in names(out)
    finally:
        env.cleanup()


def test_background_processes_get_no_secret(make, tmp_path):
    env = make()
    process_id = env.start_background("env")
    wait_for(lambda: env.poll(process_id).exit_code is not None)
    out, _ = env.read_output(process_id)
    assert "ACME_PLAIN=plain-value" in out
    assert SECRET not in out and "OPENAI_API_KEY" not in names(out)


SCRIPT = """
import sys
from hermes_env_local import LocalEnvironment
from hermes_env_sandbox import SandboxSettings
env = LocalEnvironment(sys.argv[1], sandbox=SandboxSettings(profile="off"))
print(env.run("tr '\\\\0' '\\\\n' < /proc/$PPID/environ; echo status=$?").output)
env.cleanup()
"""


def test_a_command_cannot_read_the_parents_environment():
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import hermes_env_local
    import hermes_env_sandbox
    import pluggy

    import hermes_hookspecs
    import hermes_runtime

    argv = [sys.executable, "-c", SCRIPT, "/"]
    if os.geteuid() == 0:  # root reads any process's /proc: run hermes as an ordinary user
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop to an ordinary user")
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    env = {**os.environ, "OPENAI_API_KEY": "sk-in-the-parent-only-1234"}
    # The ordinary user may not enter this virtual environment (tox makes .tox private), so it
    # gets the packages the script imports from folders it can read.
    site = tempfile.mkdtemp(prefix="hermes-test-site-")
    try:
        os.chmod(site, 0o755)
        shutil.copytree(Path(pluggy.__file__).parent, Path(site) / "pluggy")
        packages = (hermes_env_local, hermes_env_sandbox, hermes_runtime, hermes_hookspecs)
        sources = [Path(m.__file__).parent.parent for m in packages]
        env["PYTHONPATH"] = os.pathsep.join([site, *map(str, sources)])
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(site, ignore_errors=True)
    assert "status=" in done.stdout, done.stderr
    assert "sk-in-the-parent-only-1234" not in done.stdout
    assert "status=1" in done.stdout  # refused, not merely empty
