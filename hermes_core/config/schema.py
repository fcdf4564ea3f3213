"""The configuration schema: every key the core and the plugins declare, with its owner, and the
one validator that checks a configuration against it (types, unknown keys, defaults)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hermes_hookspecs import HermesError
from hermes_hookspecs.config_schema import ConfigKey, ConfigSection

from .hermes_agent import is_hermes_agent_key

CORE_OWNER = "hermes"
"""The owner shown for the keys the core itself declares."""

SUGGESTION_CUTOFF = 0.7
"""How alike an unknown key and a declared one must be (difflib ratio) to be suggested."""

_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "any": "anything",
}
_ITEM_WORDS = {
    "string": "strings",
    "integer": "integers",
    "number": "numbers",
    "boolean": "booleans",
    "array": "lists",
    "object": "mappings",
}


class SchemaError(HermesError):
    """A plugin declared a configuration key that is invalid or already declared."""


class Declared:
    """One declared key: its full dotted path, its declaration and the plugin that owns it."""

    __slots__ = ("path", "key", "owner", "section_doc")

    def __init__(self, path: str, key: ConfigKey, owner: str, section_doc: str = "") -> None:
        self.path = path
        self.key = key
        self.owner = owner
        self.section_doc = section_doc

    def __repr__(self) -> str:
        return f"Declared({self.path!r}, owner={self.owner!r})"


class ConfigSchema:
    """The merged declarations of the core and the loaded plugins."""

    def __init__(self, sections: Iterable[tuple[ConfigSection, str]] = ()) -> None:
        self.keys: dict[str, Declared] = {}
        """Every declared key by full dotted path."""
        self.sections: dict[str, str] = {}
        """Every section by dotted name, with the owner of its first declaration."""
        self.open: set[str] = set()
        """Sections whose undeclared keys are accepted without a warning."""
        self._prefixes: set[str] = set()
        for section, owner in sections:
            self.declare(section, owner)

    def copy(self) -> ConfigSchema:
        """An independent copy (the core's schema is extended by each registry)."""
        other = ConfigSchema()
        other.keys = dict(self.keys)
        other.sections = dict(self.sections)
        other.open = set(self.open)
        other._prefixes = set(self._prefixes)
        return other

    # --- declaring -------------------------------------------------------------------------

    def declare(self, section: ConfigSection, owner: str) -> None:
        """Add the keys of ``section`` for plugin ``owner``.

        Raises SchemaError naming both plugins for each key that is already declared (the other
        keys of the section are added all the same)."""
        if not isinstance(section, ConfigSection):
            raise SchemaError(f"expected a ConfigSection, got {type(section).__name__}")
        clashes = []
        if section.name:
            self.sections.setdefault(section.name, owner)
            self._add_prefixes(section.name)
        if section.open:
            self.open.add(section.name)
        for key in section.keys:
            path = section.path(key)
            other = self.keys.get(path)
            if other is not None and _may_share(other.key, key):
                other.owner = f"{other.owner}, {owner}"
                continue
            if other is not None:
                clashes.append(
                    f"config key {path!r} is declared by both {other.owner!r} and {owner!r}"
                )
                continue
            self.keys[path] = Declared(path, key, owner, section.doc)
            self._add_prefixes(path.rpartition(".")[0])
        if clashes:
            raise SchemaError("; ".join(clashes))

    def declare_for(self, record: Any, section: ConfigSection) -> None:
        """:meth:`declare` for the plugin of a plugin record (the registry's ``register``)."""
        self.declare(section, record.name)

    def _add_prefixes(self, dotted: str) -> None:
        while dotted:
            self._prefixes.add(dotted)
            dotted = dotted.rpartition(".")[0]

    # --- reading ---------------------------------------------------------------------------

    def get(self, dotted: str) -> Declared | None:
        """The declaration of the key at ``dotted``, or None."""
        return self.keys.get(dotted)

    def is_section(self, dotted: str) -> bool:
        """Whether ``dotted`` is a section: declared keys live under it."""
        return dotted in self._prefixes

    def covers(self, dotted: str) -> bool:
        """Whether ``dotted`` is a known place: a declared key, a section, under a key whose
        type takes anything (``object``, ``any``), or inside an open section."""
        if dotted in self.keys or dotted in self._prefixes:
            return True
        parts = dotted.split(".")
        for depth in range(len(parts) - 1, -1, -1):
            prefix = ".".join(parts[:depth])
            declared = self.keys.get(prefix) if prefix else None
            if declared is not None and _takes_anything(declared.key):
                return True
            if prefix in self.open:
                return True
        return False

    def is_secret(self, dotted: str) -> bool:
        """Whether the key at ``dotted`` is declared a secret."""
        declared = self.keys.get(dotted)
        return bool(declared and declared.key.secret)

    def defaults(self, owners: Iterable[str] | None = None) -> dict[str, Any]:
        """The declared defaults as nested mappings, of the given owners only when named."""
        import copy

        wanted = None if owners is None else set(owners)
        result: dict[str, Any] = {}
        for path, declared in self.keys.items():
            if not declared.key.has_default or (
                wanted is not None and declared.owner not in wanted
            ):
                continue
            node = result
            *parents, leaf = path.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = copy.deepcopy(declared.key.default)
        return result

    # --- checking --------------------------------------------------------------------------

    def problems(self, data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
        """Yield ``(dotted key, problem)`` for every declared key whose value is wrong, in the
        order the keys appear in ``data``; undeclared keys are not problems (see
        :meth:`unknown`)."""
        for raw_key, value in data.items():
            dotted = prefix + str(raw_key)
            declared = self.keys.get(dotted)
            if dotted == "model" and isinstance(value, str) and "model.default" in self.keys:
                problem = check(self.keys["model.default"].key, value)
                if problem:
                    yield dotted, problem
                continue
            if declared is not None:
                problem = check(declared.key, value)
                if problem:
                    yield dotted, problem
                elif isinstance(value, Mapping) and dotted in self._prefixes:
                    yield from self.problems(value, dotted + ".")
            elif dotted in self._prefixes:
                if value is None:
                    continue  # a section whose keys are all commented out
                if not isinstance(value, Mapping):
                    what = "a mapping or a string" if dotted == "model" else "a mapping"
                    yield dotted, f"expected {what}, got {describe(value)}"
                    continue
                yield from self.problems(value, dotted + ".")

    def unknown(self, data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
        """Yield ``(dotted key, warning)`` for every key of ``data`` no one declares: with the
        closest declared key when there is one, else saying that no installed plugin declares
        it (a whole undeclared section gets one line)."""
        for raw_key, value in data.items():
            dotted = prefix + str(raw_key)
            if is_hermes_agent_key(dotted) and not self.covers(dotted):
                continue  # written by the Hermes agent: accepted silently, listed by doctor
            if self.covers(dotted):
                if isinstance(value, Mapping) and dotted in self._prefixes:
                    declared = self.keys.get(dotted)
                    if declared is None or not _takes_anything(declared.key):
                        yield from self.unknown(value, dotted + ".")
                continue
            suggestion = self.closest(dotted)
            if suggestion:
                yield dotted, f"unknown config key {dotted!r} (did you mean {suggestion!r}?)"
            else:
                what = "section" if isinstance(value, Mapping) else "key"
                yield dotted, f"config {what} {dotted!r}: no installed plugin declares it (kept)"

    def closest(self, dotted: str) -> str | None:
        """The declared key or section most like ``dotted``, or None when none is alike."""
        import difflib  # only when a key is unknown

        parent, _, leaf = dotted.rpartition(".")
        siblings = self._children(parent)
        match = difflib.get_close_matches(leaf, siblings, n=1, cutoff=SUGGESTION_CUTOFF)
        if match:
            return f"{parent}.{match[0]}" if parent else match[0]
        # A misspelt section (`termnal.timeout`): the siblings were tried above, and a section
        # the key is in is no suggestion (`terminal.cwd` is not a misspelt `terminal`).
        everything = [
            known
            for known in list(self.keys) + list(self._prefixes)
            if known.rpartition(".")[0] != parent and not dotted.startswith(known + ".")
        ]
        match = difflib.get_close_matches(dotted, everything, n=1, cutoff=SUGGESTION_CUTOFF)
        return match[0] if match else None

    def _children(self, parent: str) -> list[str]:
        names = set()
        start = parent + "." if parent else ""
        for path in list(self.keys) + list(self._prefixes):
            if path.startswith(start) and path != parent:
                names.add(path[len(start) :].split(".", 1)[0])
        return sorted(names)


def _may_share(first: ConfigKey, second: ConfigKey) -> bool:
    """Whether two declarations of one key may stand together: both shared, and alike."""
    same = ("type", "default", "enum", "items", "minimum", "maximum", "exclusive_minimum")
    return (
        first.shared
        and second.shared
        and all(getattr(first, a) == getattr(second, a) for a in same)
    )


def _takes_anything(key: ConfigKey) -> bool:
    return "object" in key.type or "any" in key.type


def expected(key: ConfigKey) -> str:
    """What ``key`` accepts, in words (``an integer``, ``one of 'a', 'b'``, ``a string or
    null``)."""
    if key.enum:
        what = "one of " + ", ".join(repr(choice) for choice in key.enum)
    else:
        words = []
        for kind in key.type:
            if kind == "null":
                continue
            if kind == "array" and key.items in _ITEM_WORDS:
                words.append(f"a list of {_ITEM_WORDS[key.items]}")
            else:
                words.append(_WORDS[kind])
        what = " or ".join(words) if words else "null"
    if "null" in key.type and (key.enum or any(t != "null" for t in key.type)):
        what += " or null"
    return what


def is_kind(kind: str, value: Any) -> bool:
    """Whether ``value`` is of the JSON-schema type ``kind`` (``any`` takes everything)."""
    if kind == "any":
        return True
    if kind == "null":
        return value is None
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, (list, tuple))
    return isinstance(value, Mapping)  # object


def check(key: ConfigKey, value: Any) -> str | None:
    """What is wrong with ``value`` for ``key``, or None when it is fine."""
    what = expected(key)
    if value is None:
        return None if ("null" in key.type or "any" in key.type) else f"expected {what}, got null"
    kinds = [kind for kind in key.type if is_kind(kind, value)]
    if not kinds:
        return f"expected {what}, got {describe(value)}"
    if key.enum and value not in key.enum:
        return f"expected {what}, got {describe(value)}"
    if "array" in kinds and key.items:
        for item in value:
            if not is_kind(key.items, item):
                return f"expected {what}, got {describe(item)} in the list"
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if is_number and (key.minimum is not None or key.maximum is not None or value != value):
        low, high = key.minimum, key.maximum
        too_low = low is not None and (value <= low if key.exclusive_minimum else value < low)
        too_high = high is not None and value > high
        # `value != value` catches NaN, which compares false with every bound.
        if too_low or too_high or value != value:
            bounds = []
            if low is not None:
                bounds.append(f"{'>' if key.exclusive_minimum else '>='} {low:g}")
            if high is not None:
                bounds.append(f"<= {high:g}")
            return f"expected {what} {' and '.join(bounds)}, got {describe(value)}"
    return None


def from_text(key: ConfigKey, text: str) -> Any:
    """Convert an environment-variable or flag string to the key's type (as is on failure)."""
    kind = next((k for k in key.type if k != "null"), "string")
    if key.enum and kind == "string":
        return text
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            return text
    if kind == "number":
        try:
            return float(text.strip())
        except ValueError:
            return text
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        return text
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def describe(value: Any) -> str:
    """A short YAML-flavoured description of a value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def type_words(key: ConfigKey) -> str:
    """The type of ``key`` as listed by ``hermes config show --defaults``."""
    text = expected(key)
    parts = []
    if key.minimum is not None:
        parts.append(f"{'>' if key.exclusive_minimum else '>='} {key.minimum:g}")
    if key.maximum is not None:
        parts.append(f"<= {key.maximum:g}")
    return f"{text} {' and '.join(parts)}" if parts else text
