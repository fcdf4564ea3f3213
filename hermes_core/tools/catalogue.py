"""The catalogue of deferred tools: a compact listing for the model (name and one line each)
and a ranked search over names, descriptions and parameter names (BM25 of SQLite's full-text
search, FTS5, indexed once per catalogue)."""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_hookspecs import Tool

LINE_CHARS = 56
"""The longest one-line description the listing shows for a tool."""

_WORD = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Za-z][a-z]*|\d+")
_WEIGHTS = "3.0, 1.0, 1.0, 1.5"
"""BM25 weights of the name, toolset, description and parameter-name fields."""
_STOP = frozenset(
    "a an and are as at be by for from in into is it its of on or that the this to with "
    "you your will can may".split()
)


@dataclass(frozen=True)
class Entry:
    """One deferred tool as the catalogue holds it."""

    name: str
    line: str
    """Its one-line description."""
    toolset: str
    tool: Tool


def words(text: str) -> list[str]:
    """The search words of ``text``: lower case, names split at ``_``, ``-`` and case changes,
    common short words left out, a plural ``s`` dropped (``issues`` is ``issue``)."""
    return [term for term in map(_term, _WORD.findall(text)) if term]


@functools.lru_cache(maxsize=16384)
def _term(word: str) -> str:
    """The search word of one word of text; empty for a common short word."""
    word = word.lower()
    if word in _STOP:
        return ""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def one_line(description: str, limit: int = LINE_CHARS) -> str:
    """The first sentence of ``description`` on one line, cut at a word to ``limit`` chars."""
    text = " ".join(description.split())
    match = re.search(r"(?<=[.!?])\s", text)
    if match is not None:
        text = text[: match.start()]
    if len(text) <= limit:
        return text.rstrip(".")
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:.") + "…"


def shared_prefix(names: Sequence[str]) -> str:
    """The prefix up to an ``_`` that every name of ``names`` (two or more) starts with."""
    if len(names) < 2:
        return ""
    first, last = min(names), max(names)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    cut = first[:size].rfind("_")
    return first[: cut + 1] if cut > 0 else ""


def parameter_names(schema: Any) -> list[str]:
    """The property names of a JSON schema, nested objects and array items included."""
    names: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        props = node.get("properties")
        if isinstance(props, dict):
            names.extend(str(k) for k in props)
            stack.extend(props.values())
        stack.append(node.get("items"))
    return names


class Catalogue:
    """The deferred tools of one agent, searchable; built once per agent (session).

    :param entries: the tools, each with its toolset; listed and searched in name order.
    """

    def __init__(self, entries: Iterable[tuple[Tool, str]]) -> None:
        ordered = sorted(entries, key=lambda pair: pair[0].name)
        self.entries: dict[str, Entry] = {
            tool.name: Entry(tool.name, one_line(tool.description), toolset, tool)
            for tool, toolset in ordered
        }
        self._names: list[str] = list(self.entries)
        self._index: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def get(self, name: str) -> Entry | None:
        """The entry of tool ``name``, if deferred."""
        return self.entries.get(name)

    def listing(self) -> str:
        """The compact listing the model reads: per toolset, the prefix its tools' names
        share, then one line per tool (its name without that prefix, and its one line)."""
        lines: list[str] = []
        by_toolset: dict[str, list[Entry]] = {}
        for entry in self.entries.values():
            by_toolset.setdefault(entry.toolset, []).append(entry)
        for toolset in sorted(by_toolset):
            group = by_toolset[toolset]
            prefix = shared_prefix([e.name for e in group])
            lines.append(f"[{toolset}] {prefix}*" if prefix else f"[{toolset}]")
            for e in group:
                short = e.name[len(prefix) :]
                lines.append(f"{short}: {e.line}" if e.line else short)
        return "\n".join(lines)

    def resolve(self, name: str) -> str | None:
        """The full name of the tool ``name`` stands for: itself, or the one tool whose name
        ends with ``_`` + ``name`` (a name read without its toolset's prefix)."""
        if name in self.entries:
            return name
        found = [n for n in self._names if n.endswith("_" + name)] if name else []
        return found[0] if len(found) == 1 else None

    def _fts(self) -> sqlite3.Connection:
        """The full-text index of the catalogue (SQLite FTS5, in memory), built at the first
        search: one row a tool, its words by field."""
        with self._lock:
            if self._index is None:
                index = sqlite3.connect(":memory:", check_same_thread=False)
                index.execute(
                    "CREATE VIRTUAL TABLE tools USING fts5(name, toolset, description, params)"
                )
                index.executemany(
                    "INSERT INTO tools(rowid, name, toolset, description, params) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [
                        (
                            row,
                            " ".join(words(entry.name)),
                            " ".join(words(entry.toolset)),
                            " ".join(words(entry.tool.description)),
                            " ".join(words(" ".join(parameter_names(entry.tool.parameters)))),
                        )
                        for row, entry in enumerate(self.entries.values())
                    ],
                )
                self._index = index
            return self._index

    def search(self, query: str, limit: int = 5) -> list[Entry]:
        """The tools best matching ``query`` (words), best first, ranked by BM25 over their
        names, toolsets, descriptions and parameter names (a name counts most); an exact tool
        name comes first. The same catalogue gives the same order for the same query."""
        exact = [self.entries[q] for q in query.split() if q in self.entries]
        terms = sorted(set(words(query)))
        ranked: list[Entry] = []
        if terms and self.entries:
            match = " OR ".join(f'"{term}"' for term in terms)
            index = self._fts()
            with self._lock:
                found = index.execute(
                    f"SELECT rowid FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, "
                    f"{_WEIGHTS}), rowid LIMIT ?",
                    (match, limit + len(exact)),
                ).fetchall()
            ranked = [self.entries[self._names[row]] for (row,) in found]
        result: list[Entry] = []
        for entry in [*exact, *ranked]:
            if entry not in result:
                result.append(entry)
            if len(result) >= limit:
                break
        return result

    def near(self, name: str, limit: int = 3) -> list[Entry]:
        """The tools whose names are closest to ``name`` (a misspelt name), best first."""
        import difflib

        close = difflib.get_close_matches(name, self._names, n=limit, cutoff=0.75)
        found = [self.entries[n] for n in close]
        for entry in self.search(name.replace("_", " "), limit):
            if entry not in found and len(found) < limit:
                found.append(entry)
        return found

    def restricted(self, names: Sequence[str]) -> Catalogue:
        """A catalogue of only the tools named ``names`` (a toolset restriction)."""
        keep = set(names)
        return Catalogue((e.tool, e.toolset) for e in self.entries.values() if e.name in keep)
