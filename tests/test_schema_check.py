"""Tests of the dependency-free JSON-schema checker used for tool arguments."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hermes_core.tools.schema_check import MAX_PROBLEMS, check

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_problems() -> None:
    assert check({"city": "Oslo"}, WEATHER) == []
    assert check({"city": "Oslo", "unit": "f", "days": 3}, WEATHER) == []


def test_messages_from_the_contract() -> None:
    assert check({"city": 3}, WEATHER) == ["$.city: expected string, got integer"]
    assert check({}, WEATHER) == ["$: missing required property 'city'"]
    assert check({"city": "Oslo", "unit": "kelvin"}, WEATHER) == [
        "$.unit: 'kelvin' is not one of ['c', 'f']"
    ]


def test_several_problems_are_all_reported() -> None:
    problems = check({"unit": "k", "days": 0, "extra": True}, WEATHER)
    assert problems == [
        "$: missing required property 'city'",
        "$.unit: 'k' is not one of ['c', 'f']",
        "$.days: 0 is less than the minimum 1",
        "$: unexpected property 'extra'",
    ]


# --- type -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "good", "bad"),
    [
        ("string", ["", "x"], [1, None, ["x"], b"x"]),
        ("integer", [0, -3, 3.0, 10**30], [True, False, 3.5, "3", None]),
        ("number", [0, 1.5, -2, 3.0], [True, "1", None, [1]]),
        ("boolean", [True, False], [0, 1, "true", None]),
        ("object", [{}, {"a": 1}], [[], "x", None]),
        ("array", [[], [1, "a"], (1, 2)], [{}, "abc", None]),
        ("null", [None], [0, "", False, []]),
    ],
)
def test_types(type_name: str, good: list[Any], bad: list[Any]) -> None:
    for value in good:
        assert check(value, {"type": type_name}) == [], value
    for value in bad:
        problems = check(value, {"type": type_name})
        assert problems and problems[0].startswith(f"$: expected {type_name}, got "), value


def test_type_names_in_messages() -> None:
    assert check(True, {"type": "integer"}) == ["$: expected integer, got boolean"]
    assert check(3.5, {"type": "integer"}) == ["$: expected integer, got number"]
    assert check(None, {"type": "string"}) == ["$: expected string, got null"]
    assert check([1], {"type": "object"}) == ["$: expected object, got array"]
    assert check({}, {"type": "array"}) == ["$: expected array, got object"]


def test_type_lists_and_nullable_style() -> None:
    schema = {"type": ["string", "null"]}
    assert check("x", schema) == []
    assert check(None, schema) == []
    assert check(1, schema) == ["$: expected string or null, got integer"]
    assert check(1.5, {"type": ["integer", "boolean"]}) == [
        "$: expected integer or boolean, got number"
    ]


def test_type_mismatch_is_not_repeated_by_other_keywords() -> None:
    assert check(5, {"type": "string", "minLength": 2, "enum": ["aa"]}) == [
        "$: expected string, got integer"
    ]


# --- objects ----------------------------------------------------------------------------------


def test_nested_properties_and_paths() -> None:
    schema = {
        "type": "object",
        "properties": {
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "a b": {"type": "string"}},
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    instance = {"where": {"lat": "north", "a b": 1}, "tags": ["x", 2]}
    assert check(instance, schema) == [
        "$.where.lat: expected number, got string",
        "$.where['a b']: expected string, got integer",
        "$.tags[1]: expected string, got integer",
    ]


def test_properties_only_apply_to_objects() -> None:
    assert check("text", {"properties": {"a": {"type": "string"}}, "required": ["a"]}) == []


def test_required() -> None:
    schema = {"type": "object", "required": ["a", "b"]}
    assert check({"a": 1, "b": None}, schema) == []
    assert check({"b": 1}, schema) == ["$: missing required property 'a'"]
    assert check({}, schema) == [
        "$: missing required property 'a'",
        "$: missing required property 'b'",
    ]


def test_additional_properties() -> None:
    closed = {"properties": {"a": {}}, "additionalProperties": False}
    assert check({"a": 1}, closed) == []
    assert check({"a": 1, "b": 2}, closed) == ["$: unexpected property 'b'"]
    typed = {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    assert check({"a": "x", "b": 2}, typed) == []
    assert check({"b": "two"}, typed) == ["$.b: expected integer, got string"]
    assert check({"z": 1}, {"properties": {"a": {}}, "additionalProperties": True}) == []
    assert check({"z": 1}, {"properties": {"a": {}}}) == []


def test_pattern_properties_count_as_declared() -> None:
    schema = {
        "patternProperties": {"^x_": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert check({"x_a": 1}, schema) == []
    assert check({"x_a": "1"}, schema) == ["$.x_a: expected integer, got string"]
    assert check({"y": 1}, schema) == ["$: unexpected property 'y'"]


# --- enum and const ---------------------------------------------------------------------------


def test_enum() -> None:
    schema = {"enum": ["a", 1, None, [1, 2], {"k": True}]}
    for value in ["a", 1, 1.0, None, [1, 2], {"k": True}]:
        assert check(value, schema) == [], value
    assert check(True, {"enum": [1]}) == ["$: true is not one of [1]"]
    assert check(1, {"enum": [True]}) == ["$: 1 is not one of [true]"]
    assert check("b", {"enum": ["a"]}) == ["$: 'b' is not one of ['a']"]
    assert check({"k": 1}, schema) == [
        "$: {'k': 1} is not one of ['a', 1, null, [1, 2], {'k': true}]"
    ]


def test_const() -> None:
    assert check("on", {"const": "on"}) == []
    assert check(2.0, {"const": 2}) == []
    assert check("off", {"const": "on"}) == ["$: expected 'on', got 'off'"]
    assert check(0, {"const": False}) == ["$: expected false, got 0"]


# --- arrays -----------------------------------------------------------------------------------


def test_items() -> None:
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0}}
    assert check([0, 1, 2], schema) == []
    assert check([1, -1, "x"], schema) == [
        "$[1]: -1 is less than the minimum 0",
        "$[2]: expected integer, got string",
    ]


def test_positional_items() -> None:
    prefix = {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}
    assert check(["a", 1], prefix) == []
    assert check(["a", "b"], prefix) == ["$[1]: expected integer, got string"]
    assert check(["a", 1, 2], prefix) == ["$[2]: no value is allowed here"]
    old_style = {"items": [{"type": "string"}, {"type": "integer"}]}
    assert check(["a", 1, "anything"], old_style) == []
    assert check([1], old_style) == ["$[0]: expected string, got integer"]


def test_min_and_max_items() -> None:
    schema = {"type": "array", "minItems": 1, "maxItems": 2}
    assert check([1], schema) == []
    assert check([1, 2], schema) == []
    assert check([], schema) == ["$: expected at least 1 item, got 0"]
    assert check([1, 2, 3], schema) == ["$: expected at most 2 items, got 3"]


# --- strings ----------------------------------------------------------------------------------


def test_min_and_max_length() -> None:
    schema = {"type": "string", "minLength": 2, "maxLength": 3}
    assert check("ab", schema) == []
    assert check("abc", schema) == []
    assert check("a", schema) == ["$: expected at least 2 characters, got 1"]
    assert check("abcd", schema) == ["$: expected at most 3 characters, got 4"]
    assert check("", {"minLength": 1}) == ["$: expected at least 1 character, got 0"]


def test_pattern_uses_search() -> None:
    assert check("abc", {"pattern": "b"}) == []
    assert check("2024-01-02", {"pattern": r"^\d{4}-\d{2}-\d{2}$"}) == []
    assert check("abc", {"pattern": "^[0-9]+$"}) == ["$: 'abc' does not match pattern '^[0-9]+$'"]
    assert check(5, {"pattern": "^x"}) == []  # only applies to strings


def test_invalid_pattern_is_reported_not_raised() -> None:
    problems = check("x", {"pattern": "("})
    assert problems == ["$: schema pattern '(' is not a valid regular expression"]


# --- numbers ----------------------------------------------------------------------------------


def test_minimum_and_maximum() -> None:
    schema = {"type": "number", "minimum": 1, "maximum": 5}
    assert check(1, schema) == []
    assert check(5.0, schema) == []
    assert check(0.5, schema) == ["$: 0.5 is less than the minimum 1"]
    assert check(6, schema) == ["$: 6 is greater than the maximum 5"]


def test_exclusive_bounds() -> None:
    schema = {"exclusiveMinimum": 0, "exclusiveMaximum": 10}
    assert check(5, schema) == []
    assert check(0, schema) == ["$: 0 is not greater than 0"]
    assert check(10, schema) == ["$: 10 is not less than 10"]
    draft4 = {"minimum": 0, "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": True}
    assert check(0.5, draft4) == []
    assert check(0, draft4) == ["$: 0 is not greater than 0"]
    assert check(1, draft4) == ["$: 1 is not less than 1"]
    assert check(0, {"minimum": 0, "exclusiveMinimum": False}) == []


def test_bounds_ignore_booleans_and_other_types() -> None:
    assert check(True, {"minimum": 5}) == []
    assert check("1", {"maximum": 0}) == []


# --- combinators ------------------------------------------------------------------------------


def test_any_of() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}
    assert check("x", schema) == []
    assert check(3, schema) == []
    assert check(-1, schema) == [
        "$: does not match any of the 2 anyOf alternatives (closest: expected string, got integer)"
    ]


def test_any_of_cites_the_closest_alternative_with_its_path() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "array"},
        ]
    }
    assert check({"a": 1}, schema) == [
        "$: does not match any of the 2 anyOf alternatives (closest: $.a: expected string, "
        "got integer)"
    ]


def test_one_of() -> None:
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 10}]}
    assert check(20, schema) == []
    assert check(2.5, schema) == []
    assert check(5, schema) == ["$: matches 2 of the oneOf schemas, expected exactly one"]
    assert check("x", schema) == [
        "$: does not match any of the 2 oneOf alternatives (closest: expected integer, got string)"
    ]


def test_all_of() -> None:
    schema = {"allOf": [{"type": "string"}, {"minLength": 3}, {"pattern": "^a"}]}
    assert check("abc", schema) == []
    assert check("b", schema) == [
        "$: expected at least 3 characters, got 1",
        "$: 'b' does not match pattern '^a'",
    ]


def test_combinator_probes_do_not_leak_problems() -> None:
    schema = {"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    assert check({"x": None}, schema) == []


# --- $ref -------------------------------------------------------------------------------------


def test_ref_to_defs_and_definitions() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/name"}, "b": {"$ref": "#/definitions/count"}},
        "$defs": {"name": {"type": "string"}},
        "definitions": {"count": {"type": "integer"}},
    }
    assert check({"a": "x", "b": 1}, schema) == []
    assert check({"a": 1, "b": "x"}, schema) == [
        "$.a: expected string, got integer",
        "$.b: expected integer, got string",
    ]


def test_recursive_ref() -> None:
    schema = {
        "$ref": "#/$defs/node",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["value"],
            }
        },
    }
    tree = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert check(tree, schema) == []
    tree["children"][0]["children"][0] = {"value": "three"}  # type: ignore[index]
    assert check(tree, schema) == ["$.children[0].children[0].value: expected integer, got string"]


def test_ref_with_escaped_pointer_and_root() -> None:
    schema = {"$defs": {"a/b": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a~1b"}}}
    assert check({"x": 1}, schema) == ["$.x: expected string, got integer"]
    recursive = {"type": "array", "items": {"$ref": "#"}}
    assert check([[], [[]]], recursive) == []
    assert check([[1]], recursive) == ["$[0][0]: expected array, got integer"]


def test_ref_into_a_list() -> None:
    schema = {
        "$defs": {"kinds": [{"type": "string"}]},
        "properties": {"x": {"$ref": "#/$defs/kinds/0"}},
    }
    assert check({"x": 1}, schema) == ["$.x: expected string, got integer"]


def test_unresolvable_and_cyclic_refs_are_reported() -> None:
    assert check(1, {"$ref": "#/$defs/missing"}) == ["$: cannot resolve $ref '#/$defs/missing'"]
    assert check(1, {"$ref": "#anchor"}) == ["$: cannot resolve $ref '#anchor'"]
    assert check(1, {"$ref": "#/anyOf/5", "anyOf": []}) == ["$: cannot resolve $ref '#/anyOf/5'"]
    assert check(1, {"$ref": "https://example.com/schema"}) == [
        "$: cannot resolve $ref 'https://example.com/schema'"
    ]
    cyclic = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    problems = check(1, cyclic)
    assert len(problems) == 1 and "too deep" in problems[0]


# --- everything else --------------------------------------------------------------------------


def test_boolean_schemas() -> None:
    assert check(1, True) == []  # type: ignore[arg-type]
    assert check({"a": 1}, {"properties": {"a": False}}) == ["$.a: no value is allowed here"]
    assert check({"a": 1}, {"properties": {"a": True}}) == []


def test_annotations_and_unknown_keywords_are_ignored() -> None:
    schema = {
        "type": "string",
        "title": "T",
        "description": "D",
        "default": 5,
        "format": "email",
        "examples": ["x"],
        "x-vendor": {"anything": True},
        "uniqueItems": "??",
    }
    assert check("not an email", schema) == []
    assert check("x", {}) == []


def test_unknown_type_names_never_match() -> None:
    assert check(1, {"type": "int"}) == ["$: expected int, got integer"]


def test_non_dict_schemas_are_no_constraint() -> None:
    assert check(1, {"properties": {"a": None, "b": "junk"}}) == []
    assert check({"a": 1, "b": 2}, {"properties": {"a": None, "b": "junk"}}) == []


def test_stops_after_max_problems() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    problems = check(list(range(50)), schema)
    assert len(problems) == MAX_PROBLEMS == 10
    assert problems[-1] == "$[9]: expected string, got integer"
    many_required = {"required": [f"p{i}" for i in range(30)]}
    assert len(check({}, many_required)) == MAX_PROBLEMS
    wide = {"additionalProperties": {"type": "string"}}
    assert len(check({f"k{i}": i for i in range(30)}, wide)) == MAX_PROBLEMS


def test_long_values_are_shortened() -> None:
    problem = check("x" * 500, {"enum": ["a"]})[0]
    assert len(problem) < 200
    assert "..." in problem


def test_inputs_are_not_modified() -> None:
    schema = copy.deepcopy(WEATHER)
    instance = {"city": 1, "unit": "k"}
    before = copy.deepcopy(instance)
    check(instance, schema)
    assert schema == WEATHER
    assert instance == before
