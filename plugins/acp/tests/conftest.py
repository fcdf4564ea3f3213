"""Fixtures of the ACP tests: a home configured for the fake model, and that model."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from acp_client import write_config  # noqa: E402

from hermes_core.testing import FakeLLM  # noqa: E402


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    """The fake model server (script it with ``llm.add``)."""
    with FakeLLM() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, llm: FakeLLM) -> Path:
    """A hermes home whose configuration talks to ``llm``."""
    folder = tmp_path / "home"
    folder.mkdir()
    write_config(folder, llm.openai_base_url)
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The editor's project folder."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
