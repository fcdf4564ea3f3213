"""The distributions of this repository: names, metadata, versions and install files (offline).

Every ``pyproject.toml`` in the checkout is found by globbing, so a new distribution is held to
the same rules without editing this file: its name must have been checked against the registry
(``scripts/check_dist_names.py --record``), its metadata must be complete, and the requirements
files must install it from its path. Building and installing the wheels is
``tests/test_publish.py``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import check_dist_names
import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
CORE = "hermes-framework"
CONTRACT = "hermes-hookspecs"
VERSION_SCHEME = re.compile(r"^\d+\.\d+\.\d+$")
REPOSITORY = "https://github.com/hermes-framework/hermes"
BACKENDS = ("docker", "ssh", "modal")


names = check_dist_names
DISTS: dict[str, Path] = names.find_dists(ROOT)


def _project(name: str) -> dict[str, Any]:
    return tomllib.loads((DISTS[name] / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(path: Path) -> tuple[list[Path], list[str]]:
    """Local folders (``-e ./x`` or ``./x``) and other lines of a requirements file, -r followed."""
    folders: list[Path] = []
    others: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            more_folders, more_others = _requirements(path.parent / line[3:].strip())
            folders += more_folders
            others += more_others
        elif line.startswith(("-e ", "./", ".")):
            folders.append((ROOT / line.removeprefix("-e ").strip()).resolve())
        else:
            others.append(line)
    return folders, others


def _dist_of(folder: Path) -> str:
    matches = [name for name, where in DISTS.items() if where.resolve() == folder]
    assert matches, f"{folder} in a requirements file holds no distribution"
    return matches[0]


def _ours(requirements: list[str]) -> list[Requirement]:
    parsed = [Requirement(r) for r in requirements]
    return [r for r in parsed if r.name in DISTS]


def test_the_dists_are_found() -> None:
    assert {CORE, CONTRACT, "hermes-env-local", "hermes-provider-openai"} <= set(DISTS)
    assert DISTS[CORE] == ROOT


def test_every_name_was_checked_against_the_registry() -> None:
    recorded = names.read_record()
    missing = sorted(set(DISTS) - set(recorded))
    stale = sorted(set(recorded) - set(DISTS))
    assert not missing and not stale, (
        f"names not checked: {missing}; checked names no longer in the repository: {stale}. "
        "Run: python scripts/check_dist_names.py --record"
    )
    taken = sorted(n for n, (status, _) in recorded.items() if status not in {"free", "ours"})
    assert not taken, f"names taken on the registry by other projects: {taken}"


@pytest.mark.parametrize("name", sorted(DISTS))
def test_metadata_is_complete(name: str) -> None:
    meta = _project(name)
    project = meta["project"]
    folder = DISTS[name]
    assert re.fullmatch(r"hermes-[a-z0-9]+(-[a-z0-9]+)*", name), "dists are named hermes-..."
    assert VERSION_SCHEME.match(project["version"]), "versions are MAJOR.MINOR.PATCH"
    assert len(project["description"]) > 20 and "\n" not in project["description"]
    assert (folder / project["readme"]).is_file(), "the readme file must exist"
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (folder / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert project["requires-python"] == ">=3.11"
    assert project["authors"]
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers), "the SPDX field says it"
    urls = project["urls"]
    assert {"Homepage", "Source", "Documentation", "Issues"} <= set(urls)
    assert all(u.startswith(REPOSITORY) for u in urls.values())
    assert meta["build-system"]["build-backend"] == "flit_core.buildapi"
    module = meta["tool"]["flit"]["module"]["name"]
    assert (folder / module / "__init__.py").is_file() or (folder / f"{module}.py").is_file()
    typed = (folder / module / "py.typed").is_file()
    assert ("Typing :: Typed" in classifiers) == typed


def test_one_version_for_every_dist() -> None:
    versions = {name: _project(name)["project"]["version"] for name in DISTS}
    assert len(set(versions.values())) == 1, versions


@pytest.mark.parametrize("name", sorted(set(DISTS) - {CORE}))
def test_plugins_depend_on_the_contract_never_on_the_core(name: str) -> None:
    project = _project(name)["project"]
    deps = _ours(project.get("dependencies", []))
    assert CORE not in {d.name for d in deps}, "a plugin never depends on the core dist"
    if name == CONTRACT:
        return
    contract = [d for d in deps if d.name == CONTRACT]
    assert contract, f"{name} must declare its dependency on {CONTRACT}"
    # the compatibility policy (hookspecs/README.md): minor versions only add, so <1
    assert contract[0].specifier == SpecifierSet(">=0.1,<1"), contract[0]


def test_the_core_depends_on_the_default_set_and_offers_the_rest_as_extras() -> None:
    project = _project(CORE)["project"]
    deps = {d.name for d in _ours(project["dependencies"])}
    assert {CONTRACT, "hermes-env-local", "hermes-provider-openai"} <= deps
    assert {"hermes-provider-anthropic", "hermes-engine-compressor"} <= deps
    assert not deps & {f"hermes-env-{b}" for b in BACKENDS}, "backends are extras"
    extras = project["optional-dependencies"]
    for backend in BACKENDS:
        assert [r.name for r in _ours(extras[backend])] == [f"hermes-env-{backend}"]
    for extra, reqs in extras.items():
        assert all(Requirement(r).name in DISTS for r in reqs), f"extra {extra} names our dists"


def _closure(start: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [d.name for d in _ours(_project(name)["project"].get("dependencies", []))]
    return seen


def test_the_readme_set_up_installs_exactly_the_core_and_what_it_needs() -> None:
    folders, others = _requirements(ROOT / "requirements.txt")
    listed = [_dist_of(f) for f in folders]
    assert len(listed) == len(set(listed)), "a dist is listed twice"
    assert not others, f"requirements.txt installs only local dists: {others}"
    assert set(listed) == _closure({CORE}), (
        "requirements.txt must list the core dist and every one of our dists it depends on, "
        "each from its path, so pip never resolves one of them from the registry"
    )


def test_the_test_environment_installs_every_dist_from_its_path() -> None:
    folders, others = _requirements(ROOT / "requirements-dev.txt")
    listed = {_dist_of(f) for f in folders}
    assert listed == set(DISTS), f"not in requirements-dev.txt: {sorted(set(DISTS) - listed)}"
    assert _closure(listed) == listed
    assert not {Requirement(o).name for o in others if not o.startswith("-")} & set(DISTS)
