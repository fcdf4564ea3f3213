"""The composition root: what one process builds once, in a fixed order, and every entry point
(the CLI, the runner of subagents, scheduled jobs and gateway turns, a program embedding hermes)
starts from.

The stages, each built on first use and then kept, each needing only the ones before it:

1. the home folder (``$HERMES_HOME`` or a profile), its ``.env`` read into the environment;
2. the core configuration: defaults, ``config.yaml``, environment variables and overrides,
   checked against the core's keys (enough to know which plugins to load);
3. the plugin manager, without the plugins ``plugins.disabled`` names;
4. the registry of what the plugins register, and the configuration schema (the core's keys
   and those the plugins declare);
5. the configuration: the core one with the plugins' defaults, checked against every key;
6. the session store: ``$HERMES_HOME/sessions.db``, or in memory without a home folder.

``hermes --help`` builds stages 1 to 3 only; an agent needs them all.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import ModelClient, SessionStore, Tool

from .caching import RecentlyUsed, frozen
from .config.loading import (
    Config,
    ensure_home,
    load_config,
    load_dotenv,
    resolve_home,
    warn_unknown_keys,
)

if TYPE_CHECKING:
    from .config.schema import ConfigSchema
    from .loop.agent import Agent
    from .loop.events import Callbacks
    from .loop.runner import CallingAgent, ChildRunner, HostRunner
    from .plugins.manager import PluginManager
    from .plugins.registry import Registry

_MAX_DERIVED = 256
"""Hosts with overrides one host keeps ready (see :meth:`Host.with_overrides`)."""


class Host:
    """The configuration, plugins, registry, schema and session store of one process.

    With no arguments it is the user's: the home folder of ``$HERMES_HOME`` (or ``profile``) and
    every installed plugin. An embedding program or a test narrows it:

    :param home: the home folder (default: ``$HERMES_HOME``, or the ``profile``'s).
    :param profile: the profile whose folder is the home, when ``home`` is not given.
    :param config: the configuration itself instead of reading ``config.yaml``: a
        :class:`~hermes_core.config.loading.Config`, or a plain mapping (exactly that
        configuration, nothing read from disk or the environment; ``${NAME}`` in a secret key
        still means the process's variable NAME).
    :param overrides: dotted keys set on top (``{"model.default": "gpt-4o"}``); ``None`` values
        are ignored.
    :param plugins: a plugin manager to use instead of loading the installed plugins.
    :param plugin_names: load only the plugins with these entry point names.
    :param extra_plugins: ``(name, object)`` plugins registered in-process besides them.
    :param strict_plugins: fail on the first plugin that does not load or register cleanly.
    :param session_store: the store for sessions instead of the home's ``sessions.db``.
    :param client: a model client every agent of this host uses instead of the configured
        provider's (the test kit's scripted model, or an embedder's own).
    """

    def __init__(
        self,
        *,
        home: str | Path | None = None,
        profile: str | None = None,
        config: Config | Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
        plugins: PluginManager | None = None,
        plugin_names: Sequence[str] | None = None,
        extra_plugins: Sequence[tuple[str, object]] = (),
        strict_plugins: bool = False,
        session_store: SessionStore | None = None,
        client: ModelClient | None = None,
    ) -> None:
        self.profile = profile
        self.client = client
        self.strict_plugins = strict_plugins
        self._home_given = Path(home) if home is not None else None
        self._config_given = config
        self._overrides = dict(overrides or {})
        self._plugin_names = list(plugin_names) if plugin_names is not None else None
        self._extra_plugins = tuple(extra_plugins)
        self._home: Path | None = None
        self._core_config: Config | None = None
        self._config: Config | None = None
        self._plugins = plugins
        self._store = session_store
        self._owns_store = False
        self._runner: HostRunner | None = None
        self._derived: RecentlyUsed[Host] = RecentlyUsed(_MAX_DERIVED)
        self._lock = threading.RLock()

    # --- the stages, in order --------------------------------------------------------------

    @property
    def home(self) -> Path:
        """The home folder; ``os.devnull`` for a configuration given as a mapping without one."""
        if self._home is None:
            given = self._config_given
            if isinstance(given, Config):
                self._home = given.home
            elif given is not None:
                self._home = self._home_given or Path(os.devnull)
            else:
                # kept before .env is read: a command such as `hermes doctor` still reports a
                # home whose .env cannot be read
                self._home = self._home_given or resolve_home(self.profile)
                load_dotenv(self._home / ".env")
        return self._home

    @property
    def has_home(self) -> bool:
        """Whether there is a home folder (none for a configuration given as a mapping alone)."""
        return str(self.home) != os.devnull

    @property
    def core_config(self) -> Config:
        """The configuration checked against the core's keys only: what choosing the plugins
        needs."""
        if self._core_config is None:
            given = self._config_given
            overrides = {k: v for k, v in self._overrides.items() if v is not None}
            if isinstance(given, Config):
                self._core_config = given.with_overrides(overrides)
            elif given is not None:
                self._core_config = load_config(
                    self.home,
                    environ={},
                    overrides=overrides,
                    file_data=dict(given),
                    references=os.environ,
                )
            else:
                self._core_config = load_config(self.home, overrides=overrides)
        return self._core_config

    @property
    def plugins(self) -> PluginManager:
        """The plugin manager, loaded once."""
        with self._lock:
            if self._plugins is None:
                from .plugins.manager import PluginManager

                self._plugins = PluginManager(
                    only=self._plugin_names,
                    disabled=self.core_config.get("plugins.disabled") or (),
                    extra=self._extra_plugins,
                    strict=self.strict_plugins,
                )
                if self.strict_plugins:
                    try:
                        self._fail_on_plugin_errors()
                    except Exception:
                        self._plugins = None  # every later use fails the same way
                        raise
            return self._plugins

    @property
    def config_schema(self) -> ConfigSchema:
        """The configuration keys of the core and of the loaded plugins."""
        from .plugins.registry import Registry

        return Registry.of(self.plugins).config_schema

    @property
    def config(self) -> Config:
        """The effective configuration: the core one with the plugins' defaults under it,
        checked against every declared key (unknown keys are warned about once)."""
        if self._config is None:
            config = self.core_config.with_schema(self.config_schema)
            warn_unknown_keys(config)
            self._config = config
        return self._config

    @property
    def registry(self) -> Registry:
        """What the plugins registered (toolsets from the configuration included)."""
        from .plugins.registry import Registry

        return Registry.of(self.plugins, self.config.data)

    @property
    def session_store(self) -> SessionStore:
        """The store of sessions: the one given, else the one ``store.url`` names (a plugin's,
        for a scheme other than ``sqlite``), else ``$HERMES_HOME/sessions.db``, else (no home)
        one in memory. Opened once."""
        with self._lock:
            if self._store is None:
                home = self.home if self.has_home else None
                url = self.core_config.get("store.url")
                if url and not str(url).startswith("sqlite:"):
                    self._store = open_plugin_store(str(url), home, self.registry)
                else:
                    self._store = open_session_store(_sqlite_home(url, home))
                self._owns_store = True
            return self._store

    # --- what is built from it ---------------------------------------------------------------

    def agent(
        self,
        *,
        session_id: str | None = None,
        callbacks: Callbacks | None = None,
        yolo: bool = False,
        person: str | None = None,
        shared_people: Sequence[str] = (),
        extra_tools: Sequence[Tool] = (),
    ) -> Agent:
        """A new :class:`~hermes_core.loop.agent.Agent` of this host: a new session, or the
        stored ``session_id`` resumed; ``callbacks`` are the user interface's; ``yolo``
        approves every dangerous action without asking; ``person`` is whom it acts for (see
        :class:`~hermes_core.loop.agent.Agent`); ``extra_tools`` are offered besides the
        toolsets'."""
        # imported here: `hermes --help` builds a host, never an agent, and must stay quick
        from .loop.agent import Agent

        return Agent(
            self,
            session_id=session_id,
            callbacks=callbacks,
            yolo=yolo,
            person=person,
            shared_people=shared_people,
            extra_tools=extra_tools,
        )

    def runner(self) -> HostRunner:
        """The runner of agent turns for plugins (``CommandContext.agent_runner()``), made once."""
        with self._lock:
            if self._runner is None:
                from .loop.runner import HostRunner

                self._runner = HostRunner(self)
            return self._runner

    def child_runner(self, caller: CallingAgent) -> ChildRunner:
        """The runner of subagents for a tool of the agent ``caller`` describes
        (``ToolContext.agents``)."""
        from .loop.runner import ChildRunner

        return ChildRunner(self, caller)

    def with_overrides(self, overrides: Mapping[str, Any], *, keep_client: bool = True) -> Host:
        """A host sharing this one's plugins, registry and session store, whose configuration
        has ``overrides`` (dotted keys) on top; without ``keep_client`` its agents use the
        configured provider rather than this host's model client.

        The same ``overrides`` give the same host (the ``_MAX_DERIVED`` used most recently are
        kept): a
        configuration copy costs a deep copy and a check of every key, and a long-running
        process (the gateway) asks for the same few on every turn."""
        key = frozen((overrides, keep_client))
        if key is not None:
            known = self._derived.get(key)
            if known is not None:
                return known
        config = self.config.with_overrides(overrides)
        self.session_store  # opened now, so that the hosts share it  # noqa: B018
        host = self._sharing(config=config, client=self.client if keep_client else None)
        if key is not None:
            host = self._derived.keep(key, host)
        return host

    def reloaded(self, overrides: Mapping[str, Any] | None = None) -> Host:
        """A host sharing this one's plugins, registry and session store, with the
        configuration read again (after a command changed it) and ``overrides`` on top."""
        host = self._sharing(config=self._config_given, client=self.client)
        host._home_given, host._home = self._home_given, self._home
        host._overrides = dict(overrides if overrides is not None else self._overrides)
        host._owns_store, self._owns_store = self._owns_store, False
        return host

    def close(self) -> None:
        """Close the session store when this host opened it."""
        with self._lock:
            store, self._store = (self._store, None) if self._owns_store else (None, self._store)
            self._owns_store = False
            self._derived.clear()  # they share the store being closed
        close = getattr(store, "close", None)
        if close is not None:
            close()

    def _sharing(self, *, config: Config | Mapping[str, Any] | None, client: Any) -> Host:
        return Host(
            profile=self.profile,
            config=config,
            plugins=self._plugins,
            plugin_names=self._plugin_names,
            extra_plugins=self._extra_plugins,
            strict_plugins=self.strict_plugins,
            session_store=self._store,
            client=client,
        )

    def _fail_on_plugin_errors(self) -> None:
        """With ``strict_plugins``: register everything now and fail on any plugin error."""
        from .plugins.manager import PluginLoadError
        from .plugins.registry import Registry

        assert self._plugins is not None
        registry = Registry.of(self._plugins, self.config.data)
        registry.collect_all()
        failed = self._plugins.failures()
        if failed:
            raise PluginLoadError(
                "; ".join(
                    f"plugin {r.name!r}: {r.error or '; '.join(r.hook_errors)}" for r in failed
                )
            )


def _sqlite_home(url: str | None, home: Path | None) -> Path | None:
    """The folder whose ``sessions.db`` a ``sqlite:`` URL names (``sqlite:FOLDER`` or
    ``sqlite:///FOLDER``); ``home`` without one."""
    if not url:
        return home
    path = str(url)[len("sqlite:") :]
    if path.startswith("//"):
        path = path[2:]
    return Path(path).expanduser() if path else home


def open_plugin_store(url: str, home: Path | None, registry: Registry) -> SessionStore:
    """The session store at ``url``, made by the plugin registered for its scheme.

    :raises HermesError: no installed plugin serves the scheme, or the store cannot be opened
        (hermes never falls back to another store: the sessions would be split).
    """
    from hermes_hookspecs import HermesError, SessionStore

    scheme = url.split(":", 1)[0].lower()
    entry = registry.session_stores.get(scheme)
    if entry is None:
        served = ", ".join(sorted(registry.session_stores)) or "none"
        raise HermesError(
            f"store.url names a {scheme!r} store, but no installed plugin serves that scheme "
            f"(installed: {served}; the PostgreSQL store: pip install -e ./plugins/store_postgres)"
        )
    try:
        store = entry.value(url, home)
    except HermesError:
        raise
    except Exception as exc:
        raise HermesError(
            f"the {scheme} session store (plugin {entry.plugin}) could not be opened: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(store, SessionStore):
        raise HermesError(f"plugin {entry.plugin} made a {type(store).__name__}, not a store")
    return store


def open_session_store(home: Path | None) -> SessionStore:
    """The session store of ``home`` (``sessions.db`` in it, the folder made private first); one
    in memory for ``None``. What is new in the Hermes agent's ``state.db`` in ``home`` is
    copied into it first, read-only, with one :class:`SessionImportNotice` line saying so."""
    if home is None:
        from .session_store.memory_store import MemorySessionStore

        return MemorySessionStore()
    import warnings

    from .session_store.hermes_agent import SessionImportNotice, store_path, sync_hermes_agent
    from .session_store.sqlite_store import SQLiteSessionStore

    home = ensure_home(home)
    store = SQLiteSessionStore(store_path(home))
    report = sync_hermes_agent(store, home)  # the Hermes agent's state.db, read-only
    if report is not None and report.changed:
        warnings.warn(report.line(), SessionImportNotice, stacklevel=2)
    return store
