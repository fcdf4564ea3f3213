"""Layer ``environment``: the operating system, shell, working directory and Python of the
machine hermes runs on, and the execution backend when commands run somewhere else.

Everything comes from the process (``os.uname``, ``/etc/os-release``, ``$SHELL``) and from
``context``; nothing is run, so building the layer is fast and gives the same bytes every time on
the same machine.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Final

from hermes_hookspecs import PromptContext, PromptLayer, hookimpl

from .config_schema import environment_keys  # noqa: F401 - a hook of this plugin

NAME = "environment"
TIER: Final = "stable"
ORDER = 900
LOCAL_BACKEND = "local"


def os_description() -> str:
    """A short description of the operating system, e.g. ``Ubuntu 24.04 LTS on x86_64, Linux
    kernel 6.8.0-31-generic``."""
    import platform  # here, not at start-up: only building a prompt needs it

    if sys.platform == "win32":
        return f"Windows {platform.release()} on {platform.machine()}"
    uname = os.uname()
    if uname.sysname == "Darwin":
        version = platform.mac_ver()[0]
        name = f"macOS {version}" if version else "macOS"
        return f"{name} on {uname.machine}, Darwin kernel {uname.release}"
    if uname.sysname == "Linux":
        try:
            name = platform.freedesktop_os_release().get("PRETTY_NAME", "") or "Linux"
        except OSError:
            name = "Linux"
        return f"{name} on {uname.machine}, Linux kernel {uname.release}"
    return f"{uname.sysname} {uname.release} on {uname.machine}"


def shell_name(environ: Mapping[str, str] | None = None) -> str:
    """The user's shell (``$SHELL``; ``%COMSPEC%`` on Windows), or ``""`` when unknown."""
    env = os.environ if environ is None else environ
    return env.get("COMSPEC" if sys.platform == "win32" else "SHELL", "")


def _terminal(config: Mapping[str, Any]) -> Mapping[str, Any]:
    section = config.get("terminal") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def environment_text(context: PromptContext, environ: Mapping[str, str] | None = None) -> str:
    """The environment section."""
    import platform

    terminal = _terminal(context.config)
    backend = str(terminal.get("backend") or LOCAL_BACKEND)
    terminal_cwd = terminal.get("cwd")
    lines = ["# Environment", f"- Operating system: {os_description()}"]
    shell = shell_name(environ)
    if shell:
        lines.append(f"- Shell: {shell}")
    if context.cwd:
        lines.append(f"- Working directory: {context.cwd}")
    if isinstance(terminal_cwd, str) and terminal_cwd and terminal_cwd != context.cwd:
        lines.append(f"- Working directory of terminal commands: {terminal_cwd}")
    lines.append(f"- Python: {platform.python_version()} ({platform.python_implementation()})")
    if backend != LOCAL_BACKEND:
        lines.append(
            f"- Execution backend: {backend}. Commands and file tools run there, not on the"
            " machine described above; its operating system, paths and installed programs may"
            " differ."
        )
    return "\n".join(lines)


@hookimpl
def hermes_prompt_layers(context: PromptContext) -> PromptLayer:
    """The environment layer."""
    return PromptLayer(name=NAME, text=environment_text(context), tier=TIER, order=ORDER)
