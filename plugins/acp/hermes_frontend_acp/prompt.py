"""An ACP prompt (text, image, resource-link and embedded-resource blocks) as hermes's user
message: its text, and the image files attached to it."""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

Block = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

_SUFFIXES = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}


@dataclass
class UserMessage:
    """The text of a prompt and the image files it carries (removed by :meth:`discard`)."""

    text: str
    images: list[str] = field(default_factory=list)

    def discard(self) -> None:
        """Remove the image files written for this prompt (the agent keeps its own copies)."""
        for path in self.images:
            try:
                os.unlink(path)
            except OSError:
                pass


def _image_file(data: str, mime_type: str) -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError.invalid_params(
            {"details": "an image block's data is not base64"}
        ) from None
    handle, path = tempfile.mkstemp(prefix="hermes-acp-", suffix=_SUFFIXES.get(mime_type, ".img"))
    with os.fdopen(handle, "wb") as out:
        out.write(raw)
    return path


def _file_path(uri: str) -> str | None:
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme == "file" else None


def user_message(blocks: Sequence[Any]) -> UserMessage:
    """The user message of ``blocks``.

    :raises RequestError: a block hermes cannot take (audio, bad image data), as
        ``invalid_params`` naming it.
    """
    message = UserMessage(text="")
    texts: list[str] = []
    try:
        for block in blocks:
            if isinstance(block, TextContentBlock):
                texts.append(block.text)
            elif isinstance(block, ImageContentBlock):
                message.images.append(_image_file(block.data, block.mime_type))
            elif isinstance(block, ResourceContentBlock):
                path = _file_path(block.uri)
                texts.append(f"[@{block.name}]({path or block.uri})")
            elif isinstance(block, EmbeddedResourceContentBlock):
                resource = block.resource
                if isinstance(resource, TextResourceContents):
                    where = _file_path(resource.uri) or resource.uri
                    texts.append(f'<context ref="{where}">\n{resource.text}\n</context>')
                elif isinstance(resource, BlobResourceContents):
                    mime = resource.mime_type or ""
                    if not mime.startswith("image/"):
                        raise RequestError.invalid_params(
                            {"details": f"an embedded {mime or 'binary'} resource cannot be read"}
                        )
                    message.images.append(_image_file(resource.blob, mime))
            else:
                kind = getattr(block, "type", type(block).__name__)
                raise RequestError.invalid_params(
                    {"details": f"hermes does not take {kind} blocks in a prompt"}
                )
    except BaseException:
        message.discard()
        raise
    message.text = "\n\n".join(t for t in texts if t)
    if not message.text and not message.images:
        raise RequestError.invalid_params({"details": "the prompt is empty"})
    return message
