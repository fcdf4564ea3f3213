"""The configuration keys the local backend reads."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the ``terminal`` keys of the local backend."""
    register(
        ConfigSection(
            "terminal",
            [
                ConfigKey(
                    "timeout", "integer", 180, "seconds a command may run", minimum=1, shared=True
                ),
                ConfigKey(
                    "cwd",
                    "string",
                    doc="working directory inside the execution environment",
                    shared=True,
                ),
                ConfigKey(
                    "sandbox",
                    ("string", "boolean", "object"),
                    doc="the command sandbox: workspace, read-only or off, or {profile, network, "
                    "hide, home_allow, max_processes, max_file_size_mb}; home_allow lists paths "
                    "of the hidden home folder commands see (read-only; {path, writable: true} "
                    "to write) (unset: workspace; docs/sandbox.md)",
                ),
            ],
        )
    )
