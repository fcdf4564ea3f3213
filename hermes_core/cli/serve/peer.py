"""Whether a caller may be served by the resident process: the child that runs a call must
never be able to do more than the caller could.

The caller must be the same user (``SO_PEERCRED``) and confined exactly as the resident process
is: the same groups, capabilities, ``no_new_privs`` and seccomp state, namespaces and control
groups. A caller inside a sandbox (bubblewrap's namespaces, Landlock and seccomp, which need
``no_new_privs``), a container or a resource-limited control group differs in one of them and
runs in-process instead.
"""

from __future__ import annotations

import os

NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "user", "uts")
STATUS_FIELDS = (
    "Uid:",
    "Gid:",
    "Groups:",
    "NoNewPrivs:",
    "Seccomp:",
    "CapInh:",
    "CapPrm:",
    "CapEff:",
    "CapBnd:",
    "CapAmb:",
)


def confinement(pid: int | str) -> tuple[object, ...] | None:
    """What confines process ``pid`` (``"self"`` for this one); ``None`` when it cannot be
    read."""
    base = f"/proc/{pid}"
    try:
        namespaces = tuple(os.readlink(f"{base}/ns/{name}") for name in NAMESPACES)
        with open(f"{base}/status", encoding="utf-8") as handle:
            status = tuple(
                line.split(None, 1)[-1].strip() for line in handle if line.startswith(STATUS_FIELDS)
            )
        with open(f"{base}/cgroup", encoding="utf-8") as handle:
            cgroups = handle.read()
    except OSError:
        return None
    return namespaces, status, cgroups


def refusal(pid: int, uid: int, gid: int) -> str | None:
    """Why the caller ``pid`` (running as ``uid``:``gid``) may not be served; ``None`` when it
    may."""
    if uid != os.getuid() or gid != os.getgid():
        return "another user"
    theirs = confinement(pid)
    if theirs is None:
        return "the caller's confinement cannot be read"
    if theirs != confinement("self"):
        return "the caller is confined differently (sandbox, container or control group)"
    return None
