"""The docker backend's settings: ``terminal.docker_*`` read, checked and refused when they would
let the container reach the host (:mod:`hermes_env_docker.safety`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_env_common import parse_bool, parse_memory_mb, terminal_config

from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable

from .safety import (
    ALLOW_KEY,
    capability,
    check_run_options,
    engine_sockets,
    unsafe_capabilities,
    unsafe_mount,
    unsafe_network,
    unsafe_run_options,
)

DEFAULT_IMAGE = "python:3.11-slim"
"""The image used when ``terminal.docker_image`` is not set: Debian with Python 3.11, bash and
coreutils. Any image with ``/bin/sh`` works."""

REFUSAL_RULE = "docker-unsafe-settings"
"""The rule a refusal of unsafe settings names (:class:`~hermes_hookspecs.EnvironmentRefused`)."""

DEFAULT_WORKDIR = "/workspace"
DEFAULT_CPU = 1.0
DEFAULT_MEMORY_MB = 4096
DEFAULT_PIDS = 512
CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID"]
"""Capabilities kept after dropping all: enough for a package manager and for file ownership
inside the container; no raw sockets, no mounts, no ptrace."""


@dataclass
class DockerSettings:
    """The ``terminal`` keys the docker backend reads (Hermes' names where Hermes has one).

    ``unsafe`` lists why the settings would let the container reach the host (see
    :mod:`hermes_env_docker.safety`); :meth:`from_config` refuses them unless
    ``allow_unsafe``."""

    image: str = DEFAULT_IMAGE
    workdir: str = DEFAULT_WORKDIR
    volumes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    network: str = "none"
    cpu: float | None = DEFAULT_CPU
    memory_mb: int | None = DEFAULT_MEMORY_MB
    pids: int | None = DEFAULT_PIDS
    user: str | None = None
    read_only: bool = True
    persistent: bool = False
    pull: str = "missing"
    host: str | None = None
    timeout: float | None = None
    privileged: bool = False
    cap_add: list[str] = field(default_factory=list)
    run_options: dict[str, Any] = field(default_factory=dict)
    allow_unsafe: bool = False
    unsafe: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> DockerSettings:
        """Read and check the settings; a bad value is an :class:`EnvironmentUnavailable`, an
        unsafe one without ``terminal.docker_allow_unsafe`` an :class:`EnvironmentRefused`
        (one line that names the key)."""
        term = terminal_config(config)
        unsafe: list[str] = []
        try:
            volumes = term.get("docker_volumes") or []
            if isinstance(volumes, str):
                volumes = [volumes]
            env = term.get("docker_env") or {}
            if not isinstance(env, Mapping):
                raise ValueError("terminal.docker_env must be a mapping of NAME: value")
            pull = str(term.get("docker_pull") or "missing")
            if pull not in {"missing", "always", "never"}:
                raise ValueError("terminal.docker_pull must be missing, always or never")
            timeout = term.get("timeout")
            cap_add = term.get("docker_cap_add") or []
            if isinstance(cap_add, str):
                cap_add = [cap_add]
            settings = cls(
                image=str(term.get("docker_image") or DEFAULT_IMAGE),
                workdir=str(term.get("docker_workdir") or DEFAULT_WORKDIR),
                volumes=[_volume(v) for v in volumes],
                env={str(k): str(v) for k, v in env.items()},
                network=str(term.get("docker_network") or "none"),
                cpu=_limit(term, "container_cpu", DEFAULT_CPU, float, unsafe),
                memory_mb=_limit(term, "container_memory", DEFAULT_MEMORY_MB, _memory, unsafe),
                pids=_limit(term, "container_pids", DEFAULT_PIDS, _count, unsafe),
                user=str(term["docker_user"]) if term.get("docker_user") else None,
                read_only=_flag(term, "docker_read_only", True),
                persistent=_flag(term, "container_persistent", False),
                pull=pull,
                host=str(term["docker_host"]) if term.get("docker_host") else None,
                timeout=float(timeout) if timeout else None,
                privileged=_flag(term, "docker_privileged", False),
                cap_add=[capability(c) for c in cap_add],
                run_options=check_run_options(term.get("docker_run_options")),
                allow_unsafe=_flag(term, "docker_allow_unsafe", False),
            )
        except (TypeError, ValueError) as exc:
            raise EnvironmentUnavailable(f"docker backend: bad setting: {exc}") from None
        settings.unsafe = settings._unsafe_reasons() + unsafe
        if settings.unsafe and not settings.allow_unsafe:
            raise EnvironmentRefused(
                "docker backend: refusing unsafe settings: "
                + "; ".join(settings.unsafe)
                + f"; set {ALLOW_KEY}: true to allow them",
                rule=REFUSAL_RULE,
            )
        return settings

    def _unsafe_reasons(self) -> list[str]:
        """Why these settings would let the container reach the host (empty: they would not)."""
        reasons = []
        if self.privileged:
            reasons.append("terminal.docker_privileged is true (full access to the host)")
        network = unsafe_network(self.network)
        if network:
            reasons.append(network)
        added = unsafe_capabilities(self.cap_add)
        if added:
            reasons.append(f"terminal.docker_cap_add adds {', '.join(added)}")
        sockets = engine_sockets(self.host, os.environ.get("DOCKER_HOST"))
        for volume in self.volumes:
            why = unsafe_mount(volume.split(":")[0], sockets)
            if why:
                reasons.append(f"terminal.docker_volumes mounts {why}")
        reasons += unsafe_run_options(self.run_options)
        return reasons


def _flag(term: Mapping[str, Any], key: str, default: bool) -> bool:
    """A yes/no setting; ``ValueError`` naming the key for anything else."""
    try:
        return parse_bool(term.get(key), default)
    except ValueError as exc:
        raise ValueError(f"terminal.{key}: {exc}") from None


def _limit(term: Mapping[str, Any], key: str, default: Any, parse: Any, unsafe: list[str]) -> Any:
    """A resource limit: the default when the key is absent; ``None`` (no limit, noted in
    ``unsafe``) when it is configured empty, zero or negative."""
    if key not in term:
        return default
    raw = term[key]
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        unsafe.append(f"terminal.{key} is empty (no limit)")
        return None
    if isinstance(raw, bool):
        raise ValueError(f"terminal.{key} must be a number, not {raw!r}")
    try:
        value = parse(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"terminal.{key}: {exc}") from None
    if value <= 0:
        unsafe.append(f"terminal.{key} is {raw!r} (no limit)")
        return None
    return value


def _memory(raw: Any) -> float:
    """MiB of a ``container_memory`` value (``0`` and negative values stay as they are)."""
    match = re.match(r"\s*(-?\d+(?:\.\d+)?)", str(raw))
    if match and float(match.group(1)) <= 0:
        return float(match.group(1))
    value = parse_memory_mb(raw)
    if value is None:
        raise ValueError(f"not a memory size: {raw!r}")
    return value


def _count(raw: Any) -> int:
    value = float(raw)
    if value != int(value):
        raise ValueError(f"not a whole number: {raw!r}")
    return int(value)


def _volume(spec: Any) -> str:
    """``host:container[:ro|rw]`` with the host path made absolute (``~`` expanded)."""
    text = str(spec)
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1].startswith("/"):
        raise ValueError(
            f"terminal.docker_volumes entry {text!r} is not host_path:/container/path[:ro]"
        )
    if len(parts) == 3 and parts[2] not in {"ro", "rw"}:
        raise ValueError(f"terminal.docker_volumes entry {text!r}: mode must be ro or rw")
    host = parts[0]
    if host.startswith(("~", ".", "/")):
        host = os.path.abspath(os.path.expanduser(host))
    return ":".join([host, *parts[1:]])
