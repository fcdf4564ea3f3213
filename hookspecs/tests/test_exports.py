"""The package's names: each one the table of lazily imported names lists resolves, an unknown
one is an ``AttributeError``, and the type checker sees the real names (not a catch-all)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hermes_hookspecs as hs


def test_every_listed_name_resolves_to_what_its_module_defines() -> None:
    for module, names in hs._LAZY.items():
        defined = importlib.import_module(f"hermes_hookspecs.{module}")
        for name in names:
            assert getattr(hs, name) is getattr(defined, name), f"{module}.{name}"
            assert name in dir(hs)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'PlatformAdapter'"):
        _ = hs.PlatformAdapter  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        exec("from hermes_hookspecs import NoSuchName", {})
    assert not hasattr(hs, "no_such_name")


def test_the_type_checker_rejects_a_name_the_package_lacks(tmp_path: Path) -> None:
    source = tmp_path / "uses_contract.py"
    source.write_text(
        textwrap.dedent(
            """
            from hermes_hookspecs import Tool, Toolset, hookimpl
            from hermes_hookspecs import NoSuchName

            toolset: Toolset = Toolset(name="t", description="d", tools=[])
            tool: Tool = toolset.tools[0]
            """
        )
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            "",
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stdout + result.stderr
    assert ":3:" in errors[0] and "NoSuchName" in errors[0]
