"""The type check (``tox -e typecheck``) covers every distribution of the checkout, strictly.

mypy's own run is the tox env; these tests keep its configuration honest: a new distribution's
package must fall under ``[tool.mypy] files``, the contract must stay strict, and ``tox`` (the
README's test command, which CI runs) must include the env.
"""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
STRICT_RELAXED = ("disallow_untyped_defs", "disallow_incomplete_defs", "disallow_untyped_calls")


def _pyproject(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _mypy() -> dict[str, Any]:
    config: dict[str, Any] = _pyproject(ROOT / "pyproject.toml")["tool"]["mypy"]
    return config


def _checked() -> set[Path]:
    """What the ``files`` globs of the mypy configuration name, resolved."""
    found: set[Path] = set()
    for pattern in _mypy()["files"]:
        matches = list(ROOT.glob(pattern))
        assert matches, f"[tool.mypy] files: {pattern!r} matches nothing"
        found.update(p.resolve() for p in matches)
    return found


def _packages() -> dict[str, Path]:
    """Every distribution of the checkout -> the folder or file of its import package."""
    packages: dict[str, Path] = {}
    for project in sorted(ROOT.glob("**/pyproject.toml")):
        if any(part.startswith(".") for part in project.relative_to(ROOT).parts):
            continue  # .tox, .venv...
        data = _pyproject(project)
        module = data.get("tool", {}).get("flit", {}).get("module", {}).get("name")
        name = data["project"]["name"]
        module = module or name.replace("-", "_")
        folder = project.parent / module
        packages[name] = folder if folder.is_dir() else project.parent / f"{module}.py"
    return packages


def test_every_distribution_is_type_checked() -> None:
    packages = _packages()
    assert len(packages) >= 20
    checked = _checked()
    missing = sorted(
        f"{name} ({where.relative_to(ROOT)})"
        for name, where in packages.items()
        if where.resolve() not in checked
    )
    assert not missing, f"not in [tool.mypy] files of pyproject.toml: {', '.join(missing)}"


def test_the_check_is_strict_and_the_contract_and_core_are_not_relaxed() -> None:
    config = _mypy()
    assert config["strict"] is True
    assert config["python_version"] == "3.11"
    for option in ("check_untyped_defs", "warn_unused_ignores", "warn_redundant_casts"):
        assert config[option] is True, option
    for override in config.get("overrides", []):
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        relaxed = [o for o in STRICT_RELAXED if override.get(o) is False]
        if not relaxed:
            continue
        ours = [m for m in modules if m.split(".")[0] in ("hermes_hookspecs", "hermes_core")]
        assert not ours, f"strict checks relaxed for {ours}: {relaxed}"


def test_tox_runs_the_type_check_by_default() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    envs = [e.strip() for e in tox["tox"]["env_list"].split(",")]
    assert "typecheck" in envs
    assert "mypy" in tox["testenv:typecheck"]["commands"]


@pytest.mark.parametrize("requirement", ["mypy==", "types-PyYAML=="])
def test_the_checker_is_pinned(requirement: str) -> None:
    lines = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert any(line.startswith(requirement) for line in lines), requirement
