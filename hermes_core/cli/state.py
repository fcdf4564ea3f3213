"""What every command shares: the home folder, the configuration and the plugins, each loaded
on first use so that ``hermes --help`` stays fast."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: `hermes --help` needs neither the registry nor yaml
    from ..config.loading import Config
    from ..config.schema import ConfigSchema
    from ..loop.runner import HostRunner
    from ..plugins.manager import PluginManager
    from ..plugins.registry import Registry


class CliState:
    """Lazily loaded shared state of one ``hermes`` invocation; what a plugin command finds in
    ``click.get_current_context().obj`` (it implements ``hermes_hookspecs.CommandContext``)."""

    def __init__(
        self,
        profile: str | None = None,
        debug: bool = False,
        plugin_names: list[str] | None = None,
        strict_plugins: bool = False,
        extra_plugins: Sequence[tuple[str, object]] = (),
    ) -> None:
        self.profile = profile
        self.debug = debug
        self.plugin_names = plugin_names
        self.strict_plugins = strict_plugins
        self.extra_plugins = extra_plugins
        self.overrides: dict[str, Any] = {}
        self._home: Path | None = None
        self._config: Config | None = None
        self._core_config: Config | None = None
        self._plugins: PluginManager | None = None
        self._registry: Registry | None = None
        self._runner: HostRunner | None = None

    @property
    def home(self) -> Path:
        """The active HERMES_HOME (the profile's folder with ``-p``)."""
        if self._home is None:
            from ..config.loading import load_dotenv, resolve_home

            self._home = resolve_home(self.profile)
            load_dotenv(self._home / ".env")
        return self._home

    @property
    def core_config(self) -> Config:
        """The configuration with command-line overrides applied, checked against the core's
        keys only: what is needed to choose the plugins to load."""
        if self._core_config is None:
            from ..config.loading import load_config

            self._core_config = load_config(self.home, overrides=self.overrides)
        return self._core_config

    @property
    def config(self) -> Config:
        """The effective configuration, with command-line overrides applied, the plugins'
        defaults, and checked against the keys of the core and of every loaded plugin (unknown
        keys are warned about once)."""
        if self._config is None:
            from ..config.loading import warn_unknown_keys

            config = self.core_config.with_schema(self.config_schema)
            warn_unknown_keys(config)
            self._config = config
        return self._config

    @property
    def config_schema(self) -> ConfigSchema:
        """The configuration keys of the core and of the loaded plugins."""
        from ..plugins.registry import Registry

        return Registry.of(self.plugins).config_schema

    def set_config(self, key: str, value: Any) -> None:
        """Write ``value`` at the dotted ``key`` of the home's config.yaml (validated, atomic)
        and read the configuration again."""
        from ..config.loading import store_value

        store_value(self.config.path, key, value, self.config_schema)
        self.reload_config()

    def unset_config(self, key: str) -> bool:
        """Remove the dotted ``key`` from the home's config.yaml; False when it was not there."""
        from ..config.loading import unset_value

        removed = unset_value(self.home / "config.yaml", key)
        self.reload_config()
        return removed

    def reload_config(self) -> Config:
        """Read the configuration again (after a command changed the file)."""
        self._config = self._core_config = None
        return self.config

    @property
    def plugins(self) -> PluginManager:
        """The plugin manager, loaded once."""
        if self._plugins is None:
            from ..plugins.manager import PluginManager

            disabled = self.core_config.get("plugins.disabled") or []
            self._plugins = PluginManager(
                only=self.plugin_names,
                disabled=disabled,
                extra=self.extra_plugins,
                strict=self.strict_plugins,
            )
            if self.strict_plugins:
                try:
                    self._fail_on_plugin_errors()
                except Exception:
                    self._plugins = self._registry = None  # every later use fails the same way
                    raise
        return self._plugins

    def _fail_on_plugin_errors(self) -> None:
        """With ``--strict-plugins``: register everything now and fail on any plugin error."""
        from ..plugins.manager import PluginLoadError
        from ..plugins.registry import Registry

        assert self._plugins is not None
        registry = Registry.of(self._plugins, self.config.data)
        _ = registry.toolsets, registry.providers, registry.environments, registry.engines
        _ = registry.platform_adapters
        failed = self._plugins.failures()
        if failed:
            raise PluginLoadError(
                "; ".join(
                    f"plugin {r.name!r}: {r.error or '; '.join(r.hook_errors)}" for r in failed
                )
            )

    def agent_runner(self) -> HostRunner:
        """A runner for agent turns with this invocation's configuration, plugins and
        session store (``$HERMES_HOME/state.db``), for plugin commands (``CommandContext``)."""
        if self._runner is None:
            from ..config.loading import ensure_home
            from ..loop.runner import HostRunner
            from ..session_store.sqlite_store import SQLiteSessionStore

            ensure_home(self.home)
            self._runner = HostRunner(
                config=self.config,
                plugins=self.plugins,
                session_store=SQLiteSessionStore(self.home / "state.db"),
            )
        return self._runner

    def platform_adapters(self) -> dict[str, Any]:
        """The messaging platform adapter factories plugins registered, by adapter name
        (``CommandContext``)."""
        return {name: entry.value for name, entry in self.registry.platform_adapters.items()}

    @property
    def registry(self) -> Registry:
        """What the plugins registered."""
        if self._registry is None:
            from ..plugins.registry import Registry

            self._registry = Registry.of(self.plugins, self.config.data)
        return self._registry
