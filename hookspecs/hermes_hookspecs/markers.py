"""The pluggy markers for the ``hermes`` project."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "hermes"
"""The pluggy project name; also the entry point group plugins are found in."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
"""Marks a function in the specification module as a hook specification."""

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a plugin function as the implementation of a hermes hook."""

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]
