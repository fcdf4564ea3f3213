"""docs/first-plugin.md as written: the plugin is assembled from its code blocks (step 6's whole
module, step 7's guard with its config hook and the entry points, step 8's tests), put on the path
with the entry points its ``pyproject.toml`` declares, and step 8's test file is run with pytest
and ``hermes plugins list`` compared with the page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "first-plugin.md"
FENCE = re.compile(r"^(```+)\s*(\w*)\s*$")


def _sections() -> dict[str, list[tuple[str, str]]]:
    """``{"6": [(language, body), ...], ...}``: the code blocks under each numbered step."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = ""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        heading = re.match(r"^## (\d+)\. ", lines[i])
        if heading:
            current = heading.group(1)
        fence = FENCE.match(lines[i])
        if fence:
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != fence.group(1):
                body.append(lines[i])
                i += 1
            sections.setdefault(current, []).append((fence.group(2), "\n".join(body) + "\n"))
        i += 1
    return sections


def _blocks(sections: dict[str, list[tuple[str, str]]], step: str, language: str) -> list[str]:
    return [body for lang, body in sections[step] if lang == language]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(project folder, site folder, the page's step-7 ``hermes plugins list`` output)."""
    sections = _sections()
    project = tmp_path_factory.mktemp("acme-hermes-weather")
    (whole,) = _blocks(sections, "6", "python")
    (project / "acme_weather.py").write_text(whole)
    guard, config_hook = _blocks(sections, "7", "python")
    (project / "acme_weather_guard.py").write_text(guard + "\n\n" + config_hook)
    (pyproject,) = _blocks(sections, "1", "toml")
    (ending,) = _blocks(sections, "7", "toml")
    pyproject = pyproject[: pyproject.index("[project.entry-points.hermes]")] + ending
    (project / "pyproject.toml").write_text(pyproject)
    (test_file,) = _blocks(sections, "8", "python")
    (project / "tests").mkdir()
    (project / "tests" / "test_acme_weather.py").write_text(test_file)
    # what `pip install -e .` makes of this pyproject: the modules on the path and a dist-info
    # holding the distribution's name, version and entry points
    meta = tomllib.loads(pyproject)["project"]
    site = tmp_path_factory.mktemp("site")
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    points = meta["entry-points"]["hermes"]
    (info / "entry_points.txt").write_text(
        "[hermes]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
    )
    for module in ("acme_weather.py", "acme_weather_guard.py"):
        (site / module).write_text((project / module).read_text())
    # the repository's own example ships the same plugin names: a reader has not installed it,
    # so it is shadowed here (a distribution found again later on the path is ignored)
    shadow = site / "hermes_example_acme_weather-0.dist-info"
    shadow.mkdir()
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-example-acme-weather\n")
    (console,) = [b for lang, b in sections["7"] if lang == "console"]
    return project, site, console


def _env(site: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return env


def test_step_8_tests_pass_against_the_modules_of_steps_6_and_7(plugin, tmp_path):
    project, site, _ = plugin
    run = subprocess.run(
        [sys.executable, "-c", f"import site; site.addsitedir({str(site)!r}); "
         "import pytest, sys; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests']))"],
        cwd=project, env=_env(site, tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout


def test_hermes_plugins_list_shows_what_step_7_shows(plugin, tmp_path):
    project, site, console = plugin
    run = subprocess.run(
        [sys.executable, "-c", f"import site; site.addsitedir({str(site)!r}); "
         "import sys; from hermes_core.cli import main; sys.exit(main())",
         "plugins", "list"],
        cwd=project, env=_env(site, tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    shown = {line.split()[0]: line.split() for line in run.stdout.splitlines()[1:] if line}
    for line in console.splitlines():
        if line.startswith(("weather ", "weather_guard ")):
            expected = line.split()
            assert shown[expected[0]] == expected, run.stdout
