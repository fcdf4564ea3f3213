"""The answer to ``initialize`` written before the SDK loads: the same answer the SDK gives,
and every other first frame left to the SDK untouched."""

from __future__ import annotations

import json
import os
import subprocess
from importlib.metadata import version
from pathlib import Path

from acp.schema import InitializeResponse
from acp_client import HERMES, hermes_env
from hermes_frontend_acp.handshake import VERSION, answer_initialize, initialize_result

from hermes_core.testing import FakeLLM


def _through_pipes(first: bytes) -> tuple[bytes, bytes, object]:
    """(what answer_initialize wrote, what it left, the params it answered) for ``first``."""
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(stdin_w, first)
    os.close(stdin_w)
    try:
        rest, hello = answer_initialize(stdin_r, out_w)
    finally:
        os.close(out_w)
        os.close(stdin_r)
    with os.fdopen(out_r, "rb") as out:
        return out.read(), rest, hello


def test_the_answer_is_a_valid_initialize_response_with_the_dist_version() -> None:
    assert VERSION == version("hermes-frontend-acp")
    for asked, agreed in ((1, 1), (2, 1), (0, 0), ("junk", 1)):
        result = initialize_result(asked)
        parsed = InitializeResponse.model_validate(result)
        assert parsed.protocol_version == agreed
        assert parsed.model_dump(by_alias=True, exclude_none=True)["agentCapabilities"] == (
            result["agentCapabilities"]
        ) | {"mcpCapabilities": {"http": False, "sse": False, "acp": False}}


def test_initialize_is_answered_and_what_follows_is_kept() -> None:
    frame = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}}
    following = b'{"jsonrpc":"2.0","id":8,"method":"session/list","params":{}}\n'
    written, rest, hello = _through_pipes(json.dumps(frame).encode() + b"\n" + following)
    assert hello == {"protocolVersion": 1, "agreedVersion": 1}
    answer = json.loads(written)
    assert answer["id"] == 7 and answer["result"]["protocolVersion"] == 1
    assert written.endswith(b"\n") and written.count(b"\n") == 1
    assert rest == following


def test_any_other_first_frame_is_left_whole_to_the_sdk() -> None:
    for first in (
        b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n',
        b"not json at all\n",
        b'{"jsonrpc":"2.0","method":"initialize"}\n',  # a notification, not a request
        b'{"jsonrpc":"2.0","id":1,"method":"initialize"',  # input ends mid-frame
        b"",
    ):
        assert _through_pipes(first) == (b"", first, None)


def test_a_broken_first_frame_is_skipped_and_the_connection_goes_on(
    home: Path, llm: FakeLLM
) -> None:
    proc = subprocess.Popen(
        [HERMES, "acp"],
        env=hermes_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    request = {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}
    proc.stdin.write(b"this is not json\n" + json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    _, stderr = proc.communicate(timeout=30)
    assert answer["id"] == 1 and answer["result"]["sessions"] == []
    assert proc.returncode == 0
    assert b"parsing" in stderr and b"Traceback" not in stderr  # one line, no traceback
