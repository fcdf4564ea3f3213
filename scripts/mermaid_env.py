"""The Mermaid library, installed from the npm registry into a folder reused by every test run,
for the test that renders each diagram of the docs in a headless Chromium.

    python scripts/mermaid_env.py      install it when missing, print the path of its bundle

The package is installed once under ``$HERMES_TEST_CACHE`` (default
``~/.cache/hermes-framework-tests``) with npm, at the pinned :data:`VERSION`; ``.ci/run``
installs it before the tests on a fresh machine. Only the package's self-contained browser
bundle (``dist/mermaid.min.js``) is used: the page that renders the diagrams loads that one file,
so nothing is fetched while the tests run. No browser is downloaded: the test drives Debian's
Chromium.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tool_cache import InstallError, cache_dir, install_once, is_complete

PACKAGE = "mermaid"
VERSION = "11.17.2"
"""The Mermaid release the diagrams are checked with (the major version the docs' readers'
renderers use)."""

BUNDLE = Path("node_modules") / PACKAGE / "dist" / "mermaid.min.js"
"""Where, under the install folder, the browser bundle lies."""

__all__ = ["InstallError", "ensure", "install_dir", "installed"]


def install_dir(cache: Path | None = None) -> Path:
    """The folder npm installs :data:`VERSION` into."""
    return (cache or cache_dir()) / f"{PACKAGE}-{VERSION}"


def installed(cache: Path | None = None) -> Path | None:
    """The bundle's path when a complete install is there, else None (nothing is installed)."""
    folder = install_dir(cache)
    if is_complete(folder) and (folder / BUNDLE).is_file():
        return folder / BUNDLE
    return None


def ensure(cache: Path | None = None, timeout: float = 600.0) -> Path:
    """The path of ``mermaid.min.js`` of ``mermaid@VERSION``, installed with npm when missing
    (one process at a time: others wait for it).

    :raises InstallError: npm is missing or the install failed.
    """
    found = installed(cache)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (apt-get install npm)")
    folder = install_dir(cache)
    command = [
        npm, "install", "--prefix", str(folder), "--no-save", "--no-package-lock",
        "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", f"{PACKAGE}@{VERSION}",
    ]  # fmt: skip
    install_once(folder, f"{PACKAGE}@{VERSION}", [(command, timeout)], folder / BUNDLE)
    return folder / BUNDLE


def main() -> int:
    """Install when missing and print the bundle's path; one line and 1 on failure."""
    try:
        print(ensure())
    except InstallError as exc:
        print(f"mermaid_env: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
