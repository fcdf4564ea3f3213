"""What ``hermes doctor`` (and ``hermes plugins list``) says about the checkpoint store: its size
on disk and what it holds, or why checkpoints cannot work here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import PluginReport

from .settings import MIB, Settings
from .store import CheckpointError, Store, git_program


def _invocation() -> tuple[Path, Mapping[str, Any]]:
    """The home and configuration of the running command, else the default home."""
    import click

    context = click.get_current_context(silent=True)
    obj = context.find_root().obj if context is not None else None
    home = getattr(obj, "home", None)
    if isinstance(home, Path):
        try:
            config = getattr(obj, "config", {})
        except Exception:  # a configuration that does not load is reported by doctor itself
            config = {}
        return home, config if isinstance(config, Mapping) else {}
    from hermes_runtime.home import default_home

    return default_home(), {}


def _describe(store: Store) -> tuple[int, int, int]:
    """The store's size in bytes, its checkpoints and its workspaces."""
    from .catalog import all_checkpoints

    every = all_checkpoints(store)
    return store.footprint(), sum(len(c) for c in every.values()), len(every)


def human_size(size: int) -> str:
    """A size in bytes as people read it: ``812 B``, ``14.2 KB``, ``3.1 MB``, ``1.2 GB``."""
    if size < 1024:
        return f"{size} B"
    for unit, scale in (("KB", 1024), ("MB", MIB), ("GB", 1024 * MIB)):
        if size < scale * 1024 or unit == "GB":
            return f"{size / scale:.1f} {unit}"
    raise AssertionError("unreachable")


def store_report() -> PluginReport:
    """The line about the checkpoint store: ``loaded`` with its footprint, ``disabled``, or
    ``error`` with the reason (git missing or too old, a store git cannot read)."""
    home, config = _invocation()
    settings = Settings.from_config(config)
    store = Store.of(home)
    report = PluginReport(name="store", source=str(store.path))
    if not settings.enabled:
        report.status, report.error = "disabled", "checkpoints.enabled is false"
        return report
    try:
        git_program()
        if not store.exists():
            report.version = "empty"
            report.notes.append("the store is made at the first change the agent makes")
            return report
        size, count, workspaces = _describe(store)
    except CheckpointError as exc:
        report.status, report.error = "error", str(exc)
        return report
    people = sorted((home / "people").glob("*/checkpoints/store.git"))
    others = sum(Store(p).footprint() for p in people)
    report.version = human_size(size)
    report.notes.append(
        f"{count} checkpoints of {workspaces} workspaces, {human_size(size)} of "
        f"checkpoints.max_total_mb {settings.max_total_mb:g}"
        + (f"; {len(people)} people's stores {human_size(others)}" if people else "")
    )
    return report
