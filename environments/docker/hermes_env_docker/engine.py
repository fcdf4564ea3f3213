"""Talking to the Docker engine: the SDK imported on first use, a connected client, the image
made present, and the ``exec`` connections commands run through."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from hermes_env_common import Channel

from hermes_hookspecs import EnvironmentUnavailable

from .settings import DockerSettings


def import_docker() -> Any:
    """The ``docker`` SDK; :class:`EnvironmentUnavailable` when it is not installed."""
    try:
        import docker
    except ImportError:  # pragma: no cover - the dist depends on docker
        raise EnvironmentUnavailable(
            "docker backend: the docker SDK is not installed; pip install hermes-env-docker"
        ) from None
    return docker


def connect(settings: DockerSettings) -> tuple[Any, str]:
    """A connected client and the address it talks to; :class:`EnvironmentUnavailable` with a
    fix when the engine cannot be reached."""
    docker = import_docker()
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


def ensure_image(client: Any, settings: DockerSettings) -> None:
    """Make the configured image present on the engine as ``terminal.docker_pull`` says;
    :class:`EnvironmentUnavailable` naming the fix when it cannot be."""
    docker = import_docker()
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


def keep_alive(connection: Any) -> None:
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


def feed(write: Any, close_write: Any, data: bytes | None) -> None:
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


class Held:
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


class DockerChannel(Channel):
    """One ``docker exec`` connection: the command's output, then its exit status."""

    def __init__(self, api: Any, exec_id: str, sock: Any) -> None:
        self._api = api
        self._id = exec_id
        self._sock = sock
        self._raw = getattr(sock, "_sock", sock)

    def chunks(self) -> Iterator[bytes]:
        """The output, as it arrives, until the command closes it."""
        from docker.utils.socket import frames_iter

        for _stream, data in frames_iter(self._sock, tty=False):
            if data:
                yield data

    def exit_status(self, wait: float) -> int | None:
        """The exit code, waiting up to ``wait`` seconds for it (``None``: not known)."""
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
        """Shut the connection down and close it."""
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
