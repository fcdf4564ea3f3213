"""hermes execution backend ``modal``: a Modal sandbox per task, commands through
``Sandbox.exec``.

The sandbox is created on first use of a task from ``terminal.modal_image`` (a registry image)
in the Modal app ``terminal.modal_app`` (default ``hermes-agent``), with ``container_cpu``,
``container_memory`` (MiB) and a lifetime of ``terminal.lifetime_seconds`` (default one hour; Modal
ends the sandbox then whatever happens); it is terminated at clean-up unless
``container_persistent`` is true, in which case it is named after the task and found again by the
next task with the same id while it lives. Credentials are Modal's own (``modal token new``, or
``MODAL_TOKEN_ID`` / ``MODAL_TOKEN_SECRET``).

The ``modal`` SDK is imported only when an environment is created; everything the backend calls
on it is: ``App.lookup``, ``Image.from_registry``, ``Sandbox.create``, ``Sandbox.from_name``,
``sandbox.exec(*argv, text=False, stderr=StreamType.DEVNULL)`` with the process's ``stdin``
(``write``, ``write_eof``, ``drain``), ``stdout`` (iterated), ``poll()``, and
``sandbox.terminate()``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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

from hermes_hookspecs import EnvironmentUnavailable, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

__all__ = ["DEFAULT_IMAGE", "ModalEnvironment", "ModalSettings", "hermes_register_environments"]

DEFAULT_IMAGE = "python:3.11-slim"
DEFAULT_APP = "hermes-agent"
DEFAULT_WORKDIR = "/workspace"
DEFAULT_LIFETIME = 3600
NO_CREDENTIALS = (
    "modal backend: no Modal credentials; run `modal token new`, or set MODAL_TOKEN_ID and"
    " MODAL_TOKEN_SECRET"
)


@dataclass
class ModalSettings:
    """The ``terminal`` keys the modal backend reads."""

    image: str = DEFAULT_IMAGE
    app: str = DEFAULT_APP
    workdir: str = DEFAULT_WORKDIR
    cpu: float | None = None
    memory_mb: int | None = None
    lifetime: int = DEFAULT_LIFETIME
    block_network: bool = False
    persistent: bool = False
    timeout: float | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModalSettings:
        """The ``terminal.modal_*`` settings of ``config``; :class:`EnvironmentUnavailable`
        when one is malformed."""
        term = terminal_config(config)
        try:
            cpu = term.get("container_cpu")
            timeout = term.get("timeout")
            return cls(
                image=str(term.get("modal_image") or DEFAULT_IMAGE),
                app=str(term.get("modal_app") or DEFAULT_APP),
                workdir=str(term.get("modal_workdir") or DEFAULT_WORKDIR),
                cpu=float(cpu) if cpu not in (None, "", 0) else None,
                memory_mb=parse_memory_mb(term.get("container_memory")),
                lifetime=int(term.get("lifetime_seconds") or DEFAULT_LIFETIME),
                block_network=parse_bool(term.get("modal_block_network"), False),
                persistent=parse_bool(term.get("container_persistent"), False),
                timeout=float(timeout) if timeout else None,
            )
        except (TypeError, ValueError) as exc:
            raise EnvironmentUnavailable(f"modal backend: bad setting: {exc}") from None


def _import_modal() -> Any:
    try:
        import modal
    except ImportError:  # pragma: no cover - the dist depends on modal
        raise EnvironmentUnavailable(
            "modal backend: the modal SDK is not installed; pip install hermes-env-modal"
        ) from None
    return modal


def _has_credentials() -> bool:
    if os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET"):
        return True
    config = os.environ.get("MODAL_CONFIG_PATH") or os.path.expanduser("~/.modal.toml")
    return os.path.exists(config)


def _unavailable(what: str, exc: BaseException) -> EnvironmentUnavailable:
    text = str(exc).strip() or type(exc).__name__
    hint = ""
    if type(exc).__name__ == "AuthError" or "token" in text.lower():
        hint = "; check the Modal token (modal token new, or MODAL_TOKEN_ID / MODAL_TOKEN_SECRET)"
    return EnvironmentUnavailable(f"modal backend: {what}: {text[:400]}{hint}")


class _ModalChannel(Channel):
    def __init__(self, process: Any) -> None:
        self._process = process

    def chunks(self) -> Iterator[bytes]:
        for data in self._process.stdout:
            if isinstance(data, str):
                data = data.encode("utf-8", "surrogateescape")
            if data:
                yield data

    def exit_status(self, wait: float) -> int | None:
        deadline = time.monotonic() + wait
        while True:
            code = self._process.poll()
            if code is not None:
                return int(code)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def close(self) -> None:
        closer = getattr(self._process.stdout, "close", None)
        if callable(closer):
            try:
                closer()
            except Exception:
                pass


class ModalEnvironment(ShellEnvironment):
    """A task's Modal sandbox; the factory registered as ``modal``: ``ModalEnvironment(config,
    task_id)``."""

    name = "modal"

    def __init__(self, config: Mapping[str, Any], task_id: str) -> None:
        settings = ModalSettings.from_config(config)
        super().__init__(
            task_id=task_id,
            workdir=settings.workdir,
            default_timeout=settings.timeout,
            config=config,
        )
        self.settings = settings
        self.where = f"modal app {settings.app}"
        if not _has_credentials():
            raise EnvironmentUnavailable(NO_CREDENTIALS)
        self.modal = _import_modal()
        self.sandbox = self._find_or_create()
        self.where = f"modal sandbox {getattr(self.sandbox, 'object_id', '?')}"
        try:
            self.prepare_shell()
        except BaseException:
            self.teardown()
            raise

    def sandbox_name(self) -> str:
        """The name a persistent sandbox of this task has, so the next task with its id finds it."""
        return f"hermes-{safe_name(self.task_id, 50)}"

    def _find_or_create(self) -> Any:
        modal = self.modal
        s = self.settings
        try:
            app = modal.App.lookup(s.app, create_if_missing=True)
        except Exception as exc:
            raise _unavailable(f"cannot open app {s.app}", exc) from None
        if s.persistent:
            try:
                return modal.Sandbox.from_name(s.app, self.sandbox_name())
            except Exception as exc:
                if type(exc).__name__ != "NotFoundError":
                    raise _unavailable("cannot look up the persistent sandbox", exc) from None
        kwargs: dict[str, Any] = {
            "app": app,
            "image": modal.Image.from_registry(s.image),
            "timeout": s.lifetime,
            "workdir": s.workdir,
            "block_network": s.block_network,
        }
        if s.cpu:
            kwargs["cpu"] = s.cpu
        if s.memory_mb:
            kwargs["memory"] = s.memory_mb
        if s.persistent:
            kwargs["name"] = self.sandbox_name()
        try:
            return modal.Sandbox.create(**kwargs)
        except Exception as exc:
            raise _unavailable(f"cannot create a sandbox from {s.image}", exc) from None

    def open_channel(self, argv: list[str], stdin: bytes | None) -> Channel:
        """Run ``argv`` in the sandbox with ``Sandbox.exec``, with ``stdin`` fed from a thread."""
        modal = self.modal
        try:
            process = self.sandbox.exec(
                *argv, text=False, stderr=modal.stream_type.StreamType.DEVNULL
            )
        except Exception as exc:
            raise _unavailable(f"exec in {self.where} failed", exc) from None

        def feed() -> None:
            try:
                if stdin:
                    view = memoryview(stdin)
                    for start in range(0, len(view), 1 << 20):
                        process.stdin.write(bytes(view[start : start + (1 << 20)]))
                        process.stdin.drain()
                process.stdin.write_eof()
                process.stdin.drain()
            except Exception:
                pass

        if stdin:
            threading.Thread(target=feed, name="hermes-modal-stdin", daemon=True).start()
        else:
            feed()
        return _ModalChannel(process)

    def teardown(self) -> None:
        """Terminate the sandbox (unless it is persistent)."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None and not self.settings.persistent:
            try:
                sandbox.terminate()
            except Exception:
                pass

    def cleanup(self) -> None:
        """Terminate the sandbox (when persistent: stop its processes and leave it running until
        its lifetime ends, for the next task with the same id)."""
        if self._closed:
            return
        if self.settings.persistent:
            super().cleanup()
            return
        self._closed = True
        self.teardown()

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> list[str]:
        """The problems of the modal settings, without creating a sandbox or calling Modal:
        values that do not parse, the SDK missing, no credentials."""
        try:
            ModalSettings.from_config(config)
        except EnvironmentUnavailable as exc:
            return [str(exc)]
        problems = []
        if not module_installed("modal"):
            problems.append(
                "modal backend: the modal SDK is not installed; pip install hermes-env-modal"
            )
        if not _has_credentials():
            problems.append(NO_CREDENTIALS)
        return problems

    @classmethod
    def check(cls, config: Mapping[str, Any]) -> str:
        """What ``hermes doctor`` reports: the SDK is installed and credentials are configured
        (creating a sandbox costs money, so the check stops there)."""
        settings = ModalSettings.from_config(config)
        modal = _import_modal()
        if not _has_credentials():
            raise EnvironmentUnavailable(NO_CREDENTIALS)
        version = getattr(modal, "__version__", "?")
        return f"modal SDK {version}, credentials configured, image {settings.image}"


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register the ``modal`` backend."""
    register("modal", ModalEnvironment)
