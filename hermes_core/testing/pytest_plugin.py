"""Fixtures of the hermes test kit, registered with pytest through the ``pytest11`` entry point.

- ``hermes_home``: an empty ``HERMES_HOME`` in a temporary folder, with ``HERMES_*`` variables
  cleared for the test.
- ``scripted_model``: an empty :class:`~hermes_core.testing.ScriptedModel`; add turns with ``.add``.
- ``make_agent``: a factory, ``make_agent(*script, plugins=[...], **agent_kwargs)``; agents are
  closed after the test.
- ``agent``: ``make_agent(model=scripted_model)`` with the plugins named by
  ``@pytest.mark.hermes_plugins("name", ...)`` (entry point names).
- ``hermes_cli``: runs ``hermes`` commands in-process against ``hermes_home``; pass
  ``model=`` to answer chats with a scripted model.
- ``fake_llm``: a started :class:`~hermes_core.testing.FakeLLM` (a loopback server speaking
  OpenAI chat completions, OpenAI Responses and Anthropic messages) with an empty script; add
  steps with ``.add``. Stopped after the test; an exception raised by a function step fails it.
- ``postgres_admin_url`` (per session) and ``postgres_database`` (a fresh database per test
  module): the PostgreSQL cluster ``.ci/services.sh start postgres`` runs
  (:mod:`hermes_core.testing.services`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Declare the kit's marker."""
    config.addinivalue_line(
        "markers", "hermes_plugins(*names): entry point names the `agent` fixture loads"
    )


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated, empty HERMES_HOME, with no secret marked before or after the test (loading a
    home's ``.env`` marks its variables process-wide)."""
    import os

    from hermes_runtime.secrets import forget_secrets

    home = tmp_path / "hermes-home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith("HERMES_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HERMES_HOME", str(home))
    forget_secrets()
    yield home
    forget_secrets()


@pytest.fixture
def scripted_model() -> Any:
    """An empty scripted model."""
    from hermes_core.testing import ScriptedModel

    return ScriptedModel()


@pytest.fixture
def make_agent(hermes_home: Path) -> Iterator[Callable[..., Any]]:
    """A factory of agents driven by a scripted model; closed after the test."""
    from hermes_core.testing import make_agent as _make_agent

    made: list[Any] = []

    def factory(*script: Any, **kwargs: Any) -> Any:
        agent = _make_agent(*script, **kwargs)
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        agent.close()


@pytest.fixture
def agent(
    request: pytest.FixtureRequest, make_agent: Callable[..., Any], scripted_model: Any
) -> Any:
    """An agent with the scripted model and the plugins of the ``hermes_plugins`` marker."""
    marker = request.node.get_closest_marker("hermes_plugins")
    plugins = list(marker.args) if marker else []
    return make_agent(model=scripted_model, plugins=plugins)


@pytest.fixture
def fake_llm() -> Iterator[Any]:
    """A started fake LLM server with an empty script; stopped after the test."""
    from hermes_core.testing.fake_llm import FakeLLM

    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
    if server.errors:
        raise server.errors[0]


@dataclass
class CliResult:
    """What one ``hermes`` run printed and returned."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Standard output (as click's test result names it)."""
        return self.stdout


@pytest.fixture
def hermes_cli(hermes_home: Path) -> Callable[..., CliResult]:
    """Run ``hermes`` in-process, exactly as the console script does (one-line errors, exit
    codes): ``hermes_cli("tools", "list", model=None, input=None, env=None)``."""
    from click.testing import CliRunner

    from hermes_core.cli import main
    from hermes_core.testing.kit import scripted_provider_plugin

    def run(
        *args: str, model: Any = None, input: str | None = None, env: dict[str, str] | None = None
    ) -> CliResult:
        extra = [("scripted-provider", scripted_provider_plugin(model))] if model else []
        runner = CliRunner()
        with runner.isolation(input=input, env=env) as streams:
            code = main(list(args), extra_plugins=extra)
            out, err = streams[0].getvalue(), streams[1].getvalue()
        return CliResult(code, out.decode(), err.decode())

    return run


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """The test PostgreSQL cluster's ``postgres`` database, as a superuser
    (:func:`hermes_core.testing.services.postgres_admin_url`): skipped without one, failed under
    CI."""
    from hermes_core.testing.services import postgres_admin_url as find

    return find()


@pytest.fixture(scope="module")
def postgres_database(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty database on the test cluster for the tests of one module (its URL),
    dropped afterwards."""
    from hermes_core.testing.services import fresh_database

    with fresh_database(postgres_admin_url) as url:
        yield url
