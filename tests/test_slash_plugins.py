"""Slash commands that plugins add to the chat (``hermes_register_slash_commands``): run between
turns with what they need of the chat, a switch of session when they ask for one, one line for
every error, and no way to take a builtin command's name or another plugin's."""

from __future__ import annotations

import pytest

from hermes_core.cli.slash import handle_slash, help_table
from hermes_core.plugins.registry import Registry
from hermes_core.testing import make_agent, plugin_manager
from hermes_hookspecs import HermesError, SessionInfo, SlashCommand, SlashOutcome, hookimpl


class Commands:
    """A plugin with a few slash commands; remembers what each saw."""

    def __init__(self, *commands: SlashCommand) -> None:
        self.commands = commands

    @hookimpl
    def hermes_register_slash_commands(self, register):
        for command in self.commands:
            register(command)


seen: list = []


def _echo(arguments, context):
    seen.append((arguments, context.session_id, context.person, dict(context.config["agent"])))
    context.echo(f"echo: {arguments}")
    assert context.session_store().get_session(context.session_id) is not None
    assert context.data_home == context.home


def _switch(arguments, context):
    return SlashOutcome(switch_to="session_elsewhere")


def _refuse(arguments, context):
    raise HermesError("cannot do that here")


def _crash(arguments, context):
    raise RuntimeError("a bug")


PLUGIN = Commands(
    SlashCommand("echo", "say it back", _echo, usage="TEXT"),
    SlashCommand("go-elsewhere", "switch", _switch),
    SlashCommand("refuse", "refuses", _refuse),
    SlashCommand("crash", "crashes", _crash),
)


@pytest.fixture
def agent(hermes_home):
    made = make_agent(plugins=[PLUGIN], home=hermes_home, config={"agent": {"max_turns": 7}})
    made.session_store.create_session(SessionInfo(id=made.session_id))
    yield made
    made.close()


def test_a_command_runs_with_the_chat_it_belongs_to(agent, capsys):
    seen.clear()
    assert handle_slash("/echo  hello   world ", agent, agent.session_store) is False
    assert capsys.readouterr().out == "echo: hello   world\n"
    [(arguments, session, person, agent_cfg)] = seen
    assert (arguments, session, person) == ("hello   world", agent.session_id, None)
    assert agent_cfg["max_turns"] == 7


def test_a_command_may_switch_the_session(agent):
    assert handle_slash("/go-elsewhere", agent, agent.session_store) == "session_elsewhere"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("/refuse", "  /refuse: cannot do that here\n"),
        ("/crash now", "  /crash failed (Commands): RuntimeError: a bug\n"),
        ("/nosuch", "  unknown command /nosuch; /help lists the commands\n"),
    ],
)
def test_errors_are_one_line_and_the_chat_goes_on(agent, capsys, line, expected):
    assert handle_slash(line, agent, agent.session_store) is False
    assert capsys.readouterr().out == expected


def test_help_lists_plugin_commands_after_the_builtin_ones(agent):
    table = help_table(agent)
    assert table.index("/exit") < table.index("/echo TEXT")
    assert "say it back (Commands)" in table


def test_builtin_names_and_clashes_are_refused_and_recorded():
    class Other(Commands):
        pass

    manager = plugin_manager(
        [
            PLUGIN,
            Other(SlashCommand("echo", "mine", _echo), SlashCommand("exit", "mine", _echo)),
        ]
    )
    commands = Registry.of(manager).slash_commands
    assert commands["echo"].plugin == "Commands" and "exit" not in commands
    [failed] = manager.failures()
    joined = " ".join(failed.hook_errors)
    assert "registered by both 'Commands' and 'Other'" in joined
    assert "/exit is the chat's own" in joined


@pytest.mark.parametrize("name", ["Rollback", "/rollback", "", "a b", "x" * 40])
def test_a_bad_name_is_refused_where_the_command_is_made(name):
    with pytest.raises(ValueError, match="slash command name"):
        SlashCommand(name, "summary", _echo)
