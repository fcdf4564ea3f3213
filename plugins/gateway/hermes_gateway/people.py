"""The people of a gateway, as configured: ``gateway.users`` (each person's platform ids, groups
and settings), ``gateway.groups`` and ``gateway.guests``, checked once at start-up; and who a
sender is.

A sender (a platform and the user id it gives) is the person whose ``ids`` list
``PLATFORM:USER_ID``; anyone else the platform's allow-list lets in (``allowed_users``,
``allow_all``) is a *guest*, a person of their own whose id is made from the platform and the
user id (:func:`guest_id`), unless ``gateway.guests.allowed`` is false.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_hookspecs import PERSON_ID_RE

from .errors import GatewaySettingsError

GUEST_PREFIX = "guest-"
"""How the id of every guest starts; no configured person's id may."""

APPROVAL_MODES = ("manual", "deny", "yolo")
"""What a person's ``approvals`` may be (``approvals.mode`` for their runs)."""

SANDBOX_PROFILES = ("workspace", "read-only", "off")
"""The profiles of ``terminal.sandbox`` (docs/sandbox.md)."""

SANDBOX_KEYS = ("profile", "network", "hide", "max_processes", "max_file_size_mb")
"""The keys of a ``terminal.sandbox`` mapping, and so of a person's ``sandbox``."""

SETTING_KEYS = (
    "toolsets",
    "model",
    "provider",
    "base_url",
    "approvals",
    "sandbox",
    "max_turns",
    "memory",
)
"""What a person, a group and the guests may each set."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Settings:
    """What one entry (a person, a group, the guests) sets for the runs it covers; ``None``:
    not set here.

    :param toolsets: the toolsets allowed (a ceiling over what the configuration enables).
    :param model: ``model.default`` for their runs.
    :param provider: ``model.provider``.
    :param base_url: ``model.base_url``.
    :param approvals: ``approvals.mode`` (one of :data:`APPROVAL_MODES`).
    :param sandbox: ``terminal.sandbox`` keys, as a mapping (a profile name is
        ``{"profile": name}``).
    :param max_turns: ``agent.max_turns``.
    :param memory: ``False`` turns the memory tool and the memory in the prompt off.
    """

    toolsets: tuple[str, ...] | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    approvals: str | None = None
    sandbox: Mapping[str, Any] | None = None
    max_turns: int | None = None
    memory: bool | None = None


@dataclass(frozen=True)
class Person:
    """One entry of ``gateway.users``.

    :param id: the person id (its key).
    :param ids: the platform ids that are this person, each ``PLATFORM:USER_ID``.
    :param groups: the groups they are in, in the order given (the first wins a conflict).
    :param settings: what their own entry sets.
    :param api_key_env: the variable holding their own key for the API server, if any.
    """

    id: str
    ids: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    settings: Settings = field(default_factory=Settings)
    api_key_env: str | None = None


@dataclass(frozen=True)
class Group:
    """One entry of ``gateway.groups``.

    :param name: its name (its key).
    :param share_sessions: its members may find each other's sessions with ``session_search``.
    :param settings: what it sets for its members (where their own entry does not).
    """

    name: str
    share_sessions: bool = False
    settings: Settings = field(default_factory=Settings)


@dataclass(frozen=True)
class Guests:
    """``gateway.guests``: senders no entry of ``gateway.users`` names.

    :param allowed: whether the platforms' allow-lists may let them in at all.
    :param settings: what holds for every guest.
    """

    allowed: bool = True
    settings: Settings = field(default_factory=Settings)


@functools.lru_cache(maxsize=4096)
def guest_id(platform: str, user_id: str) -> str:
    """The person id of a guest: readable, a valid person id (lower case, at most 64), and
    distinct for every (platform, user id), case and characters a person id cannot hold
    included; the same on every run."""
    readable = re.sub(r"[^a-z0-9_-]+", "_", f"{platform}-{user_id}".lower())[:47].strip("_-")
    digest = hashlib.sha256(f"{platform}\0{user_id}".encode()).hexdigest()[:10]
    return f"{GUEST_PREFIX}{readable}-{digest}" if readable else f"{GUEST_PREFIX}{digest}"


def is_guest(person: str) -> bool:
    """Whether ``person`` is a guest's id (see :func:`guest_id`)."""
    return person.startswith(GUEST_PREFIX)


@dataclass(frozen=True)
class People:
    """The checked ``gateway.users``, ``gateway.groups`` and ``gateway.guests``.

    :param users: the configured people, by id.
    :param groups: the groups, by name.
    :param guests: what holds for guests.
    :param by_platform_id: ``(platform, user id)`` -> person id.
    """

    users: Mapping[str, Person] = field(default_factory=dict)
    groups: Mapping[str, Group] = field(default_factory=dict)
    guests: Guests = field(default_factory=Guests)
    by_platform_id: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def admit(self, platform: str, user_id: str, allow_listed: Callable[[str], bool]) -> str | None:
        """The person the sender ``user_id`` of ``platform`` is: the configured person whose
        ``ids`` name them (let in whatever the platform's allow-list says), else a guest when
        ``allow_listed(user_id)`` and guests are allowed; ``None``: refused."""
        person = self.by_platform_id.get((platform, user_id))
        if person is not None:
            return person
        if self.guests.allowed and allow_listed(user_id):
            return guest_id(platform, user_id)
        return None

    def layers(self, person: str) -> list[Settings]:
        """The settings that apply to ``person``, strongest first: their own entry, then their
        groups in the order listed; a guest's (or anyone no longer configured) are the
        guests'."""
        entry = self.users.get(person)
        if entry is None:
            return [self.guests.settings]
        return [entry.settings, *(self.groups[name].settings for name in entry.groups)]

    def shared_with(self, person: str) -> tuple[str, ...]:
        """The other people whose sessions ``person`` may search: the members of each of
        their groups with ``share_sessions: true``."""
        entry = self.users.get(person)
        if entry is None:
            return ()
        sharing = {name for name in entry.groups if self.groups[name].share_sessions}
        if not sharing:
            return ()
        return tuple(
            sorted(
                other.id
                for other in self.users.values()
                if other.id != person and sharing.intersection(other.groups)
            )
        )

    def keyed(self) -> dict[str, str]:
        """Person id -> the name of the variable holding their API key, for those who have
        one."""
        return {p.id: p.api_key_env for p in self.users.values() if p.api_key_env}


# --- checking the configuration ---------------------------------------------------------------


def _fail(where: str, what: str, value: Any = None, show: bool = True) -> GatewaySettingsError:
    shown = f", not {value!r}" if show else ""
    return GatewaySettingsError(f"config {where} must be {what}{shown}")


def _strings(where: str, value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _fail(where, f"a list of {what}", value)
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _fail(where, f"a list of {what}", value)
    return tuple(value)


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, "a non-empty string", value)
    return value


def _sandbox_profile(where: str, value: Any) -> str:
    if value is False:  # YAML reads a bare `off` as false
        return "off"
    if value is True:
        return "workspace"
    if isinstance(value, str) and value.strip().lower() in SANDBOX_PROFILES:
        return value.strip().lower()
    raise _fail(where, f"one of {', '.join(SANDBOX_PROFILES)}", value)


def _sandbox(where: str, value: Any) -> dict[str, Any]:
    """A person's ``sandbox`` as a mapping of ``terminal.sandbox`` keys."""
    if not isinstance(value, Mapping):
        return {"profile": _sandbox_profile(where, value)}
    out: dict[str, Any] = {}
    for key, item in value.items():
        at = f"{where}.{key}"
        if key not in SANDBOX_KEYS:
            raise GatewaySettingsError(
                f"config {where} has no key {key!r} (its keys: {', '.join(SANDBOX_KEYS)})"
            )
        if key == "profile":
            out[key] = _sandbox_profile(at, item)
        elif key == "network":
            if not isinstance(item, bool):
                raise _fail(at, "true or false", item)
            out[key] = item
        elif key == "hide":
            out[key] = [item] if isinstance(item, str) else list(_strings(at, item, "paths"))
        elif item is not None and (isinstance(item, bool) or not isinstance(item, int) or item < 1):
            raise _fail(at, "a whole number above 0 (or null)", item)
        else:
            out[key] = item
    return out


def _settings(where: str, entry: Mapping[str, Any]) -> Settings:
    """The :data:`SETTING_KEYS` of one entry, checked."""
    values: dict[str, Any] = {}
    if "toolsets" in entry:
        values["toolsets"] = _strings(f"{where}.toolsets", entry["toolsets"], "toolset names")
    for key in ("model", "provider", "base_url"):
        if key in entry:
            values[key] = _text(f"{where}.{key}", entry[key])
    if "approvals" in entry:
        mode = entry["approvals"]
        if mode not in APPROVAL_MODES:
            raise _fail(f"{where}.approvals", f"one of {', '.join(APPROVAL_MODES)}", mode)
        values["approvals"] = mode
    if "sandbox" in entry:
        values["sandbox"] = _sandbox(f"{where}.sandbox", entry["sandbox"])
    if "max_turns" in entry:
        turns = entry["max_turns"]
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
            raise _fail(f"{where}.max_turns", "a whole number of at least 1", turns)
        values["max_turns"] = turns
    if "memory" in entry:
        if not isinstance(entry["memory"], bool):
            raise _fail(f"{where}.memory", "true or false", entry["memory"])
        values["memory"] = entry["memory"]
    return Settings(**values)


def _entry(where: str, entry: Any, extra: tuple[str, ...]) -> Mapping[str, Any]:
    if entry is None:
        return {}
    if not isinstance(entry, Mapping):
        raise _fail(where, "a mapping", entry)
    known = SETTING_KEYS + extra
    for key in entry:
        if key not in known:
            raise GatewaySettingsError(
                f"config {where} has no key {key!r} (its keys: {', '.join(known)})"
            )
    return entry


def _platform_id(where: str, value: Any) -> tuple[str, str]:
    platform, _, user = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not platform or not user:
        raise _fail(where, "a list of PLATFORM:USER_ID strings (webhook:U123)", value)
    return platform, user


def _section(section: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = section.get(key) or {}
    if not isinstance(value, Mapping):
        raise _fail(f"gateway.{key}", "a mapping", value)
    return value


def load_people(section: Mapping[str, Any]) -> People:
    """The people of the ``gateway`` section ``section``, checked; raises
    :class:`GatewaySettingsError` (one line naming the key)."""
    groups: dict[str, Group] = {}
    for name, raw in _section(section, "groups").items():
        where = f"gateway.groups.{name}"
        entry = _entry(where, raw, ("share_sessions",))
        share = entry.get("share_sessions", False)
        if not isinstance(share, bool):
            raise _fail(f"{where}.share_sessions", "true or false", share)
        groups[str(name)] = Group(str(name), share, _settings(where, entry))
    users: dict[str, Person] = {}
    owners: dict[tuple[str, str], str] = {}
    for person, raw in _section(section, "users").items():
        if not isinstance(person, str) or not PERSON_ID_RE.match(person) or ".." in person:
            raise GatewaySettingsError(
                f"config gateway.users: {person!r} is not a person id (lower-case letters, "
                "digits, '_', '.' and '-', at most 64, starting with a letter or digit)"
            )
        if person.startswith(GUEST_PREFIX):
            raise GatewaySettingsError(
                f"config gateway.users: {person!r} starts with {GUEST_PREFIX!r}, which only "
                "guests' ids do; choose another id"
            )
        where = f"gateway.users.{person}"
        entry = _entry(where, raw, ("ids", "groups", "api_key_env"))
        ids = _strings(f"{where}.ids", entry.get("ids", []), "PLATFORM:USER_ID strings")
        for value in ids:
            key = _platform_id(f"{where}.ids", value)
            if key in owners and owners[key] != person:
                raise GatewaySettingsError(
                    f"config {where}.ids: {value} is already {owners[key]}'s (a platform id "
                    "is one person)"
                )
            owners[key] = person
        member_of = _strings(f"{where}.groups", entry.get("groups", []), "group names")
        for name in member_of:
            if name not in groups:
                raise GatewaySettingsError(
                    f"config {where}.groups: no group {name!r} in gateway.groups"
                )
        key_env = entry.get("api_key_env")
        if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.match(key_env)):
            raise _fail(f"{where}.api_key_env", "the name of an environment variable", key_env)
        users[person] = Person(
            id=person,
            ids=ids,
            groups=tuple(dict.fromkeys(member_of)),
            settings=_settings(where, entry),
            api_key_env=key_env,
        )
    raw_guests = _entry("gateway.guests", section.get("guests"), ("allowed",))
    allowed = raw_guests.get("allowed", True)
    if not isinstance(allowed, bool):
        raise _fail("gateway.guests.allowed", "true or false", allowed)
    guests = Guests(allowed=allowed, settings=_settings("gateway.guests", raw_guests))
    return People(users=users, groups=groups, guests=guests, by_platform_id=owners)


__all__ = [
    "APPROVAL_MODES",
    "GUEST_PREFIX",
    "SANDBOX_KEYS",
    "SANDBOX_PROFILES",
    "SETTING_KEYS",
    "Group",
    "Guests",
    "People",
    "Person",
    "Settings",
    "guest_id",
    "is_guest",
    "load_people",
]
