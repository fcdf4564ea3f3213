"""Hooks a plugin declares for itself (its ``hookspecs``): added before any plugin registers, so
another plugin may implement them whatever the load order; an implementation of a hook nobody
declares still fails; a declared registration hook is collected by the host with duplicate
detection and attribution."""

from __future__ import annotations

import types
from typing import Any

import pytest

from hermes_core.plugins.manager import PluginLoadError
from hermes_core.plugins.registry import RegistrationError, Registry
from hermes_core.testing import load_plugin, make_host, plugin_manager
from hermes_hookspecs import hookimpl, hookspec


def _module(name: str, *functions: Any) -> types.ModuleType:
    """A module holding ``functions``, as a plugin's ``hookspecs`` module would."""
    module = types.ModuleType(name)
    for function in functions:
        setattr(module, function.__name__, function)
    return module


@hookspec
def hermes_register_queue_backends(register):  # type: ignore[no-untyped-def]
    """Register queue backends: ``register(name, factory)``."""


@hookspec
def hermes_queue_message_seen(message):  # type: ignore[no-untyped-def]
    """Observe a message the queue delivered."""


@hookspec
def hermes_register_toolsets(register):  # type: ignore[no-untyped-def]
    """Already the contract's."""


@hookspec
def queue_message_seen(message):  # type: ignore[no-untyped-def]
    """Outside the project's namespace."""


QUEUE_SPECS = _module("queue_hookspecs", hermes_register_queue_backends, hermes_queue_message_seen)


class Queue:
    """The declaring plugin: it also registers a backend of its own."""

    __name__ = "queue"
    hookspecs = QUEUE_SPECS

    @hookimpl
    def hermes_register_queue_backends(self, register: Any) -> None:
        register("memory", dict)


class Redis:
    """Another plugin implementing the queue's hooks."""

    __name__ = "redis"

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def hermes_register_queue_backends(self, register: Any) -> None:
        register("redis", list)

    @hookimpl
    def hermes_queue_message_seen(self, message: str) -> None:
        self.seen.append(message)


def test_a_plugin_implements_a_hook_another_declares_whatever_the_order() -> None:
    redis = Redis()
    manager = plugin_manager([redis, Queue()])  # the implementer loads first
    assert manager.declared_hooks == {
        "hermes_queue_message_seen": "queue",
        "hermes_register_queue_backends": "queue",
    }
    assert manager.records["redis"].hooks == [
        "hermes_queue_message_seen",
        "hermes_register_queue_backends",
    ]
    manager.call_each("hermes_queue_message_seen", message="hello")
    assert redis.seen == ["hello"]
    assert not manager.failures()


def test_an_implementation_of_an_undeclared_hook_still_fails() -> None:
    manager = plugin_manager([Redis()], strict=False)  # nobody declares the queue's hooks
    record = manager.records["redis"]
    assert record.status == "error"
    assert record.error is not None and "unknown hook hermes_" in record.error
    with pytest.raises(PluginLoadError, match="unknown hook hermes_queue_message_seen"):
        plugin_manager([Redis()])


def test_an_implementation_must_take_the_declared_arguments() -> None:
    class Wrong:
        __name__ = "wrong"

        @hookimpl
        def hermes_queue_message_seen(self, msg: str) -> None:
            pass

    manager = plugin_manager([Queue(), Wrong()], strict=False)
    assert manager.records["queue"].status == "loaded"
    record = manager.records["wrong"]
    assert record.status == "error" and record.error is not None and "msg" in record.error


@pytest.mark.parametrize(
    "specs, error",
    [
        ("contract", "hermes_register_toolsets is already a hook of the contract"),
        ("twice", "hermes_queue_message_seen is already declared by plugin 'queue'"),
        ("unnamed", "declared hook queue_message_seen must be named hermes_..."),
        ("empty", "declare no @hookspec"),
    ],
)
def test_a_declaration_that_clashes_is_an_error_of_the_declaring_plugin(
    specs: str, error: str
) -> None:
    class Declaring:
        __name__ = "declaring"
        hookspecs = {
            "contract": _module("contract", hermes_register_toolsets),
            "twice": _module("twice", hermes_queue_message_seen),
            "unnamed": _module("unnamed", queue_message_seen),
            "empty": _module("empty"),
        }[specs]

    manager = plugin_manager([Queue(), Declaring()], strict=False)
    record = manager.records["declaring"]
    assert record.status == "error"
    assert record.error is not None and error in record.error
    assert manager.records["queue"].status == "loaded"
    assert set(manager.declared_hooks.values()) == {"queue"}


def test_a_declared_registration_hook_is_collected_with_attribution() -> None:
    class Clash:
        __name__ = "clash"

        @hookimpl
        def hermes_register_queue_backends(self, register: Any) -> None:
            register("memory", set)  # the queue plugin has it already
            register("", set)
            register("disk", None)

    manager = plugin_manager([Queue(), Redis(), Clash()])
    assert manager.registration_hooks() == ["hermes_register_queue_backends"]
    registry = Registry.of(manager)
    backends = registry.named("hermes_register_queue_backends")
    assert {name: (entry.value, entry.plugin) for name, entry in backends.items()} == {
        "memory": (dict, "queue"),
        "redis": (list, "redis"),
    }
    assert manager.records["clash"].hook_errors == [
        "hermes_register_queue_backends: RegistrationError: queue backend 'memory' is "
        "registered by both 'queue' and 'clash'",
        "hermes_register_queue_backends: RegistrationError: a queue backend needs a name",
        "hermes_register_queue_backends: RegistrationError: queue backend 'disk': None registered",
    ]
    with pytest.raises(RegistrationError, match="not a registration hook"):
        registry.named("hermes_queue_message_seen")  # declared, but not a registration hook
    with pytest.raises(RegistrationError, match="not a registration hook"):
        registry.named("hermes_register_toolsets")  # the contract's own


def test_collect_all_runs_the_declared_registration_hooks_too() -> None:
    class Broken:
        __name__ = "broken"

        @hookimpl
        def hermes_register_queue_backends(self, register: Any) -> None:
            raise RuntimeError("no backend today")

    host = make_host(plugins=[Queue(), Broken()])
    assert not host.plugins.failures()
    host.registry.collect_all()
    [failed] = host.plugins.failures()
    assert failed.name == "broken"
    assert failed.hook_errors == ["hermes_register_queue_backends: RuntimeError: no backend today"]


def test_the_gateway_declares_its_platform_hook_and_the_contract_does_not() -> None:
    import hermes_hookspecs
    from hermes_hookspecs import specs

    assert not hasattr(specs, "hermes_register_platform_adapters")
    assert "PlatformAdapterFactory" not in hermes_hookspecs.__all__
    record = load_plugin("gateway")
    assert "hermes_register_platform_adapters" in record.hooks
    manager = plugin_manager(["gateway"])
    assert manager.declared_hooks == {
        "hermes_register_platform_adapters": "gateway",
        "hermes_register_turn_queues": "gateway",  # a team's work queue (docs/team.md)
    }
    assert not hasattr(specs, "hermes_register_turn_queues")
    adapters = make_host(plugin_manager=manager).registry.named("hermes_register_platform_adapters")
    assert {"api_server", "webhook"} <= set(adapters)
    assert {entry.plugin for entry in adapters.values()} == {"gateway"}
