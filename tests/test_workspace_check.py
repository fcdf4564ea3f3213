"""The chat's workspace is never the home folder or ``/``: a one-shot answer started there is
refused in one line naming ``--workdir`` before any model call; ``--workdir`` (or a project
folder) goes through; the interactive chat asks for a narrower folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_core.cli.workspace_check import settle_workspace
from hermes_core.testing import ScriptedModel, text
from hermes_hookspecs import HermesError


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "me"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("start", ["home", "root"])
def test_a_one_shot_answer_in_the_home_folder_or_root_is_refused(
    hermes_cli, user_home, monkeypatch, start
):
    monkeypatch.chdir(user_home if start == "home" else "/")
    model = ScriptedModel(text("should not be asked"))
    result = hermes_cli("chat", "-q", "hi", "--provider", "scripted", model=model)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "--workdir DIR" in result.stderr
    assert ("your home folder" if start == "home" else "the whole file system") in result.stderr
    assert model.requests == []


def test_workdir_or_a_project_folder_goes_through(hermes_cli, user_home, monkeypatch):
    monkeypatch.chdir(user_home)
    model = ScriptedModel(text("one"), text("two"))
    project = str(user_home / "project")
    done = hermes_cli("chat", "-q", "hi", "--provider", "scripted", "-w", project, model=model)
    assert done.exit_code == 0 and done.output == "one\n"
    monkeypatch.chdir(user_home / "project")
    done = hermes_cli("chat", "-q", "hi", "--provider", "scripted", model=model)
    assert done.exit_code == 0 and done.output == "two\n"


def test_workdir_may_not_be_the_home_folder_either(hermes_cli, user_home):
    result = hermes_cli("chat", "-q", "hi", "--workdir", str(user_home))
    assert result.exit_code == 1 and "your home folder" in result.stderr


def test_a_remote_backend_is_not_checked(user_home, monkeypatch):
    monkeypatch.chdir(user_home)
    assert settle_workspace({"terminal": {"backend": "docker"}}, None) is None


def test_the_interactive_chat_asks_until_it_gets_a_narrower_folder(user_home, monkeypatch):
    monkeypatch.chdir(user_home)
    answers = iter(["", "/", "nowhere", "~/project"])
    asked: list[str] = []

    def ask(message: str) -> str:
        asked.append(message)
        return next(answers)

    assert settle_workspace({}, ask) == os.path.realpath(user_home / "project")
    assert "your home folder" in asked[0] and "is not a folder" in asked[1]
    assert "too wide" in asked[2] and "nowhere is not a folder" in asked[3]


def test_the_interactive_chat_without_an_answer_refuses(user_home, monkeypatch):
    monkeypatch.chdir(user_home)

    def ask(message: str) -> str:
        raise EOFError

    with pytest.raises(HermesError, match="--workdir DIR"):
        settle_workspace({}, ask)
