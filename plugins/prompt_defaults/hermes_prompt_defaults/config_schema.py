"""The configuration keys the default prompt layers read, one declaration per layer (each layer
is its own plugin, and may be disabled alone)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl(specname="hermes_register_config")
def identity_keys(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``prompt.soul_max_chars`` (the identity layer)."""
    register(
        ConfigSection(
            "prompt",
            [
                ConfigKey(
                    "soul_max_chars",
                    "integer",
                    doc="longest SOUL.md kept in the prompt",
                    minimum=100,
                )
            ],
            doc="the default prompt layers",
        )
    )


@hookimpl(specname="hermes_register_config")
def project_context_keys(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``prompt.project_context_max_chars`` (the project context layer)."""
    register(
        ConfigSection(
            "prompt",
            [
                ConfigKey(
                    "project_context_max_chars",
                    "integer",
                    doc="longest project context file kept in the prompt",
                    minimum=100,
                )
            ],
        )
    )


@hookimpl(specname="hermes_register_config")
def environment_keys(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``terminal.cwd`` (the environment layer names it), shared with the terminal."""
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
