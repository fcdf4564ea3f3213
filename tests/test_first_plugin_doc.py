"""docs/first-plugin.md as written, followed as a reader does: in an empty temporary folder and a
fresh virtual environment, every shell command of the page is run (``mkdir``, ``cd``,
``pip install -e .``, ``hermes ...``, ``pytest -q``) when the reader reaches it, the files are
written from the page's code blocks as the page says (step 1's module and ``pyproject.toml``,
step 6's whole module, step 7's guard, its config section and the new end of
``pyproject.toml``, step 8's tests), and what each command prints is compared with the page.

The virtual environment is made with ``--system-site-packages`` and sees the test
environment's packages, where hermes, ``hermes-hookspecs``, pip, pytest and the page's build back
end (setuptools) are installed, the way a reader has installed hermes before starting. pip runs with
the package index switched off and build isolation off, so nothing leaves this machine: the only
network traffic is step 3's chat with the fake model server on 127.0.0.1.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "first-plugin.md"
FENCE = re.compile(r"^(```+)\s*(\w*)\s*$")

SCRIPTS = {
    "hermes": "from hermes_core.cli import console_main as main",
    "pytest": "from pytest import console_main as main",
    "pip": "from pip._internal.cli.main import main",
}
"""The console scripts of hermes-framework, pytest and pip, as pip writes them into the
environment that installs them; an environment over another sees its packages but not these."""


EXAMPLE = "hermes-example-acme-weather"

OVER = """\
\"\"\"The test environment's site folder, after this environment's own, without {hidden}.\"\"\"
import os
import site
import sys

sys.path.append({site!r})
known = set(sys.path)
for name in sorted(os.listdir({site!r})):
    if name.endswith(".pth") and name not in {hidden!r}:
        site.addpackage({site!r}, name, known)
"""
"""A module run at the virtual environment's start (through a ``.pth`` file): it adds the test
environment's site folder as :func:`site.addsitedir` would, but for the example's path entry."""


@dataclass
class Block:
    """One fenced code block of the page: the step it is under, its language and its text."""

    step: str
    language: str
    body: str


def page_blocks() -> list[Block]:
    """Every code block of the page, in order, with the number of the step it is under."""
    blocks: list[Block] = []
    step = ""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        heading = re.match(r"^## (\d+)\. ", lines[i])
        if heading:
            step = heading.group(1)
        fence = FENCE.match(lines[i])
        if fence:
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != fence.group(1):
                body.append(lines[i])
                i += 1
            blocks.append(Block(step, fence.group(2), "\n".join(body) + "\n"))
        i += 1
    return blocks


def commands(console: str) -> list[tuple[str, list[str]]]:
    """``(command, the output lines the page shows for it)`` for each ``$`` line of a block."""
    found: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found and line.strip():
            found[-1][1].append(line)
    return found


def _words(line: str) -> list[str]:
    """A line's words, durations made alike (``0.13s``): columns are as wide as the longest
    name installed, and a run takes the time it takes."""
    return [re.sub(r"^\d+(\.\d+)?s$", "<seconds>", word) for word in line.split()]


def shows(printed: str, expected: list[str]) -> bool:
    """Whether ``printed`` has each line the page shows, in the page's order (other installed
    plugins and toolsets may be listed between them, as the page says)."""
    rows = iter([_words(line) for line in printed.splitlines()])
    return all(any(row == _words(line) for row in rows) for line in expected)


@dataclass
class Reader:
    """A person following the page: a shell's working folder, a virtual environment, a hermes
    home, and the files written so far."""

    root: Path
    venv: Path
    home: Path
    cwd: Path
    ran: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """The environment of every command: the virtual environment first on the PATH, pip
        kept off the network and off the machine's pip configuration."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "PIP_"))}
        env.pop("PYTHONPATH", None)
        env.pop("ACME_WEATHER_KEY", None)
        env.pop("ACME_WEATHER_DIR", None)
        env.update(
            HERMES_HOME=str(self.home),
            VIRTUAL_ENV=str(self.venv),
            PATH=os.pathsep.join([str(self.venv / "bin"), env.get("PATH", "")]),
            PIP_NO_INDEX="1",
            PIP_NO_BUILD_ISOLATION="0",  # pip's inverted switch: "0" turns isolation off
            PIP_CONFIG_FILE=os.devnull,
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        return env

    def run(self, command: str, expected: list[str], where: str) -> str:
        """Run ``command`` as a shell would, in the current folder; fail unless it succeeds and
        prints what the page shows. Its standard output."""
        self.ran.append(command)
        marker = self.root / ".cwd"
        script = f"cd {shlex.quote(str(self.cwd))}\n{command}\nstatus=$?\npwd > {marker}\n"
        done = subprocess.run(
            ["bash", "-c", script + "exit $status"],
            env=self.env(), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        self.cwd = Path(marker.read_text().strip())
        said = f"{where}: `{command}` exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert done.returncode == 0, said[-4000:]
        assert shows(done.stdout, expected), (
            f"{where}: the page shows\n"
            + "\n".join(expected)
            + f"\nbut `{command}` printed\n{done.stdout}"
        )
        return done.stdout

    def write(self, name: str, text: str) -> None:
        """Save a file of the project (in the folder step 1 made)."""
        path = self.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def make_venv(folder: Path) -> Path:
    """A fresh virtual environment over the test environment: ``--system-site-packages``, and
    the test environment's own site folder (with its editable installs) added after the
    environment's own, so what is installed into it comes first. Its pip, setuptools, pytest
    and hermes are the test environment's (no copy of pip of its own, whose bundled setuptools
    would shadow the one the page's build needs)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    # The repository's own example ships the same module and plugin names; a reader has not
    # installed it, so its path entry is left out and its distribution shadowed (one found
    # again later on the path is ignored).
    try:
        example = importlib.metadata.distribution(EXAMPLE).files or []
    except importlib.metadata.PackageNotFoundError:
        example = []
    hidden = sorted(f.name for f in example if f.suffix == ".pth")
    Path(site, "_over_test_environment.py").write_text(
        OVER.format(site=sysconfig.get_path("purelib"), hidden=hidden), encoding="utf-8"
    )
    Path(site, "zz_over_test_environment.pth").write_text("import _over_test_environment\n")
    shadow = Path(site, "hermes_example_acme_weather-0.dist-info")
    shadow.mkdir()
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-example-acme-weather\n")
    for name, source in SCRIPTS.items():
        script = folder / "bin" / name
        script.write_text(f"#!{python}\nimport sys\n{source}\nsys.exit(main())\n")
        script.chmod(0o755)
    return folder


@pytest.fixture
def reader(tmp_path: Path) -> Iterator[Reader]:
    """A reader at the start of the page, in an empty folder."""
    start = tmp_path / "work"
    start.mkdir()
    home = tmp_path / "hermes-home"
    home.mkdir()
    yield Reader(root=tmp_path, venv=make_venv(tmp_path / "venv"), home=home, cwd=start)


def test_every_shell_block_runs_as_written(reader: Reader, fake_llm) -> None:
    blocks = page_blocks()
    # step 3 needs a model provider set up; the fake model server plays it
    fake_llm.add(
        {"calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"text": "It is sunny in Paris."},
    )
    provider = (
        f"model:\n  provider: custom\n  base_url: {fake_llm.openai_base_url}\n  default: any\n"
    )
    (reader.home / "config.yaml").write_text(provider, encoding="utf-8")
    pyproject = ""
    guard: list[str] = []
    parts: list[Block] = []
    for block in blocks:
        where = f"step {block.step} ({block.language} block)"
        if block.language == "console":
            for command, expected in commands(block.body):
                reader.run(command, expected, f"step {block.step}")
        elif block.step == "1" and block.language == "python":
            reader.write("acme_weather.py", block.body)
        elif block.step == "1" and block.language == "toml":
            pyproject = block.body
            reader.write("pyproject.toml", pyproject)
        elif block.step == "6" and block.language == "python":
            reader.write("acme_weather.py", block.body)
        elif block.step == "7" and block.language == "python":
            guard.append(block.body)
            reader.write("acme_weather_guard.py", "\n\n".join(guard))
        elif block.step == "7" and block.language == "yaml":
            (reader.home / "config.yaml").write_text(provider + block.body, encoding="utf-8")
        elif block.step == "7" and block.language == "toml":
            pyproject = pyproject[: pyproject.index("[project.entry-points.hermes]")] + block.body
            reader.write("pyproject.toml", pyproject)
        elif block.step == "8" and block.language == "python":
            reader.write("tests/test_acme_weather.py", block.body)
        else:  # the parts steps 4 and 5 explain, shown whole in step 6
            assert block.step in {"4", "5"} and block.language == "python", where
            parts.append(block)
    # each part runs in the module it belongs to (a variant replaces the whole module's function)
    (whole,) = [b.body for b in blocks if b.step == "6" and b.language == "python"]
    module: dict[str, object] = {}
    exec(compile(whole, "acme_weather.py", "exec"), module)
    for part in parts:
        exec(compile(part.body, f"step {part.step}", "exec"), dict(module))
    every = [c for b in blocks if b.language == "console" for c, _ in commands(b.body)]
    assert reader.ran == every
    assert "pytest -q" in reader.ran and "pip install -e ." in reader.ran
    # step 3: the model was handed the tool's result, as the page tells
    answered = fake_llm.requests[-1].json["messages"][-1]
    assert answered["role"] == "tool" and answered["content"] == "Sunny in Paris"


def test_a_page_whose_output_differs_fails() -> None:
    printed = (
        "NAME  VERSION  DIST  STATUS  HOOKS\nweather  0.1.0  acme  loaded  register_toolsets\n"
    )
    assert shows(printed, ["NAME VERSION DIST STATUS HOOKS", "weather 0.1.0 acme loaded"]) is False
    assert shows(printed, ["weather  0.1.0  acme  loaded  register_toolsets"])
    assert not shows(printed, ["weather 0.1.0 acme loaded register_toolsets", "NAME VERSION"])
    assert shows("...   [100%]\n3 passed in 0.42s\n", ["...  [100%]", "3 passed in 0.13s"])
