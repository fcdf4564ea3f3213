"""End to end: a third-party toolset that is pip-installed works with no config edit.

A throwaway dist (``pyproject.toml`` with ``[project.entry-points.hermes]`` and one module, in
the style of the weather example of DESIGN.md) is written to a temporary folder and installed
into the running test environment with pip, from its path and with ``--no-index``, so nothing is
ever fetched from a package registry. Then:

- a fresh ``hermes tools list --json`` (the console script) lists its tool, attributed to the
  plugin, and ``hermes plugins list --json`` names its dist;
- in-process, the kit's ``make_agent(plugins=["dice"])`` loads it through its real entry point and
  a scripted model that calls the tool gets the tool's result.

The dist is uninstalled in the fixture's finalizer whatever happens.

How it is installed: pip builds the source folder with ``--no-build-isolation`` when the running
environment can build it offline (setuptools, plus ``wheel`` for setuptools older than 70.1).
Otherwise the test assembles the same project into a wheel itself (a zip laid out as PEP 427
says, metadata read from the same ``pyproject.toml``) and pip installs that file. Either way pip
installs a real dist with a RECORD, so ``pip uninstall`` removes it cleanly.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

import pytest

from hermes_core.plugins.manager import reset_entry_point_cache
from hermes_core.testing import assert_request_valid, load_plugin, text, tool_call

DIST = "hermes-e2e-acme-dice"
"""A name no real project uses; the dist is only ever installed from a temporary folder."""
MODULE = "acme_dice"
EP_NAME = "dice"
VERSION = "0.3.0"


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _pip_available() -> bool:
    try:
        return _pip("--version").returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


pytestmark = pytest.mark.skipif(
    not _pip_available(),
    reason=f"pip is not available to {sys.executable}; the end-to-end install test needs it",
)


def _source_build_problem() -> str | None:
    """Why pip cannot build a setuptools project offline here, or None when it can."""
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools is not installed"
    setuptools_version = tuple(
        int(p) for p in installed_version("setuptools").split(".")[:2] if p.isdigit()
    )
    if setuptools_version < (70, 1) and importlib.util.find_spec("wheel") is None:
        return "setuptools < 70.1 needs the wheel package to build a wheel"
    return None


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def build_wheel_by_hand(project: Path, out: Path) -> Path:
    """Assemble ``project`` (a pure-Python, ``py-modules`` setuptools project) into a wheel."""
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    spec = meta["project"]
    name = spec["name"].replace("-", "_")
    info = f"{name}-{spec['version']}.dist-info"
    files: dict[str, bytes] = {}
    for module in meta["tool"]["setuptools"]["py-modules"]:
        files[f"{module}.py"] = (project / f"{module}.py").read_bytes()
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {spec['name']}",
        f"Version: {spec['version']}",
        f"Summary: {spec.get('description', '')}",
        f"Requires-Python: {spec.get('requires-python', '')}",
    ]
    metadata += [f"Requires-Dist: {dep}" for dep in spec.get("dependencies", [])]
    files[f"{info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: hermes-e2e-test\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    groups = spec.get("entry-points", {})
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in groups.items()
    ).encode()
    files[f"{info}/top_level.txt"] = "".join(
        f"{m}\n" for m in meta["tool"]["setuptools"]["py-modules"]
    ).encode()
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = out / f"{name}-{spec['version']}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def _is_installed() -> bool:
    try:
        distribution(DIST)
    except PackageNotFoundError:
        return False
    return True


def _forget_module() -> None:
    sys.modules.pop(MODULE, None)
    reset_entry_point_cache()


@dataclass
class Installed:
    project: Path
    method: str


@pytest.fixture(scope="module")
def installed_dice(
    tmp_path_factory: pytest.TempPathFactory, dice_plugin: Callable[..., Path]
) -> Iterator[Installed]:
    """The throwaway dist, pip-installed into this environment; uninstalled afterwards."""
    if _is_installed():  # left behind by an aborted run: it is ours, take it away first
        _pip("uninstall", "-y", DIST)
    others = [ep for ep in entry_points(group="hermes") if ep.name == EP_NAME]
    assert not others, f"another installed dist already has a hermes entry point {EP_NAME!r}"
    assert importlib.util.find_spec(MODULE) is None, f"a module {MODULE!r} is already importable"

    project = dice_plugin(
        tmp_path_factory.mktemp("acme-dice"), dist=DIST, module=MODULE, version=VERSION
    )

    problem = _source_build_problem()
    if problem is None:
        method, target = "pip install <path> --no-build-isolation", str(project)
    else:
        method = f"hand-built wheel ({problem})"
        target = str(build_wheel_by_hand(project, tmp_path_factory.mktemp("wheelhouse")))
    try:
        done = _pip(
            "install", "--no-deps", "--no-index", "--no-build-isolation", "--no-cache-dir", target
        )
        assert done.returncode == 0, f"pip install failed ({method}):\n{done.stdout}\n{done.stderr}"
        _forget_module()
        yield Installed(project, method)
    finally:
        removed = _pip("uninstall", "-y", DIST)
        _forget_module()
        assert removed.returncode == 0, f"pip uninstall failed:\n{removed.stdout}\n{removed.stderr}"
        assert not _is_installed(), f"{DIST} is still installed after pip uninstall"


def _console_script() -> Path:
    script = Path(sys.executable).parent / ("hermes.exe" if os.name == "nt" else "hermes")
    assert script.exists(), f"the hermes console script is not next to {sys.executable}"
    return script


def _hermes(*argv: str, home: Path) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    done = subprocess.run(
        [str(_console_script()), *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"hermes {' '.join(argv)} failed:\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_installed_dist_appears_in_hermes_tools_list(
    installed_dice: Installed, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    tools = _hermes("tools", "list", "--json", home=home)
    dice = [t for t in tools if t["tool"] == "roll_dice"]
    assert dice == [
        {
            "tool": "roll_dice",
            "toolset": "dice",
            "plugin": EP_NAME,
            "available": True,
            "reason": None,
            "enabled": True,
        }
    ], (installed_dice.method, tools)
    assert not (home / "config.yaml").exists(), "no config edit was needed, and none was made"

    plugins = {p["name"]: p for p in _hermes("plugins", "list", "--json", home=home)}
    record = plugins[EP_NAME]
    assert (record["dist"], record["version"], record["status"]) == (DIST, VERSION, "loaded")
    assert record["module"] == MODULE
    assert record["hooks"] == ["hermes_register_toolsets"]


def test_scripted_model_calls_the_installed_tool(
    installed_dice: Installed, make_agent: Any
) -> None:
    reset_entry_point_cache()
    record = load_plugin(EP_NAME)
    assert (record.dist, record.version) == (DIST, VERSION)

    agent = make_agent(
        tool_call("roll_dice", {"sides": 20}), text("You rolled a 20."), plugins=[EP_NAME]
    )
    assert agent.chat("Roll a d20 for me") == "You rolled a 20."
    first, second = agent.client.requests
    assert first.tool_names == ["roll_dice"]
    assert second.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "rolled a 20 on a d20",
    }
    assert_request_valid(second)


def test_the_hand_built_wheel_is_a_valid_wheel(
    tmp_path: Path, dice_plugin: Callable[..., Path]
) -> None:
    """The fallback path must produce what pip expects, whichever path this machine takes."""
    project = dice_plugin(tmp_path / "project", dist=DIST, module=MODULE, version=VERSION)
    wheel = build_wheel_by_hand(project, tmp_path)
    assert wheel.name == f"{DIST.replace('-', '_')}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"{DIST.replace('-', '_')}-{VERSION}.dist-info"
        assert {
            f"{MODULE}.py",
            f"{info}/METADATA",
            f"{info}/WHEEL",
            f"{info}/RECORD",
            f"{info}/entry_points.txt",
        } <= names
        eps = archive.read(f"{info}/entry_points.txt").decode()
        assert eps.strip() == textwrap.dedent(f"""\
            [hermes]
            {EP_NAME} = {MODULE}""")
        for line in archive.read(f"{info}/RECORD").decode().splitlines():
            path, digest, size = line.split(",")
            if path.endswith("RECORD"):
                continue
            data = archive.read(path)
            assert digest == _record_hash(data) and int(size) == len(data)
