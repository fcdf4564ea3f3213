"""hermes execution backend ``docker``: one long-lived container per task, commands through
``docker exec``.

The container is created on first use of a task from ``terminal.docker_image`` with the network
``none``, a read-only root file system (``/tmp`` and the working folder stay writable), all
capabilities dropped but a few, ``no-new-privileges``, an init process, and memory / CPU / pids
limits. Settings that would let it reach the host are refused unless
``terminal.docker_allow_unsafe`` is true (:mod:`hermes_env_docker.safety`). The container is
removed at clean-up unless ``terminal.container_persistent`` is true, in which case it is stopped
and found again by name for the next task with the same id. The engine is the one
``DOCKER_HOST`` (or ``terminal.docker_host``) points at, local or remote.

Commands, files and background processes go through exec (see :mod:`hermes_env_common`); the
``docker`` SDK is imported only when an environment is created.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_env_common import (
    Channel,
    ShellEnvironment,
    module_installed,
    parse_bool,
    parse_memory_mb,
    safe_name,
    terminal_config,
)

from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .reference import image_problem
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

__all__ = ["DEFAULT_IMAGE", "DockerEnvironment", "DockerSettings", "hermes_register_environments"]

log = logging.getLogger("hermes.environments")

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

# PID 1 (under docker's init) only waits; TERM (docker stop) ends it at once.
_KEEPALIVE = ["-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]
# PID 1 of a container that must not outlive hermes: it waits for end of file on its standard
# input, which hermes holds through an attach connection (StdinOnce: the input closes when that
# connection does, also when hermes is killed); then the container stops and removes itself.
_LIFELINE = ["-c", "trap 'exit 0' TERM INT; while read -r _; do :; done; exit 0"]


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


def _fingerprint(kwargs: Mapping[str, Any]) -> str:
    """A digest of the container options (all but the name and this label), so that a
    persistent container made with other settings is not reused as if it had the current ones."""
    relevant = {k: v for k, v in kwargs.items() if k != "name"}
    labels = dict(relevant.get("labels") or {})
    labels.pop("hermes.settings", None)
    relevant["labels"] = labels
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _import_docker() -> Any:
    try:
        import docker
    except ImportError:  # pragma: no cover - the dist depends on docker
        raise EnvironmentUnavailable(
            "docker backend: the docker SDK is not installed; pip install hermes-env-docker"
        ) from None
    return docker


def _client(settings: DockerSettings) -> tuple[Any, str]:
    """A connected client and the address it talks to; :class:`EnvironmentUnavailable` with a
    fix when the engine cannot be reached."""
    docker = _import_docker()
    where = settings.host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        if settings.host:
            client = docker.DockerClient(base_url=settings.host, timeout=60)
        else:
            client = docker.from_env(timeout=60)
        client.ping()
    except Exception as exc:  # docker raises DockerException, requests errors, OSError...
        reason = str(exc)
        if "No such file or directory" in reason or "FileNotFoundError" in reason:
            reason = "no engine socket there"
        elif "Connection refused" in reason:
            reason = "connection refused"
        elif "Permission denied" in reason:
            reason = "permission denied on the socket (add yourself to the docker group)"
        raise EnvironmentUnavailable(
            f"docker backend: cannot reach a Docker engine at {where}: {reason}. Start Docker,"
            " or point DOCKER_HOST (or terminal.docker_host) at a running engine; hermes does"
            " not fall back to running commands locally"
        ) from None
    return client, where


def _ensure_image(client: Any, settings: DockerSettings) -> None:
    docker = _import_docker()
    image = settings.image
    present = True
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        present = False
    except docker.errors.APIError as exc:
        raise EnvironmentUnavailable(
            f"docker backend: cannot look up image {image}: {exc}"
        ) from None
    if present and settings.pull != "always":
        return
    if settings.pull == "never" and not present:
        raise EnvironmentUnavailable(
            f"docker backend: image {image} is not on the engine and terminal.docker_pull is"
            f" never; run `docker pull {image}` or build it"
        )
    try:
        client.images.pull(image)
    except Exception as exc:
        if present:
            return  # keep the local copy when a refresh fails
        raise EnvironmentUnavailable(
            f"docker backend: image {image} is not on the engine and pulling it failed"
            f" ({str(exc).strip()[:300]}); run `docker pull {image}`, build it, or set"
            " terminal.docker_image to an image the engine has"
        ) from None


def _keep_alive(connection: Any) -> None:
    """TCP keep-alive on an idle connection to a remote engine, so that no firewall or NAT
    forgets it (which would end a container that lives on it)."""
    raw = getattr(connection, "_sock", connection)
    try:
        if raw.family in (socket.AF_INET, socket.AF_INET6):
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if hasattr(socket, "TCP_KEEPIDLE"):
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 60)
    except (OSError, AttributeError):
        pass


def _feed(write: Any, close_write: Any, data: bytes | None) -> None:
    """Write ``data`` (then end-of-file) from a thread, so a command that writes output before it
    reads all its input cannot dead-lock with us."""

    def run() -> None:
        try:
            if data:
                view = memoryview(data)
                for start in range(0, len(view), 1 << 16):
                    write(view[start : start + (1 << 16)])
        except OSError:
            pass
        finally:
            try:
                close_write()
            except OSError:
                pass

    if data:
        threading.Thread(target=run, name="hermes-docker-stdin", daemon=True).start()
    else:
        run()


class _Held:
    """An attach connection kept open; closing it ends the input of what it is attached to."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock

    def close(self) -> None:
        """Close the connection (both the socket wrapper and the raw socket)."""
        for target in (getattr(self._sock, "_sock", None), self._sock):
            if target is None:
                continue
            try:
                target.close()
            except (OSError, AttributeError):
                pass


class _DockerChannel(Channel):
    def __init__(self, api: Any, exec_id: str, sock: Any) -> None:
        self._api = api
        self._id = exec_id
        self._sock = sock
        self._raw = getattr(sock, "_sock", sock)

    def chunks(self) -> Iterator[bytes]:
        from docker.utils.socket import frames_iter

        for _stream, data in frames_iter(self._sock, tty=False):
            if data:
                yield data

    def exit_status(self, wait: float) -> int | None:
        deadline = time.monotonic() + wait
        while True:
            try:
                info = self._api.exec_inspect(self._id)
            except Exception:
                return None
            if not info.get("Running"):
                code = info.get("ExitCode")
                return int(code) if code is not None else None
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def close(self) -> None:
        for target in (self._raw, self._sock):
            try:
                target.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError, ValueError):
                pass
        for target in (self._sock, self._raw):
            try:
                target.close()
            except (OSError, AttributeError):
                pass


class DockerEnvironment(ShellEnvironment):
    """A task's container; the factory registered as ``docker``: ``DockerEnvironment(config,
    task_id)``."""

    name = "docker"

    def __init__(self, config: Mapping[str, Any], task_id: str) -> None:
        settings = DockerSettings.from_config(config)
        problem = image_problem(settings.image)
        if problem:
            raise EnvironmentUnavailable(f"docker backend: {problem}")
        if settings.unsafe:
            log.warning(
                "docker backend: unsafe settings allowed by terminal.docker_allow_unsafe: %s",
                "; ".join(settings.unsafe),
            )
        super().__init__(
            task_id=task_id,
            workdir=settings.workdir,
            default_timeout=settings.timeout,
            config=config,
        )
        self.settings = settings
        self.client, self.engine = _client(settings)
        self.api = self.client.api
        self.container: Any = None
        self._lifeline: Any = None  # the attach connection a non-persistent container lives on
        self.where = f"docker ({self.engine})"
        _ensure_image(self.client, settings)
        self.container = self._find_or_create()
        self.where = f"docker container {self.container.name}"
        try:
            self.prepare_shell()
            if settings.persistent:
                # the container stays; what the task started in it goes when hermes does
                self.hold_lifeline()
        except EnvironmentUnavailable:
            container = self.container
            try:
                container.reload()
                stopped = container.status != "running"
            except _import_docker().errors.NotFound:
                stopped = True  # it exited and the engine removed it already (auto-remove)
            except Exception:
                stopped = False
            if stopped and not self.settings.persistent:
                self.container = None
                try:
                    self._died_at_start(container)  # raises, with the container's last words
                finally:
                    self._close_lifeline()
                    self.client.close()
            self.teardown()
            raise
        except BaseException:
            self.teardown()
            raise

    # --- the container ------------------------------------------------------------------------

    def container_name(self) -> str:
        base = f"hermes-{safe_name(self.task_id)}"
        return base if self.settings.persistent else f"{base}-{secrets.token_hex(4)}"

    def _create_kwargs(self, name: str) -> dict[str, Any]:
        s = self.settings
        kwargs: dict[str, Any] = {
            "image": s.image,
            "name": name,
            "detach": True,
            "entrypoint": ["/bin/sh"],
            "command": list(_KEEPALIVE),
            "labels": {
                "hermes.managed": "1",
                "hermes.task": self.task_id[:200],
                "hermes.persistent": "1" if s.persistent else "0",
            },
            "network_mode": s.network,
            "working_dir": s.workdir,
            "environment": dict(s.env),
            "init": True,
            "cap_drop": ["ALL"],
            "cap_add": sorted(set(CAPABILITIES) | set(s.cap_add)),
            "security_opt": ["no-new-privileges"],
            "read_only": s.read_only,
        }
        if s.privileged:
            kwargs["privileged"] = True
        if s.volumes:
            kwargs["volumes"] = list(s.volumes)
        if s.memory_mb:
            kwargs["mem_limit"] = f"{s.memory_mb}m"
            kwargs["memswap_limit"] = f"{s.memory_mb}m"
        if s.cpu:
            kwargs["nano_cpus"] = int(s.cpu * 1e9)
        if s.pids:
            kwargs["pids_limit"] = s.pids
        if s.read_only:
            # writable: /tmp (memory, emptied at restart) and the working folder (a volume of
            # the container, so a persistent container keeps its files; removed with it)
            kwargs["tmpfs"] = {"/tmp": "rw,exec,nosuid,nodev,size=512m"}
            mounted = {v.split(":")[1].rstrip("/") for v in s.volumes}
            workdir = s.workdir.rstrip("/") or "/"
            if workdir not in mounted and workdir not in ("/", "/tmp"):
                docker = _import_docker()
                kwargs["mounts"] = [docker.types.Mount(target=workdir, source=None, type="volume")]
        extra = dict(s.run_options)
        security = extra.pop("security_opt", None) or []
        kwargs["security_opt"] += [security] if isinstance(security, str) else list(security)
        kwargs.update(extra)
        kwargs["labels"]["hermes.settings"] = _fingerprint(kwargs)
        return kwargs

    def _find_or_create(self) -> Any:
        docker = _import_docker()
        name = self.container_name()
        if self.settings.persistent:
            try:
                container = self.client.containers.get(name)
            except docker.errors.NotFound:
                container = None
            except docker.errors.APIError as exc:
                raise EnvironmentUnavailable(
                    f"docker backend: cannot look up {name}: {exc}"
                ) from None
            if container is not None:
                if container.labels.get("hermes.managed") != "1":
                    raise EnvironmentUnavailable(
                        f"docker backend: a container named {name} exists but hermes did not"
                        " create it; remove or rename it"
                    )
                wanted = _fingerprint(self._create_kwargs(name))
                if container.labels.get("hermes.settings") != wanted:
                    # it keeps the options it was made with: privileged, mounts, limits...
                    raise EnvironmentUnavailable(
                        f"docker backend: the persistent container {name} was created with other"
                        f" settings than the current terminal settings; remove it (docker rm -f"
                        f" {name}, its files go with it) to apply them, or restore the settings"
                    )
                if container.status != "running":
                    try:
                        container.start()
                        container.reload()
                    except docker.errors.APIError as exc:
                        raise EnvironmentUnavailable(
                            f"docker backend: cannot restart persistent container {name}: {exc}"
                        ) from None
                return container
        try:
            kwargs = self._create_kwargs(name)
            if self.settings.persistent:
                container = self.client.containers.run(**kwargs)
            else:
                container = self._create_tied_to_hermes(kwargs)
            container.reload()
            if container.status != "running":
                self._died_at_start(container)
            self._own_workdir(container)
            return container
        except docker.errors.APIError as exc:
            explanation = getattr(exc, "explanation", None) or str(exc)
            self._close_lifeline()
            try:  # a container that was created but could not start
                self.client.containers.get(name).remove(force=True)
            except Exception:
                pass
            raise EnvironmentUnavailable(
                f"docker backend: cannot start a container from {self.settings.image}:"
                f" {explanation}"
            ) from None

    def _create_tied_to_hermes(self, kwargs: dict[str, Any]) -> Any:
        """Create the container with :data:`_LIFELINE` as its program, attach to its input,
        then start it: when the attach connection closes (clean-up, or hermes dies in any way)
        the container stops and the engine removes it with its volumes."""
        kwargs = dict(kwargs)
        kwargs.pop("detach", None)  # create() without detach sets StdinOnce with stdin_open
        kwargs.update(command=list(_LIFELINE), stdin_open=True, auto_remove=True)
        container = self.client.containers.create(**kwargs)
        try:
            self._lifeline = self.api.attach_socket(container.id, params={"stdin": 1, "stream": 1})
            _keep_alive(self._lifeline)
            container.start()
        except BaseException:
            self._close_lifeline()
            try:
                container.remove(force=True, v=True)
            except Exception:
                pass
            raise
        return container

    def _close_lifeline(self) -> None:
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is not None:
            _Held(lifeline).close()

    def _died_at_start(self, container: Any) -> None:
        try:
            logs = container.logs(tail=5).decode("utf-8", "replace").strip()
            code = container.attrs.get("State", {}).get("ExitCode")
            container.remove(force=True)
        except Exception:
            logs, code = "", None
        raise EnvironmentUnavailable(
            f"docker backend: cannot start a container from {self.settings.image}: it exited at"
            f" once (exit code {code}{': ' + logs if logs else ''}); the image needs /bin/sh"
        )

    def _own_workdir(self, container: Any) -> None:
        """Docker creates a missing working folder owned by root; give it to the configured
        user (unless it is a bind mount, whose owner is the host's business). The container's
        own process runs as root (it only sleeps) so that this works with all capabilities but
        a few dropped; every command runs as the configured user (``exec --user``)."""
        s = self.settings
        mounted = {v.split(":")[1].rstrip("/") for v in s.volumes}
        if not s.user or s.workdir.rstrip("/") in mounted:
            return
        owner = s.user if ":" in s.user else f"{s.user}:"
        container.exec_run(
            # only a folder docker just made (empty), never an existing one such as /usr
            [
                "/bin/sh",
                "-c",
                '[ "$2" != / ] && [ -z "$(ls -A "$2" 2>/dev/null)" ] && chown "$1" "$2"; true',
                "sh",
                owner,
                s.workdir,
            ],
            user="0",
        )

    # --- the channel --------------------------------------------------------------------------

    def open_channel(self, argv: list[str], stdin: bytes | None) -> Channel:
        """Run ``argv`` in the container with ``docker exec`` (as the configured user), with
        ``stdin`` fed from a thread."""
        docker = _import_docker()
        try:
            created = self.api.exec_create(
                self.container.id,
                argv,
                stdin=stdin is not None,
                stdout=True,
                stderr=True,
                user=self.settings.user or "",
            )
            sock = self.api.exec_start(created["Id"], socket=True)
        except docker.errors.NotFound:
            raise EnvironmentUnavailable(
                f"{self.where}: the container is gone (removed outside hermes); the next task"
                " gets a new one"
            ) from None
        except docker.errors.APIError as exc:
            if "is not running" in str(exc):
                raise EnvironmentUnavailable(
                    f"{self.where}: the container is not running (stopped outside hermes, or"
                    " killed by its memory limit); the next task gets a new one"
                ) from None
            raise EnvironmentUnavailable(f"{self.where}: exec failed: {exc}") from None
        except Exception as exc:  # the engine went away
            raise EnvironmentUnavailable(
                f"{self.where}: lost the Docker engine at {self.engine}: {exc}"
            ) from None
        for target in (sock, getattr(sock, "_sock", None)):
            if target is not None and hasattr(target, "settimeout"):
                try:
                    target.settimeout(None)
                except OSError:
                    pass
        if stdin is not None:
            raw = getattr(sock, "_sock", sock)

            def close_write() -> None:
                if hasattr(raw, "shutdown_write"):
                    raw.shutdown_write()
                else:
                    raw.shutdown(socket.SHUT_WR)

            _feed(raw.sendall, close_write, stdin)
        return _DockerChannel(self.api, created["Id"], sock)

    def open_held(self, argv: list[str]) -> Any:
        """An exec whose input this process holds open: the engine closes it when the attach
        connection closes (clean-up, or hermes dies)."""
        docker = _import_docker()
        try:
            created = self.api.exec_create(
                self.container.id,
                argv,
                stdin=True,
                stdout=False,
                stderr=False,
                user=self.settings.user or "",
            )
            sock = self.api.exec_start(created["Id"], socket=True)
        except docker.errors.APIError as exc:
            raise EnvironmentUnavailable(
                f"{self.where}: cannot start the process lifeline: {exc}"
            ) from None
        _keep_alive(sock)
        return _Held(sock)

    # --- clean-up -----------------------------------------------------------------------------

    def teardown(self) -> None:
        """Remove the container (stop it when persistent), close the lifelines and the client."""
        container, self.container = self.container, None
        try:
            if container is not None:
                if self.settings.persistent:
                    container.stop(timeout=5)
                else:
                    container.remove(force=True, v=True)
        except Exception:  # already gone, or the engine went away
            pass
        finally:
            self._release_lifeline()
            self._close_lifeline()
            try:
                self.client.close()
            except Exception:
                pass

    def cleanup(self) -> None:
        """Remove the container (stop it when persistent). Processes go with it."""
        if self._closed:
            return
        if self.settings.persistent:
            super().cleanup()  # kill what runs, keep the files
            return
        self._closed = True
        self.teardown()

    # --- doctor -------------------------------------------------------------------------------

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> list[str]:
        """The problems of the docker settings, without creating anything: values that do not
        parse, unsafe settings not allowed by ``terminal.docker_allow_unsafe`` (one line
        each), an image name that is not a reference, the SDK missing, the engine not
        answering."""
        try:
            settings = DockerSettings.from_config(config)
        except EnvironmentRefused:
            term = dict(terminal_config(config))
            term["docker_allow_unsafe"] = True
            settings = DockerSettings.from_config({**config, "terminal": term})
            settings.allow_unsafe = False
        except EnvironmentUnavailable as exc:
            return [str(exc)]
        problems = []
        if not settings.allow_unsafe:
            problems += [
                f"docker backend: unsafe setting refused: {reason}; set {ALLOW_KEY}: true to"
                " allow it"
                for reason in settings.unsafe
            ]
        problem = image_problem(settings.image)
        if problem:
            problems.append(f"docker backend: {problem}")
        if not module_installed("docker"):
            problems.append(
                "docker backend: the docker SDK is not installed; pip install hermes-env-docker"
            )
            return problems
        try:
            client, _ = _client(settings)
            client.close()
        except EnvironmentUnavailable as exc:
            problems.append(str(exc))
        return problems

    @classmethod
    def check(cls, config: Mapping[str, Any]) -> str:
        """What ``hermes doctor`` reports: the engine answers and has (or can pull) the image.
        Raises :class:`EnvironmentUnavailable` with the fix otherwise."""
        settings = DockerSettings.from_config(config)
        client, where = _client(settings)
        docker = _import_docker()
        try:
            version = client.version().get("Version", "?")
            try:
                client.images.get(settings.image)
                image = f"image {settings.image} present"
            except docker.errors.ImageNotFound:
                if settings.pull == "never":
                    raise EnvironmentUnavailable(
                        f"docker backend: image {settings.image} is not on the engine and"
                        " terminal.docker_pull is never"
                    ) from None
                image = f"image {settings.image} not present yet (pulled on first use)"
        finally:
            client.close()
        root = "read-only root" if settings.read_only else "writable root"
        report = f"Docker {version} at {where}, {image}, network {settings.network}, {root}"
        if settings.unsafe:
            report += f"; UNSAFE (allowed by terminal.docker_allow_unsafe): {len(settings.unsafe)}"
            report += " setting(s): " + "; ".join(settings.unsafe)
        return report


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register the ``docker`` backend."""
    register("docker", DockerEnvironment)
