"""The note added to a command's output when it failed on a limit of the sandbox, so that the
model learns which limit it met and how to ask for more (``escalate: true``)."""

from __future__ import annotations

import re

from .bwrap import Sandbox

__all__ = ["limit_hint"]

_READ_ONLY = re.compile(r"Read-only file system|EROFS")
_NETWORK = re.compile(
    r"Network is unreachable|Could not resolve host|Temporary failure in name resolution|"
    r"Name or service not known|nodename nor servname|No address associated with hostname|"
    r"getaddrinfo failed|ENETUNREACH|EAI_AGAIN|Failed to establish a new connection|"
    r"Couldn't connect to server|Connection refused",
    re.I,
)
_FILE_SIZE = re.compile(r"File size limit exceeded")
_PROCESSES = re.compile(r"Resource temporarily unavailable|fork: retry|Cannot fork", re.I)
_MISSING = re.compile(r"No such file or directory|ENOENT|cannot access|not found", re.I)

ESCALATE = (
    "If the task really needs it, call terminal again with the same command and "
    "escalate=true: the user is asked to allow this one command outside the sandbox."
)


def limit_hint(output: str, exit_code: int, sandbox: Sandbox) -> str:
    """A note naming the sandbox limits a failed command's ``output`` shows it met (``""``
    when it succeeded or shows none of them)."""
    if exit_code == 0:
        return ""
    limits = []
    if _READ_ONLY.search(output):
        where = sandbox.writable[0] if sandbox.writable else None
        limits.append(
            f"writes outside {where} and /tmp are refused (read-only file system)"
            if where
            else "only /tmp is writable (read-only profile)"
        )
    if not sandbox.settings.network and _NETWORK.search(output):
        limits.append("there is no network (terminal.sandbox.network is off)")
    hidden = [p for p in sandbox.hidden_paths() if p in output]
    if hidden:
        limits.append(f"{', '.join(hidden[:3])} {'is' if len(hidden) == 1 else 'are'} hidden")
    in_home = sandbox.home + "/" in output or "~/" in output
    if sandbox.home_hidden and in_home and _MISSING.search(output):
        limits.append(
            f"the home folder {sandbox.home} is hidden but for the workspace and toolchain "
            "folders (terminal.sandbox.home_allow, set by the user, shows more)"
        )
    if _FILE_SIZE.search(output):
        limits.append("files are capped at terminal.sandbox.max_file_size_mb")
    if _PROCESSES.search(output) and sandbox.settings.max_processes:
        limits.append(f"at most {sandbox.settings.max_processes} processes run at once")
    if not limits:
        return ""
    return f"[sandbox: {'; '.join(limits)}. {ESCALATE}]"
