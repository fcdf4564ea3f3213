"""The ``hermes`` command line."""

from __future__ import annotations

import sys

from .entry import console_main

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .app import build_cli, main

__all__ = ["build_cli", "console_main", "main"]


def __getattr__(name: str) -> Any:
    """``build_cli`` and ``main``, imported on first use: a call that a resident process runs
    never needs them (nor click) in the caller."""
    if name in ("build_cli", "main"):
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
