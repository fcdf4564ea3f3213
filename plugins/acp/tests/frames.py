"""Checking what hermes writes against the protocol's published JSON schema (the
``schema.json`` of the pinned ``@agentclientprotocol/sdk``, installed by scripts/acpx_env.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

import acpx_env  # noqa: E402

RESPONSES = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "logout": "LogoutResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/delete": "DeleteSessionResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
}
"""Each method a client may call -> the schema of hermes's answer."""

AGENT_CALLS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
}
"""Each method hermes calls on a client -> the schema of its params."""


def unavailable(reason: str) -> None:
    """Skip (fail under CI, which installs the tools: .ci/run)."""
    if os.environ.get("CI"):
        pytest.fail(f"CI installs it (.ci/run), yet: {reason}")
    pytest.skip(reason)


def acpx() -> list[str]:
    """The acpx command line (skipped when it cannot be installed)."""
    try:
        return acpx_env.command()
    except acpx_env.InstallError as exc:
        unavailable(f"acpx could not be installed: {exc}")
        raise


class SchemaCheck:
    """Validates frames against the protocol's schema, each against its own definition."""

    def __init__(self) -> None:
        import jsonschema

        try:
            path = acpx_env.schema()
        except acpx_env.InstallError as exc:
            unavailable(f"the protocol schema could not be installed: {exc}")
            raise
        self.schema = json.loads(path.read_text(encoding="utf-8"))
        self.jsonschema = jsonschema
        self.checked: list[str] = []

    def check(self, definition: str, value: Any) -> None:
        """Fail when ``value`` is not a valid ``definition`` of the schema."""
        wrapper = {"$ref": f"#/$defs/{definition}", "$defs": self.schema["$defs"]}
        validator = self.jsonschema.Draft202012Validator(wrapper)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        assert not errors, f"{definition}: {errors[0].message} at {list(errors[0].path)}"
        self.checked.append(definition)

    def agent_frames(self, sent: list[dict[str, Any]], received: list[dict[str, Any]]) -> None:
        """Check every frame hermes wrote (``received``), given what the client ``sent``."""
        methods = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
        for frame in received:
            assert frame.get("jsonrpc") == "2.0", frame
            method = frame.get("method")
            if method is not None:
                assert method in AGENT_CALLS, f"hermes called {method}"
                self.check(AGENT_CALLS[method], frame.get("params"))
            elif "error" in frame:
                self.check("Error", frame["error"])
            else:
                answered = methods.get(frame.get("id"))
                if isinstance(answered, str) and answered.startswith("_"):
                    assert isinstance(frame.get("result"), dict), frame  # an extension's own
                    continue
                assert answered in RESPONSES, f"an answer to no request: {frame}"
                self.check(RESPONSES[answered], frame.get("result"))
