"""A small JSON-schema validator for tool arguments, with no dependencies.

It covers the keywords tool schemas use in practice and reports problems as short lines a model
can act on, such as ``$.city: expected string, got integer``. Annotations (``default``,
``description``, ``title``, ``format``, ``examples``) and unknown keywords are ignored.
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

__all__ = ["MAX_PROBLEMS", "check"]

MAX_PROBLEMS = 10
""":func:`check` stops collecting after this many problems."""

_MAX_REF_DEPTH = 64  # $ref hops without descending into the instance: a cycle in the schema
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TYPE_NAMES = ("null", "boolean", "integer", "number", "string", "array", "object")


def check(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Return the problems of ``instance`` against ``schema``; ``[]`` when it conforms.

    Each problem starts with a path to the offending value (``$`` is the instance itself,
    ``$.a.b[0]`` a nested one). At most :data:`MAX_PROBLEMS` are returned.
    """
    checker = _Checker(schema)
    checker.visit(instance, schema, "$", 0)
    return checker.problems[:MAX_PROBLEMS]


def _type_of(value: Any) -> str:
    """The JSON type name of a Python value, as used in messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    """Whether ``value`` is of JSON type ``name`` (``3.0`` is an integer, ``True`` is not)."""
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, (list, tuple))
    if name == "null":
        return value is None
    return False


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0`` but ``1 != True``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple, dict)) or isinstance(b, (list, tuple, dict)):
        return False
    return bool(a == b)


def _show(value: Any, limit: int = 60) -> str:
    """A short rendering of a value for a problem line: strings quoted, JSON literals as JSON."""
    text = _render(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render(value: Any) -> str:
    """``value`` written out in full, JSON literals spelled as in JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_render(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_render(item)}" for key, item in value.items()) + "}"
    return repr(value)


def _child(path: str, key: str) -> str:
    """The path of property ``key`` of the value at ``path``."""
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{key!r}]"


def _plural(count: int, word: str) -> str:
    """``count`` followed by ``word``, in the plural unless ``count`` is 1."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class _Checker:
    """Walks an instance and a schema together, collecting problems."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.problems: list[str] = []
        self._patterns: dict[str, re.Pattern[str] | None] = {}

    def full(self) -> bool:
        """Whether enough problems were collected to stop."""
        return len(self.problems) >= MAX_PROBLEMS

    def add(self, path: str, message: str) -> None:
        """Record one problem at ``path``."""
        if not self.full():
            self.problems.append(f"{path}: {message}")

    def probe(self, instance: Any, schema: Any, path: str, depth: int) -> list[str]:
        """The problems of ``instance`` against a subschema, without recording them."""
        saved, self.problems = self.problems, []
        try:
            self.visit(instance, schema, path, depth)
            return self.problems
        finally:
            self.problems = saved

    def visit(self, instance: Any, schema: Any, path: str, depth: int) -> None:
        """Check ``instance`` (found at ``path``) against ``schema``."""
        if self.full():
            return
        if schema is True or schema is None:
            return
        if schema is False:
            self.add(path, "no value is allowed here")
            return
        if not isinstance(schema, dict):
            return

        if "$ref" in schema and not self._follow_ref(instance, schema["$ref"], path, depth):
            return
        if "type" in schema and not self._check_type(instance, schema["type"], path):
            return  # the other keywords would only repeat the same complaint
        self._check_values(instance, schema, path)
        self._check_kind(instance, schema, path)
        self._check_combinators(instance, schema, path, depth)

    def _follow_ref(self, instance: Any, ref: Any, path: str, depth: int) -> bool:
        """Check ``instance`` against the subschema ``ref`` names; ``False`` when the chain of
        references is too deep to go on."""
        if depth >= _MAX_REF_DEPTH:
            self.add(path, "schema $ref chain is too deep (a cycle?)")
            return False
        target = self._resolve(ref)
        if target is None:
            self.add(path, f"cannot resolve $ref {_show(ref)}")
        else:
            self.visit(instance, target, path, depth + 1)
        return True

    def _check_values(self, instance: Any, schema: dict[str, Any], path: str) -> None:
        """``enum`` and ``const``."""
        if "enum" in schema:
            options = schema["enum"]
            if isinstance(options, list) and not any(_json_equal(instance, o) for o in options):
                self.add(path, f"{_show(instance)} is not one of {_show(options, 120)}")
        if "const" in schema and not _json_equal(instance, schema["const"]):
            self.add(path, f"expected {_show(schema['const'])}, got {_show(instance)}")

    def _check_kind(self, instance: Any, schema: dict[str, Any], path: str) -> None:
        """The keywords of the instance's own kind: string, number, object or array."""
        if isinstance(instance, str):
            self._check_string(instance, schema, path)
        elif isinstance(instance, (int, float)) and not isinstance(instance, bool):
            self._check_number(instance, schema, path)
        elif isinstance(instance, dict):
            self._check_object(instance, schema, path)
        elif isinstance(instance, (list, tuple)):
            self._check_array(instance, schema, path)

    def _resolve(self, ref: Any) -> Any:
        """The subschema a local ``#/...`` reference points to, or ``None``."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node = self.root
        pointer = ref[1:]
        if not pointer:
            return node
        if not pointer.startswith("/"):
            return None
        for raw in pointer[1:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def _check_type(self, instance: Any, expected: Any, path: str) -> bool:
        names = expected if isinstance(expected, list) else [expected]
        if any(_is_type(instance, name) for name in names):
            return True
        wanted = " or ".join(str(name) for name in names)
        self.add(path, f"expected {wanted}, got {_type_of(instance)}")
        return False

    def _check_string(self, instance: str, schema: dict[str, Any], path: str) -> None:
        length = len(instance)
        minimum = schema.get("minLength")
        if isinstance(minimum, int) and length < minimum:
            self.add(path, f"expected at least {_plural(minimum, 'character')}, got {length}")
        maximum = schema.get("maxLength")
        if isinstance(maximum, int) and length > maximum:
            self.add(path, f"expected at most {_plural(maximum, 'character')}, got {length}")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            compiled = self._compile(pattern)
            if compiled is None:
                self.add(path, f"schema pattern {_show(pattern)} is not a valid regular expression")
            elif compiled.search(instance) is None:
                self.add(path, f"{_show(instance)} does not match pattern {_show(pattern)}")

    def _compile(self, pattern: str) -> re.Pattern[str] | None:
        if pattern not in self._patterns:
            try:
                self._patterns[pattern] = re.compile(pattern)
            except re.error:
                self._patterns[pattern] = None
        return self._patterns[pattern]

    def _check_number(self, instance: float, schema: dict[str, Any], path: str) -> None:
        minimum = schema.get("minimum")
        maximum = schema.get("maximum")
        low = schema.get("exclusiveMinimum")
        high = schema.get("exclusiveMaximum")
        # Draft 4 spelled exclusivity as a boolean next to minimum/maximum.
        if low is True:
            low, minimum = minimum, None
        if high is True:
            high, maximum = maximum, None
        if _is_number(minimum) and instance < minimum:
            self.add(path, f"{_show(instance)} is less than the minimum {_show(minimum)}")
        if _is_number(maximum) and instance > maximum:
            self.add(path, f"{_show(instance)} is greater than the maximum {_show(maximum)}")
        if _is_number(low) and instance <= low:
            self.add(path, f"{_show(instance)} is not greater than {_show(low)}")
        if _is_number(high) and instance >= high:
            self.add(path, f"{_show(instance)} is not less than {_show(high)}")

    def _check_object(self, instance: dict[str, Any], schema: dict[str, Any], path: str) -> None:
        required = schema.get("required")
        if isinstance(required, list):
            for name in required:
                if isinstance(name, str) and name not in instance:
                    self.add(path, f"missing required property {name!r}")
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            properties = {}
        patterns = schema.get("patternProperties")
        if not isinstance(patterns, dict):
            patterns = {}
        additional = schema.get("additionalProperties", True)
        for key, value in instance.items():
            if self.full():
                return
            child = _child(path, str(key))
            matched = key in properties
            if matched:
                self.visit(value, properties[key], child, 0)
            for pattern, subschema in patterns.items():
                compiled = self._compile(pattern) if isinstance(pattern, str) else None
                if compiled is not None and compiled.search(str(key)):
                    matched = True
                    self.visit(value, subschema, child, 0)
            if matched:
                continue
            if additional is False:
                self.add(path, f"unexpected property {_show(key)}")
            elif isinstance(additional, dict):
                self.visit(value, additional, child, 0)

    def _check_array(
        self, instance: list[Any] | tuple[Any, ...], schema: dict[str, Any], path: str
    ) -> None:
        count = len(instance)
        minimum = schema.get("minItems")
        if isinstance(minimum, int) and count < minimum:
            self.add(path, f"expected at least {_plural(minimum, 'item')}, got {count}")
        maximum = schema.get("maxItems")
        if isinstance(maximum, int) and count > maximum:
            self.add(path, f"expected at most {_plural(maximum, 'item')}, got {count}")
        items = schema.get("items")
        positional = schema.get("prefixItems")
        if isinstance(items, list):  # the draft 4-7 spelling of prefixItems
            positional, items = items, None
        start = 0
        if isinstance(positional, list):
            for index, (value, item_schema) in enumerate(zip(instance, positional, strict=False)):
                self.visit(value, item_schema, f"{path}[{index}]", 0)
            start = len(positional)
        if isinstance(items, (dict, bool)):
            for index in range(start, count):
                if self.full():
                    return
                self.visit(instance[index], items, f"{path}[{index}]", 0)

    def _check_combinators(
        self, instance: Any, schema: dict[str, Any], path: str, depth: int
    ) -> None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for subschema in all_of:
                self.visit(instance, subschema, path, depth)
        any_of = schema.get("anyOf")
        if isinstance(any_of, list) and any_of:
            failures = [self.probe(instance, sub, path, depth) for sub in any_of]
            if all(failures):
                self.add(path, _no_match(failures, "anyOf", path))
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            failures = [self.probe(instance, sub, path, depth) for sub in one_of]
            matches = sum(1 for problems in failures if not problems)
            if matches == 0:
                self.add(path, _no_match(failures, "oneOf", path))
            elif matches > 1:
                self.add(path, f"matches {matches} of the oneOf schemas, expected exactly one")


def _is_number(value: Any) -> TypeGuard[float]:
    """Whether a schema bound is usable as a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _no_match(failures: list[list[str]], keyword: str, path: str) -> str:
    """One line for an instance that matches none of the alternatives, citing the closest one."""
    hint = min(failures, key=len)[0]
    prefix = f"{path}: "
    if hint.startswith(prefix):
        hint = hint[len(prefix) :]
    return f"does not match any of the {len(failures)} {keyword} alternatives (closest: {hint})"
