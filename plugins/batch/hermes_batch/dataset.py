"""Reading a dataset: one JSON object a line, streamed, each row with a stable id.

A row's id is its own ``id`` field when it has one, else ``line-N@HASH``: its line number in
the file and the first 12 hex digits of the file's SHA-256. Two rows with the same prompt are
two rows: nothing is ever de-duplicated by content. Two rows with the same ``id`` are an
error (the second could never be told apart from the first on resume): the run table finds
them as it reads the rows in, so that reading a dataset keeps no row in memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_hookspecs import HermesError

ROW_FIELDS = (
    "id",
    "prompt",
    "cwd",
    "files",
    "images",
    "image",
    "toolsets",
    "model",
    "metadata",
)
"""The fields a row may have; any other is kept in the row and ignored by the runner."""


@dataclass(frozen=True)
class Row:
    """One row of a dataset.

    :param key: its stable id (see the module's docstring).
    :param line: its line number in the dataset (1 for the first).
    :param data: the row as it is in the file.
    """

    key: str
    line: int
    data: dict[str, Any]


def dataset_hash(path: Path) -> str:
    """The SHA-256 of the file at ``path`` (hex), read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_row(data: Any, where: str) -> dict[str, Any]:
    """``data`` when it is a row hermes can run; else a one-line :class:`HermesError`."""
    if not isinstance(data, dict):
        raise HermesError(f"{where}: a row is a JSON object, not {type(data).__name__}")
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise HermesError(f"{where}: the row has no 'prompt' (a non-empty string)")
    if "id" in data and not isinstance(data["id"], (str, int)):
        raise HermesError(f"{where}: 'id' must be a string or a number")
    files = data.get("files")
    if files is not None and not (
        isinstance(files, dict) and all(isinstance(v, str) for v in files.values())
    ):
        raise HermesError(f"{where}: 'files' maps relative paths to their text")
    for name in ("images", "toolsets"):
        value = data.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise HermesError(f"{where}: {name!r} is a list of strings")
    if data.get("cwd") is not None and not isinstance(data["cwd"], str):
        raise HermesError(f"{where}: 'cwd' is a folder's path")
    image = data.get("image")
    if image is not None and not (isinstance(image, str) and image.strip()):
        raise HermesError(f"{where}: 'image' is a Docker image's name (a non-empty string)")
    return data


def read_rows(path: Path, digest: str) -> Iterator[Row]:
    """The rows of the dataset at ``path`` (whose hash is ``digest``), one at a time: blank
    lines are skipped (they keep their line numbers), a malformed line is a
    :class:`HermesError` naming the line."""
    short = digest[:12]
    with path.open("r", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HermesError(f"{where}: not valid JSON ({exc.msg})") from None
            data = check_row(data, where)
            key = str(data["id"]) if "id" in data else f"line-{number}@{short}"
            yield Row(key=key, line=number, data=data)
