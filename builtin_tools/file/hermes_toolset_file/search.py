r"""``search_files``: grep file contents or match file names, in the task's environment.

Three steps run where the files are, each in a subshell so the session's working directory does
not move:

1. list the files (git's list inside a work tree, else ``find`` without the skipped folders),
   NUL-separated, into a private temporary folder; the list is read back with
   :meth:`Environment.read_file`, so names that are not UTF-8 arrive intact;
2. the files to search (filtered here: globs, skipped folders, files that hold secrets) are
   written beside it with :meth:`Environment.write_file`, again as exact bytes;
3. ``grep`` reads that list (symlinks are not followed, as ``grep -r`` does not follow them)
   with ``LC_ALL=C``, so a Latin-1 or otherwise non-UTF-8 file is searched like any other
   instead of being taken for binary; its output comes back hex-encoded (``od``), and the
   temporary folder is removed.

What the model sees is valid text: contents are decoded as UTF-8 with replacement characters,
names with ``\xNN`` escapes for the bytes that are not UTF-8.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import (
    ToolContext,
    ToolError,
    blocked,
)

__all__ = ["SKIPPED_DIRS", "search_files", "to_ere"]

DEFAULT_RESULTS = 50
MAX_RESULTS = 500
MATCH_LINE_CHARS = 300
MAX_LIST_BYTES = 16_000_000
MAX_OUTPUT_BYTES = 4_000_000
LINE_BYTES = 4096
SKIPPED_DIRS = (
    ".git", "node_modules", ".hg", ".svn", "__pycache__", ".venv", ".tox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache",
)  # fmt: skip

_LIST_SCRIPT = r"""(
D=$(umask 077 && mktemp -d "${{TMPDIR:-/tmp}}/hermes-search.XXXXXX") || exit 0
printf '__HERMES_TEMP__%s\n' "$D"
if [ -f {path} ]; then echo "__HERMES_FILE__"; exit 0; fi
cd -- {path} 2>/dev/null || {{ rm -rf -- "$D"; echo "__HERMES_NO_DIR__"; exit 0; }}
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard 2>/dev/null
else
  find . {prune} -o -type f -print0 2>/dev/null
fi | head -c {max_bytes} > "$D/list"
echo "__HERMES_LISTED__"
)"""
_GREP_SCRIPT = r"""(
D={temp}; T=$D/selected
{cd}
export LC_ALL=C
F=-E; R={ere}; printf 'a\n' | grep -qP 'a' 2>/dev/null && F=-P R={pattern}
I=; grep -I -e x /dev/null 2>/dev/null; [ $? -le 1 ] && I=-I
echo "__HERMES_HEX__"
xargs -0 sh -c '[ $# -eq 0 ] || exec find "$@" -prune -type f -print0' sh < "$T" 2>/dev/null \
  | xargs -0 grep -nHs $I $F {case} -e "$R" -- /dev/null 2>/dev/null \
  | head -n {limit} | cut -b 1-{width} | head -c {max_bytes} | od -An -v -tx1
echo "__HERMES_END__"
rm -rf -- "$D"
)"""


_ERE_CLASSES = {
    "d": ("[0-9]", "0-9"),
    "D": ("[^0-9]", None),
    "s": ("[[:space:]]", "[:space:]"),
    "S": ("[^[:space:]]", None),
    "w": ("[[:alnum:]_]", "[:alnum:]_"),
    "W": ("[^[:alnum:]_]", None),
}


def to_ere(pattern: str) -> str:
    r"""The Python/PCRE shorthand classes (``\d``, ``\s``, ``\w`` and their negations)
    written for a POSIX extended-regex grep without ``-P`` (such as busybox)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            outside, inside = _ERE_CLASSES.get(nxt, (None, None))
            replacement = inside if in_class else outside
            out.append(replacement if replacement else pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class and out and out[-1] not in ("[", "[^"):
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def _prune() -> str:
    names = " -o ".join(f"-name {shlex.quote(n)}" for n in SKIPPED_DIRS)
    return rf"\( {names} \) -prune"


def _hex_block(output: str) -> bytes:
    """The bytes between the ``__HERMES_HEX__`` and ``__HERMES_END__`` markers of ``od``
    output; a missing end marker means the command did not finish."""
    start = output.find("__HERMES_HEX__\n")
    end = output.find("__HERMES_END__", start)
    if start < 0 or end < 0:
        raise ToolError("the file search did not finish in the environment; narrow the path")
    try:
        return bytes.fromhex("".join(output[start + 15 : end].split()))
    except ValueError:
        raise ToolError("the file search returned unreadable output (is `od` missing?)") from None


def _shown(name: bytes) -> str:
    r"""A file name as valid text: UTF-8, with ``\xNN`` for the bytes that are not."""
    return name.decode("utf-8", "backslashreplace")


def _is_utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _glob_match(name: str, pattern: str) -> bool:
    if "/" in pattern:
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, "*/" + pattern)
    return fnmatch.fnmatchcase(name.rsplit("/", 1)[-1], pattern)


def _join(root: str, name: str) -> str:
    if root in ("", "."):
        return name
    return root.rstrip("/") + "/" + name


class _Listing:
    """The files under the search root (raw names), whether the root is a single file, and the
    private temporary folder in the environment (removed by the grep script or :func:`_remove`).
    """

    def __init__(self, names: list[bytes], single: bool, temp: str) -> None:
        self.names = names
        self.single = single
        self.temp = temp


def _list(env: Any, real_root: str, given: str) -> _Listing:
    script = _LIST_SCRIPT.format(
        path=shlex.quote(real_root), prune=_prune(), max_bytes=MAX_LIST_BYTES
    )
    output = env.run(script, timeout=60).output
    match = re.search(r"__HERMES_TEMP__(/[^\n]*)\n", output)
    temp = match.group(1) if match and "\ufffd" not in match.group(1) else ""
    if "__HERMES_NO_DIR__" in output:
        raise ToolError(f"no such file or directory: {given}")
    if not temp:
        raise ToolError("cannot make a temporary folder in the environment (mktemp -d failed)")
    if "__HERMES_FILE__" in output:
        return _Listing([], True, temp)
    try:
        if "__HERMES_LISTED__" not in output:
            raise ToolError("listing the files did not finish in the environment")
        data = env.read_file(temp + "/list")
    except (ToolError, OSError):
        _remove(env, temp)
        raise ToolError(f"cannot list the files under {given}") from None
    names = []
    skipped = set(SKIPPED_DIRS)
    for raw in data.split(b"\0"):
        name = raw[2:] if raw.startswith(b"./") else raw
        if not name:
            continue
        parts = name.decode("utf-8", "surrogateescape").split("/")[:-1]
        if not skipped.intersection(parts):
            names.append(name)
    return _Listing(sorted(set(names)), False, temp)


def _remove(env: Any, temp: str) -> None:
    if temp:
        try:
            env.run(f"rm -rf -- {shlex.quote(temp)}", timeout=30)
        except Exception:  # a leftover private temporary folder is harmless
            pass


def _secret(path: str, home: str, hermes_homes: tuple[str, ...]) -> str:
    from .sensitive import read_concerns  # imported on first use, as the other checks

    concerns = read_concerns([path], home=home, hermes_homes=hermes_homes)
    return concerns[0].rule if concerns else ""


def search_files(args: dict[str, Any], ctx: ToolContext) -> str:
    """Search file contents with a regex, or file names with a glob."""
    pattern = str(args.get("pattern") or "")
    if not pattern:
        raise ToolError("pattern is empty")
    target = args.get("target") or "content"
    if target not in ("content", "files"):
        raise ToolError(f"unknown target {target!r}; use 'content' or 'files'")
    root = str(args.get("path") or ".")
    limit = min(MAX_RESULTS, max(1, int(args.get("max_results") or DEFAULT_RESULTS)))
    flags = re.IGNORECASE if args.get("ignore_case") else 0
    if target == "content":
        try:
            re.compile(pattern, flags)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    env = ctx.environment
    from .resolve import resolve

    resolution = resolve(env, [root], ctx.config if isinstance(ctx.config, Mapping) else {})
    [place] = resolution.places
    if place.real is None and target == "content":
        raise ToolError(
            blocked(
                "path-unresolved",
                "the folder to search cannot be resolved, so it is unknown whether it holds "
                "files with secrets; search a folder given plainly, or use the terminal",
                root,
            )
        )
    listing = _list(env, place.real or place.target, root)
    if target == "files":
        _remove(env, listing.temp)
        return _names_result(listing, pattern, root, limit)
    try:
        return _content_result(env, listing, args, place.real or "", root, limit, resolution)
    finally:
        if listing.temp:
            _remove(env, listing.temp)


def _names_result(listing: _Listing, pattern: str, root: str, limit: int) -> str:
    if listing.single:
        found = [(root, b"")] if _glob_match(root, pattern) else []
    else:
        found = [
            (_join(root, _shown(n)), n) for n in listing.names if _glob_match(_shown(n), pattern)
        ]
    if not found:
        return f"No files matching {pattern!r} under {root!r}."
    found.sort()
    more = (
        f"\n[showing {limit} of {len(found)} files; narrow the pattern or the path]"
        if len(found) > limit
        else ""
    )
    shown = found[:limit]
    return "\n".join(s for s, _n in shown) + more + _escape_note([n for _s, n in shown])


def _escape_note(names: list[bytes]) -> str:
    if all(_is_utf8(n) for n in names):
        return ""
    return (
        "\n[names with bytes that are not UTF-8 are shown with \\xNN escapes; reach those "
        "files with the terminal, quoting them as $'...']"
    )


def _content_result(
    env: Any,
    listing: _Listing,
    args: dict[str, Any],
    real_root: str,
    root: str,
    limit: int,
    resolution: Any,
) -> str:
    pattern = str(args["pattern"])
    glob = args.get("file_glob")
    home, hermes_homes = resolution.home, resolution.hermes_homes
    skipped: list[tuple[str, str]] = []
    if listing.single:
        rule = _secret(real_root, home, hermes_homes) or _secret(
            resolution.places[0].lexical, home, hermes_homes
        )
        if rule:
            skipped.append((root, rule))
            selected: list[bytes] = []
        else:
            selected = [real_root.encode("utf-8", "surrogateescape")]
    else:
        selected = []
        base = real_root.rstrip("/")
        for name in listing.names:
            text = name.decode("utf-8", "surrogateescape")
            if glob and not _glob_match(text, str(glob)):
                continue
            rule = _secret(f"{base}/{text}", home, hermes_homes)
            if rule:
                skipped.append((_join(root, _shown(name)), rule))
                continue
            selected.append(b"./" + name)
    note = _skipped_note(skipped)
    if not selected:
        where = f" matching {glob!r}" if glob else ""
        return f"No files to search under {root!r}{where}." + note
    env.write_file(listing.temp + "/selected", b"\0".join(selected) + b"\0")
    cap = limit * 20 + 1
    script = _GREP_SCRIPT.format(
        temp=shlex.quote(listing.temp),
        cd="" if listing.single else f"cd -- {shlex.quote(real_root)} || exit 0",
        pattern=shlex.quote(pattern),
        ere=shlex.quote(to_ere(pattern)),
        case="-i" if args.get("ignore_case") else "",
        limit=cap,
        width=LINE_BYTES,
        max_bytes=MAX_OUTPUT_BYTES,
    )
    output = _hex_block(env.run(script, timeout=120).output)
    listing.temp = ""  # the grep script removed it
    names = set(selected)
    hits = []
    hit_names: list[bytes] = []
    lines = output.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    for line in lines:
        found = _split_hit(line, names)
        if found is None:
            continue
        name, number, content = found
        text = content.decode("utf-8", "replace")
        if len(text) > MATCH_LINE_CHARS:
            text = text[:MATCH_LINE_CHARS] + "..."
        shown = root if listing.single else _join(root, _shown(name.removeprefix(b"./")))
        hits.append(f"{shown}:{number}: {text.strip()}")
        hit_names.append(name)
    if not hits:
        where = f" in {glob!r} files" if glob else ""
        return f"No matches for {pattern!r} under {root!r}{where}." + note
    total = f"{len(hits)}+" if len(lines) >= cap else str(len(hits))
    more = (
        f"\n[showing {limit} of {total} matching lines; narrow the pattern, path or file_glob]"
        if len(hits) > limit
        else ""
    )
    return "\n".join(hits[:limit]) + more + _escape_note(hit_names[:limit]) + note


def _split_hit(line: bytes, names: set[bytes]) -> tuple[bytes, int, bytes] | None:
    """``name:number:content`` of a grep line, with the name one of ``names`` (a name may
    itself hold ``:``)."""
    at = line.find(b":")
    while at >= 0:
        name = line[:at]
        if name in names:
            number, sep, content = line[at + 1 :].partition(b":")
            if sep and number.isdigit() and b"\0" not in content:
                return name, int(number), content
        at = line.find(b":", at + 1)
    return None


def _skipped_note(skipped: list[tuple[str, str]]) -> str:
    if not skipped:
        return ""
    examples = ", ".join(f"{name} ({rule})" for name, rule in skipped[:3])
    more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return (
        f"\n[not searched: {len(skipped)} file{'s' * (len(skipped) > 1)} that may hold secrets: "
        f"{examples}{more}; read_file asks the user before reading such a file]"
    )
