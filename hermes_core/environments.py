"""Execution environments per task: created lazily from the configured backend, cleaned up at the
end. A backend that cannot start is an error; there is no silent fall back to another one."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import Environment, EnvironmentUnavailable

from .registry import Registry


class EnvironmentManager:
    """Creates and keeps one environment per task for the backend named in ``terminal.backend``."""

    def __init__(self, registry: Registry, config: Mapping[str, Any]) -> None:
        self.registry = registry
        self.config = config
        self._envs: dict[str, Environment] = {}
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        """The configured backend name."""
        return str((self.config.get("terminal") or {}).get("backend") or "local")

    def get(self, task_id: str) -> Environment:
        """The environment of ``task_id``, created on first use."""
        with self._lock:
            env = self._envs.get(task_id)
            if env is not None:
                return env
            registered = self.registry.environments.get(self.backend)
            if registered is None:
                installed = ", ".join(sorted(self.registry.environments)) or "none"
                raise EnvironmentUnavailable(
                    f"execution backend {self.backend!r} is not installed (installed: {installed});"
                    " install its plugin or change terminal.backend"
                )
            try:
                created: Environment = registered.value(self.config, task_id)
            except EnvironmentUnavailable:
                raise
            except Exception as exc:
                raise EnvironmentUnavailable(
                    f"execution backend {self.backend!r} could not start: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            self._envs[task_id] = created
            return created

    def cleanup(self, task_id: str | None = None) -> None:
        """Clean up one task's environment, or all of them."""
        with self._lock:
            ids = [task_id] if task_id is not None else list(self._envs)
            envs = [self._envs.pop(i) for i in ids if i in self._envs]
        for env in envs:
            try:
                env.cleanup()
            except Exception:  # cleanup is best effort; the next task gets a fresh environment
                pass
