"""The ``local`` backend as it is registered: the factory, reading the ``terminal`` settings,
and the check of those settings (``hermes doctor``, ``hermes config check``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import EnvironmentUnavailable
from hermes_runtime.secrets import passthrough

from .environment import DEFAULT_TIMEOUT, LocalEnvironment

__all__ = ["BACKEND", "LocalBackend", "check_config", "create"]


def create(config: Mapping[str, Any], task_id: str) -> LocalEnvironment:
    """The environment factory: reads ``terminal.cwd``, ``terminal.timeout``,
    ``terminal.env_passthrough`` and ``terminal.sandbox``."""
    from .sandboxing import sandbox_settings

    terminal = config.get("terminal") or {}
    cwd = terminal.get("cwd")
    timeout = terminal.get("timeout") or DEFAULT_TIMEOUT
    return LocalEnvironment(
        None if cwd in (None, "", ".") else str(cwd),
        timeout=float(timeout),
        env_passthrough=passthrough(config),
        sandbox=sandbox_settings(config),
    )


def check_config(config: Mapping[str, Any]) -> list[str]:
    """The problems of the local settings, without starting anything: ``terminal.cwd`` is
    not an existing folder, ``terminal.timeout`` is not a number of seconds, bash is not on
    ``PATH``, ``terminal.sandbox`` is malformed or refused (``terminal.cwd`` is the home folder
    or ``/``, a ``home_allow`` path holds a credential folder), or no sandbox can start here
    (unless it is ``off``)."""
    problems = _settings_problems(config)
    if not problems:
        from hermes_env_sandbox import SandboxUnavailable, check_start, unavailable_reason

        from hermes_runtime.home import default_home

        from .sandboxing import sandbox_settings

        settings = sandbox_settings(config)
        cwd = (config.get("terminal") or {}).get("cwd")
        workspace = None if cwd in (None, "", ".") else os.path.expanduser(str(cwd))
        try:
            check_start(settings, workspace=workspace, hermes_home=str(default_home()))
        except SandboxUnavailable as exc:
            problems.append(str(exc))
        reason = unavailable_reason() if settings.enabled else None
        if reason:
            problems.append(reason)
    return problems


def _settings_problems(config: Mapping[str, Any]) -> list[str]:
    """:func:`check_config` without the sandbox's availability, which refuses each command
    instead (the model is told why, and the fix)."""
    from hermes_env_sandbox import settings_problems

    terminal = config.get("terminal") or {}
    problems = []
    cwd = terminal.get("cwd")
    if cwd not in (None, "", "."):
        path = os.path.abspath(os.path.expanduser(str(cwd)))
        if not os.path.exists(path):
            problems.append(
                f"the local working directory {path!r} does not exist; set terminal.cwd to an"
                " existing folder"
            )
        elif not os.path.isdir(path):
            problems.append(f"terminal.cwd {path!r} is not a folder; set it to a folder")
    timeout = terminal.get("timeout")
    if timeout not in (None, ""):
        try:
            if isinstance(timeout, bool) or float(timeout) <= 0:
                raise ValueError
        except (TypeError, ValueError):
            problems.append(f"terminal.timeout must be a number of seconds, got {timeout!r}")
    if shutil.which("bash") is None:
        problems.append("the local environment needs bash on PATH; install bash")
    return problems + settings_problems(config)


class LocalBackend:
    """The ``local`` backend as it is registered: ``factory(config, task_id)`` (see
    :func:`create`) with its configuration check."""

    def __call__(self, config: Mapping[str, Any], task_id: str) -> LocalEnvironment:
        """A new local environment for ``task_id``; see :func:`create`."""
        problems = _settings_problems(config)
        if problems:
            raise EnvironmentUnavailable("; ".join(problems))
        return create(config, task_id)

    @staticmethod
    def check_config(config: Mapping[str, Any]) -> list[str]:
        """See :func:`check_config`."""
        return check_config(config)

    @staticmethod
    def check(config: Mapping[str, Any]) -> str:
        """What ``hermes doctor`` reports once the settings are fine: the sandbox commands run
        in (starting one to be sure), or that it is off."""
        from hermes_env_sandbox import SandboxUnavailable, find_bwrap, unavailable_reason

        from .sandboxing import sandbox_settings

        settings = sandbox_settings(config)
        if not settings.enabled:
            return (
                "sandbox OFF (terminal.sandbox: off): commands run with your full authority, "
                "with access to your files, keys and network"
            )
        reason = unavailable_reason()
        if reason:
            raise SandboxUnavailable(reason)
        net = "network on" if settings.network else "no network"
        return f"commands run in the sandbox ({settings.profile}, {net}, bwrap {find_bwrap()})"


BACKEND = LocalBackend()
"""The registered factory."""
