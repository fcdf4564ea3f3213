"""The answer to ``initialize``, as plain data: written before the protocol SDK has finished
loading, so an editor hears from hermes at once (the SDK's models take most of a second to
build). The same data makes the SDK's answer when ``initialize`` arrives later."""

from __future__ import annotations

import json
import os
from typing import Any

PROTOCOL_VERSION = 1
"""The protocol version hermes speaks."""

SETUP_METHOD = "hermes-setup"
"""The terminal auth method: the editor runs ``hermes setup`` in a terminal."""

MAX_FIRST_FRAME = 1024 * 1024
"""A first frame longer than this is left to the SDK."""


VERSION = "0.1.0"
"""The version of this plugin (its distribution's, checked by a test)."""


DRAFT_VERSION = 2
"""The draft protocol version, spoken when ``acp.protocol_v2`` allows it."""


def initialize_result(requested: Any, allow_draft: bool = False) -> dict[str, Any]:
    """The ``initialize`` result for a client asking for protocol version ``requested``
    (``allow_draft``: version 2 may be agreed; else 1 is the newest)."""
    try:
        wanted = int(requested)
    except (TypeError, ValueError):
        wanted = PROTOCOL_VERSION
    newest = DRAFT_VERSION if allow_draft else PROTOCOL_VERSION
    return {
        "protocolVersion": max(0, min(wanted, newest)),
        "agentInfo": {"name": "hermes", "title": "hermes", "version": VERSION},
        "authMethods": [
            {
                "type": "terminal",
                "id": SETUP_METHOD,
                "name": "hermes setup",
                "description": "Choose a provider and model and store its key (runs "
                "`hermes setup` in a terminal)",
                "args": ["setup"],
            }
        ],
        "agentCapabilities": {
            "loadSession": True,
            "auth": {"logout": {}},
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": False, "sse": False},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}},
        },
    }


def _first_line(fd: int) -> bytes:
    """Bytes read from ``fd`` up to and including the first newline (or all of them at the
    end of input, or once :data:`MAX_FIRST_FRAME` is passed)."""
    data = b""
    while b"\n" not in data and len(data) <= MAX_FIRST_FRAME:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data


def answer_initialize(
    stdin: int, stdout: int, allow_draft: bool = False
) -> tuple[bytes, dict[str, Any] | None]:
    """Read the first frame from ``stdin``; when it is ``initialize``, answer it on ``stdout``
    (``allow_draft``: see :func:`initialize_result`). Returns the bytes read that the SDK must
    still handle (all of them when the first frame was something else), and the params of the
    ``initialize`` answered, with the version agreed as ``agreedVersion`` (``None`` when none
    was answered)."""
    data = _first_line(stdin)
    line, newline, rest = data.partition(b"\n")
    if not newline:
        return data, None
    try:
        frame = json.loads(line)
    except ValueError:
        return data, None
    if not isinstance(frame, dict) or frame.get("method") != "initialize" or "id" not in frame:
        return data, None
    params = frame.get("params")
    params = params if isinstance(params, dict) else {}
    result = initialize_result(params.get("protocolVersion"), allow_draft)
    answer = {"jsonrpc": "2.0", "id": frame["id"], "result": result}
    out = (json.dumps(answer, separators=(",", ":")) + "\n").encode()
    while out:
        out = out[os.write(stdout, out) :]
    return rest, {**params, "agreedVersion": result["protocolVersion"]}
