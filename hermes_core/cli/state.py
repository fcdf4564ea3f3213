"""What every command shares: the invocation's :class:`~hermes_core.host.Host` (home folder,
configuration, plugins, registry, session store), each stage built on first use so that
``hermes --help`` stays fast."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: `hermes --help` needs neither the registry nor yaml
    from hermes_hookspecs import SessionStore

    from ..config.loading import Config
    from ..config.schema import ConfigSchema
    from ..host import Host
    from ..loop.runner import HostRunner
    from ..plugins.manager import PluginManager
    from ..plugins.registry import Registry


class CliState:
    """The shared state of one ``hermes`` invocation; what a plugin command finds in
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
        """Command-line settings (dotted keys) on top of the configuration; a command that
        changes them calls :meth:`reload_config`."""
        self._host: Host | None = None

    @property
    def host(self) -> Host:
        """The composition root of this invocation."""
        if self._host is None:
            from ..host import Host

            self._host = Host(
                profile=self.profile,
                overrides=self.overrides,
                plugin_names=self.plugin_names,
                extra_plugins=self.extra_plugins,
                strict_plugins=self.strict_plugins,
            )
        return self._host

    @property
    def home(self) -> Path:
        """The active HERMES_HOME (the profile's folder with ``-p``)."""
        return self.host.home

    @property
    def core_config(self) -> Config:
        """The configuration with command-line overrides applied, checked against the core's
        keys only: what is needed to choose the plugins to load."""
        return self.host.core_config

    @property
    def config(self) -> Config:
        """The effective configuration, with command-line overrides applied, the plugins'
        defaults, and checked against the keys of the core and of every loaded plugin (unknown
        keys are warned about once)."""
        return self.host.config

    @property
    def config_schema(self) -> ConfigSchema:
        """The configuration keys of the core and of the loaded plugins."""
        return self.host.config_schema

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
        """Read the configuration again (after a command changed the file or the overrides)."""
        if self._host is not None:
            self._host = self._host.reloaded(self.overrides)
        return self.config

    @property
    def plugins(self) -> PluginManager:
        """The plugin manager, loaded once."""
        return self.host.plugins

    def agent_runner(self) -> HostRunner:
        """A runner for agent turns with this invocation's configuration, plugins and
        session store (``$HERMES_HOME/state.db``), for plugin commands (``CommandContext``)."""
        return self.host.runner()

    def session_store(self) -> SessionStore:
        """The home's session store, for plugin commands (``CommandContext``)."""
        return self.host.session_store

    def registered(self, hook: str) -> dict[str, Any]:
        """What plugins registered through ``hook``, a registration hook a plugin declares, by
        name (``CommandContext``)."""
        return {name: entry.value for name, entry in self.registry.named(hook).items()}

    @property
    def registry(self) -> Registry:
        """What the plugins registered."""
        return self.host.registry
