"""The configuration keys the file toolset reads (``file.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``file.*``, and ``terminal.cwd`` (where relative paths start), shared with the
    terminal toolset."""
    register(
        ConfigSection(
            "file",
            [
                ConfigKey(
                    "workspace",
                    "string",
                    doc="the folder the file tools write in without asking (unset: the working"
                    " folder)",
                ),
                ConfigKey(
                    "max_read_bytes",
                    "integer",
                    doc="largest file read_file reads (unset: 20 MB)",
                    minimum=1,
                ),
            ],
            doc="the file tools",
        )
    )
    register(
        ConfigSection(
            "terminal",
            [
                ConfigKey(
                    "cwd",
                    "string",
                    doc="working directory inside the execution environment",
                    shared=True,
                )
            ],
        )
    )
