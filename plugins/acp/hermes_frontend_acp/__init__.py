"""hermes in the editor: ``hermes acp``, an Agent Client Protocol server over stdio.

Editors (Zed, JetBrains, Neovim plugins) and headless clients start ``hermes acp`` and drive it
with JSON-RPC on its stdin and stdout. Each ACP session is a hermes session in the session
store, run by the host's agent runner with the same configuration, toolsets, approvals and
sandbox as the chat. See docs/acp.md.

This module imports only the contract: the protocol SDK is imported when ``hermes acp`` runs,
so ``hermes --help`` does not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_hookspecs import hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .handshake import VERSION as __version__  # noqa: F401 - the plugin's version

if TYPE_CHECKING:  # annotations only
    from hermes_hookspecs import ToolCall, ToolContext, ToolResult


@hookimpl
def hermes_post_tool_call(call: ToolCall, result: ToolResult, context: ToolContext) -> str | None:
    """In an editor session whose client offers its buffers, a ``read_file`` shows the file as
    the editor has it (unsaved changes included); elsewhere nothing changes."""
    if call.name != "read_file" or result.is_error:
        return None
    from .editor_files import buffer_text

    return buffer_text(dict(call.arguments), context.session_id, result.content)


@hookimpl
def hermes_pre_tool_call(call: ToolCall, context: ToolContext) -> None:
    """In an editor session whose client writes files, the final write of a ``write_file`` or
    ``patch`` goes through the editor (the tool's own checks and approvals run as always);
    elsewhere nothing changes."""
    if call.name not in ("write_file", "patch"):
        return None
    from .editor_files import route_writes

    factory = route_writes(call.name, context.session_id, context.environment_factory)
    if factory is not None:
        context.environment_factory = factory
    return None


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes acp`` (its module loads when the command runs)."""
    import click

    class LazyAcpCommand(click.Command):
        def invoke(self, ctx: click.Context) -> Any:
            from .cli import run_acp

            return ctx.invoke(run_acp, **ctx.params)

    cli.add_command(
        LazyAcpCommand(
            "acp",
            help="Serve the Agent Client Protocol on stdin/stdout for an editor (docs/acp.md).",
            params=[
                click.Option(
                    ["--check"],
                    is_flag=True,
                    help="Say in one line whether the provider, sandbox and store are ready.",
                ),
            ],
        )
    )
