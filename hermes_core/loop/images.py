"""Images in user messages: attaching a file, what the transcript stores, what the wire gets.

The transcript (and so the session store) keeps a *reference* to an image, an OpenAI-style
content part whose URL is a ``file://`` URL of a copy in ``$HERMES_HOME/images/`` (named by its
content's hash, so the same image is stored once)::

    {"type": "image_url", "image_url": {"url": "file:///home/me/.hermes/images/3fa4….png"}}

Just before a model call, :func:`inline` replaces such URLs with ``data:`` URLs of the file's
bytes; the provider plugins turn those into their wire format (chat completions as is,
Responses ``input_image``, Anthropic ``image`` blocks). The full-text index sees only the text
parts, never the image.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from hermes_hookspecs import HermesError

IMAGES_FIELD = "_images"
"""Internal field of a ``tool`` message: the paths of the images its result carries."""

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest image that is attached (providers refuse larger ones)."""

_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png", ".png"),
    (b"\xff\xd8\xff", "image/jpeg", ".jpg"),
    (b"GIF87a", "image/gif", ".gif"),
    (b"GIF89a", "image/gif", ".gif"),
)
_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def sniff(data: bytes) -> tuple[str, str] | None:
    """The media type and file extension of an image's bytes, or ``None`` for anything else."""
    for signature, media_type, extension in _SIGNATURES:
        if data.startswith(signature):
            return media_type, extension
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp", ".webp"
    return None


def attach(
    path: str | os.PathLike[str], home: Path | None, label: str = "--image "
) -> dict[str, Any]:
    """The content part of the image at ``path``: checked (exists, an image, at most
    :data:`MAX_IMAGE_BYTES`), copied into ``home/images`` when there is a home, referenced by
    a ``file://`` URL.

    :raises HermesError: in one line, naming the file.
    """
    source = Path(path).expanduser()
    try:
        size = source.stat().st_size
        if not source.is_file():
            raise HermesError(f"{label}{source}: not a file")
        if size > MAX_IMAGE_BYTES:
            raise HermesError(
                f"{label}{source}: {size / 1e6:.1f} MB; images of at most"
                f" {MAX_IMAGE_BYTES // (1024 * 1024)} MB are sent"
            )
        data = source.read_bytes()
    except OSError as exc:
        raise HermesError(f"{label}{source}: {exc.strerror or exc}") from None
    kind = sniff(data)
    if kind is None:
        raise HermesError(f"{label}{source}: not a PNG, JPEG, GIF or WebP image")
    target = source.resolve()
    if home is not None:
        folder = home / "images"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / (hashlib.sha256(data).hexdigest()[:32] + kind[1])
        if not target.exists():
            partial = target.with_suffix(target.suffix + ".part")
            partial.write_bytes(data)
            partial.replace(target)
    return {"type": "image_url", "image_url": {"url": target.as_uri()}}


def path_of(part: dict[str, Any]) -> Path:
    """The file of an image part made by :func:`attach`."""
    return Path(unquote(urlsplit(part["image_url"]["url"]).path))


def user_content(text: str, images: Sequence[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """The content of a user message: ``text`` alone, or a text part followed by the images."""
    if not images:
        return text
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "text": text})
    return parts + list(images)


def dropped_images(line: str) -> tuple[str, list[Path]]:
    """Split a line typed (or pasted, or with files dropped on the terminal) into its text and
    the image files it names: words that are paths of existing files ending in .png, .jpg,
    .jpeg, .gif or .webp, as terminals write them (quoted, or with backslash-escaped spaces,
    or as ``file://`` URLs)."""
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return line, []
    found: list[Path] = []
    for word in words:
        candidate = word
        if candidate.startswith("file://"):
            candidate = unquote(urlsplit(candidate).path)
        if candidate.lower().endswith(_EXTENSIONS):
            path = Path(candidate).expanduser()
            if path.is_file():
                found.append(path)
                continue
    if not found:
        return line, []
    rest = [w for w in words if not _names(w, found)]
    return " ".join(rest), found


def _names(word: str, paths: list[Path]) -> bool:
    candidate = unquote(urlsplit(word).path) if word.startswith("file://") else word
    return any(Path(candidate).expanduser() == p for p in paths)


_cache_lock = threading.Lock()
_cache: dict[tuple[str, int, int], str] = {}
_CACHE_LIMIT = 32


def _data_url(path: Path) -> str | None:
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with _cache_lock:
            cached = _cache.get(key)
        if cached is not None:
            return cached
        data = path.read_bytes()
    except OSError:
        return None
    kind = sniff(data)
    if kind is None:
        return None
    url = f"data:{kind[0]};base64,{base64.b64encode(data).decode('ascii')}"
    with _cache_lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.pop(next(iter(_cache)))
        _cache[key] = url
    return url


_FILE_URL = re.compile(r"^file://")


def _inline_part(part: Any) -> Any:
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return part
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not _FILE_URL.match(url):
        return part
    path = Path(unquote(urlsplit(url).path))
    data_url = _data_url(path)
    if data_url is None:
        return {"type": "text", "text": f"[an image that is no longer available: {path.name}]"}
    return {
        "type": "image_url",
        "image_url": {**image, "url": data_url} if isinstance(image, dict) else {"url": data_url},
    }


def has_file_images(message: dict[str, Any]) -> bool:
    """Whether ``message`` holds an image referenced by a ``file://`` URL."""
    content = message.get("content")
    if not isinstance(content, list):
        return False
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if isinstance(url, str) and url.startswith("file://"):
                return True
    return False


def inline(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every ``file://`` image replaced by a ``data:`` URL of its bytes (a
    file that is gone becomes a one-line note). Messages without such images are the same
    objects; the others are copies, so a shared (cached) list is never changed."""
    if not any(has_file_images(m) for m in messages):
        return messages
    return [ready(m) if has_file_images(m) else m for m in messages]


Describe = Callable[[Path], str]
"""``describe(path)``: a text description of an image, for a model that does not take images."""


def _described(part: Any, describe: Describe) -> Any:
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return part
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url.startswith("file://"):
        return part
    path = Path(unquote(urlsplit(url).path))
    return {"type": "text", "text": f"[image {path.name}: {describe(path)}]"}


def ready(message: dict[str, Any], describe: Describe | None = None) -> dict[str, Any]:
    """A copy of ``message`` (one :func:`has_file_images` accepts) as a request carries it:
    each ``file://`` image made a ``data:`` URL, or, with ``describe`` (a model that does not
    take images), the text ``describe`` gives for it."""
    if describe is not None:
        parts = [_described(part, describe) for part in message["content"]]
    else:
        parts = [_inline_part(part) for part in message["content"]]
    return {**message, "content": parts}


def with_result_images(
    wire: list[dict[str, Any]], source: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``wire`` and its ``source`` (aligned, item for item), with a ``user`` message holding
    the images of the tool results (:data:`IMAGES_FIELD`) after each run of ``tool`` messages
    that carry some (no wire format takes images in every kind of tool result); both lists get
    the same message, so they stay aligned. The lists themselves when there are none."""
    if not any(message.get(IMAGES_FIELD) for message in source):
        return wire, source
    out_wire: list[dict[str, Any]] = []
    out_source: list[dict[str, Any]] = []
    pending: list[tuple[dict[str, Any], list[str]]] = []
    for message, original in zip(wire, source, strict=True):
        if message.get("role") != "tool" and pending:
            images_message = _images_message(pending)
            out_wire.append(images_message)
            out_source.append(images_message)
            pending = []
        out_wire.append(message)
        out_source.append(original)
        paths = original.get(IMAGES_FIELD) if message.get("role") == "tool" else None
        if paths:
            pending.append((original, list(paths)))
    if pending:
        images_message = _images_message(pending)
        out_wire.append(images_message)
        out_source.append(images_message)
    return out_wire, out_source


def _images_message(results: list[tuple[dict[str, Any], list[str]]]) -> dict[str, Any]:
    """The user message that shows the images of ``results`` (tool messages and their paths)."""
    names = ", ".join(
        f"{m.get('tool_name') or 'a tool'} ({m.get('tool_call_id')})" for m, _ in results
    )
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"The images returned by {names}:"}]
    for _message, paths in results:
        parts += [{"type": "image_url", "image_url": {"url": Path(p).as_uri()}} for p in paths]
    return {"role": "user", "content": parts}


def prepare(
    wire: list[dict[str, Any]],
    source: list[dict[str, Any]],
    describe: Describe | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The wire messages of a request with their images made ready, and their source.

    ``wire`` may start with messages ``source`` has not (the system prompt); the rest is
    aligned with ``source``. The images of tool results are added as by
    :func:`with_result_images`, then every ``file://`` image becomes a ``data:`` URL, or, with
    ``describe`` (a model that does not take images), the text ``describe`` gives for it.
    """
    offset = len(wire) - len(source)
    body, out_source = with_result_images(wire[offset:], source)
    out_wire = wire[:offset] + body
    return [ready(m, describe) if has_file_images(m) else m for m in out_wire], out_source
