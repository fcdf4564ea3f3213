"""The checkpoints of a session's folder as ACP extension methods, through the
``hermes checkpoints`` command of the checkpoints plugin (not imported: it may be absent)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from typing import Any

from acp import RequestError

CHECKPOINT_METHODS = frozenset({"hermes/checkpoints/list", "hermes/checkpoints/restore"})
"""The extension methods (``_hermes/checkpoints/...`` on the wire)."""

TIMEOUT = 120.0
"""Seconds a listing or a restore may take."""


def _hermes() -> str:
    return shutil.which("hermes", path=os.path.dirname(sys.executable)) or "hermes"


async def checkpoints_command(argv: list[str], workspace: str) -> dict[str, Any]:
    """Run ``hermes checkpoints ARGV --workspace WORKSPACE``; its output as ``{"text": ...}``.

    :raises RequestError: the checkpoints plugin is not installed (``method_not_found``), or the
        command failed (``invalid_request`` with its one-line error).
    """
    process = await asyncio.create_subprocess_exec(
        _hermes(),
        "checkpoints",
        *argv,
        "--workspace",
        workspace,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    except TimeoutError:
        process.kill()
        raise RequestError.internal_error({"details": "hermes checkpoints took too long"}) from None
    error = err.decode(errors="replace").strip()
    if process.returncode == 2 and "No such command" in error:
        raise RequestError.method_not_found("_hermes/checkpoints (install hermes-checkpoints)")
    if process.returncode != 0:
        line = error.splitlines()[-1] if error else f"exit code {process.returncode}"
        raise RequestError.invalid_request({"details": line})
    return {"text": out.decode(errors="replace")}
