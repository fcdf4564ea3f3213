"""Which docker settings would let a container reach the host, and the refusal of them.

A setting is **unsafe** when it gives the container a way out of its sandbox or takes a limit
away: privileged mode, the host's network, process, IPC, UTS, user or cgroup namespace, devices,
capabilities beyond docker's own default set, a bind mount of the host's root, of ``/proc``,
``/sys`` or ``/dev``, of a container engine's socket (or a folder above one) or of any unix
socket, security options
that turn confinement off, and a memory, CPU or pids limit that is zero, negative or configured
empty. Extra ``docker run`` options are checked against a list of options known to be harmless;
anything else counts as unsafe (fail closed). Unsafe settings are refused unless
``terminal.docker_allow_unsafe`` is true.

Nothing here imports the docker SDK.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlparse

from hermes_runtime.home import default_home

__all__ = [
    "ALLOW_KEY",
    "DOCKER_DEFAULT_CAPABILITIES",
    "MANAGED_RUN_OPTIONS",
    "SAFE_RUN_OPTIONS",
    "capability",
    "check_run_options",
    "engine_sockets",
    "unsafe_capabilities",
    "unsafe_mount",
    "unsafe_network",
    "unsafe_run_options",
]

ALLOW_KEY = "terminal.docker_allow_unsafe"
"""The key that lets unsafe settings through."""

DOCKER_DEFAULT_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "NET_RAW",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
"""What docker grants a container by default; ``terminal.docker_cap_add`` may add these back.
Any other capability (``SYS_ADMIN``, ``SYS_PTRACE``, ``NET_ADMIN``, ``ALL``...) is unsafe."""

MANAGED_RUN_OPTIONS: Mapping[str, str] = {
    "image": "terminal.docker_image",
    "name": "the task id",
    "command": "hermes",
    "entrypoint": "hermes",
    "detach": "hermes",
    "remove": "hermes",
    "auto_remove": "hermes",
    "stdin_open": "hermes",
    "tty": "hermes",
    "stream": "hermes",
    "init": "hermes",
    "labels": "hermes",
    "working_dir": "terminal.docker_workdir",
    "environment": "terminal.docker_env",
    "user": "terminal.docker_user",
    "network": "terminal.docker_network",
    "network_mode": "terminal.docker_network",
    "network_disabled": "terminal.docker_network",
    "volumes": "terminal.docker_volumes",
    "mounts": "terminal.docker_volumes",
    "tmpfs": "terminal.docker_read_only",
    "read_only": "terminal.docker_read_only",
    "privileged": "terminal.docker_privileged",
    "cap_add": "terminal.docker_cap_add",
    "cap_drop": "hermes (every capability is dropped first)",
    "mem_limit": "terminal.container_memory",
    "memswap_limit": "terminal.container_memory",
    "nano_cpus": "terminal.container_cpu",
    "cpu_quota": "terminal.container_cpu",
    "cpu_period": "terminal.container_cpu",
    "cpu_count": "terminal.container_cpu",
    "pids_limit": "terminal.container_pids",
}
"""``docker run`` options hermes sets itself, and the key that controls each."""

SAFE_RUN_OPTIONS = frozenset(
    {
        "blkio_weight",
        "cpu_shares",
        "cpuset_cpus",
        "cpuset_mems",
        "dns",
        "dns_opt",
        "dns_search",
        "domainname",
        "extra_hosts",
        "group_add",
        "hostname",
        "mac_address",
        "mem_reservation",
        "platform",
        "ports",
        "shm_size",
        "stop_signal",
        "sysctls",  # docker accepts only namespaced ones
        "ulimits",
    }
)
"""Extra options that cannot open the sandbox. Namespace modes (``ipc_mode``, ``pid_mode``,
``uts_mode``, ``userns_mode``, ``cgroupns``) and ``security_opt`` are checked by value."""

_NAMESPACE_OPTIONS = {
    "ipc_mode": {"private", "shareable", "none", ""},
    "pid_mode": {""},
    "uts_mode": {""},
    "userns_mode": {""},
    "cgroupns": {"private", ""},
}
_SAFE_SECURITY_OPTS = {"no-new-privileges", "no-new-privileges:true", "no-new-privileges=true"}
_CAPABILITY = re.compile(r"^[A-Z_]+$")
_HOST_KERNEL_PATHS = ("/proc", "/sys", "/dev")
_WELL_KNOWN_SOCKETS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/var/run/containerd/containerd.sock",
    "/run/containerd/containerd.sock",
    "/var/run/podman/podman.sock",
    "/run/podman/podman.sock",
)


def capability(name: Any) -> str:
    """``name`` as docker spells a capability (``cap_sys_admin`` -> ``SYS_ADMIN``); raises
    ``ValueError`` for something that is not a capability name."""
    text = str(name).strip().upper()
    text = text.removeprefix("CAP_")
    if not _CAPABILITY.match(text):
        raise ValueError(f"terminal.docker_cap_add entry {name!r} is not a capability name")
    return text


def unsafe_capabilities(names: Iterable[str]) -> list[str]:
    """The capabilities of ``names`` that docker does not grant by default."""
    return [name for name in names if name not in DOCKER_DEFAULT_CAPABILITIES]


def unsafe_network(network: str) -> str | None:
    """Why ``network`` is unsafe (the host's, or another container's), or ``None``."""
    if network == "host":
        return "terminal.docker_network is host (the host's network stack and services)"
    if network.startswith("container:"):
        return f"terminal.docker_network is {network} (another container's network)"
    return None


def engine_sockets(*hosts: str | None) -> list[str]:
    """The container engine sockets a mount must not expose: the well-known ones, the rootless
    ones under ``$XDG_RUNTIME_DIR`` and the unix sockets of ``hosts`` (``unix://...``)."""
    paths = list(_WELL_KNOWN_SOCKETS)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        paths += [f"{runtime}/docker.sock", f"{runtime}/podman/podman.sock"]
    for host in hosts:
        if host and host.startswith("unix://"):
            paths.append(urlparse(host).path or host[len("unix://") :])
    return paths


def _forms(path: str) -> set[str]:
    forms = {posixpath.normpath(path)}
    try:
        forms.add(os.path.realpath(path))
    except OSError:
        pass
    return forms


def private_folder(mounted: Iterable[str]) -> str | None:
    """The private folder (``$HERMES_HOME``, ``~/.ssh``, cloud credentials... the folders the
    command sandbox hides) that one of the ``mounted`` paths is, lies in or contains."""

    from hermes_env_sandbox import HIDDEN_IN_HOME  # here: `hermes --help` loads this module

    home = os.path.expanduser("~")
    private = [str(default_home())] + [posixpath.join(home, p) for p in HIDDEN_IN_HOME]
    for folder in private:
        for form in _forms(folder):
            if any(m == form or m.startswith(form + "/") for m in mounted):
                return folder
            if os.path.lexists(form) and any(form.startswith(m.rstrip("/") + "/") for m in mounted):
                return folder
    return None


def unsafe_mount(host_path: str, sockets: Iterable[str]) -> str | None:
    """Why binding ``host_path`` into the container is unsafe, or ``None``. Symbolic links are
    followed on both sides (``/var/run`` is often a link to ``/run``)."""
    if not host_path.startswith("/"):
        return None  # a named volume, not a host path
    mounted = _forms(host_path)
    if "/" in mounted:
        return f"the host's root folder ({host_path})"
    for kernel in _HOST_KERNEL_PATHS:
        if any(m == kernel or m.startswith(kernel + "/") for m in mounted):
            return f"the host's {kernel} ({host_path})"
    for socket in sockets:
        for target in _forms(socket):
            if any(m == target or target.startswith(m + "/") for m in mounted):
                return f"the container engine socket {socket} ({host_path})"
    private = private_folder(mounted)
    if private:
        return f"{private} ({host_path}): hermes's own home or a credential folder"
    if any(posixpath.basename(m) == "docker.sock" for m in mounted):
        return f"a Docker socket ({host_path})"
    try:
        if stat.S_ISSOCK(os.stat(host_path).st_mode):
            return f"a unix socket of the host ({host_path})"
    except OSError:
        pass
    return None


def check_run_options(options: Any) -> dict[str, Any]:
    """``terminal.docker_run_options`` as a dict; ``ValueError`` naming the key to use instead
    when it sets an option hermes manages."""
    if options in (None, ""):
        return {}
    if not isinstance(options, Mapping):
        raise ValueError("terminal.docker_run_options must be a mapping of docker run options")
    result: dict[str, Any] = {}
    for key, value in options.items():
        name = str(key).replace("-", "_")
        if name in MANAGED_RUN_OPTIONS:
            raise ValueError(
                f"terminal.docker_run_options.{key} is set by {MANAGED_RUN_OPTIONS[name]}"
            )
        result[name] = value
    return result


def unsafe_run_options(options: Mapping[str, Any]) -> list[str]:
    """Why each unsafe entry of the (checked) run options is unsafe."""
    reasons = []
    for name, value in options.items():
        where = f"terminal.docker_run_options.{name}"
        if name in SAFE_RUN_OPTIONS:
            continue
        if name in _NAMESPACE_OPTIONS:
            if str(value or "").strip().lower() not in _NAMESPACE_OPTIONS[name]:
                reasons.append(
                    f"{where} is {value} (shares a namespace with the host or another container)"
                )
            continue
        if name == "security_opt":
            entries = [value] if isinstance(value, str) else list(value or [])
            loose = [str(e) for e in entries if str(e).strip().lower() not in _SAFE_SECURITY_OPTS]
            if loose:
                reasons.append(f"{where} has {', '.join(loose)} (changes the confinement)")
            continue
        reasons.append(f"{where} is not known to be safe")
    return reasons
