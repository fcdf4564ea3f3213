"""The people's configuration (``gateway.users``, ``groups``, ``guests``): one-line errors
naming the key, guests' ids, and the scope each person gets (precedence, toolsets as a
ceiling, approvals and the sandbox never inherited, memory off, shared sessions)."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_gateway.people import guest_id, load_people
from hermes_gateway.scope import hermes_person_scope, scopes_for
from hermes_gateway.settings import GatewaySettingsError, load_settings

from hermes_core.testing import load_plugin
from hermes_hookspecs import PERSON_ID_RE, PersonScope


@pytest.mark.parametrize(
    ("section", "names"),
    [
        ({"users": ["alice"]}, "gateway.users must be a mapping"),
        ({"users": {"Alice": {}}}, "gateway.users: 'Alice' is not a person id"),
        ({"users": {"../x": {}}}, "gateway.users: '../x' is not a person id"),
        ({"users": {"guest-x": {}}}, "starts with 'guest-'"),
        ({"users": {"a": {"toolset": ["file"]}}}, "gateway.users.a has no key 'toolset'"),
        ({"users": {"a": {"ids": "api:a"}}}, "gateway.users.a.ids must be a list"),
        ({"users": {"a": {"ids": ["alice"]}}}, "gateway.users.a.ids must be a list of PLATFORM"),
        (
            {"users": {"a": {"ids": ["api:x"]}, "b": {"ids": ["api:x"]}}},
            "gateway.users.b.ids: api:x is already a's",
        ),
        ({"users": {"a": {"groups": ["team"]}}}, "gateway.users.a.groups: no group 'team'"),
        ({"users": {"a": {"toolsets": "file"}}}, "gateway.users.a.toolsets must be a list"),
        ({"users": {"a": {"approvals": "always"}}}, "gateway.users.a.approvals must be one of"),
        ({"users": {"a": {"max_turns": 0}}}, "gateway.users.a.max_turns must be a whole number"),
        ({"users": {"a": {"memory": "no"}}}, "gateway.users.a.memory must be true or false"),
        ({"users": {"a": {"model": ""}}}, "gateway.users.a.model must be a non-empty string"),
        ({"users": {"a": {"sandbox": "open"}}}, "gateway.users.a.sandbox must be one of"),
        (
            {"users": {"a": {"sandbox": {"network": "yes"}}}},
            "gateway.users.a.sandbox.network must be true or false",
        ),
        ({"users": {"a": {"sandbox": {"net": True}}}}, "gateway.users.a.sandbox has no key 'net'"),
        ({"users": {"a": {"api_key_env": "A-KEY"}}}, "gateway.users.a.api_key_env must be"),
        ({"groups": {"t": {"share_sessions": 1}}}, "gateway.groups.t.share_sessions must be"),
        ({"groups": {"t": {"ids": []}}}, "gateway.groups.t has no key 'ids'"),
        ({"guests": {"allowed": "no"}}, "gateway.guests.allowed must be true or false"),
        ({"guests": ["x"]}, "gateway.guests must be a mapping"),
    ],
)
def test_a_bad_people_setting_is_one_line_naming_the_key(section: dict[str, Any], names: str):
    with pytest.raises(GatewaySettingsError, match=names.replace("(", r"\(")) as failed:
        load_settings({"gateway": section})
    assert "\n" not in str(failed.value)


def test_guest_ids_are_valid_stable_and_distinct():
    users = ["alice", "Alice", "a/b", "a_b", "x" * 300, "ÿ", "", "..", "-"]
    ids = [guest_id("hooks", user) for user in users]
    assert len(set(ids)) == len(ids)
    for made in ids:
        assert PERSON_ID_RE.match(made) and ".." not in made and made.startswith("guest-")
    assert guest_id("hooks", "alice") == guest_id("hooks", "alice")
    assert guest_id("hooks", "alice") != guest_id("api", "alice")
    guest_id.cache_clear()
    assert guest_id("hooks", "alice") == ids[0]  # the same on every run: a digest, no state


def test_platform_ids_of_gateway_users_need_no_allow_list_entry():
    people = load_people({"users": {"alice": {"ids": ["hooks:U1", "api:alice"]}}})
    nobody = lambda user: False  # noqa: E731 - the platform's allow-list
    assert people.admit("hooks", "U1", nobody) == "alice"
    assert people.admit("api", "alice", nobody) == "alice"
    assert people.admit("hooks", "U2", nobody) is None
    assert people.admit("hooks", "U2", lambda user: True) == guest_id("hooks", "U2")
    closed = load_people({"guests": {"allowed": False}})
    assert closed.admit("hooks", "U2", lambda user: True) is None


CONFIG: dict[str, Any] = {
    "approvals": {"mode": "yolo"},
    "terminal": {"sandbox": "off"},
    "disabled_tools": ["web_search"],
    "gateway": {
        "users": {
            "alice": {
                "groups": ["team", "ops"],
                "toolsets": ["file", "memory", "todo", "terminal"],
                "model": "alice-model",
            },
            "bob": {"groups": ["ops"], "approvals": "manual", "memory": False},
            "carol": {"groups": ["team"], "sandbox": {"profile": "off"}, "max_turns": 5},
            "dave": {"sandbox": {"network": True, "hide": ["/srv/b"]}},
        },
        "groups": {
            "team": {
                "share_sessions": True,
                "toolsets": ["file", "memory", "web"],
                "model": "team-model",
                "provider": "team-provider",
                "approvals": "yolo",
            },
            "ops": {"toolsets": ["file", "memory", "terminal"], "max_turns": 9},
        },
        "guests": {"toolsets": ["file"], "max_turns": 3},
    },
}


def _scope(person: str, config: dict[str, Any] | None = None) -> PersonScope:
    found = hermes_person_scope(person=person, config=config or CONFIG, home=None)
    assert isinstance(found, PersonScope)
    return found


def test_a_persons_own_setting_beats_their_groups_which_beat_the_configuration():
    alice = _scope("alice")
    # toolsets: the intersection of hers and both groups'
    assert alice.toolsets == ("file", "memory")
    assert alice.config_overrides["model.default"] == "alice-model"  # hers
    assert alice.config_overrides["model.provider"] == "team-provider"  # her first group's
    assert alice.config_overrides["agent.max_turns"] == 9  # the group that sets it
    assert alice.config_overrides["approvals.mode"] == "yolo"  # a group set it explicitly
    assert alice.shared_people == ("carol",)  # team shares; ops does not
    carol = _scope("carol")
    assert carol.config_overrides["agent.max_turns"] == 5
    assert carol.toolsets == ("file", "memory", "web")
    assert carol.shared_people == ("alice",)


def test_approvals_and_a_sandbox_turned_off_are_never_inherited_from_the_configuration():
    bob, dave = _scope("bob"), _scope("dave")
    assert bob.config_overrides["approvals.mode"] == "manual"  # his own
    assert dave.config_overrides["approvals.mode"] == "deny"  # the global yolo is not his
    guest = _scope(guest_id("hooks", "zed"))
    assert guest.config_overrides["approvals.mode"] == "deny"
    # the configuration's `sandbox: off` becomes workspace for people...
    assert guest.config_overrides["terminal.sandbox"] == {"profile": "workspace"}
    assert dave.config_overrides["terminal.sandbox"] == {
        "profile": "workspace",
        "network": True,
        "hide": ["/srv/b"],
    }
    # ...unless the owner turns it off for them (here: as configured, so nothing to override)
    assert "terminal.sandbox" not in _scope("carol").config_overrides
    on = {**CONFIG, "terminal": {}}
    assert _scope("carol", on).config_overrides["terminal.sandbox"] == {"profile": "off"}
    # a sandbox as configured needs no override
    plain = {**CONFIG, "terminal": {"sandbox": {"profile": "workspace", "hide": ["/srv/a"]}}}
    assert "terminal.sandbox" not in _scope("bob", plain).config_overrides
    assert _scope("dave", plain).config_overrides["terminal.sandbox"]["hide"] == [
        "/srv/a",
        "/srv/b",
    ]


def test_memory_off_takes_the_memory_tool_and_prompt_away():
    bob = _scope("bob").config_overrides
    assert bob["memory.memory_enabled"] is False and bob["memory.user_profile_enabled"] is False
    assert bob["disabled_tools"] == ["web_search", "memory"]
    assert "disabled_tools" not in _scope("alice").config_overrides


def test_guests_and_people_no_longer_configured_get_the_guests_settings():
    for person in (guest_id("api", "x"), "someone-removed"):
        scope = _scope(person)
        assert scope.toolsets == ("file",) and scope.shared_people == ()
        assert scope.config_overrides["agent.max_turns"] == 3


def test_people_are_parsed_once_per_configuration_object():
    config = {"gateway": {"users": {"alice": {"toolsets": ["file"]}}}}
    first = scopes_for(config)
    assert scopes_for(config) is first
    assert _scope("alice", config) is _scope("alice", config)
    assert scopes_for(dict(config)) is not first


def test_a_bad_people_section_fails_the_run_rather_than_running_unlimited():
    with pytest.raises(GatewaySettingsError, match="gateway.users.a.toolsets"):
        hermes_person_scope(
            person="a", config={"gateway": {"users": {"a": {"toolsets": 1}}}}, home=None
        )


def test_the_plugin_implements_the_people_hooks_through_its_entry_point():
    record = load_plugin("gateway")
    assert {"hermes_person_scope", "hermes_pre_tool_call"} <= set(record.hooks)


def test_every_run_of_a_person_works_in_their_own_workspace(tmp_path):
    from hermes_gateway.records import remember_ids
    from hermes_gateway.workspaces import workspace_name

    config = {"gateway": {"users": {"alice": {"ids": ["hooks:U1"]}}}}
    alice = hermes_person_scope(person="alice", config=config, home=tmp_path)
    assert alice.config_overrides["terminal.cwd"] == str(tmp_path / "workspaces/people/alice")
    guest = guest_id("hooks", "dave")
    folder = tmp_path / "workspaces" / workspace_name("hooks", "dave")
    remember_ids(tmp_path, guest, "hooks:dave", str(folder))
    dave = hermes_person_scope(person=guest, config=config, home=tmp_path)
    assert dave.config_overrides["terminal.cwd"] == str(folder) and folder.is_dir()
    unknown = hermes_person_scope(person=guest_id("hooks", "eve"), config=config, home=tmp_path)
    cwd = unknown.config_overrides["terminal.cwd"]  # a scheduled job no message placed
    assert cwd.startswith(str(tmp_path / "workspaces/people/guest-")), cwd
    shared = {"gateway": {"workspaces": "shared"}}
    assert (
        "terminal.cwd"
        not in hermes_person_scope(person="x", config=shared, home=tmp_path).config_overrides
    )
    assert (
        "terminal.cwd"
        not in hermes_person_scope(person="x", config=config, home=None).config_overrides
    )
