"""The docker environment: one container per task, created on first use, commands through
``docker exec`` (see the package's docstring)."""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import socket
from collections.abc import Mapping
from typing import Any

from hermes_env_common import (
    Channel,
    ShellEnvironment,
    module_installed,
    safe_name,
    terminal_config,
)

from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable

from .engine import DockerChannel, Held, connect, ensure_image, feed, import_docker, keep_alive
from .reference import image_problem
from .safety import ALLOW_KEY
from .settings import CAPABILITIES, DockerSettings

log = logging.getLogger("hermes.environments")

# PID 1 (under docker's init) only waits; TERM (docker stop) ends it at once.
_KEEPALIVE = ["-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]
# PID 1 of a container that must not outlive hermes: it waits for end of file on its standard
# input, which hermes holds through an attach connection (StdinOnce: the input closes when that
# connection does, also when hermes is killed); then the container stops and removes itself.
_LIFELINE = ["-c", "trap 'exit 0' TERM INT; while read -r _; do :; done; exit 0"]


def _fingerprint(kwargs: Mapping[str, Any]) -> str:
    """A digest of the container options (all but the name and this label), so that a
    persistent container made with other settings is not reused as if it had the current ones."""
    relevant = {k: v for k, v in kwargs.items() if k != "name"}
    labels = dict(relevant.get("labels") or {})
    labels.pop("hermes.settings", None)
    relevant["labels"] = labels
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


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
        self.client, self.engine = connect(settings)
        self.api = self.client.api
        self.container: Any = None
        self._lifeline: Any = None  # the attach connection a non-persistent container lives on
        self.where = f"docker ({self.engine})"
        ensure_image(self.client, settings)
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
            except import_docker().errors.NotFound:
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
        """The name of the container: fixed per task when persistent, else with a random tail."""
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
                docker = import_docker()
                kwargs["mounts"] = [docker.types.Mount(target=workdir, source=None, type="volume")]
        extra = dict(s.run_options)
        security = extra.pop("security_opt", None) or []
        kwargs["security_opt"] += [security] if isinstance(security, str) else list(security)
        kwargs.update(extra)
        kwargs["labels"]["hermes.settings"] = _fingerprint(kwargs)
        return kwargs

    def _find_or_create(self) -> Any:
        docker = import_docker()
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
            keep_alive(self._lifeline)
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
            Held(lifeline).close()

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
        docker = import_docker()
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

            feed(raw.sendall, close_write, stdin)
        return DockerChannel(self.api, created["Id"], sock)

    def open_held(self, argv: list[str]) -> Any:
        """An exec whose input this process holds open: the engine closes it when the attach
        connection closes (clean-up, or hermes dies)."""
        docker = import_docker()
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
        keep_alive(sock)
        return Held(sock)

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
            client, _ = connect(settings)
            client.close()
        except EnvironmentUnavailable as exc:
            problems.append(str(exc))
        return problems

    @classmethod
    def check(cls, config: Mapping[str, Any]) -> str:
        """What ``hermes doctor`` reports: the engine answers and has (or can pull) the image.
        Raises :class:`EnvironmentUnavailable` with the fix otherwise."""
        settings = DockerSettings.from_config(config)
        client, where = connect(settings)
        docker = import_docker()
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
