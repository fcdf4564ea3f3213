"""Fixtures shared by the cross-package tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

DICE_SOURCE = """\
from hermes_hookspecs import Tool, Toolset, hookimpl

def roll_dice(args, ctx):
    return f"rolled a {args['sides']} on a d{args['sides']}"

@hookimpl
def hermes_register_toolsets(register):
    register(Toolset(name="dice", description="Dice rolls", tools=[
        Tool(name="roll_dice", description="Roll one die with the given number of sides",
             parameters={"type": "object", "properties": {"sides": {"type": "integer"}},
                         "required": ["sides"]},
             handler=roll_dice)]))
"""
"""A third-party toolset module: one tool, ``roll_dice``, in the toolset ``dice``."""

DicePlugin = Callable[..., Path]


def _write_dice_plugin(
    folder: Path,
    *,
    dist: str,
    module: str,
    version: str,
    entry_point: str = "dice",
    requires: str = "hermes-hookspecs",
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(
        f"""\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "{version}"
description = "Dice rolls for the hermes agent framework (a throwaway test dist)"
requires-python = ">=3.11"
dependencies = ["{requires}"]

[project.entry-points.hermes]
{entry_point} = "{module}"

[tool.setuptools]
py-modules = ["{module}"]
""",
        encoding="utf-8",
    )
    (folder / f"{module}.py").write_text(DICE_SOURCE, encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def dice_plugin() -> DicePlugin:
    """Write the source project of a third-party dice toolset into a folder; return the folder.

    Called as ``dice_plugin(folder, dist=..., module=..., version=..., entry_point="dice",
    requires="hermes-hookspecs")``: a setuptools project whose only dependency is the contract.
    """
    return _write_dice_plugin
