"""``hermes plugins enable NAME`` and ``hermes plugins disable NAME``, as Hermes agent users type
them: an installed hermes plugin loads unless ``plugins.disabled`` names it; a plugin hosted by
another plugin (a Hermes agent plugin) may also need its name in an opt-in list such as
``plugins.enabled``, which its host reports (``PluginReport.opt_in``)."""

from __future__ import annotations

from typing import Any

import click

from hermes_hookspecs import HermesError

DISABLED = "plugins.disabled"


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _find(name: str) -> tuple[bool, list[Any]]:
    """Whether ``name`` is an installed hermes plugin, and the hosted plugins reported under it."""
    from .commands import _hosted_reports, _state

    state = _state()
    native = any(r.name == name for r in state.plugins.list_records())
    hosted = [
        report
        for reports in _hosted_reports(state).values()
        for report in reports
        if report.name == name
    ]
    if not native and not hosted:
        raise HermesError(
            f"no installed plugin is named {name!r}; `hermes plugins list` shows their names"
        )
    return native, hosted


def toggle(name: str, enable: bool) -> list[str]:
    """Enable or disable the plugin ``name`` in ``config.yaml`` of the current home and return
    what changed, one line each (empty: it already was).

    Enabling removes ``name`` from ``plugins.disabled`` and adds it to the opt-in list its host
    reports; disabling removes it from that list and adds it to ``plugins.disabled``.

    :param name: the name ``hermes plugins list`` shows.
    :param enable: ``True`` to enable, ``False`` to disable.
    :raises HermesError: no installed plugin has that name, or the file cannot be written.
    """
    from ..config.loading import _read_file, store_value
    from .commands import _schema, _state

    _native, hosted = _find(name)
    state = _state()
    path = state.home / "config.yaml"
    data = _read_file(path)[0]
    wanted: dict[str, list[str]] = {}
    for key in [DISABLED, *sorted({r.opt_in for r in hosted if r.opt_in})]:
        node: Any = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        wanted[key] = _names(node)
    changed: list[str] = []
    for key, names in wanted.items():
        # plugins.disabled names it only when disabled; an opt-in list only when enabled
        keep = (key == DISABLED) != enable
        if keep and name not in names:
            names.append(name)
        elif not keep and name in names:
            names.remove(name)
        else:
            continue
        store_value(path, key, names, _schema(state))
        changed.append(f"{key} = {names}")
    return changed


@click.command("enable")
@click.argument("name")
def plugins_enable(name: str) -> None:
    """Enable plugin NAME: take it out of plugins.disabled and, for a Hermes agent plugin, add
    it to plugins.enabled. Takes effect in the next session."""
    changed = toggle(name, enable=True)
    click.echo(
        f"Plugin {name} enabled; takes effect in the next session."
        if changed
        else f"Plugin {name} is already enabled."
    )


@click.command("disable")
@click.argument("name")
def plugins_disable(name: str) -> None:
    """Disable plugin NAME: add it to plugins.disabled and, for a Hermes agent plugin, take it
    out of plugins.enabled. Takes effect in the next session."""
    changed = toggle(name, enable=False)
    click.echo(
        f"Plugin {name} disabled; takes effect in the next session."
        if changed
        else f"Plugin {name} is already disabled."
    )
