"""A fast reader of installed entry points.

``importlib.metadata`` costs tens of milliseconds to import and scan, which is most of the
start-up budget of ``hermes --help``; this module reads the same ``entry_points.txt`` files
directly and reads a distribution's metadata only when it has an entry point in the group.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


class EntryPoint:
    """One entry point: ``name = module:attr`` in ``group``, from distribution ``dist``."""

    __slots__ = ("name", "value", "group", "dist", "version")

    def __init__(self, name: str, value: str, group: str, dist: str, version: str) -> None:
        self.name = name
        self.value = value
        self.group = group
        self.dist = dist
        self.version = version

    def __repr__(self) -> str:
        return f"EntryPoint({self.name!r}, {self.value!r}, dist={self.dist!r})"

    def load(self) -> Any:
        """Import the module and return the object the entry point names."""
        module_name, _, attrs = self.value.partition(":")
        obj: Any = importlib.import_module(module_name.strip())
        for attr in filter(None, attrs.strip().split(".")):
            obj = getattr(obj, attr)
        return obj


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


def _metadata(info_dir: str, folder: str) -> tuple[str, str]:
    name = version = ""
    for file in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(info_dir, file))
        if text is None:
            continue
        for line in text.splitlines():
            if not line:
                break
            if line.startswith("Name:"):
                name = line[5:].strip()
            elif line.startswith("Version:"):
                version = line[8:].strip()
        break
    if not name:  # fall back to the folder name: name-version.dist-info
        stem = folder.rsplit(".", 1)[0]
        name, _, version = stem.partition("-")
    return name, version


def scan(group: str, path: list[str] | None = None) -> list[EntryPoint]:
    """Entry points of ``group`` of every distribution on ``path`` (default ``sys.path``).

    As with ``importlib.metadata``, a distribution found again later on the path is ignored.
    """
    seen_dists: set[str] = set()
    found: list[EntryPoint] = []
    for entry in path if path is not None else sys.path:
        directory = entry or os.getcwd()
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for folder in names:
            if not (folder.endswith(".dist-info") or folder.endswith(".egg-info")):
                continue
            info_dir = os.path.join(directory, folder)
            key = folder.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("-", "_")
            key = key.replace(".", "_")
            if key in seen_dists:
                continue
            seen_dists.add(key)
            text = _read(os.path.join(info_dir, "entry_points.txt"))
            if not text or f"[{group}]" not in text:
                continue
            pairs = _section(text, group)
            if pairs:
                dist, version = _metadata(info_dir, folder)
                found.extend(EntryPoint(n, v, group, dist, version) for n, v in pairs)
    return found
