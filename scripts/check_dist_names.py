"""Check every distribution name of this repository against the package registry (PyPI).

Every ``pyproject.toml`` in the checkout declares one distribution. For each name the script asks
``https://pypi.org/pypi/NAME/json``: 404 means the name is free, 200 means a project of that name
exists; it is ours when its project URLs point at this repository (after we publish), and taken
otherwise. ``--record`` writes the result to ``scripts/dist_names.txt``, the list of names
checked, which ``tests/test_packaging.py`` compares with the names in the repository: a new or
renamed distribution fails that test until its name has been checked here.

Usage: python scripts/check_dist_names.py [--record]
Exits 1 when a name is taken by another project or the registry cannot be asked.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = Path(__file__).resolve().parent / "dist_names.txt"
REGISTRY = "https://pypi.org/pypi/{name}/json"
REPOSITORY = "https://github.com/hermes-framework/hermes"
SKIPPED_DIRS = {".git", ".tox", ".venv", "venv", "build", "dist", "node_modules", "__pycache__"}


def find_dists(root: Path = ROOT) -> dict[str, Path]:
    """Every distribution in the checkout: its name mapped to its folder."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("pyproject.toml")):
        if SKIPPED_DIRS & set(path.relative_to(root).parts[:-1]):
            continue
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project")
        if project and "name" in project:
            found[project["name"]] = path.parent
    return found


def read_record(path: Path = RECORD) -> dict[str, tuple[str, str]]:
    """The recorded checks: name -> (status, date)."""
    record = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, status, date = line.split()
            record[name] = (status, date)
    return record


def registry_status(name: str, timeout: float = 20.0) -> str:
    """``free``, ``ours`` or ``taken``: what the registry holds under ``name``."""
    request = urllib.request.Request(REGISTRY.format(name=name), headers={"Accept": "json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            info = json.load(response)["info"]
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return "free"
        raise
    urls = [info.get("home_page") or "", *(info.get("project_urls") or {}).values()]
    return "ours" if any(u.startswith(REPOSITORY) for u in urls) else "taken"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help=f"write {RECORD.name}")
    args = parser.parse_args()
    today = dt.date.today().isoformat()
    results: dict[str, str] = {}
    for name, folder in find_dists().items():
        try:
            results[name] = registry_status(name)
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            print(f"cannot ask the registry about {name}: {exc}", file=sys.stderr)
            return 1
        print(f"{results[name]:<6} {name:<34} {folder.relative_to(ROOT).as_posix() or '.'}")
    taken = sorted(n for n, s in results.items() if s == "taken")
    if args.record:
        lines = [
            "# Distribution names checked against https://pypi.org/pypi/NAME/json",
            "# by scripts/check_dist_names.py --record: name, result, date of the check.",
            *(f"{name} {status} {today}" for name, status in sorted(results.items())),
        ]
        RECORD.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"recorded in {RECORD.relative_to(ROOT)}")
    if taken:
        print(f"taken by other projects: {', '.join(taken)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
