"""The probes ``hermes doctor`` runs beyond reading the configuration: can the provider be
reached, can hermes write its home folder, and are its secrets readable by its owner only."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import Cancelled, HermesError, ModelRequest

from ..tools.environments import config_problems, probe

PROBE_TIMEOUT = 15.0
"""Seconds the provider probe waits for an answer."""


def probe_provider(
    registry: Any, config: Mapping[str, Any], timeout: float = PROBE_TIMEOUT
) -> tuple[bool, str]:
    """Send the configured model a one-token request; ``(ok, one line)``.

    The request asks for at most one token, so a paid provider charges next to nothing.
    """
    from ..models.providers import client_factory, resolve_provider

    try:
        provider, settings = resolve_provider(registry, config.get("model") or {})
        settings.timeout = min(settings.timeout, timeout)
        settings.config = config
        client = client_factory(registry, provider, settings.api_mode)(settings)
    except HermesError as exc:
        return False, f"provider: {exc}"
    request = ModelRequest(
        model=settings.model,
        messages=[{"role": "user", "content": "Reply with one word: ok"}],
        max_tokens=1,
    )
    outcome: dict[str, Any] = {}

    def ask() -> None:
        try:
            outcome["response"] = client.complete(request)
        except (Exception, Cancelled) as exc:  # reported as one line below
            outcome["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(timeout + 1)
    where = f"{settings.provider} at {settings.base_url or 'its default endpoint'}"
    if worker.is_alive():
        request.cancel.set()
        return False, f"provider {where}: no answer within {timeout:g}s"
    if "error" in outcome:
        error = outcome["error"]
        text = str(error) if isinstance(error, HermesError) else f"{type(error).__name__}: {error}"
        return False, f"provider {where}: {text}"
    elapsed = (time.monotonic() - started) * 1000
    return True, f"provider {where} answered ({settings.model}, {elapsed:.0f} ms)"


def home_writable(home: Path) -> tuple[bool, str]:
    """Whether hermes can create files in ``home``; ``(ok, one line)``."""
    from ..config.loading import ensure_home

    try:
        ensure_home(home)
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=home)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return False, f"home {home} is not writable: {exc.strerror or exc}"
    return True, f"home {home} is writable"


PRIVATE_FILES = (
    ".env",
    *(
        f"{db}{side}"
        for db in ("sessions.db", "state.db")
        for side in ("", "-wal", "-shm", "-journal")
    ),
)
"""Files of the home that hold secrets or conversations: they must be mode 600."""


def private_files(home: Path, config_path: Path | None = None) -> list[tuple[bool, str]]:
    """One ``(False, line)`` per secret-holding file that its group or others can access
    (``.env``, ``sessions.db``, the Hermes agent's ``state.db`` and their sidecars, a config.yaml
    holding a key: reported only, never changed); ``[(True, line)]``
    when there is none."""
    candidates = [home / name for name in PRIVATE_FILES]
    if config_path is not None and _holds_secret(config_path):
        candidates.append(config_path)
    problems = []
    for path in candidates:
        try:
            mode = path.stat().st_mode & 0o777
        except OSError:
            continue
        if mode & 0o077:
            who = (
                "its group and others"
                if mode & 0o070 and mode & 0o007
                else ("its group" if mode & 0o070 else "others")
            )
            problems.append(
                (False, f"{path} is open to {who} (mode {mode:o}); run: chmod 600 {path}")
            )
    return problems or [(True, "secrets (.env, session databases) readable by their owner only")]


def _holds_secret(path: Path) -> bool:
    """Whether a config file stores a secret value in plain text (not a ``${NAME}`` reference)."""
    from ..config.loading import ConfigError, _read_file, is_secret_key, secret_reference

    try:
        data = _read_file(path)[0]
    except ConfigError:
        return False

    def walk(node: Any, key: str) -> bool:
        if isinstance(node, Mapping):
            return any(walk(v, str(k)) for k, v in node.items())
        if isinstance(node, list):
            return any(walk(item, key) for item in node)
        return isinstance(node, str) and is_secret_key(key) and secret_reference(node) is None

    return walk(data, "")


def backend_report(backend: str, factory: Any, config: Mapping[str, Any]) -> list[tuple[bool, str]]:
    """The doctor's lines about the configured execution backend: one per problem its
    configuration check found (nothing is started); when there is none, its live probe's
    report (or just that the configuration is fine)."""
    name = f"execution backend {backend}"
    problems = config_problems(factory, config)
    if problems:
        return [(False, f"{name}: {problem}") for problem in problems]
    try:
        found = probe(factory, config)
    except HermesError as exc:
        return [(False, f"{name}: {exc}")]
    checked = hasattr(factory, "check_config")
    if found is None:
        return [(True, f"{name}: configuration checked" if checked else name)]
    return [(True, f"{name}: {found}")]
