"""The hermes home folder: where configuration, sessions, memory and skills are kept.

Inside a tool call a plugin reads the home from :attr:`ToolContext.hermes_home
<hermes_hookspecs.ToolContext>`, inside a CLI command from :attr:`CommandContext.home
<hermes_hookspecs.CommandContext>`, in a prompt layer from ``PromptContext.hermes_home``: the host
knows the active profile. :func:`default_home` is for code that runs outside all three.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_home(environ: Mapping[str, str] | None = None) -> Path:
    """The home folder when no host says otherwise: ``$HERMES_HOME``, else ``$HOME/.hermes``,
    else ``~/.hermes`` (``environ`` defaults to ``os.environ``). Nothing is created.

    The host resolves the home with this function too (a profile is the folder
    ``profiles/<name>`` inside it).
    """
    env = os.environ if environ is None else environ
    explicit = env.get("HERMES_HOME")
    if explicit:
        return Path(explicit).expanduser()
    if env.get("HOME"):
        return Path(env["HOME"]) / ".hermes"
    return Path.home() / ".hermes"
