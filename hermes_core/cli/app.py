"""The root ``hermes`` group: global options, plugin commands, and one-line errors."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from hermes_hookspecs import HermesError

from .. import __version__
from .command_cache import CachedCommand
from .state import CliState

GLOBAL_VALUE_OPTIONS = {"-p": "profile", "--profile": "profile", "--plugins": "plugins"}
GLOBAL_FLAGS = {"--debug": "debug", "--strict-plugins": "strict_plugins"}


def _pre_parse(argv: Sequence[str]) -> dict[str, Any]:
    """Read the global options before click runs: plugins must be loaded (with the profile's
    configuration) before the command tree is complete."""
    found: dict[str, Any] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, equals, value = arg.partition("=")
        if name in GLOBAL_VALUE_OPTIONS:
            if not equals and i + 1 < len(args):
                i += 1
                value = args[i]
            found[GLOBAL_VALUE_OPTIONS[name]] = value
        elif arg in GLOBAL_FLAGS:
            found[GLOBAL_FLAGS[arg]] = True
        elif not arg.startswith("-"):
            break
        i += 1
    return found


BUILTIN_COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": ("chat", "chat", "Chat with the agent (interactive), or answer one query with -q."),
    "config": ("config_cmd", "config_group", "Show and change config.yaml."),
    "dev": ("dev", "dev_group", "Tools for plugin authors: a local fake LLM server."),
    "doctor": (
        "doctor_cmd",
        "doctor",
        "Check config, plugins, tools, provider and execution backend.",
    ),
    "model": ("setup", "model", "Show the model, or switch to NAME (PROVIDER/NAME or --provider)."),
    "sessions": (
        "sessions_cmd",
        "sessions_group",
        "Stored conversations: list, show, search, export, delete.",
    ),
    "serve": (
        "serve.command",
        "serve",
        "Keep hermes loaded: `hermes chat -q` runs in a child of this process.",
    ),
    "setup": (
        "setup",
        "setup",
        "Set provider, model, endpoint and key (config.yaml and .env).",
    ),
    "plugins": ("commands", "plugins_group", "Installed plugins and their state."),
    "prompt": (
        "prompt_cmd",
        "prompt_group",
        "Show the system prompt a new session would start with, layer by layer.",
    ),
    "providers": ("commands", "providers_group", "Model providers."),
    "tools": ("commands", "tools_group", "Tools and toolsets the model can use."),
    "version": ("commands", "version", "Print the versions of hermes, its contract and Python."),
    "keys": ("keys_cmd", "keys_group", "Credential pools: list, add, remove and reset keys."),
    "usage": (
        "usage_cmd",
        "usage",
        "Tokens and estimated cost of model calls, from the store's per-call records.",
    ),
}
"""Builtin commands: name -> (module in hermes_core.cli, attribute, short help). Their modules
are imported only when the command runs, so `hermes --help` stays fast."""


class HermesGroup(click.Group):
    """The root group: builtin commands load lazily; plugin commands are added by plugins.

    Plugins add their commands on the first look-up of any command (before it runs). Listing
    the commands (``hermes --help``) uses the commands remembered from an earlier run instead
    when nothing that decides them has changed (:mod:`.command_cache`), importing no plugin.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_commands: dict[str, str] = {}
        self.state: CliState | None = None
        """The invocation's state; plugin commands are added from its plugins when set."""
        self._plugins_added = False
        self._cached: dict[str, CachedCommand] | None = None
        self._cache_key: Any = None

    def add_plugin_commands(self) -> None:
        """Let every plugin add its commands (once), and remember them for the next listing."""
        if self._plugins_added or self.state is None:
            return
        self._plugins_added = True
        _add_plugin_commands(self, self.state)
        self._remember_commands()

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Builtin and plugin command names, sorted."""
        names = set(BUILTIN_COMMANDS) | set(self.commands)
        if not self._plugins_added:
            cached = self._cached_commands()
            if cached is None:
                self.add_plugin_commands()
                names |= set(self.commands)
            else:
                names |= set(cached)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command called ``cmd_name``, importing a builtin one on first use; plugins add
        their commands first."""
        self.add_plugin_commands()
        if cmd_name not in self.commands and cmd_name in BUILTIN_COMMANDS:
            import importlib

            module, attr, _ = BUILTIN_COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"hermes_core.cli.{module}"), attr)
            self.commands[cmd_name] = command
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List commands with their short help without importing builtin command modules (nor
        plugins, when their commands are remembered)."""
        rows = []
        for name in self.list_commands(ctx):
            command: click.Command | None = self.commands.get(name)
            if command is None and name not in BUILTIN_COMMANDS and self._cached is not None:
                _, _, short_help, help_text, hidden, deprecated = self._cached[name]
                command = click.Command(
                    name,
                    help=help_text,
                    short_help=short_help,
                    hidden=hidden,
                    deprecated=deprecated,
                )
            if command is not None:
                if command.hidden:
                    continue
                rows.append(
                    (name, command.get_short_help_str(limit=formatter.width - 6 - len(name)))
                )
            else:
                rows.append((name, BUILTIN_COMMANDS[name][2]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _cache_target(self) -> tuple[Path, Any] | None:
        """The home folder and fingerprint the plugin commands are remembered under; ``None``
        when they are not (plugins given in-process, or an invalid profile name)."""
        state = self.state
        if state is None or state.extra_plugins:
            return None
        if self._cache_key is None:
            from . import command_cache

            home = command_cache.home_of(state.profile)
            if home is None:
                return None
            self._cache_key = (home, command_cache.fingerprint(home, state.plugin_names))
        return self._cache_key  # type: ignore[no-any-return]

    def _cached_commands(self) -> dict[str, CachedCommand] | None:
        if self._cached is None:
            target = self._cache_target()
            if target is None:
                return None
            from . import command_cache

            found = command_cache.load(*target)
            if found is not None:
                self._cached = {entry[0]: entry for entry in found}
        return self._cached

    def _remember_commands(self) -> None:
        target = self._cache_target()
        state = self.state
        if target is None or state is None:
            return
        try:
            if state.plugins.failures():
                return  # a broken plugin is reported on every run until it is fixed
        except HermesError:
            return
        entries: list[CachedCommand] = []
        for name, plugin in sorted(self.plugin_commands.items()):
            command = self.commands.get(name)
            if command is None:
                continue
            entries.append(
                (
                    name,
                    plugin,
                    command.short_help,
                    command.help,
                    bool(command.hidden),
                    command.deprecated,
                )
            )
        from . import command_cache

        if command_cache.load(*target) != entries:
            command_cache.save(*target, entries)


def build_cli(
    argv: Sequence[str] | None = None, extra_plugins: Sequence[tuple[str, object]] = ()
) -> click.Group:
    """The ``hermes`` command group for ``argv``, with the commands of loaded plugins added."""
    pre = _pre_parse(sys.argv[1:] if argv is None else argv)
    plugin_names = None
    if pre.get("plugins") is not None:
        plugin_names = [n.strip() for n in str(pre["plugins"]).split(",") if n.strip()]
    state = CliState(
        profile=pre.get("profile"),
        debug=bool(pre.get("debug")),
        plugin_names=plugin_names,
        strict_plugins=bool(pre.get("strict_plugins")),
        extra_plugins=extra_plugins,
    )

    @click.group(
        cls=HermesGroup,
        invoke_without_command=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @click.option("-p", "--profile", metavar="NAME", help="Use $HERMES_HOME/profiles/NAME.")
    @click.option("--plugins", metavar="A,B", help="Load only these plugins (HERMES_PLUGINS).")
    @click.option("--strict-plugins", is_flag=True, help="Fail when a plugin cannot load.")
    @click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
    @click.version_option(__version__, "--version", prog_name="hermes")
    @click.pass_context
    def cli(ctx: click.Context, /, **_: Any) -> None:
        """hermes: an AI agent whose tools, providers and environments are plugins.

        Run without a command for an interactive chat; `hermes chat -q TEXT` answers once.
        """
        ctx.obj = state
        import logging

        if state.debug:
            logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
        redact_log_handlers(logging.getLogger().handlers)
        if logging.lastResort is not None:  # prints warnings when logging is not configured
            redact_log_handlers([logging.lastResort])
        if ctx.invoked_subcommand is None:
            ctx.invoke(cli.get_command(ctx, "chat"))  # type: ignore[arg-type]  # a builtin: never None

    cli.state = state  # plugins add their commands on the first look-up of a command
    return cli


def redact_log_handlers(handlers: Sequence[Any]) -> None:
    """Make ``handlers`` (logging handlers) replace every known secret value by ``[REDACTED]``
    in the lines they write, tracebacks included."""
    import logging

    from hermes_runtime.secrets import redact

    class RedactSecrets(logging.Filter):
        """Rewrites a record whose message or traceback holds a known secret value."""

        def filter(self, record: logging.LogRecord) -> bool:
            message = record.getMessage()
            cleaned = redact(message)
            if cleaned != message:
                record.msg, record.args = cleaned, None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
            return True

    for handler in handlers:
        if not any(type(f).__name__ == "RedactSecrets" for f in handler.filters):
            handler.addFilter(RedactSecrets())


def _add_plugin_commands(cli: HermesGroup, state: CliState) -> None:
    """Let plugins add commands; a plugin cannot replace a builtin or another plugin's command."""
    try:
        plugins = state.plugins
    except HermesError:
        return  # a broken config must not make `hermes config ...` unusable; commands report it
    owners = cli.plugin_commands
    for record, hook in plugins.implementations("hermes_register_commands", load_order=True):
        before = dict(cli.commands)
        try:
            hook(cli=cli)
        except Exception as exc:
            plugins.record_error(record, "hermes_register_commands", exc)
        for name, command in list(cli.commands.items()):
            if name in before and before[name] is command:
                continue
            taken_by = "hermes" if name in BUILTIN_COMMANDS else owners.get(name)
            if taken_by is not None:
                if name in before:
                    cli.commands[name] = before[name]
                else:
                    del cli.commands[name]
                plugins.record_error(
                    record,
                    "hermes_register_commands",
                    HermesError(f"command {name!r} is already provided by {taken_by}"),
                )
            else:
                owners[name] = record.name


def main(
    argv: Sequence[str] | None = None, extra_plugins: Sequence[tuple[str, object]] = ()
) -> int:
    """Run ``hermes``; user errors print one line (a traceback only with ``--debug``).

    ``extra_plugins`` are ``(name, plugin)`` pairs registered in-process (tests, embedders).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    import warnings

    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run(args, debug, extra_plugins)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Print a configuration warning as one ``hermes: warning:`` line; others as Python does."""
    from ..config.loading import ConfigWarning
    from ..session_store.hermes_agent import SessionImportNotice

    if issubclass(category, ConfigWarning):
        click.echo(f"hermes: warning: {message}", err=True)
    elif issubclass(category, SessionImportNotice):
        click.echo(f"hermes: {message}", err=True)
    else:
        warnings_module = sys.modules["warnings"]
        text = warnings_module.formatwarning(message, category, filename, lineno, line)
        (file or sys.stderr).write(text)


def _run(args: list[str], debug: bool, extra_plugins: Sequence[tuple[str, object]]) -> int:
    try:
        cli = build_cli(args, extra_plugins=extra_plugins)
        code = cli.main(args=args, prog_name="hermes", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("hermes: aborted", err=True)
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        from .install_hints import missing_command_message

        hint = missing_command_message(exc, args)
        if hint is not None:
            click.echo(f"hermes: {hint}", err=True)
            return 2
        exc.show()
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("hermes: interrupted", err=True)
        return 130
    except HermesError as exc:
        if debug:
            raise
        from ..config.loading import ConfigError

        click.echo(f"hermes: error: {exc}", err=True)
        return 2 if isinstance(exc, ConfigError) else 1
    except Exception as exc:
        if debug:
            raise
        click.echo(
            f"hermes: internal error: {type(exc).__name__}: {exc} (run with --debug for "
            "the traceback)",
            err=True,
        )
        return 1
    return code if isinstance(code, int) else 0  # click returns ctx.exit()'s code here
