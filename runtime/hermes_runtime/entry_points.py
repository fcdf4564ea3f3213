"""A fast reader of installed entry points, shared by the core and plugins.

``importlib.metadata`` costs tens of milliseconds to import and scan, which is most of the
start-up budget of ``hermes --help``; this module reads the same ``entry_points.txt`` files
directly and reads a distribution's metadata only when it has an entry point in the group.
What it read is kept for the process, so the core's scan of group ``hermes`` and a plugin's of
another group (the Hermes agent plugins' group) read the installed distributions once; a
folder on the path whose modification time changed (a distribution installed or removed) is
read again.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Any

_Dist = tuple[str, str, str | None]
"""One distribution folder: its name key, its path, the text of its ``entry_points.txt``."""

_folders: dict[str, tuple[int, list[_Dist]]] = {}
_headers: dict[str, dict[str, str]] = {}
_lock = threading.Lock()

HEADER_FIELDS = ("Name", "Version", "Summary", "Author")
"""The fields of a distribution's metadata :meth:`EntryPoint.metadata` holds."""


class EntryPoint:
    """One entry point: ``name = module:attr`` in ``group``, from distribution ``dist``."""

    __slots__ = ("name", "value", "group", "dist", "version", "info_dir")

    def __init__(
        self, name: str, value: str, group: str, dist: str, version: str, info_dir: str = ""
    ) -> None:
        self.name = name
        self.value = value
        self.group = group
        self.dist = dist
        self.version = version
        self.info_dir = info_dir

    def __repr__(self) -> str:
        return f"EntryPoint({self.name!r}, {self.value!r}, dist={self.dist!r})"

    def load(self) -> Any:
        """Import the module and return the object the entry point names."""
        module_name, _, attrs = self.value.partition(":")
        obj: Any = importlib.import_module(module_name.strip())
        for attr in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, attr)
        return obj

    def metadata(self) -> dict[str, str]:
        """The distribution's ``Name``, ``Version``, ``Summary`` and ``Author`` (those it
        declares)."""
        return dict(_read_headers(self.info_dir)) if self.info_dir else {}


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def _section(text: str, group: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            if inside:
                break
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip()))
    return found


def _read_headers(info_dir: str) -> dict[str, str]:
    known = _headers.get(info_dir)
    if known is not None:
        return known
    found: dict[str, str] = {}
    for file in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(info_dir, file))
        if text is None:
            continue
        for line in text.splitlines():
            if not line:
                break
            field, sep, value = line.partition(":")
            if sep and field in HEADER_FIELDS and field not in found:
                found[field] = value.strip()
        break
    _headers[info_dir] = found
    return found


def _metadata(info_dir: str, folder: str) -> tuple[str, str]:
    headers = _read_headers(info_dir)
    name, version = headers.get("Name", ""), headers.get("Version", "")
    if not name:  # fall back to the folder name: name-version.dist-info
        stem = folder.rsplit(".", 1)[0]
        name, _, version = stem.partition("-")
    return name, version


def _distributions(directory: str) -> list[_Dist]:
    """The distribution folders in ``directory``, read once while it does not change."""
    try:
        stamp = os.stat(directory).st_mtime_ns
    except OSError:
        return []
    known = _folders.get(directory)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found: list[_Dist] = []
    for folder in names:
        if not (folder.endswith(".dist-info") or folder.endswith(".egg-info")):
            continue
        info_dir = os.path.join(directory, folder)
        key = folder.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("-", "_")
        text = _read(os.path.join(info_dir, "entry_points.txt"))
        found.append((key.replace(".", "_"), info_dir, text))
    _folders[directory] = (stamp, found)
    return found


def forget() -> None:
    """Read every distribution again on the next scan (after installing one into the running
    process: a folder's modification time may not show a change made within the same tick)."""
    with _lock:
        _folders.clear()
        _headers.clear()


def scan(group: str, path: list[str] | None = None) -> list[EntryPoint]:
    """Entry points of ``group`` of every distribution on ``path`` (default ``sys.path``).

    As with ``importlib.metadata``, a distribution found again later on the path is ignored.
    """
    seen_dists: set[str] = set()
    found: list[EntryPoint] = []
    with _lock:
        for entry in path if path is not None else sys.path:
            for key, info_dir, text in _distributions(entry or os.getcwd()):
                if key in seen_dists:
                    continue
                seen_dists.add(key)
                if not text or f"[{group}]" not in text:
                    continue
                pairs = _section(text, group)
                if pairs:
                    dist, version = _metadata(info_dir, os.path.basename(info_dir))
                    found.extend(EntryPoint(n, v, group, dist, version, info_dir) for n, v in pairs)
    return found
