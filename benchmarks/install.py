"""Wall time and package count of the README set-up, into a fresh virtual environment.

The README set-up is ``python3 -m venv .venv && pip install -r requirements.txt`` run at the
root of the checkout. This script runs exactly that (``--requirements`` picks another file),
each time into a new virtual environment in a temporary folder outside the checkout, and prints
the median wall time of several runs. One untimed run comes first so that pip's cache is warm:
the figure is the time a user waits on the second set-up, not the download time of their
network. The package count is what ``pip list`` shows in the new environment, without pip and
setuptools (they come with ``venv``), split into this project's distributions and third-party
ones.

Usage: python benchmarks/install.py [--runs 3] [--requirements requirements.txt]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = {"pip", "setuptools", "wheel"}


def own_dist_names() -> set[str]:
    """Normalised names of every distribution whose pyproject.toml is in this checkout."""
    import tomllib

    names = set()
    for path in ROOT.rglob("pyproject.toml"):
        if any(part.startswith(".") or part in {"build", "dist"} for part in path.parts):
            continue
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
        if "name" in project:
            names.add(project["name"].lower().replace("_", "-"))
    return names


def one_setup(requirements: Path, workdir: Path) -> tuple[float, float, list[str]]:
    """Create a venv and install ``requirements`` into it; (venv s, pip s, installed names)."""
    venv = workdir / "venv"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    made = time.perf_counter()
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(requirements)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    finished = time.perf_counter()
    if done.returncode != 0:
        sys.exit(f"pip install -r {requirements.name} failed:\n{done.stderr[-3000:]}")
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = sorted(p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout))
    return made - started, finished - made, [n for n in names if n not in BOOTSTRAP]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requirements", default="requirements.txt")
    args = parser.parse_args()
    requirements = (ROOT / args.requirements).resolve()
    ours = own_dist_names()
    totals, pips = [], []
    names: list[str] = []
    for run in range(args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="hermes-install-bench-") as tmp:
            venv_s, pip_s, names = one_setup(requirements, Path(tmp))
        if run == 0:
            continue  # warms pip's cache (wheels of third-party packages, build back ends)
        totals.append(venv_s + pip_s)
        pips.append(pip_s)
    own = [n for n in names if n in ours]
    third = [n for n in names if n not in ours]
    print(f"README set-up ({requirements.name}), median of {args.runs} runs, warm pip cache")
    print(
        f"  venv + pip install  {statistics.median(totals):6.1f} s"
        f"   ({min(totals):.1f} / {max(totals):.1f})"
    )
    print(f"  pip install alone   {statistics.median(pips):6.1f} s")
    print(f"  packages            {len(names):4d}   (hermes {len(own)}, third-party {len(third)})")
    print(f"  hermes:      {' '.join(own)}")
    print(f"  third-party: {' '.join(third)}")


if __name__ == "__main__":
    main()
