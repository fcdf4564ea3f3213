"""The ``file`` toolset: read, write, patch and search files in the task's execution environment.

Every tool goes through ``ctx.environment`` (``read_file``, ``write_file`` and ``run``), so with
the Docker or SSH backend the files are those inside the container or on the remote host.

Before a file is touched its path is resolved where the files are (:mod:`.resolve`: ``~``,
``..``, symlinks) and checked (:mod:`.guard`): writing outside the workspace (``file.workspace``,
by default the working folder), through a symlink that leaves it, to a path that cannot be
resolved, or to a sensitive path (the terminal's rules, :mod:`.sensitive`) needs approval, and so
does reading a file that holds secrets. The tools then work on the resolved path they checked.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_hookspecs import (
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
    Toolset,
    hookimpl,
)

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .search import DEFAULT_RESULTS, MAX_RESULTS, search_files, to_ere

__all__ = [
    "apply_unified_diff",
    "hermes_register_toolsets",
    "parse_unified_diff",
    "patch",
    "read_file",
    "search_files",
    "to_ere",
    "write_file",
]

DEFAULT_LINES = 500
MAX_LINES = 5000
MAX_LINE_CHARS = 2000
MAX_READ_CHARS = 100_000
MAX_FILE_BYTES = 20 * 1024 * 1024
_SIGNATURES = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or docx/xlsx/jar/wheel)"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"SQLite format 3", "an SQLite database"),
)


def _guard() -> Any:
    """The path checks, imported on first use (``hermes --help`` loads this plugin)."""
    from . import guard

    return guard


def _settings(ctx: ToolContext) -> Mapping[str, Any]:
    value = ctx.config.get("file") if isinstance(ctx.config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _read_bytes(env: Any, where: str, path: str) -> bytes:
    """The bytes of the file at ``where`` (resolved); messages name it ``path``."""
    try:
        data: bytes = env.read_file(where)
    except FileNotFoundError:
        raise ToolError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise ToolError(
            f"{path} is a directory; list it with search_files(target='files') or terminal"
        ) from None
    except PermissionError:
        raise ToolError(f"permission denied: {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc}") from None
    return data


def _text(data: bytes, path: str) -> tuple[str, bool]:
    """Decode a text file; refuse binary data with a clear message. The flag says whether some
    bytes were not valid UTF-8 (and were replaced)."""
    head = data[:8192]
    kind = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
    if kind or b"\0" in head:
        what = kind or "binary data"
        raise ToolError(
            f"{path} is {what} ({len(data)} bytes), not text; it cannot be shown as lines. "
            "Inspect it with terminal tools (file, xxd, unzip -l, ...)."
        )
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(8, len(text) // 100):
            raise ToolError(
                f"{path} does not look like UTF-8 text ({len(data)} bytes); "
                "inspect it with terminal tools (file, iconv, xxd)."
            ) from None
        return text, True


# --- read_file ------------------------------------------------------------------------------


_IMAGES = (
    (b"\x89PNG\r\n\x1a\n", "PNG", ".png"),
    (b"\xff\xd8\xff", "JPEG", ".jpg"),
    (b"GIF87a", "GIF", ".gif"),
    (b"GIF89a", "GIF", ".gif"),
)


def _image(data: bytes) -> tuple[str, str] | None:
    """The kind and extension of an image the model can be shown, or ``None``."""
    for signature, kind, extension in _IMAGES:
        if data.startswith(signature):
            return kind, extension
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WebP", ".webp"
    return None


def _shown_image(path: str, data: bytes, kind: str, extension: str) -> ToolOutput:
    """An image file read by read_file: written to a temporary file the host copies into the
    home's ``images/`` folder and shows the model."""
    import hashlib
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.gettempdir()) / "hermes-read-images"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / (hashlib.sha256(data).hexdigest()[:32] + extension)
    if not target.exists():
        target.write_bytes(data)
    return ToolOutput(f"{path} is a {kind} image ({len(data)} bytes), shown to you.", [target])


def read_file(args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
    """Numbered lines of a text file, from ``offset`` (1-based), at most ``limit`` lines; an
    image (PNG, JPEG, GIF, WebP) is shown to the model instead."""
    path = str(args["path"])
    offset = max(1, int(args.get("offset") or 1))
    limit = min(MAX_LINES, max(1, int(args.get("limit") or DEFAULT_LINES)))
    env = ctx.environment
    [place] = _guard().check(ctx, env, [path], write=False)
    data = _read_bytes(env, place.real or path, path)
    max_bytes = int(_settings(ctx).get("max_read_bytes") or MAX_FILE_BYTES)
    if len(data) > max_bytes:
        raise ToolError(
            f"{path} is {len(data)} bytes, more than read_file handles ({max_bytes}); read parts "
            "of it with terminal (head, tail, sed -n 'A,Bp') or search it with search_files"
        )
    image = _image(data)
    if image is not None:
        return _shown_image(path, data, *image)
    text, replaced = _text(data, path)
    if not text:
        return f"{path} is empty."
    lines = text.splitlines()
    total = len(lines)
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {path} ({total} lines)")
    out: list[str] = []
    size = 0
    last = offset - 1
    for number in range(offset, min(total, offset + limit - 1) + 1):
        line = lines[number - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f"... [line cut: {len(line)} characters]"
        entry = f"{number:>6}\t{line}"
        if out and size + len(entry) > MAX_READ_CHARS:
            break
        out.append(entry)
        size += len(entry) + 1
        last = number
    notes = []
    if replaced:
        notes.append("[some bytes are not valid UTF-8 and are shown as \ufffd]")
    if last < total:
        notes.append(
            f"[showing lines {offset}-{last} of {total}; "
            f"call read_file with offset={last + 1} to read on]"
        )
    elif offset > 1:
        notes.append(f"[lines {offset}-{last} of {total}]")
    return "\n".join(out + notes)


# --- write_file -----------------------------------------------------------------------------


def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """Write ``content`` to ``path`` (atomically, creating parent folders)."""
    path = str(args["path"])
    content = str(args.get("content", ""))
    data = content.encode("utf-8")
    env = ctx.environment
    [place] = _guard().check(ctx, env, [path], write=True)
    _write(env, place.real or path, data, path)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    return f"Wrote {len(data)} bytes ({lines} lines) to {path}."


def _write(env: Any, where: str, data: bytes, path: str) -> None:
    """Write ``data`` to ``where`` (resolved); messages name it ``path``."""
    try:
        env.write_file(where, data)
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory") from None
    except PermissionError:
        raise ToolError(f"permission denied: {path}") from None
    except OSError as exc:
        raise ToolError(f"cannot write {path}: {exc}") from None


# --- patch ----------------------------------------------------------------------------------


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _closest(text: str, old: str) -> str:
    """A hint pointing at the part of the file most like ``old``."""
    lines = text.splitlines()
    wanted = old.splitlines() or [old]
    squeeze = re.compile(r"\s+")
    flat_old = squeeze.sub(" ", old).strip()
    width = len(wanted)
    for start in range(len(lines)):
        window = "\n".join(lines[start : start + width])
        if flat_old and squeeze.sub(" ", window).strip() == flat_old:
            return (
                f" The text matches lines {start + 1}-{start + width} when whitespace is "
                "ignored: copy it exactly as read_file shows it (indentation, tabs, line ends)."
            )
    first = next((w.strip() for w in wanted if w.strip()), "")
    if not first:
        return ""
    best, best_ratio = -1, 0.0
    for number, line in enumerate(lines):
        ratio = difflib.SequenceMatcher(None, first, line.strip()).ratio()
        if ratio > best_ratio:
            best, best_ratio = number, ratio
    if best < 0 or best_ratio < 0.6:
        return " Read the file again (read_file) and copy the exact text."
    return f" The closest line is {best + 1}: {lines[best].strip()[:200]!r}."


def _replace(text: str, old: str, new: str, replace_all: bool, path: str) -> tuple[str, int, int]:
    if not old:
        raise ToolError("old_string is empty; give the exact text to replace")
    if old == new:
        raise ToolError("old_string and new_string are the same; nothing to change")
    if old not in text and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string was not found in {path}.{_closest(text, old)}")
    if count > 1 and not replace_all:
        starts: list[str] = []
        at = text.find(old)
        while at >= 0 and len(starts) < 10:
            starts.append(str(_line_of(text, at)))
            at = text.find(old, at + 1)
        raise ToolError(
            f"old_string occurs {count} times in {path} (lines {', '.join(starts)}); include "
            "more surrounding lines to make it unique, or set replace_all=true"
        )
    first = _line_of(text, text.find(old))
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), count, first


@dataclass
class Hunk:
    """One ``@@`` hunk of a unified diff."""

    old_start: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    old_eof_newline: bool = True
    new_eof_newline: bool = True


@dataclass
class FilePatch:
    """The hunks for one file; ``old_path`` is ``None`` for a new file."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)


_GIT_HEADERS = (
    "diff ", "index ", "new file", "deleted file", "similarity", "old mode", "new mode", "rename ",
)  # fmt: skip
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _diff_path(header: str) -> str | None:
    name = header[4:].split("\t")[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith('"') and name.endswith('"'):
        name = name[1:-1]
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


def parse_unified_diff(diff: str, default_path: str | None = None) -> list[FilePatch]:
    """Parse a unified diff (``diff -u`` / ``git diff``), one or several files. A diff with
    hunks but no ``---``/``+++`` headers applies to ``default_path``."""
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    last = ""
    lines = diff.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            current = FilePatch(_diff_path(line), _diff_path(lines[i + 1]))
            patches.append(current)
            hunk = None
            i += 2
            continue
        match = _HUNK.match(line)
        if match:
            if current is None:
                if not default_path:
                    raise ToolError("the diff has no ---/+++ file headers; pass path")
                current = FilePatch(default_path, default_path)
                patches.append(current)
            hunk = Hunk(old_start=int(match.group(1)))
            current.hunks.append(hunk)
        elif hunk is not None and line.startswith("\\"):
            if last == "-":
                hunk.old_eof_newline = False
            elif last == "+":
                hunk.new_eof_newline = False
            else:
                hunk.old_eof_newline = hunk.new_eof_newline = False
        elif hunk is not None and line[:1] in (" ", "-", "+", ""):
            tag, body = (line[:1] or " "), line[1:]
            if tag in (" ", "-"):
                hunk.old.append(body)
            if tag in (" ", "+"):
                hunk.new.append(body)
            last = tag
        elif line.startswith(_GIT_HEADERS):
            hunk = None
        i += 1
    patches = [p for p in patches if p.hunks]
    if not patches:
        raise ToolError("the diff contains no hunks (@@ -a,b +c,d @@ sections)")
    return patches


def _find(lines: list[str], block: list[str], near: int) -> list[int]:
    if not block:
        return [min(max(near, 0), len(lines))]
    size = len(block)
    hits = [i for i in range(len(lines) - size + 1) if lines[i : i + size] == block]
    if not hits:
        stripped = [b.rstrip() for b in block]
        hits = [
            i
            for i in range(len(lines) - size + 1)
            if [x.rstrip() for x in lines[i : i + size]] == stripped
        ]
    return sorted(hits, key=lambda i: abs(i - near))


def apply_unified_diff(text: str | None, patch: FilePatch, path: str) -> str:
    """Apply one file's hunks to ``text`` (``None`` for a new file); fail clearly when a hunk
    does not match. Hunks may sit anywhere in the file (their line numbers only break ties)."""
    lines = [] if text is None else text.split("\n")
    trailing = text is not None and text.endswith("\n")
    if trailing:
        lines.pop()
    shift = 0
    for number, hunk in enumerate(patch.hunks, 1):
        hits = _find(lines, hunk.old, hunk.old_start - 1 + shift)
        if not hits:
            shown = "\n".join(hunk.old[:8])
            raise ToolError(
                f"hunk {number} of the diff for {path} does not match the file: these lines "
                f"(from line {hunk.old_start}) were not found:\n{shown}\n"
                "Read the file again and make the diff from its current content."
            )
        at = hits[0]
        lines[at : at + len(hunk.old)] = hunk.new
        shift += len(hunk.new) - len(hunk.old)
        if at + len(hunk.new) >= len(lines):
            if not hunk.new_eof_newline:
                trailing = False
            elif not hunk.old_eof_newline or text is None:
                trailing = True
    result = "\n".join(lines)
    return result + "\n" if trailing and lines else result


def patch(args: dict[str, Any], ctx: ToolContext) -> str:
    """Replace exact text in a file, or apply a unified diff."""
    mode = args.get("mode") or ("diff" if args.get("diff") else "replace")
    env = ctx.environment
    if mode == "replace":
        path = args.get("path")
        if not path or "old_string" not in args or "new_string" not in args:
            raise ToolError("replace mode needs path, old_string and new_string")
        [place] = _guard().check(ctx, env, [str(path)], write=True, read=True)
        where = place.real or str(path)
        text, _ = _text(_read_bytes(env, where, str(path)), str(path))
        new_text, count, first = _replace(
            text, str(args["old_string"]), str(args["new_string"]),
            bool(args.get("replace_all")), str(path),
        )  # fmt: skip
        _write(env, where, new_text.encode("utf-8"), str(path))
        changed = str(args["new_string"]).count("\n") + 1
        spot = f"line {first}" if count == 1 else f"{count} places, first at line {first}"
        return f"Patched {path}: replaced {count} occurrence{'s' * (count > 1)} ({spot}).\n" + (
            _snippet(new_text, first, changed)
        )
    if mode != "diff":
        raise ToolError(f"unknown mode {mode!r}; use 'replace' or 'diff'")
    diff = args.get("diff")
    if not isinstance(diff, str) or not diff.strip():
        raise ToolError("diff mode needs a unified diff in `diff`")
    patches = parse_unified_diff(diff, args.get("path"))
    targets: list[str] = []
    for file_patch in patches:
        if file_patch.new_path is None:
            raise ToolError(
                f"the diff deletes {file_patch.old_path}; delete files with the terminal tool"
            )
        target = file_patch.new_path
        if args.get("path") and len(patches) == 1:
            target = str(args["path"])
        targets.append(target)
    places = _guard().check(ctx, env, targets, write=True, read=True)  # before anything is read
    results: list[tuple[str, str, str]] = []
    for file_patch, target, place in zip(patches, targets, places, strict=True):
        where = place.real or target
        if file_patch.old_path is None:
            original = None
        else:
            original, _ = _text(_read_bytes(env, where, target), target)
        results.append((target, where, apply_unified_diff(original, file_patch, target)))
    for target, where, content in results:  # nothing is written unless every file applied
        _write(env, where, content.encode("utf-8"), target)
    summary = ", ".join(
        f"{target} ({len(p.hunks)} hunk{'s' * (len(p.hunks) > 1)})"
        for (target, _w, _c), p in zip(results, patches, strict=True)
    )
    return f"Applied the diff: {summary}."


def _snippet(text: str, first: int, count: int, context: int = 2) -> str:
    lines = text.splitlines()
    start = max(1, first - context)
    end = min(len(lines), first + count - 1 + context)
    return "\n".join(f"{n:>6}\t{lines[n - 1][:MAX_LINE_CHARS]}" for n in range(start, end + 1))


# --- registration ---------------------------------------------------------------------------

READ_FILE_TOOL = Tool(
    name="read_file",
    description=(
        "Read a text file, with line numbers (`     N<TAB>text`). Reads up to `limit` lines "
        f"(default {DEFAULT_LINES}) from line `offset` (1-based); the result says how to read on. "
        "Images (PNG, JPEG, GIF, WebP) are shown to you; other binary files are refused. "
        "Paths are relative to the working directory."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return."},
        },
        "required": ["path"],
    },
    handler=read_file,
    max_result_chars=MAX_READ_CHARS + 10_000,
)

WRITE_FILE_TOOL = Tool(
    name="write_file",
    description=(
        "Create or overwrite a file with `content` (the whole new content). Parent folders are "
        "created; the file is replaced atomically. To change part of a file use patch. Writing "
        "outside the working folder or to sensitive paths asks the user first."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The complete new content."},
        },
        "required": ["path", "content"],
    },
    handler=write_file,
)

PATCH_TOOL = Tool(
    name="patch",
    description=(
        "Edit files. mode 'replace' (default): replace `old_string` with `new_string` in `path`; "
        "old_string must match the file exactly (whitespace included) and occur once, unless "
        "replace_all is true. mode 'diff': apply a unified diff (`diff -u`/`git diff` format, "
        "one or several files, new files from /dev/null); nothing is written unless every hunk "
        "applies."
    ),
    parameters={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["replace", "diff"]},
            "path": {"type": "string", "description": "The file to edit."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
            "diff": {"type": "string", "description": "A unified diff (mode 'diff')."},
        },
    },
    handler=patch,
)

SEARCH_FILES_TOOL = Tool(
    name="search_files",
    description=(
        "Search under `path` (default: the working directory). target 'content' (default): "
        "lines matching the regular expression `pattern` (as `path:line: text`), optionally only "
        "in files matching `file_glob`; target 'files': file names matching the glob `pattern` "
        "(e.g. '*.py', 'src/**/test_*.py'). Skips .git, node_modules, files ignored by git, "
        "symlinks and files that hold secrets. "
        f"At most `max_results` results (default {DEFAULT_RESULTS})."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regex (content) or glob (files)."},
            "target": {"type": "string", "enum": ["content", "files"]},
            "path": {"type": "string", "description": "Folder (or file) to search."},
            "file_glob": {"type": "string", "description": "Only search files matching this."},
            "ignore_case": {"type": "boolean"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS},
        },
        "required": ["pattern"],
    },
    handler=search_files,
)


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``file`` toolset."""
    register(
        Toolset(
            name="file",
            description="Read, write, patch and search files in the task's environment",
            tools=[READ_FILE_TOOL, WRITE_FILE_TOOL, PATCH_TOOL, SEARCH_FILES_TOOL],
        )
    )
