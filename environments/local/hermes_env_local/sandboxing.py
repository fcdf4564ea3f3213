"""How the local environment puts its commands in the OS sandbox (:mod:`hermes_env_sandbox`).

One :class:`SandboxRunner` per environment: it knows the settings, the workspace (the folder
the environment started in, fixed for its life: a later ``cd`` moves where commands run, not
what they may write), the task's ``/tmp`` folder, and builds the sandbox on the first command,
so that a machine without a sandbox refuses commands (one line naming the fix) instead of
failing to create the environment. Settings no sandbox may start with (a workspace that is the
home folder or ``/``, a ``terminal.sandbox.home_allow`` path holding a credential folder) are
refused when the environment is made: every tool then gets the refusal, in one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hermes_env_sandbox import (
    RUN_DIR,
    Sandbox,
    SandboxSettings,
    allowed_environment,
    check_start,
    describe,
    limit_hint,
    settings_from_config,
)

from hermes_hookspecs import EnvironmentUnavailable

__all__ = ["SandboxRunner", "sandbox_settings"]

PREAMBLE_NAME = "preamble.sh"


def sandbox_settings(config: Mapping[str, Any]) -> SandboxSettings:
    """``terminal.sandbox`` of ``config``; :class:`EnvironmentUnavailable` when malformed."""
    try:
        return settings_from_config(config)
    except ValueError as exc:
        raise EnvironmentUnavailable(str(exc)) from None


class SandboxRunner:
    """The sandbox side of one local environment (``settings.profile == "off"``: none).

    :class:`hermes_env_sandbox.SandboxUnavailable` (a refusal) when the settings cannot start
    a sandbox over ``workspace`` (see :func:`hermes_env_sandbox.check_start`)."""

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        workspace: str,
        hermes_home: str,
        search_path: str | None = None,
    ) -> None:
        check_start(settings, workspace=workspace, hermes_home=hermes_home)
        self.settings = settings
        self.search_path = search_path
        self.workspace = workspace
        self.hermes_home = hermes_home
        self._box: Sandbox | None = None
        self._tmp: str | None = None

    @property
    def enabled(self) -> bool:
        """Whether commands run in the sandbox."""
        return self.settings.enabled

    def starting_environment(
        self, env: Mapping[str, str], passthrough: Iterable[str]
    ) -> dict[str, str]:
        """The variables the first command starts with: an allow-list when sandboxed."""
        if not self.enabled:
            return dict(env)
        return allowed_environment(env, passthrough)

    def limits(self) -> str:
        """Shell lines (builtins only) that set the process and file-size limits."""
        if not self.enabled:
            return ""
        lines = []
        if self.settings.max_processes:
            lines.append(f"builtin ulimit -u {int(self.settings.max_processes)} 2>/dev/null")
        if self.settings.max_file_size_mb:  # bash counts in 1024-byte blocks
            lines.append(f"builtin ulimit -f {int(self.settings.max_file_size_mb) * 1024}")
        return "".join(line + "\n" for line in lines)

    def use_folder(self, folder: str) -> None:
        """Keep the task's ``/tmp`` in ``folder/tmp`` (the environment's scratch folder)."""
        tmp = os.path.join(folder, "tmp")
        os.makedirs(tmp, mode=0o700, exist_ok=True)
        if tmp != self._tmp:
            self._tmp, self._box = tmp, None

    def sandbox(self) -> Sandbox:
        """The sandbox, built on first use; :class:`hermes_env_sandbox.SandboxUnavailable`
        (a refusal naming the fix) when none can start here."""
        if self._box is None:
            assert self._tmp is not None, "use_folder() first"
            self._box = Sandbox(
                self.settings,
                workspace=self.workspace,
                tmp=self._tmp,
                hermes_home=self.hermes_home,
                search_path=self.search_path,
            )
        return self._box

    def wrap(
        self, argv: Sequence[str], *, cwd: str, preamble: str
    ) -> tuple[list[str], str, list[int]]:
        """``argv`` inside the sandbox: the argv to start, the ``BASH_ENV`` path the shell
        sees, and file descriptors to pass (and close after the start)."""
        name = os.path.basename(preamble)
        wrapped, fds = self.sandbox().command(argv, cwd=cwd, files={name: preamble})
        return wrapped, f"{RUN_DIR}/{name}", fds

    def hint(self, output: str, exit_code: int) -> str:
        """The note on a failed command's output naming the sandbox limit it met."""
        if not self.enabled or self._box is None:
            return ""
        return limit_hint(output, exit_code, self._box)

    def describe(self) -> str:
        """One line on what commands may do (``""`` when the sandbox is off)."""
        return describe(self.settings, self.workspace) if self.enabled else ""
