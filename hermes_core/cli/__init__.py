"""The ``hermes`` command line."""

from __future__ import annotations

import sys

from .app import build_cli, console_main, main

__all__ = ["build_cli", "console_main", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
