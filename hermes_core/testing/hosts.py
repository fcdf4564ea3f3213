"""Hosts and runners for tests: what a plugin that starts agents itself (a scheduler, a gateway,
a command) is handed by hermes, built with only the plugins a test names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..host import Host
from .kit import plugin_manager
from .scripted import ScriptedModel, Step

if TYPE_CHECKING:
    from ..loop.runner import HostRunner

__all__ = ["make_host", "make_runner"]


def make_host(
    *script: Step,
    model: ScriptedModel | None = None,
    plugins: Sequence[str | object] = (),
    home: str | Path | None = None,
    config: Mapping[str, Any] | None = None,
    scripted: bool = True,
    **host_kwargs: Any,
) -> Host:
    """A :class:`~hermes_core.host.Host` (the configuration, plugins, registry and session store
    of one process) with only ``plugins`` loaded, its agents driven by a scripted model.

    ``script`` steps go to a new :class:`ScriptedModel` (or are added to ``model``); the model is
    ``host.client``. With ``scripted=False`` there is no scripted model: agents call the
    configured provider (the test kit's :class:`FakeLLM`, for instance). ``config`` is the whole
    configuration (defaults fill the rest); nothing is read from disk or the environment unless
    ``home`` is given without ``config``. Sessions are stored in ``home``'s ``sessions.db`` when
    ``home`` is given, else in memory.

    ``plugins`` are as :func:`plugin_manager` takes them; other keywords go to ``Host``
    (``plugins`` as a ready manager under the name ``plugin_manager``, ``session_store``,
    ``overrides``...). The registry is ``host.registry``; close the host (``host.close()``) when
    the test is done with its session store.
    """
    client: ScriptedModel | None = None
    if scripted:
        client = model or ScriptedModel()
        client.add(*script)
    elif script or model is not None:
        raise TypeError("make_host(scripted=False) takes no script and no model")
    manager = host_kwargs.pop("plugin_manager", None) or plugin_manager(plugins)
    if config is None and home is None:
        config = {}
    return Host(home=home, config=config, plugins=manager, client=client, **host_kwargs)


def make_runner(
    *script: Step,
    model: ScriptedModel | None = None,
    plugins: Sequence[str | object] = (),
    home: str | Path | None = None,
    config: Mapping[str, Any] | None = None,
    **host_kwargs: Any,
) -> HostRunner:
    """The runner of agent turns a plugin gets from hermes (``CommandContext.agent_runner()``,
    a :class:`hermes_hookspecs.AgentRunner`), of a host made by :func:`make_host` with the same
    arguments; the host is ``runner.host``."""
    host = make_host(*script, model=model, plugins=plugins, home=home, config=config, **host_kwargs)
    return host.runner()
