"""The secrets hermes knows, by class: one list (``secret_classes.toml``, data) that the sandbox
and the command policy both read.

The sandbox hides every path of :func:`home_paths` from commands; the command policy gives a
path the class whose :attr:`SecretClass.pattern` it matches and asks before a command reads or
writes it. A new kind of secret is one entry of the file, and both follow.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SecretClass", "home_paths", "secret_classes", "toolchain_paths"]


@dataclass(frozen=True)
class SecretClass:
    """One class of secrets.

    :param name: the class's name (``ssh-key``, ``credentials``...), as the policy names it.
    :param about: what the class holds, in a few words.
    :param home: paths under the home folder (without ``~/``) that hold such secrets.
    :param pattern: a regular expression over a path (``~`` for the home folder) that matches
        the files of the class.
    """

    name: str
    about: str
    home: tuple[str, ...]
    pattern: str


@cache
def _data() -> dict[str, Any]:
    text = (resources.files(__package__) / "secret_classes.toml").read_text("utf-8")
    return tomllib.loads(text)


@cache
def secret_classes() -> tuple[SecretClass, ...]:
    """Every class of ``secret_classes.toml``, in the file's order (read once; a malformed
    entry is a :class:`ValueError`)."""
    out: list[SecretClass] = []
    for i, item in enumerate(_data().get("class", [])):
        name, about, home, pattern = (item.get(k) for k in ("name", "about", "home", "pattern"))
        where = f"secret_classes.toml: class {i + 1}"
        if not isinstance(name, str) or not name or not isinstance(about, str):
            raise ValueError(f"{where}: name and about must be text")
        if not isinstance(home, list) or not all(isinstance(p, str) and p for p in home):
            raise ValueError(f"{where} ({name}): home must be a list of paths")
        if any(p.startswith(("/", "~")) or ".." in p.split("/") for p in home):
            raise ValueError(f"{where} ({name}): home paths are relative to the home folder")
        if not isinstance(pattern, str):
            raise ValueError(f"{where} ({name}): pattern must be a regular expression")
        re.compile(pattern)
        out.append(SecretClass(name, about, tuple(home), pattern))
    return tuple(out)


def home_paths() -> tuple[str, ...]:
    """Every path of the home folder (without ``~/``) that holds a known secret, each once."""
    return tuple(dict.fromkeys(p for c in secret_classes() for p in c.home))


@cache
def toolchain_paths() -> tuple[str, ...]:
    """The paths of the home folder (without ``~/``; ``*`` a pattern) a command may see besides
    the workspace: the toolchains and package caches ordinary work reads, none holding a secret
    of :func:`secret_classes` (a :class:`ValueError` when one does)."""
    paths = _data().get("toolchains", {}).get("home", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise ValueError("secret_classes.toml: toolchains.home must be a list of paths")
    for path in paths:
        for c in secret_classes():
            if re.search(c.pattern, "~/" + path) or any(
                h == path or h.startswith(path.rstrip("*") + "/") for h in c.home
            ):
                raise ValueError(f"secret_classes.toml: toolchain path {path} holds {c.name}")
    return tuple(paths)
