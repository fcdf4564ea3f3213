"""Execution environments per task: created lazily from the configured backend, cleaned up at the
end. A backend that cannot start is an error; there is no silent fall back to another one."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import Environment, EnvironmentUnavailable, HermesError

from ..plugins.registry import Registry


def config_problems(factory: Any, config: Mapping[str, Any]) -> list[str]:
    """What the factory's optional ``check_config(config)`` reports (see
    :data:`hermes_hookspecs.EnvironmentConfigCheck`): one line per problem; ``[]`` when it
    found none or the factory has no such check. A check that raises is itself a problem."""
    check = getattr(factory, "check_config", None)
    if not callable(check):
        return []
    try:
        problems = check(config)
    except HermesError as exc:
        return [str(exc)]
    except Exception as exc:  # a broken check must not hide the backend's real state
        return [f"the configuration check failed: {type(exc).__name__}: {exc}"]
    if isinstance(problems, str):
        problems = [problems]
    return [" ".join(str(p).split()) for p in problems or () if str(p).strip()]


def probe(factory: Any, config: Mapping[str, Any]) -> str | None:
    """The one-line report of the factory's optional live ``check(config)`` (see
    :data:`hermes_hookspecs.EnvironmentProbe`); ``None`` when it has none. Raises
    :class:`~hermes_hookspecs.HermesError` with what is wrong."""
    check = getattr(factory, "check", None)
    if not callable(check):
        return None
    try:
        report = check(config)
    except HermesError:
        raise
    except Exception as exc:
        raise EnvironmentUnavailable(f"the probe failed: {type(exc).__name__}: {exc}") from exc
    return " ".join(str(report).split())


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
                # the backend's own configuration check usually says it better than the failure
                problems = config_problems(registered.value, self.config)
                detail = "; ".join(problems) if problems else f"{type(exc).__name__}: {exc}"
                raise EnvironmentUnavailable(
                    f"execution backend {self.backend!r} could not start: {detail}"
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
