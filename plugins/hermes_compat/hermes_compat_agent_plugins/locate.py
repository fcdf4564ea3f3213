"""Which :class:`~.host.HermesPluginHost` serves a hook call: the pinned one, else the one of the
home folder of the running command, tool call or process (one per home, loaded once)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_runtime.home import default_home

from . import current

_pinned: Any = None
_process_host: tuple[tuple[Any, ...], Any] | None = None
_read: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def use_host(host: Any) -> None:
    """Serve every hook of this process from ``host`` (a loaded ``HermesPluginHost``), whatever
    home the caller runs in; ``None`` returns to one host per home folder (embedders, tests)."""
    global _pinned
    _pinned = host


def pinned() -> Any:
    """The host :func:`use_host` pinned, or ``None``."""
    return _pinned


def read_config(home: Path) -> dict[str, Any]:
    """``home/config.yaml`` as data (``{}`` when missing or unreadable), read again only when
    the file changed: hook calls outside a command (the gateway's turns) may ask for it often."""
    path = home / "config.yaml"
    try:
        status = path.stat()
    except OSError:
        return {}
    stamp = (status.st_mtime_ns, status.st_size, status.st_ino)
    known = _read.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    data = data if isinstance(data, dict) else {}
    _read[path] = (stamp, data)
    return data


def _as_mapping(config: Any) -> Mapping[str, Any]:
    data = getattr(config, "data", config)
    return data if isinstance(data, Mapping) else {}


def argv_profile(argv: list[str]) -> str | None:
    """The ``-p``/``--profile`` of the command line, read before click parses it (the commands of
    Hermes agent plugins must be known before that)."""
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("-p", "--profile") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
        if arg == "--plugins":
            skip = True  # its value
        elif not arg.startswith("-"):
            return None  # the command name: options after it are the command's
    return None


def _located(context: Any = None) -> tuple[Path, Mapping[str, Any] | Callable[[], Any]]:
    """The home folder and configuration of the running command, tool call or process; outside
    both, the configuration is a function that reads the home's ``config.yaml``."""
    command = current.command_context()
    if command is not None:
        return Path(command.home), _as_mapping(command.config)
    context = context if context is not None else current.tool_context()
    if context is not None and getattr(context, "hermes_home", None) is not None:
        return Path(context.hermes_home), _as_mapping(context.config)
    home = default_home()
    return home, functools.partial(read_config, home)


def where(context: Any = None) -> tuple[Path, Mapping[str, Any]]:
    """The home folder and configuration of the running command, tool call or process."""
    home, config = _located(context)
    return home, config() if callable(config) else config


def host_of(context: Any = None) -> Any:
    """The loaded host that serves a hook called in ``context`` (a ``ToolContext``, or the
    running command or process when ``None``). A home's host is made once, from the
    configuration of its first call; outside a command the home's ``config.yaml`` is read only
    then."""
    if _pinned is not None:
        return _pinned
    from . import host

    context = context if context is not None else current.tool_context()
    if context is None and current.command_context() is None:
        # outside a command and a tool call (a gateway turn): the process's home, whose host
        # is looked up once per value of the variables that name it
        key = (os.environ.get("HERMES_HOME"), os.environ.get("HOME"), host.generation())
        known = _process_host
        if known is not None and known[0] == key:
            return known[1]
        found = host.host_for(default_home(), functools.partial(read_config, default_home()))
        _remember(key, found)
        return found
    home, config = _located(context)
    return host.host_for(home, config)


def _remember(key: tuple[Any, ...], found: Any) -> None:
    global _process_host
    _process_host = (key, found)
