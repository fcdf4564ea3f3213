"""Which calls a resident process may run: decided from the arguments alone, before anything
but :mod:`os` is imported."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

GLOBAL_VALUE_OPTIONS = ("--plugins",)
GLOBAL_FLAGS = ("--debug", "--strict-plugins")


def servable(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (without the program name) is a one-shot chat a resident process may
    run: ``chat`` with ``-q``, after global options other than a profile (whose home the
    resident process did not load), unless ``HERMES_SERVE`` is ``off``."""
    if os.environ.get("HERMES_SERVE") == "off":
        return False
    args = list(argv)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name = args[i].partition("=")[0]
        if name in GLOBAL_VALUE_OPTIONS:
            i += 1 if "=" in args[i] else 2
        elif args[i] in GLOBAL_FLAGS:
            i += 1
        else:
            return False  # a profile, --help, --version, or an unknown option
    if i >= len(args) or args[i] != "chat":
        return False
    for arg in args[i + 1 :]:
        if arg == "--":
            return False
        if arg in ("-h", "--help"):
            return False
        if arg in ("-q", "--query") or arg.startswith(("--query=", "-q")):
            return True
    return False
