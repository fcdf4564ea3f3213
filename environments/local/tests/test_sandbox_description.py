"""What the local environment says its sandbox allows is the sandbox's own description, before
the first command (nothing started yet) and after it alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_env_local import LocalEnvironment
from hermes_env_sandbox import SandboxSettings, unavailable_reason

needs_sandbox = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)


@needs_sandbox
@pytest.mark.parametrize(
    "settings",
    [SandboxSettings(), SandboxSettings("read-only"), SandboxSettings(network=True)],
    ids=["workspace", "read-only", "network"],
)
def test_the_summary_is_the_same_before_and_after_the_sandbox_starts(
    tmp_path: Path, settings: SandboxSettings
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    env = LocalEnvironment(str(workspace), sandbox=settings, hermes_home=str(tmp_path / "home"))
    try:
        before = env.sandbox_summary
        # the sandbox is built for the first command (run from /: in the read-only profile the
        # workspace, under this machine's /tmp, is not there for commands)
        assert env.run("true", cwd="/").exit_code == 0
        after = env.sandbox_summary
        assert before == after == env._box.sandbox().describe()
        assert f"sandbox '{settings.profile}'" in before
        assert (f"writes only in {workspace.resolve()} and /tmp" in before) == (
            settings.profile == "workspace"
        )
        assert ("the network is on" in before) == settings.network
    finally:
        env.cleanup()


def test_no_summary_when_the_sandbox_is_off(tmp_path: Path) -> None:
    env = LocalEnvironment(str(tmp_path), sandbox=SandboxSettings("off"))
    try:
        assert env.sandbox_summary == ""
        assert env.run("true").exit_code == 0
        assert env.sandbox_summary == ""
    finally:
        env.cleanup()
