"""The probes ``hermes doctor`` runs beyond reading the configuration: can the provider be
reached, and can hermes write its home folder."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import HermesError, ModelRequest

PROBE_TIMEOUT = 15.0
"""Seconds the provider probe waits for an answer."""


def probe_provider(
    registry: Any, config: Mapping[str, Any], timeout: float = PROBE_TIMEOUT
) -> tuple[bool, str]:
    """Send the configured model a one-token request; ``(ok, one line)``.

    The request asks for at most one token, so a paid provider charges next to nothing.
    """
    from ..providers import client_factory, resolve_provider

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
        except Exception as exc:  # reported as one line below
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
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=home)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return False, f"home {home} is not writable: {exc.strerror or exc}"
    return True, f"home {home} is writable"
