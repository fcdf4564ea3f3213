"""What a plugin declares about its configuration: the keys it reads, their types, defaults and
one-line docs (registered through ``hermes_register_config``).

The host merges every plugin's declarations with its own, refuses a key two plugins declare,
merges the declared defaults under ``config.yaml``, and checks the effective configuration
against all of them with one validator: a wrong type is an error naming the key, the value and
the type expected; a key nobody declares is a warning with the closest known key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CONFIG_TYPES: tuple[str, ...] = (
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "object",
    "null",
    "any",
)
"""The values :attr:`ConfigKey.type` may take (JSON-schema names, plus ``any``)."""


class _NoDefault:
    """The type of :data:`NO_DEFAULT`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __bool__(self) -> bool:
        return False


NO_DEFAULT: Any = _NoDefault()
"""The default of a key that has none: the key is absent from the configuration unless set."""


class ConfigKey:
    """One configuration key a plugin reads.

    :param name: the key's name inside its section (``"timeout"``); it may be dotted for a
        nested key (``"tools.include"``).
    :param type: a type of :data:`CONFIG_TYPES` or a tuple of them (``("string", "null")``).
        ``integer`` never accepts a boolean; ``number`` accepts integers; ``object`` and ``any``
        accept whatever is under them, unchecked.
    :param default: the value when the user sets none; :data:`NO_DEFAULT` (the default) leaves
        the key absent, for a plugin that works out its own fallback.
    :param doc: one line saying what the key does (``hermes config show --defaults`` lists it).
    :param secret: the value is a secret: masked by ``hermes config show`` and ``get``, stored in
        ``.env`` by ``hermes config set``, redacted from tool results.
    :param enum: the only values allowed, when not empty.
    :param items: the type of every item of an ``array`` (e.g. ``"string"``).
    :param minimum: the least number allowed (inclusive unless ``exclusive_minimum``).
    :param maximum: the greatest number allowed (inclusive).
    :param exclusive_minimum: the value must be greater than ``minimum``, not equal to it.
    :param shared: several plugins read this key (``terminal.container_memory`` for the docker
        and modal backends): each may declare it, provided their declarations agree on the
        type, default and bounds. A key not shared by every declaring plugin is refused.
    """

    # A plain class: it is built while `hermes --help` starts, where dataclasses cost time.
    __slots__ = (
        "name",
        "type",
        "default",
        "doc",
        "secret",
        "enum",
        "items",
        "minimum",
        "maximum",
        "exclusive_minimum",
        "shared",
    )

    def __init__(
        self,
        name: str,
        type: str | Sequence[str] = "any",  # noqa: A002 - the JSON-schema word
        default: Any = NO_DEFAULT,
        doc: str = "",
        *,
        secret: bool = False,
        enum: Sequence[Any] = (),
        items: str | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
        shared: bool = False,
    ) -> None:
        types = (type,) if isinstance(type, str) else tuple(type)
        if not name or any(not part for part in str(name).split(".")):
            raise ValueError(f"config key name {name!r}: expected names separated by dots")
        unknown = [t for t in types if t not in CONFIG_TYPES]
        if unknown or not types:
            raise ValueError(
                f"config key {name!r}: unknown type {unknown[0] if unknown else '(none)'!r}"
                f" (one of {', '.join(CONFIG_TYPES)})"
            )
        if items is not None and items not in CONFIG_TYPES:
            raise ValueError(f"config key {name!r}: unknown item type {items!r}")
        self.name = str(name)
        self.type: tuple[str, ...] = types
        self.default = default
        self.doc = doc
        self.secret = secret
        self.enum: tuple[Any, ...] = tuple(enum)
        self.items = items
        self.minimum = minimum
        self.maximum = maximum
        self.exclusive_minimum = exclusive_minimum
        self.shared = shared

    @property
    def has_default(self) -> bool:
        """Whether the key has a default value (not :data:`NO_DEFAULT`)."""
        return self.default is not NO_DEFAULT

    def __repr__(self) -> str:
        return f"ConfigKey({self.name!r}, type={self.type!r}, default={self.default!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigKey):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __hash__(self) -> int:
        return hash((self.name, self.type))


class ConfigSection:
    """The keys a plugin declares under one section of ``config.yaml``.

    :param name: the section (``"terminal"``), a dotted path for a deeper one
        (``"gateway.platforms"``), or ``""`` for keys at the top level.
    :param keys: the :class:`ConfigKey` declarations; each full key (``terminal.timeout``) may
        be declared by one plugin only. Several plugins may declare keys in the same section.
    :param doc: one line about the section.
    :param open: keys not declared in this section are accepted without a warning (a section
        whose entries the user names, or that passes settings through to another program).
    """

    __slots__ = ("name", "keys", "doc", "open")

    def __init__(
        self,
        name: str,
        keys: Sequence[ConfigKey] = (),
        doc: str = "",
        *,
        open: bool = False,  # noqa: A002 - the natural word
    ) -> None:
        if name and any(not part for part in name.split(".")):
            raise ValueError(f"config section name {name!r}: expected names separated by dots")
        self.name = name
        self.keys: tuple[ConfigKey, ...] = tuple(keys)
        for key in self.keys:
            if not isinstance(key, ConfigKey):
                raise TypeError(
                    f"config section {name!r}: expected ConfigKey items, got {type(key).__name__}"
                )
        self.doc = doc
        self.open = open

    def path(self, key: ConfigKey) -> str:
        """The full dotted path of one of this section's keys (``terminal.timeout``)."""
        return f"{self.name}.{key.name}" if self.name else key.name

    def __repr__(self) -> str:
        return f"ConfigSection({self.name!r}, keys={[k.name for k in self.keys]!r})"


__all__ = ["CONFIG_TYPES", "NO_DEFAULT", "ConfigKey", "ConfigSection"]
