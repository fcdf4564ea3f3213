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


def _find(name: str) -> tuple[str, list[Any]]:
    """The plugin ``name`` stands for and the hosted plugins of that name: an installed hermes
    plugin or a hosted one of that name, else the one hosted plugin whose key ends in
    ``/<name>`` (a folder plugin in a category folder, as the Hermes agent resolves it)."""
    from .helpers import current_state, hosted_reports

    state = current_state()
    native = any(r.name == name for r in state.plugins.list_records())
    reports = [report for found in hosted_reports(state).values() for report in found]
    hosted = [r for r in reports if r.name == name]
    if native or hosted:
        return name, hosted
    leaves = [r for r in reports if r.name.rsplit("/", 1)[-1] == name]
    if len({r.name for r in leaves}) == 1:
        return leaves[0].name, leaves
    if leaves:
        keys = ", ".join(sorted({r.name for r in leaves}))
        raise HermesError(f"{name!r} could be any of {keys}; give the whole name")
    raise HermesError(
        f"no installed plugin is named {name!r}; `hermes plugins list` shows their names"
    )


def toggle(name: str, enable: bool) -> tuple[str, list[str]]:
    """Enable or disable the plugin ``name`` in ``config.yaml`` of the current home and return
    its full name and what changed, one line each (empty: it already was).

    Enabling removes ``name`` from ``plugins.disabled`` and adds it to the opt-in list its host
    reports; disabling removes it from that list and adds it to ``plugins.disabled``.

    :param name: the name ``hermes plugins list`` shows.
    :param enable: ``True`` to enable, ``False`` to disable.
    :raises HermesError: no installed plugin has that name, or the file cannot be written.
    """
    from ..config.loading import _read_file, store_value
    from .config_cmd import _schema
    from .helpers import current_state

    name, hosted = _find(name)
    aliases = {name, name.rsplit("/", 1)[-1]}
    state = current_state()
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
        elif not keep and aliases & set(names):
            names[:] = [n for n in names if n not in aliases]
        else:
            continue
        store_value(path, key, names, _schema(state))
        changed.append(f"{key} = {names}")
    return name, changed


@click.command("enable")
@click.argument("name")
def plugins_enable(name: str) -> None:
    """Enable plugin NAME: take it out of plugins.disabled and, for a Hermes agent plugin, add
    it to plugins.enabled. Takes effect in the next session."""
    name, changed = toggle(name, enable=True)
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
    name, changed = toggle(name, enable=False)
    click.echo(
        f"Plugin {name} disabled; takes effect in the next session."
        if changed
        else f"Plugin {name} is already disabled."
    )
