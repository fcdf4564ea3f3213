"""What plugins registered: toolsets, environments, providers, context engines, and what the
registration hooks plugins declare collect, each remembered with the plugin that registered it."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from hermes_hookspecs import (
    API_MODES,
    TOOL_NAME_RE,
    ContextEngine,
    HermesError,
    Provider,
    SlashCommand,
    Tool,
    Toolset,
)
from hermes_runtime.secrets import mark_secret

from ..chat_commands import BUILTIN_NAMES
from ..config.schema import ConfigSchema
from .manager import PluginManager, PluginRecord

T = TypeVar("T")


class RegistrationError(HermesError):
    """A plugin registered something invalid or a name another plugin already has."""


@dataclass(frozen=True)
class Registered(Generic[T]):
    """A registered thing and the name of the plugin that registered it."""

    name: str
    value: T
    plugin: str


@dataclass(frozen=True)
class Discovery:
    """What a toolset's ``discover`` returned: the tools kept, and one line per problem met
    (``failed`` when ``discover`` itself raised, so the toolset has none of its run-time tools)."""

    tools: tuple[Tool, ...] = ()
    problems: tuple[str, ...] = ()
    failed: bool = False


class Registry:
    """Everything plugins registered, collected lazily (each kind on first access), plugins
    asked in load order so that, on a name clash, the earlier-loaded plugin keeps the name.

    Invalid registrations and name clashes are recorded against the offending plugin (shown by
    ``hermes plugins list`` and ``hermes doctor``) and leave the first registration in place.
    """

    @classmethod
    def of(cls, plugins: PluginManager, config: Mapping[str, Any] | None = None) -> Registry:
        """The registry of ``plugins``, shared by everyone using that plugin manager, so the
        registration hooks run once per plugin manager (once per process in the CLI).

        ``config`` is the configuration ``hermes_register_configured_toolsets`` registers
        toolsets for; the first one given to a registry is kept."""
        registry = getattr(plugins, "_registry", None)
        if registry is None:
            registry = cls(plugins)
            plugins._registry = registry  # type: ignore[attr-defined]  # one per plugin manager
        if config is not None and registry.config is None:
            registry.config = config
        return registry

    def __init__(self, plugins: PluginManager, config: Mapping[str, Any] | None = None) -> None:
        self.plugins = plugins
        self.config = config
        """The configuration ``hermes_register_configured_toolsets`` registers toolsets for."""
        self._configured = False
        self._discovered: dict[str, Discovery] = {}
        self._discover_lock = threading.Lock()
        self._toolsets: dict[str, Registered[Toolset]] | None = None
        self._tool_owner: dict[str, tuple[str, str]] = {}
        self._environments: dict[str, Registered[Callable[..., Any]]] | None = None
        self._stores: dict[str, Registered[Callable[..., Any]]] | None = None
        self._providers: dict[str, Registered[Provider]] | None = None
        self._engines: dict[str, Registered[type[ContextEngine]]] | None = None
        self._named: dict[str, dict[str, Registered[Any]]] = {}
        self._slash: dict[str, Registered[SlashCommand]] | None = None
        self._config_schema: ConfigSchema | None = None

    def _collect(self, hook: str, accept: Callable[..., None], **arguments: Any) -> None:
        for record, function in self.plugins.implementations(hook, load_order=True):

            def register(*args: Any, _record: PluginRecord = record) -> None:
                try:
                    accept(_record, *args)
                except Exception as exc:  # one bad registration must not drop the plugin's others
                    self.plugins.record_error(_record, hook, exc)

            try:
                function(register=register, **arguments)
            except Exception as exc:
                self.plugins.record_error(record, hook, exc)

    # --- configuration keys ----------------------------------------------------------------

    @property
    def config_schema(self) -> ConfigSchema:
        """The configuration keys of the core and of every loaded plugin, each with its owner
        (``hermes_register_config``). A key that is already declared is refused and recorded
        against the later plugin, naming both."""
        if self._config_schema is None:
            from ..config.loading import CORE_SCHEMA

            schema = CORE_SCHEMA.copy()
            self._collect("hermes_register_config", schema.declare_for)
            self._config_schema = schema
        return self._config_schema

    # --- toolsets --------------------------------------------------------------------------

    @property
    def toolsets(self) -> dict[str, Registered[Toolset]]:
        """Registered toolsets by name."""
        if self._toolsets is None:
            self._toolsets = {}
            self._collect("hermes_register_toolsets", self._accept_toolset)
        if self.config is not None and not self._configured:
            self._configured = True
            self._collect(
                "hermes_register_configured_toolsets", self._accept_toolset, config=self.config
            )
        return self._toolsets

    def discover(
        self, names: Iterable[str], report: Callable[[str], None] | None = None
    ) -> dict[str, Discovery]:
        """The run-time tools of those toolsets in ``names`` that have ``discover``.

        Each toolset's ``discover`` runs once per registry, the first time it is asked for
        (toolsets asked together run at the same time, one thread each); later calls get the
        same answer. ``report`` receives each problem line when it is first found: a
        ``discover`` that raised, a tool with an invalid name, schema or handler, a name that
        is already taken. Those tools are left out; the others are kept.
        """
        toolsets = self.toolsets
        wanted = [n for n in dict.fromkeys(names) if n in toolsets and toolsets[n].value.discover]
        with self._discover_lock:
            fresh = [n for n in wanted if n not in self._discovered]
            if fresh:
                self._discover_now(fresh, report)
            return {n: self._discovered[n] for n in wanted}

    def _discover_now(self, names: list[str], report: Callable[[str], None] | None) -> None:
        from concurrent.futures import ThreadPoolExecutor

        toolsets = self.toolsets
        with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
            futures = {}
            for name in names:
                discover = toolsets[name].value.discover
                if discover is not None:  # always, for the names ``discover`` passes
                    futures[name] = pool.submit(discover)
        for name, future in futures.items():
            try:
                found = list(future.result())
            except Exception as exc:
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                line = f"toolset {name!r} unavailable: {text}"
                discovery = Discovery(problems=(line,), failed=True)
            else:
                discovery = self._accept_discovered(name, found)
            self._discovered[name] = discovery
            for line in discovery.problems:
                if report is not None:
                    report(line)

    def _accept_discovered(self, toolset: str, found: list[Any]) -> Discovery:
        plugin = self.toolsets[toolset].plugin
        kept: list[Tool] = []
        problems: list[str] = []
        for tool in found:
            name = getattr(tool, "name", None)
            if not isinstance(tool, Tool) or not TOOL_NAME_RE.match(name or ""):
                problems.append(f"toolset {toolset!r}: left out the invalid tool name {name!r}")
            elif not callable(tool.handler) or not isinstance(tool.parameters, dict):
                problems.append(f"toolset {toolset!r}: left out tool {name!r} (no handler/schema)")
            elif tool.name in self._tool_owner:
                other = self._tool_owner[tool.name][0]
                problems.append(
                    f"toolset {toolset!r}: left out tool {name!r}, toolset {other!r} has that name"
                )
            else:
                self._tool_owner[tool.name] = (toolset, plugin)
                kept.append(tool)
        return Discovery(tuple(kept), tuple(problems))

    def _accept_toolset(self, record: PluginRecord, toolset: Toolset) -> None:
        assert self._toolsets is not None
        if not isinstance(toolset, Toolset):
            raise RegistrationError(f"expected a Toolset, got {type(toolset).__name__}")
        if not toolset.name:
            raise RegistrationError("a toolset needs a name")
        if toolset.discover is not None and not callable(toolset.discover):
            raise RegistrationError(f"toolset {toolset.name!r}: discover is not callable")
        other = self._toolsets.get(toolset.name)
        if other is not None:
            raise RegistrationError(
                f"toolset {toolset.name!r} is registered by both {other.plugin!r}"
                f" and {record.name!r}"
            )
        seen: set[str] = set()
        for tool in toolset.tools:
            if not TOOL_NAME_RE.match(tool.name or ""):
                raise RegistrationError(
                    f"tool name {tool.name!r} in toolset {toolset.name!r} is invalid"
                    " (letters, digits, '_' and '-', at most 64)"
                )
            if not callable(tool.handler):
                raise RegistrationError(f"tool {tool.name!r} has no callable handler")
            if not isinstance(tool.parameters, dict):
                raise RegistrationError(
                    f"tool {tool.name!r}: parameters must be a JSON schema dict"
                )
            owner = self._tool_owner.get(tool.name)
            if owner is not None or tool.name in seen:
                first = owner[1] if owner else record.name
                raise RegistrationError(
                    f"tool {tool.name!r} is registered by both {first!r} and {record.name!r}"
                )
            seen.add(tool.name)
        for tool in toolset.tools:
            self._tool_owner[tool.name] = (toolset.name, record.name)
        self._toolsets[toolset.name] = Registered(toolset.name, toolset, record.name)

    # --- environments ----------------------------------------------------------------------

    @property
    def environments(self) -> dict[str, Registered[Callable[..., Any]]]:
        """Registered environment factories by backend name."""
        if self._environments is None:
            self._environments = {}
            self._collect("hermes_register_environments", self._accept_environment)
        return self._environments

    def _accept_environment(
        self, record: PluginRecord, name: str, factory: Callable[..., Any]
    ) -> None:
        assert self._environments is not None
        if not isinstance(name, str) or not name:
            raise RegistrationError("an environment needs a name")
        if not callable(factory):
            raise RegistrationError(f"environment {name!r}: factory is not callable")
        self._unique(self._environments, "environment", name, record)
        self._environments[name] = Registered(name, factory, record.name)

    # --- session stores --------------------------------------------------------------------

    @property
    def session_stores(self) -> dict[str, Registered[Callable[..., Any]]]:
        """Registered session store factories by URL scheme."""
        if self._stores is None:
            self._stores = {}
            self._collect("hermes_register_session_stores", self._accept_store)
        return self._stores

    def _accept_store(self, record: PluginRecord, scheme: str, factory: Callable[..., Any]) -> None:
        assert self._stores is not None
        if not isinstance(scheme, str) or not scheme.isidentifier() and "+" not in scheme:
            raise RegistrationError(f"a session store needs a URL scheme, not {scheme!r}")
        if not callable(factory):
            raise RegistrationError(f"session store {scheme!r}: factory is not callable")
        self._unique(self._stores, "session store", scheme, record)
        self._stores[scheme] = Registered(scheme, factory, record.name)

    # --- providers -------------------------------------------------------------------------

    @property
    def providers(self) -> dict[str, Registered[Provider]]:
        """Registered providers by name."""
        if self._providers is None:
            self._providers = {}
            self._collect("hermes_register_providers", self._accept_provider)
        return self._providers

    def _accept_provider(self, record: PluginRecord, provider: Provider) -> None:
        assert self._providers is not None
        if not isinstance(provider, Provider):
            raise RegistrationError(f"expected a Provider, got {type(provider).__name__}")
        if provider.api_mode not in API_MODES:
            raise RegistrationError(
                f"provider {provider.name!r}: unknown api_mode {provider.api_mode!r}"
                f" (one of {', '.join(API_MODES)})"
            )
        self._unique(self._providers, "provider", provider.name, record)
        self._providers[provider.name] = Registered(provider.name, provider, record.name)
        if provider.key_env:  # a provider's key never reaches a command's environment
            mark_secret(provider.key_env)

    # --- context engines -------------------------------------------------------------------

    @property
    def engines(self) -> dict[str, Registered[type[ContextEngine]]]:
        """Registered context engine classes by name."""
        if self._engines is None:
            self._engines = {}
            self._collect("hermes_register_context_engines", self._accept_engine)
        return self._engines

    def _accept_engine(self, record: PluginRecord, engine: type[ContextEngine]) -> None:
        assert self._engines is not None
        if not (inspect.isclass(engine) and issubclass(engine, ContextEngine)):
            raise RegistrationError("expected a ContextEngine subclass")
        if not engine.name:
            raise RegistrationError(f"context engine {engine.__name__} has no name")
        self._unique(self._engines, "context engine", engine.name, record)
        self._engines[engine.name] = Registered(engine.name, engine, record.name)

    # --- slash commands of the chat ----------------------------------------------------------

    @property
    def slash_commands(self) -> dict[str, Registered[SlashCommand]]:
        """Registered slash commands of the chat by name; the name of one of the chat's own
        (:data:`hermes_core.chat_commands.BUILTIN_NAMES`) is refused like a clash."""
        if self._slash is None:
            self._slash = {}

            def accept(record: PluginRecord, command: SlashCommand) -> None:
                assert self._slash is not None
                if not isinstance(command, SlashCommand):
                    raise RegistrationError(
                        f"expected a SlashCommand, got {type(command).__name__}"
                    )
                if command.name in BUILTIN_NAMES:
                    raise RegistrationError(
                        f"slash command /{command.name} is the chat's own; {record.name!r} "
                        "cannot replace it"
                    )
                self._unique(self._slash, "slash command", command.name, record)
                self._slash[command.name] = Registered(command.name, command, record.name)

            self._collect("hermes_register_slash_commands", accept)
        return self._slash

    # --- registration hooks that plugins declare -------------------------------------------

    def named(self, hook: str) -> dict[str, Registered[Any]]:
        """What plugins registered through ``hook``, a registration hook a loaded plugin
        declares (:meth:`PluginManager.registration_hooks`), by name.

        Each ``register(name, value)`` registers ``value`` under ``name``, a non-empty string.
        A name registered twice is refused and recorded against the later plugin, naming both.
        Raises :class:`RegistrationError` when no loaded plugin declares ``hook`` as such.
        """
        table = self._named.get(hook)
        if table is None:
            if hook not in self.plugins.registration_hooks():
                raise RegistrationError(
                    f"{hook} is not a registration hook that a loaded plugin declares"
                )
            table = self._named[hook] = {}
            kind = _kind(hook)

            def accept(record: PluginRecord, name: str, value: Any) -> None:
                if not isinstance(name, str) or not name:
                    raise RegistrationError(f"a {kind} needs a name")
                if value is None:
                    raise RegistrationError(f"{kind} {name!r}: None registered")
                self._unique(table, kind, name, record)
                table[name] = Registered(name, value, record.name)

            self._collect(hook, accept)
        return table

    def collect_all(self) -> None:
        """Run every registration hook now (the contract's and those plugins declare), so that
        every plugin's registration errors are recorded (``hermes plugins list``, ``doctor``)."""
        _ = self.toolsets, self.providers, self.environments, self.engines, self.slash_commands
        for hook in self.plugins.registration_hooks():
            self.named(hook)

    @staticmethod
    def _unique(
        table: dict[str, Registered[Any]], kind: str, name: str, record: PluginRecord
    ) -> None:
        other = table.get(name)
        if other is not None:
            raise RegistrationError(
                f"{kind} {name!r} is registered by both {other.plugin!r} and {record.name!r}"
            )


def _kind(hook: str) -> str:
    """What a registration hook registers, in words: ``platform adapter`` for
    ``hermes_register_platform_adapters``."""
    words = hook.removeprefix("hermes_register_").replace("_", " ")
    return words[:-1] if words.endswith("s") else words
