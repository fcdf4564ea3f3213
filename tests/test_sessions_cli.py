"""Sessions persisted by the CLI: resume, continue, and the ``hermes sessions`` commands."""

from __future__ import annotations

import json

from hermes_core.testing import ScriptedModel, text, tool_call


def chat(hermes_cli, *args, model):
    return hermes_cli("--plugins", "", "chat", "--provider", "scripted", *args, model=model)


def test_a_one_shot_chat_is_stored_and_can_be_continued(hermes_cli, hermes_home):
    model = ScriptedModel(text("Paris is the capital."), text("About 2.1 million people."))
    first = chat(hermes_cli, "-q", "Capital of France?", "--json", model=model)
    assert first.exit_code == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    assert (hermes_home / "sessions.db").exists()

    second = chat(hermes_cli, "-q", "And its population?", "--continue", "--json", model=model)
    assert second.exit_code == 0, second.stderr
    result = json.loads(second.stdout)
    assert result["session_id"] == session_id
    contents = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
    assert contents == ["Capital of France?", "And its population?"]
    # the stored system prompt is replayed byte for byte
    assert model.requests[0].system_prompt == model.requests[1].system_prompt


def test_resume_by_id_and_unknown_ids(hermes_cli):
    model = ScriptedModel(text("one"), text("two"))
    first = json.loads(chat(hermes_cli, "-q", "first", "--json", model=model).stdout)
    resumed = chat(
        hermes_cli, "-q", "again", "--resume", first["session_id"], "--json", model=model
    )
    assert json.loads(resumed.stdout)["session_id"] == first["session_id"]
    missing = chat(hermes_cli, "-q", "x", "--resume", "session_nope", model=model)
    assert missing.exit_code == 1
    assert missing.stderr.startswith("hermes: error: no session 'session_nope'")
    assert "hermes sessions list" in missing.stderr
    nothing = hermes_cli("--plugins", "", "sessions", "show", "session_nope")
    assert nothing.exit_code == 1 and "no session 'session_nope'" in nothing.stderr


def test_sessions_commands(hermes_cli):
    model = ScriptedModel(text("The error E4021 means the disk is full."), text("ok"))
    result = json.loads(
        chat(
            hermes_cli, "-q", "What is error E4021 on host db-1.example.com?", "--json", model=model
        ).stdout
    )
    sid = result["session_id"]
    chat(hermes_cli, "-q", "unrelated", model=model)

    listing = hermes_cli("--plugins", "", "sessions", "list", "--json")
    assert listing.exit_code == 0
    sessions = json.loads(listing.stdout)
    assert len(sessions) == 2 and sessions[1]["id"] == sid  # newest first
    assert sessions[1]["title"].startswith("What is error E4021")

    table = hermes_cli("--plugins", "", "sessions", "list").stdout.splitlines()
    assert table[0].split() == ["ID", "STARTED", "PERSON", "MODEL", "MSGS", "TITLE"]
    assert table[2].startswith(sid) and "What is error E4021" in table[2]
    assert table[0].index("TITLE") == table[2].index("What is error E4021")

    show = hermes_cli("--plugins", "", "sessions", "show", sid)
    assert "disk is full" in show.stdout

    for query in ("E4021", "db-1.example.com", "disk"):
        found = json.loads(
            hermes_cli("--plugins", "", "sessions", "search", query, "--json").stdout
        )
        assert sid in {hit["session_id"] for hit in found}, query

    jsonl = hermes_cli("--plugins", "", "sessions", "export", sid).stdout.splitlines()
    assert json.loads(jsonl[0])["session"]["id"] == sid
    assert [json.loads(line)["role"] for line in jsonl[1:]] == ["user", "assistant"]
    markdown = hermes_cli("--plugins", "", "sessions", "export", sid, "--format", "md").stdout
    assert markdown.startswith("# What is error E4021")

    stats = json.loads(hermes_cli("--plugins", "", "sessions", "stats", "--json").stdout)
    assert stats["sessions"] == 2

    deleted = hermes_cli("--plugins", "", "sessions", "delete", sid, "--yes")
    assert deleted.exit_code == 0
    assert len(json.loads(hermes_cli("--plugins", "", "sessions", "list", "--json").stdout)) == 1
    pruned = hermes_cli("--plugins", "", "sessions", "prune", "--older-than", "0")
    assert pruned.exit_code == 0 and "deleted 1 session" in pruned.stdout


def test_resume_accepts_a_unique_id_prefix_or_a_title_and_lists_ambiguous_ones(hermes_cli):
    model = ScriptedModel(text("one"), text("two"), text("three"), text("four"))
    first = json.loads(chat(hermes_cli, "-q", "Plan the garden", "--json", model=model).stdout)
    json.loads(chat(hermes_cli, "-q", "Something else", "--json", model=model).stdout)
    sid = first["session_id"]
    prefix = sid[: len(sid) - 4]
    by_prefix = chat(hermes_cli, "-q", "again", "--resume", prefix, "--json", model=model)
    assert by_prefix.exit_code == 0, by_prefix.stderr
    assert json.loads(by_prefix.stdout)["session_id"] == sid
    by_title = chat(hermes_cli, "-q", "more", "--resume", "plan the garden", "--json", model=model)
    assert json.loads(by_title.stdout)["session_id"] == sid
    ambiguous = chat(hermes_cli, "-q", "x", "--resume", "session", model=model)
    assert ambiguous.exit_code == 1
    assert "names 2 or more sessions" in ambiguous.stderr and sid in ambiguous.stderr
    shown = hermes_cli("--plugins", "", "sessions", "show", prefix)
    assert shown.exit_code == 0 and "Plan the garden" in shown.stdout


def test_sessions_show_prints_tool_only_turns_as_calls_and_stats_prints_dates(hermes_cli):
    from hermes_core.testing import tool_call

    model = ScriptedModel(tool_call("missing_tool", {"x": 1}), text("done"))
    sid = json.loads(chat(hermes_cli, "-q", "go", "--json", model=model).stdout)["session_id"]
    show = hermes_cli("--plugins", "", "sessions", "show", sid).stdout
    assert "assistant (tool calls)" in show
    assert "-> missing_tool(" in show
    assert "null" not in show
    stats = hermes_cli("--plugins", "", "sessions", "stats").stdout
    oldest = next(line for line in stats.splitlines() if line.startswith("oldest"))
    assert oldest.split()[1].count("-") == 2  # 2026-12-01 13:45, not a UNIX time


def test_a_one_shot_chat_shows_a_refused_command_on_stderr(hermes_cli):
    model = ScriptedModel(tool_call("terminal", {"command": "rm -rf ~"}), text("I did not."))
    done = hermes_cli(
        "--plugins", "terminal,approvals,local", "chat", "--provider", "scripted",
        "-t", "terminal", "-q", "wipe my home", model=model,
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert done.stdout.strip() == "I did not."
    [line] = [line for line in done.stderr.splitlines() if "refused" in line]
    assert line.startswith("hermes: refused terminal: recursive delete")


CANARIES = {
    "CUSTOM_API_KEY": "canary-custom-key-0001",
    "LOOPBACK_API_KEY": "canary-loopback-key-0002",
    "ANTHROPIC_API_KEY": "canary-anthropic-key-0003",
    "OPENAI_API_KEY": "canary-openai-key-0004",
}
"""A distinct key per provider, all set in every run: each may reach only its provider's URL."""


def _loopback_provider_plugin(url: str) -> object:
    """A provider plugin like the OpenAI-compatible ones, whose default endpoint is ``url``
    (on this machine) and whose key is ``LOOPBACK_API_KEY``."""
    from hermes_provider_openai import create_client

    from hermes_hookspecs import Provider, hookimpl

    class LoopbackProvider:
        @hookimpl
        def hermes_register_providers(self, register):
            register(
                Provider(
                    name="loopback", api_mode="chat_completions", create_client=create_client,
                    default_base_url=url, key_env="LOOPBACK_API_KEY", default_model="m",
                    description="an OpenAI-compatible provider with its own endpoint",
                )
            )  # fmt: skip

    return LoopbackProvider()


def _keys_received(server) -> list[str]:
    """The canary keys in the auth headers of each request ``server`` received, in order."""
    names = {value: name for name, value in CANARIES.items()}
    found = []
    for request in server.requests:
        sent = [request.headers.get("authorization", ""), request.headers.get("x-api-key", "")]
        keys = {names[k] for k in names if any(k in header for header in sent)}
        assert len(keys) <= 1, request.headers
        found.append(keys.pop() if keys else "no key")
    return found


def test_a_base_url_set_for_one_provider_does_not_follow_provider_to_another(hermes_home):
    """``model.base_url`` belongs to ``model.provider``: ``--provider`` names another provider's
    endpoint and key, and each canary key arrives, in its header, at its own provider's server."""
    from click.testing import CliRunner

    from hermes_core.cli import main
    from hermes_core.testing.fake_llm import FakeLLM

    custom, own = FakeLLM().start(), FakeLLM().start()
    extra = [("loopback-provider", _loopback_provider_plugin(f"{own.url}/v1"))]

    def hermes(*args: str):
        with CliRunner().isolation(env=CANARIES) as streams:
            code = main(["--plugins", "anthropic,openai", "chat", "-q", "hi", *args], extra)
            return code, streams[0].getvalue().decode(), streams[1].getvalue().decode()

    try:
        for server in (custom, own):
            server.add(*({"text": f"from {server.url}"} for _ in range(3)))
        (hermes_home / "config.yaml").write_text(
            f"model:\n  provider: custom\n  base_url: {custom.url}/v1\n  default: m\n"
            "agent:\n  api_max_retries: 0\n"
        )
        # another provider with an endpoint of its own: its key goes there, and only there
        code, out, err = hermes("--provider", "loopback")
        assert _keys_received(custom) == []
        assert _keys_received(own) == ["LOOPBACK_API_KEY"]
        assert (code, out.strip()) == (0, f"from {own.url}"), err
        # another provider given a URL with it: that URL gets the call, with that provider's key
        code, out, err = hermes("--provider", "anthropic", "--base-url", own.url)
        assert _keys_received(custom) == []
        assert _keys_received(own) == ["LOOPBACK_API_KEY", "ANTHROPIC_API_KEY"]
        assert own.requests[-1].path == "/v1/messages"
        assert (code, out.strip()) == (0, f"from {own.url}"), err
        # a provider without a default endpoint is not handed the configured one
        code, out, err = hermes("--provider", "ollama")
        assert code == 1 and "11434" in err, err
        assert _keys_received(custom) == []
        # the configured provider, named or not, keeps its own URL and key
        for args in ((), ("--provider", "custom")):
            code, out, err = hermes(*args)
            assert (code, out.strip()) == (0, f"from {custom.url}"), err
        assert _keys_received(custom) == ["CUSTOM_API_KEY", "CUSTOM_API_KEY"]
        assert len(own.requests) == 2
    finally:
        custom.stop()
        own.stop()
