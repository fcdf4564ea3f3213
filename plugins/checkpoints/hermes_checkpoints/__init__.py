"""Checkpoints for hermes: every change the agent makes to the workspace can be undone.

Before the first call of a turn to a tool that may change the workspace (the terminal, the
process tool, ``write_file``, ``patch``, and any tool not known to be read-only), the workspace
is recorded in a git store outside it (``<hermes home>/checkpoints/store.git``, per person);
``hermes checkpoints list | diff N | restore N`` shows and brings back what was there. A restore
never overwrites a file the person changed by hand since. See docs/checkpoints.md.

This module imports only the contract: the work is done in submodules imported when a hook or
a command first needs them, so ``hermes --help`` does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_hookspecs import hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

if TYPE_CHECKING:  # annotations only: nothing more is imported while hermes starts
    from collections.abc import Callable

    from hermes_hookspecs import (
        Block,
        PluginReport,
        SlashCommand,
        ToolCall,
        ToolContext,
        ToolResult,
    )

__version__ = "0.1.0"


@hookimpl(trylast=True)
def hermes_pre_tool_call(call: ToolCall, context: ToolContext) -> Block | None:
    """Take the turn's checkpoint before its first call that may change the workspace (called
    last, so that a call another plugin blocks takes none); refuse the call when no
    checkpoint could be taken."""
    from .turns import before_call

    return before_call(call, context)


@hookimpl
def hermes_post_tool_call(call: ToolCall, result: ToolResult, context: ToolContext) -> None:
    """Record what the turn left after a call that may have changed the workspace."""
    from .turns import after_call

    after_call(call, context)


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes checkpoints`` (its module loads when the command runs)."""
    import click

    class LazyCheckpointsGroup(click.Group):
        def _real(self) -> click.Group:
            from .cli import checkpoints_group

            return checkpoints_group

        def list_commands(self, ctx: click.Context) -> list[str]:
            return self._real().list_commands(ctx)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            return self._real().get_command(ctx, name)

    cli.add_command(
        LazyCheckpointsGroup(
            "checkpoints",
            help="Checkpoints of the workspace taken before the agent's changes: list, diff, "
            "restore.",
        )
    )


@hookimpl
def hermes_register_slash_commands(register: Callable[[SlashCommand], None]) -> None:
    """Add ``/rollback`` to the chat: list the checkpoints, or restore one and rewind the
    conversation to where its turn began."""
    from .slash import ROLLBACK

    register(ROLLBACK)


@hookimpl
def hermes_describe_plugins(report: Callable[[PluginReport], None]) -> None:
    """Report the checkpoint store (its size on disk, or why it cannot work) as a line of
    ``hermes doctor`` and ``hermes plugins list``."""
    from .doctor import store_report

    report(store_report())
