"""The publishing path, end to end: every dist built, checked and installed outside the checkout.

1. Every distribution of the repository (found by globbing ``pyproject.toml``) is built into a
   wheel and an sdist with ``python -m build``, and ``twine check`` passes on all of them.
2. The third-party packages the core needs are put in the same wheelhouse with ``pip download``
   (from the configured index, or pip's cache when it is warm). Only third-party names are
   asked for: none of our dists is ever resolved from the registry.
3. A fresh virtual environment in a temporary folder outside the checkout gets
   ``pip install --no-index --find-links WHEELHOUSE hermes-framework``; then, run from outside
   the checkout, ``hermes chat -q`` answers through the fake model server (``hermes dev
   fake-llm``), ``hermes tools list`` shows the default toolsets, and ``hermes doctor`` names
   the extra that installs a missing backend.
4. A third-party toolset that depends only on ``hermes-hookspecs`` is built the same way,
   installed with ``--no-index`` into that environment, listed by ``hermes tools list`` and
   called by the model.

This is the path docs/publishing.md describes. It takes a few minutes (marked ``slow``); the
only network use is step 2 and the build back end of step 4, and when the package index cannot
be reached the test is skipped with pip's own reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import check_dist_names
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
CORE = "hermes-framework"
THIRD_PARTY = "acme-hermes-dice"

pytestmark = pytest.mark.slow


DISTS: dict[str, Path] = check_dist_names.find_dists(ROOT)


def _run(cmd: list[str], *, timeout: float = 600, **kwargs: Any) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr}"
    return done


def _build(folder: Path, out: Path, *, wheel_only: bool = False) -> None:
    """``python -m build`` of ``folder`` into ``out`` (offline when flit_core is installed)."""
    command = [sys.executable, "-m", "build", "--outdir", str(out)]
    backend = (folder / "pyproject.toml").read_text(encoding="utf-8")
    if "flit_core.buildapi" in backend and importlib.util.find_spec("flit_core"):
        command.append("--no-isolation")
    if wheel_only:
        command.append("--wheel")
    _run([*command, str(folder)])


def _clean_pip_env() -> dict[str, str]:
    """The environment for an offline install: no pip configuration reaches pip."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "HERMES_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _third_party_requirements(wheels: list[Path], ours: set[str]) -> list[str]:
    """The non-extra requirements of ``wheels`` that are not one of our dists."""
    found: set[str] = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            [meta] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
            lines = archive.read(meta).decode().splitlines()
        for line in lines:
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if req.name in ours or (req.marker and not req.marker.evaluate({"extra": ""})):
                continue
            found.add(str(req))
    return sorted(found)


@dataclass
class Published:
    wheelhouse: Path
    venv: Path
    outside: Path

    def hermes(self, *argv: str, home: Path, check: bool = True) -> subprocess.CompletedProcess:
        env = _clean_pip_env()
        env["HERMES_HOME"] = str(home)
        done = subprocess.run(
            [str(self.venv / "bin" / "hermes"), *argv],
            cwd=self.outside,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if check:
            assert done.returncode == 0, f"hermes {' '.join(argv)}:\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
        return done

    def pip_install(self, name: str) -> None:
        _run(
            [
                str(self.venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--no-index",
                "--find-links",
                str(self.wheelhouse),
                name,
            ],
            env=_clean_pip_env(),
        )


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    """Every dist built and checked; the core installed from the wheelhouse into a fresh venv."""
    base = tmp_path_factory.mktemp("publish")
    assert not base.resolve().is_relative_to(ROOT), "the test must run outside the checkout"
    dist, wheelhouse, outside = base / "dist", base / "wheelhouse", base / "elsewhere"
    for folder in (dist, wheelhouse, outside):
        folder.mkdir()
    for folder in DISTS.values():
        _build(folder, dist)
    built = sorted(dist.iterdir())
    names = {re.sub(r"[-_.]+", "-", p.name.split("-")[0]).lower() for p in built}
    assert names == {re.sub(r"[-_.]+", "-", n).lower() for n in DISTS}
    assert len(built) == 2 * len(DISTS), "one wheel and one sdist per dist"
    _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)])
    wheels = [p for p in built if p.suffix == ".whl"]
    for wheel in wheels:
        shutil.copy(wheel, wheelhouse)

    third_party = _third_party_requirements(wheels, set(DISTS))
    download = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", str(wheelhouse)]
        + third_party,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if download.returncode != 0:
        pytest.skip(f"cannot fetch third-party wheels from the package index: {download.stderr}")

    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    published = Published(wheelhouse, venv, outside)
    published.pip_install(CORE)
    yield published


def test_every_wheel_carries_its_metadata(published: Published) -> None:
    for wheel in published.wheelhouse.glob("hermes_*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            [meta] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
            text = archive.read(meta).decode()
        assert "License-Expression: MIT" in text, wheel.name
        assert "Requires-Python: >=3.11" in text, wheel.name
        assert "Project-URL: Source," in text, wheel.name


def test_the_core_runs_from_its_wheels_outside_the_checkout(
    published: Published, tmp_path: Path
) -> None:
    python = str(published.venv / "bin" / "python")
    where = _run(
        [python, "-c", "import hermes_core; print(hermes_core.__file__)"],
        cwd=published.outside,
        env=_clean_pip_env(),
    ).stdout
    assert Path(where.strip()).is_relative_to(published.venv), where
    listed = _run([python, "-m", "pip", "list", "--format=json"], env=_clean_pip_env()).stdout
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert {CORE, "hermes-hookspecs", "hermes-env-local", "hermes-provider-openai"} <= installed
    assert not installed & {"hermes-env-docker", "hermes-env-ssh", "hermes-env-modal"}
    assert not installed & {"docker", "paramiko", "modal"}, "backends are extras"

    home = tmp_path / "home"
    home.mkdir()
    tools = json.loads(published.hermes("tools", "list", "--json", home=home).stdout)
    toolsets = {t["toolset"] for t in tools}
    assert {"terminal", "file", "memory", "todo", "skills"} <= toolsets, toolsets

    (home / "config.yaml").write_text("terminal:\n  backend: docker\n", encoding="utf-8")
    doctor = published.hermes("doctor", "--no-network", home=home, check=False)
    assert doctor.returncode == 1
    assert f'install it with: pip install "{CORE}[docker]"' in doctor.stdout, doctor.stdout


def _chat_through_fake_llm(
    published: Published, home: Path, steps: list[dict[str, Any]], question: str
) -> str:
    script = home / "script.json"
    script.write_text(json.dumps(steps), encoding="utf-8")
    env = _clean_pip_env()
    env["HERMES_HOME"] = str(home)
    server = subprocess.Popen(
        [str(published.venv / "bin" / "hermes"), "dev", "fake-llm", "--quiet"]
        + ["--script", str(script)],
        cwd=published.outside,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        env["CUSTOM_API_KEY"] = "not-a-real-key"
        done = published.hermes(
            "chat",
            "-q",
            question,
            "--provider",
            "custom",
            "--base-url",
            f"{url}/v1",
            "--model",
            "any",
            home=home,
        )
        return done.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_hermes_chat_answers_through_the_fake_model_server(
    published: Published, tmp_path: Path
) -> None:
    out = _chat_through_fake_llm(
        published, tmp_path, [{"text": "Hello from the fake model."}], "hi"
    )
    assert "Hello from the fake model." in out


def test_a_third_party_toolset_installs_from_the_wheelhouse(
    published: Published, tmp_path: Path, dice_plugin: Callable[..., Path]
) -> None:
    project = dice_plugin(
        tmp_path / "acme-hermes-dice",
        dist=THIRD_PARTY,
        module="acme_hermes_dice",
        version="1.0.0",
        requires="hermes-hookspecs>=0.1,<1",
    )
    _build(project, published.wheelhouse, wheel_only=True)
    published.pip_install(THIRD_PARTY)

    home = tmp_path / "home"
    home.mkdir()
    tools = json.loads(published.hermes("tools", "list", "--json", home=home).stdout)
    assert [t for t in tools if t["tool"] == "roll_dice"] == [
        {
            "tool": "roll_dice",
            "toolset": "dice",
            "plugin": "dice",
            "available": True,
            "reason": None,
            "enabled": True,
        }
    ]
    plugins = json.loads(published.hermes("plugins", "list", "--json", home=home).stdout)
    [dice] = [p for p in plugins if p["name"] == "dice"]
    assert (dice["dist"], dice["version"], dice["status"]) == (THIRD_PARTY, "1.0.0", "loaded")

    steps = [
        {"calls": [{"name": "roll_dice", "arguments": {"sides": 20}}]},
        {"text": "You rolled a 20."},
    ]
    out = _chat_through_fake_llm(published, home, steps, "Roll a d20")
    assert "You rolled a 20." in out
