"""The two memory files and every change to them: parsing, limits, atomic locked writes.

A store is a markdown file of entries separated by a line holding only ``§``::

    The user's main project is a Rust CLI called tern.
    §
    Tests run with `just test`; `cargo test` misses the integration suite.

A file without any ``§`` line (written by hand, or by another tool) still loads: its paragraphs
(blocks separated by blank lines) are the entries, a paragraph made only of list items gives one
entry per item, and a file with no blank line at all gives one entry per line. The first change
made through the tool rewrites it in the ``§`` form, keeping every entry's text.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEPARATOR = "§"
"""The line that separates two entries."""

JOINER = f"\n{SEPARATOR}\n"

TARGETS: dict[str, str] = {"memory": "MEMORY.md", "user": "USER.md"}
"""Tool target -> file name inside ``$HERMES_HOME/memories``."""

DEFAULT_LIMITS: dict[str, int] = {"memory": 2200, "user": 1375}
LIMIT_KEYS: dict[str, str] = {"memory": "memory_char_limit", "user": "user_char_limit"}

LABELS: dict[str, str] = {
    "memory": "MEMORY (your notes)",
    "user": "USER PROFILE (what you know about the user)",
}

LOCK_NAME = ".lock"
LOCK_TIMEOUT = 10.0
"""Seconds to wait for another process to finish its write before giving up."""

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


class MemoryStoreError(Exception):
    """A change that cannot be made; the message is written for the model (or the user).

    ``has_usage`` tells that the message already reports the store's usage.
    """

    def __init__(self, message: str, *, has_usage: bool = False) -> None:
        super().__init__(message)
        self.has_usage = has_usage


# --- locations and settings -------------------------------------------------------------------


def memories_dir(home: Path) -> Path:
    """``<home>/memories``."""
    return home / "memories"


def limits_from_config(config: Mapping[str, Any] | None) -> dict[str, int]:
    """The character limits, from the ``memory`` section of the configuration."""
    section = (config or {}).get("memory") or {}
    limits = dict(DEFAULT_LIMITS)
    if isinstance(section, Mapping):
        for target, key in LIMIT_KEYS.items():
            value = section.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                limits[target] = value
    return limits


def enabled_from_config(config: Mapping[str, Any] | None) -> dict[str, bool]:
    """Which stores are shown in the prompt (``memory.memory_enabled``,
    ``memory.user_profile_enabled``; both default to true)."""
    section = (config or {}).get("memory") or {}
    if not isinstance(section, Mapping):
        section = {}
    return {
        "memory": section.get("memory_enabled", True) is not False,
        "user": section.get("user_profile_enabled", True) is not False,
    }


# --- parsing and rendering --------------------------------------------------------------------


def parse_entries(text: str) -> list[str]:
    """The entries of a memory file (see the module docstring for the accepted forms)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    lines = text.split("\n")
    if any(line.strip() == SEPARATOR for line in lines):
        entries: list[str] = []
        chunk: list[str] = []
        for line in lines:
            if line.strip() == SEPARATOR:
                entries.append("\n".join(chunk).strip())
                chunk = []
            else:
                chunk.append(line)
        entries.append("\n".join(chunk).strip())
        return [e for e in entries if e]
    stripped = text.strip()
    if not stripped:
        return []
    paragraphs = _BLANK_LINES.split(stripped)
    if len(paragraphs) == 1:
        return [line.strip() for line in stripped.split("\n") if line.strip()]
    entries = []
    for paragraph in paragraphs:
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        rows = [line for line in paragraph.split("\n") if line.strip()]
        if len(rows) > 1 and all(_LIST_ITEM.match(row) for row in rows):
            entries.extend(row.strip() for row in rows)
        else:
            entries.append(paragraph)
    return entries


def render(entries: list[str]) -> str:
    """The entries as they are stored and shown (without the file's final newline)."""
    return JOINER.join(entries)


def fmt(n: int) -> str:
    """``1234`` -> ``1,234``."""
    return f"{n:,}"


def usage(used: int, limit: int) -> str:
    """``1,234/2,200 chars``."""
    return f"{fmt(used)}/{fmt(limit)} chars"


def percent(used: int, limit: int) -> int:
    """Share of the limit in use, rounded."""
    return round(100 * used / limit) if limit else 0


def header(target: str, used: int, limit: int) -> str:
    """``MEMORY (your notes) [35% — 780/2,200 chars]``."""
    return f"{LABELS[target]} [{percent(used, limit)}% — {usage(used, limit)}]"


def preview(entry: str, width: int = 80) -> str:
    """One line of an entry, shortened for a list of candidates."""
    flat = " ".join(entry.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def numbered(entries: list[str]) -> str:
    """``1. first entry`` lines, shortened."""
    return "\n".join(f"{i}. {preview(e)}" for i, e in enumerate(entries, 1))


# --- files ---------------------------------------------------------------------------------


def read_text(path: Path, *, strict: bool) -> str:
    """The file's text, ``""`` when missing. With ``strict``, undecodable bytes are an error
    (so a write never destroys what it could not read); otherwise they are replaced."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise MemoryStoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if strict:
            raise MemoryStoreError(
                f"{path} is not valid UTF-8; nothing was changed. "
                "Fix it with `hermes memory edit` or remove the bad bytes."
            ) from exc
        return data.decode("utf-8", errors="replace")


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step: a reader sees the old file or the new one,
    never a part of either. The temporary file is removed when anything fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp_name, path.stat().st_mode & 0o777)  # keep the mode of an existing file
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


@contextlib.contextmanager
def locked(folder: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock of ``folder`` (a ``.lock`` file in it) against other processes
    and threads; give up with an error after ``timeout`` seconds (:data:`LOCK_TIMEOUT`)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a+b") as handle:
        _acquire(handle.fileno(), LOCK_TIMEOUT if timeout is None else timeout, folder)
        try:
            yield
        finally:
            _release(handle.fileno())


try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # the module or None: checked before each use


def _acquire(fd: int, timeout: float, folder: Path) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                import msvcrt

                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return
        except OSError:
            if time.monotonic() >= deadline:
                raise MemoryStoreError(
                    f"memory is locked by another process ({folder / LOCK_NAME}); "
                    "try again in a moment"
                ) from None
            time.sleep(0.01)


def _release(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:  # pragma: no cover - Windows
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


# --- the store ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """A store's entries as read at one moment."""

    target: str
    entries: list[str]
    limit: int

    @property
    def text(self) -> str:
        """The entries as stored."""
        return render(self.entries)

    @property
    def used(self) -> int:
        """Characters in use."""
        return len(self.text)

    def summary(self) -> str:
        """``MEMORY.md: 3 entries, 780/2,200 chars (35%)``."""
        count = len(self.entries)
        noun = "entry" if count == 1 else "entries"
        return (
            f"{TARGETS[self.target]}: {count} {noun}, {usage(self.used, self.limit)} "
            f"({percent(self.used, self.limit)}%)"
        )


class MemoryStore:
    """``MEMORY.md`` and ``USER.md`` of one hermes home."""

    def __init__(self, home: Path, limits: Mapping[str, int] | None = None) -> None:
        self.home = Path(home)
        self.folder = memories_dir(self.home)
        self.limits = {**DEFAULT_LIMITS, **(limits or {})}

    def path(self, target: str) -> Path:
        """The file of ``target``."""
        return self.folder / TARGETS[target]

    def snapshot(self, target: str, *, strict: bool = False) -> Snapshot:
        """The entries of ``target`` now."""
        text = read_text(self.path(target), strict=strict)
        return Snapshot(target, parse_entries(text), self.limits[target])

    # -- changes (each one read, checked and written under the lock) --

    def add(self, target: str, content: str) -> tuple[str, Snapshot]:
        """Append an entry; an identical entry is not added twice."""
        content = clean_content(content)
        with locked(self.folder):
            current = self.snapshot(target, strict=True)
            if content in current.entries:
                return "already present, nothing changed", current
            new = self._checked(current, [*current.entries, content])
            self._write(new)
        return "added", new

    def replace(self, target: str, old_text: str, content: str) -> tuple[str, Snapshot]:
        """Replace the one entry that contains ``old_text`` with ``content``."""
        content = clean_content(content)
        with locked(self.folder):
            current = self.snapshot(target, strict=True)
            index = find_entry(current, old_text)
            entries = list(current.entries)
            entries[index] = content
            if content in current.entries and current.entries.index(content) != index:
                del entries[index]  # it became a duplicate of another entry
            new = self._checked(current, entries)
            self._write(new)
        return "replaced", new

    def remove(self, target: str, old_text: str) -> tuple[str, Snapshot]:
        """Remove the one entry that contains ``old_text``."""
        with locked(self.folder):
            current = self.snapshot(target, strict=True)
            index = find_entry(current, old_text)
            entries = list(current.entries)
            del entries[index]
            new = Snapshot(target, entries, current.limit)
            self._write(new)
        return "removed", new

    def set_text(self, target: str, text: str, expected: str | None = None) -> Snapshot:
        """Replace the whole store with ``text`` (``hermes memory edit``); no limit check.

        With ``expected``, refuse when the file no longer holds that text (someone else wrote
        it meanwhile)."""
        new = Snapshot(target, parse_entries(text), self.limits[target])
        with locked(self.folder):
            if expected is not None and read_text(self.path(target), strict=False) != expected:
                raise MemoryStoreError(f"{self.path(target)} changed while it was being edited")
            self._write(new)
        return new

    def clear(self, target: str) -> None:
        """Delete the store's file."""
        with locked(self.folder), contextlib.suppress(FileNotFoundError):
            self.path(target).unlink()

    def _checked(self, current: Snapshot, entries: list[str]) -> Snapshot:
        new = Snapshot(current.target, entries, current.limit)
        if new.used > new.limit and new.used > current.used:
            over = new.used - new.limit
            listing = numbered(current.entries) or "(none)"
            raise MemoryStoreError(
                f"{TARGETS[current.target]} would be {usage(new.used, new.limit)}, "
                f"{fmt(over)} over the limit; nothing was saved. Shorten or merge entries "
                f"(action replace) or remove some (action remove) first. Current entries "
                f"({usage(current.used, current.limit)}):\n{listing}",
                has_usage=True,
            )
        return new

    def _write(self, snapshot: Snapshot) -> None:
        text = snapshot.text
        atomic_write(self.path(snapshot.target), text + "\n" if text else "")


def clean_content(content: Any) -> str:
    """The text of a new entry, stripped; refuses empty text and separator lines."""
    text = str(content or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise MemoryStoreError("content is empty; give the text of the entry")
    if any(line.strip() == SEPARATOR for line in text.split("\n")):
        raise MemoryStoreError(
            f"content must not contain a line holding only {SEPARATOR!r}: it separates entries"
        )
    return text


def find_entry(snapshot: Snapshot, old_text: Any) -> int:
    """The index of the one entry ``old_text`` designates, or an error listing candidates.

    An entry equal to ``old_text`` wins; otherwise the entries that contain it must be exactly
    one (or several copies of the same text)."""
    needle = str(old_text or "").strip()
    name = TARGETS[snapshot.target]
    if not needle:
        raise MemoryStoreError("old_text is empty; quote part of the entry to change")
    entries = snapshot.entries
    exact = [i for i, e in enumerate(entries) if e == needle]
    if exact:
        return exact[0]
    matches = [i for i, e in enumerate(entries) if needle in e]
    if not matches:
        listing = numbered(entries) or "(the file is empty)"
        raise MemoryStoreError(
            f"no entry of {name} contains {preview(needle, 60)!r}. Entries:\n{listing}"
        )
    if len({entries[i] for i in matches}) > 1:
        listing = "\n".join(f"{n}. {preview(entries[i])}" for n, i in enumerate(matches, 1))
        raise MemoryStoreError(
            f"{preview(needle, 60)!r} matches {len(matches)} entries of {name}; "
            f"quote more of the one you mean:\n{listing}"
        )
    return matches[0]
