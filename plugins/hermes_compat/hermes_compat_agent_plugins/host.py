"""The host of Hermes agent plugins in one hermes home: finds them, loads the enabled ones
(importing each and calling its ``register(ctx)`` inside its own guard), keeps what they
registered, calls their hook callbacks, and reports on each of them."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .callbacks import call
from .context import HermesPluginContext
from .discovery import Found, gate, scan_entry_points, scan_folder
from .manifest import HermesManifest
from .tools import HermesTool

log = logging.getLogger("hermes.compat")

FOLDER_NAMESPACE = "hermes_plugins"
"""The package folder plugins are imported under (``hermes_plugins.<key>``), as in the Hermes
agent, so their relative imports work."""


@dataclass
class HostedPlugin:
    """One Hermes agent plugin and how loading it went."""

    manifest: HermesManifest
    status: str = "skipped"
    error: str = ""
    tools: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    cli_commands: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    prompt_sections: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hook_errors: list[str] = field(default_factory=list)

    @property
    def provides(self) -> list[str]:
        """What it registered, one short item each."""
        items = [f"tool {t}" for t in self.tools]
        items += [f"hook {h}" for h in dict.fromkeys(self.hooks)]
        items += [f"command {c}" for c in self.commands]
        items += [f"cli command hermes {c}" for c in self.cli_commands]
        items += [f"skill {s}" for s in self.skills]
        items += [f"system prompt section {s}" for s in self.prompt_sections]
        return items


class HermesPluginHost:
    """Loads and hosts the Hermes agent plugins of ``home`` under ``config``.

    :param home: the hermes home folder; folder plugins are in ``<home>/plugins``.
    :param config: the effective configuration; ``plugins.enabled`` and ``plugins.disabled``
        decide what loads, ``plugins.entries.<id>`` holds per-plugin settings.
    :param entry_points: also load pip plugins of the ``hermes_agent.plugins`` group.
    """

    def __init__(self, home: Path, config: Mapping[str, Any], *, entry_points: bool = True) -> None:
        self.home = Path(home)
        self.config = config
        self.entry_points = entry_points
        self.plugins: dict[str, HostedPlugin] = {}
        self.tools: dict[str, HermesTool] = {}
        self.hooks: dict[str, list[tuple[str, Callable[..., Any]]]] = {}
        self.commands: dict[str, dict[str, Any]] = {}
        self.cli_commands: dict[str, dict[str, Any]] = {}
        self.skills: dict[str, dict[str, Any]] = {}
        self.prompt_sections: dict[str, dict[str, Any]] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # --- configuration ---------------------------------------------------------------------

    def _plugins_config(self) -> Mapping[str, Any]:
        section = self.config.get("plugins") if isinstance(self.config, Mapping) else None
        return section if isinstance(section, Mapping) else {}

    @property
    def enabled(self) -> list[str] | None:
        """``plugins.enabled``: the Hermes agent plugins to load (``None``: the key is absent)."""
        value = self._plugins_config().get("enabled")
        return [str(v) for v in value] if isinstance(value, list | tuple) else None

    @property
    def disabled(self) -> list[str]:
        """``plugins.disabled``: plugins never loaded, even when enabled."""
        value = self._plugins_config().get("disabled")
        return [str(v) for v in value] if isinstance(value, list | tuple) else []

    def plugin_entry(self, plugin_id: str) -> Mapping[str, Any]:
        """``plugins.entries.<plugin_id>``, or an empty mapping."""
        entries = self._plugins_config().get("entries")
        entry = entries.get(plugin_id) if isinstance(entries, Mapping) else None
        return entry if isinstance(entry, Mapping) else {}

    # --- loading ---------------------------------------------------------------------------

    def load(self) -> HermesPluginHost:
        """Find every plugin and load the enabled ones (once; later calls do nothing)."""
        with self._lock:
            if self._loaded:
                return self
            self._loaded = True
            if os.environ.get("HERMES_SAFE_MODE", "").strip().lower() in {"1", "true", "yes"}:
                return self
            found = scan_folder(self.home / "plugins")
            if self.entry_points:
                found += scan_entry_points()  # metadata only: nothing is imported unless enabled
            for item in found:
                self._load_one(item)
        return self

    def _load_one(self, item: Found) -> None:
        manifest = item.manifest
        key = manifest.plugin_id
        plugin = HostedPlugin(manifest)
        if key in self.plugins and self.plugins[key].status == "loaded":
            plugin.status = "error"
            plugin.error = (
                f"the name {key!r} is already used by the plugin from "
                f"{self.plugins[key].manifest.where}"
            )
            self.plugins[f"{key} ({manifest.where})"] = plugin
            return
        self.plugins[key] = plugin
        if item.error:
            plugin.status, plugin.error = "error", one_line(item.error)
            return
        verdict = gate(manifest, self.enabled, self.disabled)
        if not verdict.load:
            plugin.status, plugin.error = verdict.status, verdict.reason
            return
        missing = [e for e in _required_env(manifest) if not os.environ.get(e)]
        if missing:
            plugin.notes.append(f"requires_env not set: {', '.join(missing)}")
        before = self._snapshot()
        try:
            register = self._import(manifest)
            register(HermesPluginContext(manifest, self, plugin))
        except Exception as exc:  # one broken plugin must not take the others down
            self._restore(before)
            plugin.tools, plugin.hooks, plugin.commands = [], [], []
            plugin.cli_commands, plugin.skills, plugin.prompt_sections = [], [], []
            plugin.status, plugin.error = "error", one_line(f"{type(exc).__name__}: {exc}")
            log.debug("Hermes agent plugin %s failed to load", key, exc_info=True)
            return
        plugin.status = "loaded"

    def _import(self, manifest: HermesManifest) -> Callable[[Any], Any]:
        if manifest.source == "entrypoint":
            target = _load_entry_point(manifest.path)
        else:
            target = _load_folder(Path(manifest.path), manifest.plugin_id)
        register = getattr(target, "register", None)
        if callable(register):  # a module, or an object the entry point names, with register()
            found: Callable[[Any], Any] = register
            return found
        if callable(target) and not isinstance(target, type):
            named: Callable[[Any], Any] = target  # the entry point names the function itself
            return named
        what = target.__name__ if isinstance(target, types.ModuleType) else manifest.path
        raise ImportError(f"{what} has no register(ctx) function")

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            dict(self.tools),
            {k: list(v) for k, v in self.hooks.items()},
            dict(self.commands),
            dict(self.cli_commands),
            dict(self.skills),
            dict(self.prompt_sections),
        )

    def _restore(self, snapshot: tuple[Any, ...]) -> None:
        (
            self.tools,
            self.hooks,
            self.commands,
            self.cli_commands,
            self.skills,
            self.prompt_sections,
        ) = snapshot

    # --- hooks -----------------------------------------------------------------------------

    def has_hook(self, name: str) -> bool:
        """Whether a loaded plugin registered a callback for the Hermes agent hook ``name``."""
        return bool(self.hooks.get(name))

    def invoke(
        self, name: str, payload: Mapping[str, Any], *, fail_closed: bool = False
    ) -> list[tuple[str, Any]]:
        """Call every callback of hook ``name`` in registration order; return ``(plugin key,
        result)`` for each non-``None`` result. A callback that raises is recorded against its
        plugin and skipped, or, with ``fail_closed``, answers with a block directive naming it."""
        results: list[tuple[str, Any]] = []
        for key, callback in list(self.hooks.get(name, ())):
            try:
                value = call(callback, payload)
            except Exception as exc:
                what = getattr(callback, "__name__", repr(callback))
                message = f"{name} callback {what} raised {type(exc).__name__}: {exc}"
                self._record_hook_error(key, message)
                if fail_closed:
                    results.append((key, {"action": "block", "message": message[:300]}))
                continue
            if value is not None:
                results.append((key, value))
        return results

    def render_prompt_sections(self, info: Mapping[str, Any]) -> list[tuple[str, str]]:
        """``(id, text)`` of each system prompt section, sorted by id: a callable section gets
        ``info``; an empty, raising, oversized or over-budget section is skipped and recorded."""
        from .context import SECTION_MAX_CHARS

        rendered: list[tuple[str, str]] = []
        total = 0
        for section_id, entry in sorted(self.prompt_sections.items()):
            content = entry["content"]
            try:
                text = content(MappingProxyType(dict(info))) if callable(content) else content
            except Exception as exc:
                self._record_hook_error(
                    entry["plugin"], f"system prompt section {section_id}: {exc}"
                )
                continue
            if not isinstance(text, str) or not text.strip():
                continue
            text = text.strip()
            if len(text) > entry["max_chars"]:
                self._record_hook_error(
                    entry["plugin"],
                    f"system prompt section {section_id}: {len(text)} characters is over its "
                    f"max_chars {entry['max_chars']}; left out",
                )
                continue
            if len(rendered) >= 32 or total + len(text) > 2 * SECTION_MAX_CHARS:
                self._record_hook_error(
                    entry["plugin"],
                    f"system prompt section {section_id}: over the total budget, left out",
                )
                continue
            total += len(text)
            rendered.append((section_id, text))
        return rendered

    def _record_hook_error(self, key: str, message: str) -> None:
        log.warning("Hermes agent plugin %s: %s", key, message)
        plugin = self.plugins.get(key)
        if plugin is not None and len(plugin.hook_errors) < 20:
            plugin.hook_errors.append(message)

    # --- reporting -------------------------------------------------------------------------

    def reports(self) -> list[Any]:
        """A ``PluginReport`` per plugin found, for ``hermes plugins list``."""
        from hermes_hookspecs import PluginReport

        out = []
        for key, plugin in self.plugins.items():
            status = plugin.status
            notes = list(dict.fromkeys(plugin.notes))
            notes += [f"hook error: {m}" for m in plugin.hook_errors]
            out.append(
                PluginReport(
                    name=key,
                    version=plugin.manifest.version,
                    source=plugin.manifest.where,
                    status=status,
                    provides=plugin.provides,
                    notes=notes,
                    error=plugin.error,
                    opt_in="plugins.enabled",
                )
            )
        return out

    def toolset_descriptions(self) -> dict[str, str]:
        """A description per toolset: the manifest description of the plugin that filled it."""
        described: dict[str, str] = {}
        for tool in self.tools.values():
            plugin = self.plugins.get(tool.plugin)
            if plugin is not None and plugin.manifest.description:
                described.setdefault(tool.toolset, plugin.manifest.description.splitlines()[0])
        return described


def _required_env(manifest: HermesManifest) -> list[str]:
    names = []
    for entry in manifest.requires_env:
        name = entry.get("name") if isinstance(entry, dict) else entry
        if (
            isinstance(name, str)
            and name
            and not (isinstance(entry, dict) and entry.get("optional"))
        ):
            names.append(name)
    return names


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (runs of white space become one space), cut to ``limit``
    characters: how a load error is shown in ``hermes plugins list`` and ``doctor``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _load_entry_point(value: str) -> Any:
    module_name, _, attrs = value.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for attr in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, attr)
    return obj


def _load_folder(folder: Path, key: str) -> types.ModuleType:
    """Import a folder plugin as the package ``hermes_plugins.<key>``."""
    init = folder / "__init__.py"
    if not init.is_file():
        raise ImportError(f"no __init__.py in {folder}")
    if FOLDER_NAMESPACE not in sys.modules:
        namespace = types.ModuleType(FOLDER_NAMESPACE)
        namespace.__path__ = []
        sys.modules[FOLDER_NAMESPACE] = namespace
    name = f"{FOLDER_NAMESPACE}.{key.replace('/', '__').replace('-', '_')}"
    for loaded in [n for n in sys.modules if n == name or n.startswith(f"{name}.")]:
        del sys.modules[loaded]
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {init}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


# --- one host per home folder --------------------------------------------------------------

_hosts: dict[str, HermesPluginHost] = {}
_generation = 0
_hosts_lock = threading.Lock()


def host_for(
    home: Path, config: Mapping[str, Any] | Callable[[], Mapping[str, Any]]
) -> HermesPluginHost:
    """The loaded host of ``home`` in this process (created and loaded on first use, with
    ``config``, or what ``config()`` returns: a later call's configuration is not read)."""
    key = os.fspath(Path(home).expanduser())
    host = _hosts.get(key)
    if host is None:
        with _hosts_lock:
            host = _hosts.get(key)
            if host is None:
                settings = config() if callable(config) else config
                host = _hosts[key] = HermesPluginHost(Path(key), settings)
    return host.load()


def reset_hosts() -> None:
    """Forget every host (tests)."""
    global _generation
    with _hosts_lock:
        _hosts.clear()
        _generation += 1


def generation() -> int:
    """How many times :func:`reset_hosts` forgot every host: a host found before a change of
    this number is not the one :func:`host_for` would give now."""
    return _generation
