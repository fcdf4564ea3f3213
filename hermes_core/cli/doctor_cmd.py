"""``hermes doctor``: one line per check of the home folder, configuration, plugins, tools,
provider and execution backend."""

from __future__ import annotations

import platform
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import HermesError

from .. import __version__
from .helpers import current_state, hosted_reports
from .state import CliState

if TYPE_CHECKING:
    from ..config.loading import Config
    from ..plugins.registry import Registry


class Report:
    """The lines of a check-up, and how many problems it found."""

    def __init__(self) -> None:
        self.problems = 0

    def check(self, ok: bool, text: str) -> None:
        """One check: ``ok`` or a problem."""
        self.problems += 0 if ok else 1
        click.echo(f"{'ok ' if ok else 'ERR'}  {text}")

    @staticmethod
    def note(text: str) -> None:
        """A line that is neither a success nor a problem."""
        click.echo(f"--   {text}")


@click.command("doctor")
@click.option(
    "--no-network",
    "network",
    flag_value=False,
    default=True,
    help="Do not send the model a one-token request.",
)
def doctor(network: bool = True) -> None:
    """Check config, plugins, tools, provider and execution backend.

    The home folder must be writable, .env and state.db readable by their owner only, no key
    of config.yaml may be a misspelling of a known one, and the provider must answer a
    one-token request (skipped with --no-network). The execution backend's configuration is
    checked without starting it (one line per problem), then probed. Prints one line per check
    and exits 1 when any failed.
    """
    from .doctor_checks import home_writable, private_files

    state = current_state()
    report = Report()
    click.echo(f"hermes {__version__}, Python {platform.python_version()}, home {state.home}")
    report.check(*home_writable(state.home))
    for ok, line in private_files(state.home, state.home / "config.yaml"):
        report.check(ok, line)
    config = _check_config(state, report)
    registry = state.registry
    registry.collect_all()
    _check_plugins(state, report)
    _check_tools(registry, config, report)
    _check_provider(registry, config, report, network)
    _check_key_pools(config, state.host.session_store, report)
    _check_backend(registry, config, report)
    if report.problems:
        click.echo(f"{report.problems} problem(s) found")
        raise click.exceptions.Exit(1)
    click.echo("no problems found")


def _check_config(state: CliState, report: Report) -> Config:
    """The configuration, its unknown keys, and the Hermes agent's keys it cannot honour; a
    configuration that does not load ends the check-up."""
    import warnings

    from ..config.hermes_agent import is_hermes_agent_key, not_honoured
    from ..config.loading import ConfigWarning, _read_file, warn_unknown_keys

    try:
        with warnings.catch_warnings():  # reported below as lines of their own
            warnings.simplefilter("ignore", ConfigWarning)
            config = state.config
        created = "" if config.path.exists() else " (not created)"
        report.check(True, f"config {config.path}{created}")
    except HermesError as exc:
        report.check(False, str(exc))
        raise click.exceptions.Exit(1) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        unknown = warn_unknown_keys(config)
    for line in unknown:
        if "did you mean" in line:  # a misspelt key: its setting is not applied
            report.check(False, line)
        else:
            report.note(line)
    raw, _ = _read_file(config.path)
    for dotted, problem in config.schema.problems(raw):
        if is_hermes_agent_key(dotted):  # left out when the configuration was read
            report.note(f"{config.where(dotted)}Hermes agent value of {dotted!r} not used "
                        f"({problem}): the default applies")  # fmt: skip
    for dotted, instead in not_honoured(config.data, config.schema.covers):
        report.note(f"{config.where(dotted)}Hermes agent key {dotted!r} not honoured: {instead}")
    return config


def _check_plugins(state: CliState, report: Report) -> None:
    """Each plugin, and each plugin another plugin hosts."""
    for record in state.plugins.list_records():
        if record.status == "error":
            report.check(False, f"plugin {record.name}: {record.error}")
        elif record.hook_errors:
            report.check(False, f"plugin {record.name}: {'; '.join(record.hook_errors)}")
        elif record.status == "loaded":
            report.check(True, f"plugin {record.name} {record.version or ''}".rstrip())
        else:
            report.note(f"plugin {record.name} ({record.status})")
    for host_name, reports in hosted_reports(state).items():
        for hosted in reports:
            _check_hosted(f"plugin {host_name}/{hosted.name}", hosted, report)


def _check_hosted(name: str, hosted: Any, report: Report) -> None:
    if hosted.status == "error":
        report.check(False, f"{name}: {hosted.error}")
    elif hosted.status == "loaded":
        report.check(True, f"{name} {hosted.version}".rstrip())
    else:
        report.note(f"{name} ({hosted.status}: {hosted.error})" if hosted.error else name)


def _check_tools(registry: Registry, config: Config, report: Report) -> None:
    """The enabled toolsets, and the tools of theirs that cannot be used here."""
    from ..tools.toolsets import UNLISTED, describe_tools, enabled_toolsets

    try:
        enabled = set(enabled_toolsets(registry, config.data))
        report.check(True, f"toolsets enabled: {', '.join(sorted(enabled)) or 'none'}")
    except HermesError as exc:
        report.check(False, str(exc))
        enabled = set()
    for info in describe_tools(registry, config.data):
        if info.toolset in enabled and not info.available:
            if info.tool.name == UNLISTED:  # a toolset that could not list its run-time tools
                report.note(str(info.reason))
            else:
                report.note(f"tool {info.tool.name} unavailable: {info.reason}")


def _check_provider(registry: Registry, config: Config, report: Report, network: bool) -> None:
    """The configured provider, and (with ``network``) its answer to a one-token request."""
    from ..models.providers import resolve_provider
    from .doctor_checks import probe_provider

    try:
        provider, settings = resolve_provider(registry, config.get("model") or {})
        report.check(
            True, f"provider {provider.name}, model {settings.model}, api {settings.api_mode}"
        )
        if network:
            report.check(*probe_provider(registry, config.data))
    except HermesError as exc:
        report.check(False, f"provider: {exc}")


def _check_key_pools(config: Config, store: object, report: Report) -> None:
    """Each pooled key's state (``providers.<name>.keys``), never its value."""
    from ..credentials import make_pool
    from .keys_cmd import key_rows

    for name in sorted(config.get("providers") or {}):
        try:
            pool = make_pool(config.data, name, store)
            rows = key_rows([pool]) if pool is not None else []
        except HermesError as exc:
            report.check(False, f"keys of {name}: {exc}")
            continue
        for row in rows:
            report.check(
                not row["state"].startswith(("missing", "revoked")),
                f"key {name}/{row['id']} (${row['env']}): {row['state']}, "
                f"{row['uses']} uses, {row['errors']} errors",
            )


def _check_backend(registry: Registry, config: Config, report: Report) -> None:
    """The execution backend's configuration and a probe of it."""
    from ..tools.environments import EnvironmentManager
    from .doctor_checks import backend_report

    backend = EnvironmentManager(registry, config.data).backend
    registered_env = registry.environments.get(backend)
    if registered_env is not None:
        for ok, line in backend_report(backend, registered_env.value, config.data):
            report.check(ok, line)
        return
    from .install_hints import missing_backend_message

    message = missing_backend_message(backend, list(registry.environments))
    if backend != "local":  # chosen by the user: chat would fail on the first command
        report.check(False, message)
    else:
        report.note(message)
