"""``hermes acp --check``: are the provider, the sandbox and the session store ready?"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import CommandContext

from .listing_store import ListingStore
from .settings import Settings


def _provider(config: Mapping[str, Any]) -> tuple[bool, str]:
    settings = Settings.from_config(config)
    problem = settings.model_problem()
    if problem:
        return False, problem
    section = config.get("model")
    provider = section.get("provider") if isinstance(section, Mapping) else None
    return True, f"model {settings.model}" + (f" ({provider})" if provider else "")


def _sandbox(config: Mapping[str, Any]) -> tuple[bool, str]:
    terminal = config.get("terminal")
    terminal = terminal if isinstance(terminal, Mapping) else {}
    backend = str(terminal.get("backend") or "local")
    if backend != "local":
        return True, f"backend {backend} (a sandbox of its own)"
    sandbox = terminal.get("sandbox")
    if sandbox in (False, "off"):
        return True, "sandbox off (commands run with your full authority)"
    try:
        from hermes_env_sandbox.bwrap import find_bwrap, unavailable_reason
    except ImportError:
        found = shutil.which("bwrap")
        return (True, "sandbox bubblewrap") if found else (False, "no bubblewrap (bwrap) found")
    reason = unavailable_reason(find_bwrap())
    return (False, reason) if reason else (True, "sandbox bubblewrap")


def _store(context: CommandContext) -> tuple[bool, str]:
    try:
        store = context.session_store()
        if isinstance(store, ListingStore):
            store.list_sessions(limit=1)
        else:
            store.get_session("session_0000000000000000")
    except Exception as exc:
        return False, f"session store: {exc}"
    return True, f"store {type(store).__name__}"


def check(context: CommandContext) -> tuple[bool, str]:
    """Whether ``hermes acp`` can serve, and one line saying why (not)."""
    parts = [
        ("provider", *_provider(context.config)),
        ("sandbox", *_sandbox(context.config)),
        ("store", *_store(context)),
    ]
    ready = all(ok for _name, ok, _text in parts)
    detail = "; ".join(f"{name}: {text}" if not ok else text for name, ok, text in parts)
    return ready, ("ready: " if ready else "not ready: ") + detail
