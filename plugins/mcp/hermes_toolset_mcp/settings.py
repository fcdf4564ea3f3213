"""The ``mcp_servers`` section of the configuration: one :class:`ServerConfig` per server."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from typing import Any

SECTION = "mcp_servers"
"""The configuration key, as in the Hermes agent."""

DEFAULT_TIMEOUT = 300.0
"""Seconds a tool call may take."""
DEFAULT_CONNECT_TIMEOUT = 60.0
"""Seconds a server may take to start and list its tools."""

NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""Server names: they become part of toolset and tool names."""

SANDBOX_PROFILES = ("off", "workspace", "read-only")
"""A stdio server runs unsandboxed (``off``, the default: the person configured it) or in the
command sandbox, writing only its working folder and its own ``/tmp`` (``workspace``), or
only ``/tmp`` (``read-only``); see docs/sandbox.md."""

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


class ServerConfigError(ValueError):
    """A server entry that cannot be used; the message is one line naming the server."""

    server: str = ""
    """The name of the entry."""


@dataclass(frozen=True)
class ServerConfig:
    """One configured MCP server.

    Exactly one of ``command`` (a local server spoken to over stdio) and ``url`` (a streamable
    HTTP endpoint) is set. ``include`` (when not empty) keeps only the server's tools whose
    original names match one of its patterns; otherwise ``exclude`` drops the matching ones.
    Patterns are exact names or shell-style globs. ``require_approval`` makes every call of the
    server's tools ask for approval first. ``extra`` holds the keys of the entry this plugin
    does not know (reported by ``hermes mcp list``).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    enabled: bool = True
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    require_approval: bool = False
    sandbox: str = "off"
    extra: tuple[str, ...] = field(default=(), compare=False)

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.command else "http"

    @property
    def target(self) -> str:
        """What the server is: the command line, or the URL."""
        if self.command:
            return shlex.join([self.command, *self.args])
        return self.url or ""

    def key(self) -> str:
        """A fingerprint of everything that decides how the server is reached."""
        data = asdict(self)
        for name in ("enabled", "include", "exclude", "require_approval", "extra"):
            data.pop(name)
        return json.dumps(data, sort_keys=True)

    def wants(self, tool: str) -> bool:
        """Whether the server's tool called ``tool`` is offered (include/exclude)."""
        if self.include:
            return any(fnmatchcase(tool, pattern) for pattern in self.include)
        return not any(fnmatchcase(tool, pattern) for pattern in self.exclude)


def server_entries(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The raw ``mcp_servers`` mapping, or an empty one."""
    section = (config or {}).get(SECTION) if isinstance(config, Mapping) else None
    return dict(section) if isinstance(section, Mapping) else {}


def parse_server(name: str, entry: Any) -> ServerConfig:
    """The :class:`ServerConfig` of entry ``name``; :class:`ServerConfigError` when it is
    unusable."""
    where = f"mcp_servers.{name}"
    if not NAME_RE.match(name):
        raise ServerConfigError(
            f"{where}: a server name may only use letters, digits, '_' and '-' (at most 40)"
        )
    if not isinstance(entry, Mapping):
        raise ServerConfigError(f"{where} must be a mapping (command/args/env or url/headers)")
    command = entry.get("command")
    url = entry.get("url")
    if bool(command) == bool(url):
        raise ServerConfigError(f"{where} needs exactly one of 'command' (stdio) or 'url' (HTTP)")
    if command is not None and not isinstance(command, str):
        raise ServerConfigError(f"{where}.command must be a string")
    if url is not None and (not isinstance(url, str) or not re.match(r"https?://", url)):
        raise ServerConfigError(f"{where}.url must be an http:// or https:// URL")
    tools = entry.get("tools") or {}
    if not isinstance(tools, Mapping):
        raise ServerConfigError(f"{where}.tools must be a mapping (include/exclude)")
    known = {"command", "args", "env", "cwd", "url", "headers", "timeout", "connect_timeout"}
    known |= {"enabled", "tools", "require_approval", "sandbox"}
    sandbox = entry.get("sandbox", "off")
    if sandbox is False:  # YAML reads a bare `off` as false
        sandbox = "off"
    if sandbox not in SANDBOX_PROFILES:
        raise ServerConfigError(
            f"{where}.sandbox must be one of {', '.join(SANDBOX_PROFILES)}, not {sandbox!r}"
        )
    if sandbox != "off" and not command:
        raise ServerConfigError(f"{where}.sandbox applies to stdio servers (command) only")
    return ServerConfig(
        name=str(name),
        command=command or None,
        args=_args(where, entry.get("args")),
        env=_pairs(where, "env", entry.get("env")),
        cwd=str(entry["cwd"]) if entry.get("cwd") else None,
        url=url or None,
        headers=_pairs(where, "headers", entry.get("headers")),
        timeout=_seconds(where, "timeout", entry.get("timeout"), DEFAULT_TIMEOUT),
        connect_timeout=_seconds(
            where, "connect_timeout", entry.get("connect_timeout"), DEFAULT_CONNECT_TIMEOUT
        ),
        enabled=_flag(entry.get("enabled", True), default=True),
        include=_patterns(where, "include", tools.get("include")),
        exclude=_patterns(where, "exclude", tools.get("exclude")),
        # an unreadable value fails closed: the calls ask
        require_approval=_flag(entry.get("require_approval", False), default=True),
        sandbox=str(sandbox),
        extra=tuple(sorted(str(k) for k in entry if k not in known)),
    )


def parse_servers(config: Mapping[str, Any] | None) -> list[ServerConfig | ServerConfigError]:
    """Every configured server in configuration order, or the error that makes it unusable."""
    result: list[ServerConfig | ServerConfigError] = []
    for name, entry in server_entries(config).items():
        try:
            result.append(parse_server(str(name), entry))
        except ServerConfigError as exc:
            exc.server = str(name)
            result.append(exc)
    return result


def expand(text: str, found: list[str] | None = None) -> str:
    """``text`` with ``${VAR}`` and ``${env:VAR}`` replaced by the variable's value; an unset
    variable keeps its placeholder. Values that came from a variable are added to ``found``."""

    def value(match: re.Match[str]) -> str:
        resolved = os.environ.get(match.group(1))
        if resolved is None:
            return match.group(0)
        if found is not None:
            found.append(resolved)
        return resolved

    return _REFERENCE.sub(value, text)


def _args(where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):  # a shell-style string, as some copied snippets have it
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise ServerConfigError(f"{where}.args: {exc}") from None
    if isinstance(value, Sequence):
        return tuple(str(item) for item in value)
    raise ServerConfigError(f"{where}.args must be a list of strings")


def _pairs(where: str, key: str, value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ServerConfigError(f"{where}.{key} must be a mapping of names to values")
    return tuple((str(k), "" if v is None else str(v)) for k, v in value.items())


def _seconds(where: str, key: str, value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ServerConfigError(f"{where}.{key} must be a number of seconds") from None
    if seconds <= 0:
        raise ServerConfigError(f"{where}.{key} must be more than 0 seconds")
    return seconds


def _patterns(where: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(item) for item in value)
    raise ServerConfigError(f"{where}.tools.{key} must be a name or a list of names")


def _flag(value: Any, default: bool) -> bool:
    """A yes/no setting; ``default`` for a value that is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "yes", "on", "1"):
            return True
        if word in ("false", "no", "off", "0"):
            return False
    return default
