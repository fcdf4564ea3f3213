"""The ``hermes`` command line."""

from __future__ import annotations

import sys

from .app import build_cli, main

__all__ = ["build_cli", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
