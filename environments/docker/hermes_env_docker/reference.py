"""Whether an image name is a valid Docker image reference (``[registry[:port]/]path[:tag]
[@digest]``), checked before the engine is asked, so that a typo is one clear line."""

from __future__ import annotations

import re

__all__ = ["image_problem"]

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}"
_REFERENCE = re.compile(
    rf"^(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?$"
)


def image_problem(image: str) -> str | None:
    """Why ``image`` is not a valid image reference (one line naming the setting), or ``None``."""
    if not image or not image.strip():
        return "terminal.docker_image is empty"
    if len(image) > 255 and "@" not in image:
        return f"terminal.docker_image {image[:40]!r}... is longer than 255 characters"
    if _REFERENCE.match(image):
        return None
    hint = ""
    if image != image.lower() and _REFERENCE.match(image.lower()):
        hint = " (repository names are lower case)"
    elif " " in image:
        hint = " (it contains a space)"
    return (
        f"terminal.docker_image {image!r} is not a valid image reference{hint}; use a name such"
        " as python:3.11-slim or registry.example.com/team/image:tag"
    )
