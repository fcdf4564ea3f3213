"""The ``ctx`` a Hermes agent plugin's ``register(ctx)`` receives: the registration methods of the
Hermes agent's plugin context, each recording what it registered with the host."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import current
from .callbacks import resolve
from .hooknames import HONOURED_HOOKS, KNOWN_HOOKS, not_honoured_reason
from .manifest import HermesManifest, profile_name

if TYPE_CHECKING:
    from .host import HermesPluginHost, HostedPlugin

log = logging.getLogger("hermes.compat")

_SKILL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_SECTION_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
SECTION_MAX_CHARS = 4000
"""Longest system prompt section of one plugin, as in the Hermes agent."""

_GATEWAY = "hermes gateway adapters are hermes plugins (hermes_register_platform_adapters)"

UNSUPPORTED_REGISTRATIONS: dict[str, str] = {
    "register_platform": _GATEWAY,
    "register_platform_handler": _GATEWAY,
    "register_telegram_handler": _GATEWAY,
    "register_slack_action_handler": _GATEWAY,
    "register_memory_provider": "memory providers are not loaded (hermes has its own memory)",
    "register_context_engine": "context engines are hermes plugins (a context engine hook)",
    "register_middleware": "middleware has no equivalent hook in hermes",
    "register_provider": "model providers are hermes plugins (hermes_register_providers)",
    "register_approval_transport": "approval transports have no equivalent in hermes",
    "register_dashboard_auth_provider": "hermes has no dashboard",
    "register_auxiliary_task": "auxiliary model tasks have no equivalent in hermes",
    "register_context_reference": "@-references have no equivalent in hermes",
    "register_redaction_patterns": "redaction patterns have no equivalent hook in hermes",
}
"""Registration methods of the Hermes agent that mean nothing here: calling one records a note
(shown by ``hermes plugins list``) and does nothing else."""


class HermesPluginContext:
    """The plugin context of one Hermes agent plugin.

    Every ``register_*`` method of the Hermes agent's context exists: the ones with a meaning here
    register with the host, the others record a note saying why nothing happened. Registration
    mistakes raise ``ValueError`` as in the Hermes agent, which fails that plugin's load only.
    """

    def __init__(self, manifest: HermesManifest, host: HermesPluginHost, plugin: HostedPlugin):
        self.manifest = manifest
        self._host = host
        self._plugin = plugin
        self._llm: Any = None

    # --- identity --------------------------------------------------------------------------

    @property
    def plugin_id(self) -> str:
        """The id the plugin is enabled with (its key)."""
        return self.manifest.plugin_id

    @property
    def profile_name(self) -> str:
        """The Hermes agent profile name of the active home folder (``default``, the profile
        folder's name, or ``custom``)."""
        return profile_name(self._host.home)

    @property
    def hermes_home(self) -> Path:
        """The active hermes home folder."""
        return self._host.home

    @property
    def llm(self) -> Any:
        """Completions on the user's configured model (see :mod:`.llm`)."""
        if self._llm is None:
            from .llm import PluginLlm

            self._llm = PluginLlm(self.plugin_id, self._host)
        return self._llm

    def has_plugin(self, plugin_id: str) -> bool:
        """Whether another Hermes agent plugin of that key or name is loaded."""
        return any(
            p.status == "loaded" and plugin_id in {key, p.manifest.name}
            for key, p in self._host.plugins.items()
        )

    def get_config(self, key: str, default: Any = None) -> Any:
        """This plugin's setting ``plugins.entries.<id>.settings.<key>`` (dotted), else
        ``default``."""
        node: Any = self._host.plugin_entry(self.plugin_id).get("settings")
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    # --- tools -----------------------------------------------------------------------------

    def register_tool(
        self,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: list[Any] | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        override: bool = False,
    ) -> None:
        """Register a tool in toolset ``toolset``; ``handler(args, **kwargs)`` returns a string
        (usually JSON). ``override=True`` (replacing a built-in tool) is not honoured: the tool is
        registered under its name and a clash is reported by the host."""
        from .tools import HermesTool

        if not callable(handler):
            raise ValueError(f"tool {name!r} has no callable handler")
        if not isinstance(schema, dict):
            raise ValueError(f"tool {name!r}: schema must be a dict")
        if name in self._host.tools:
            other = self._host.tools[name].plugin
            raise ValueError(f"tool {name!r} is already registered by Hermes plugin {other!r}")
        if override:
            self._plugin.notes.append(
                f"tool {name}: override=True is not honoured (a tool of a name another plugin "
                "already registered is refused, not replaced)"
            )
        self._host.tools[name] = HermesTool(
            name=name,
            toolset=toolset or self.plugin_id,
            schema=schema,
            handler=handler,
            check_fn=check_fn,
            requires_env=[_env_name(e) for e in requires_env or [] if _env_name(e)],
            is_async=is_async,
            description=description,
            plugin=self.plugin_id,
        )
        self._plugin.tools.append(name)

    def dispatch_tool(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Call a tool registered by a Hermes agent plugin and return its result string; any other
        tool gives a JSON error (hermes tools run only through the agent loop)."""
        tool = self._host.tools.get(tool_name)
        if tool is None:
            return json.dumps(
                {
                    "error": f"tool {tool_name!r} cannot be dispatched from a plugin here: only "
                    "tools of Hermes agent plugins can (hermes tools run through the agent loop)"
                }
            )
        context = current.tool_context()
        payload = {"task_id": getattr(context, "task_id", ""), **kwargs}
        return tool.call(dict(args), payload)

    # --- hooks -----------------------------------------------------------------------------

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        """Register ``callback`` for the Hermes agent hook ``hook_name``. A hook with no meaning
        here is stored, never called, and reported as not honoured."""
        if not callable(callback):
            raise ValueError(f"hook {hook_name!r}: callback is not callable")
        self._host.hooks.setdefault(hook_name, []).append((self.plugin_id, callback))
        self._plugin.hooks.append(hook_name)
        if hook_name not in KNOWN_HOOKS:
            self._plugin.notes.append(f"hook {hook_name}: not a Hermes agent hook, never called")
        elif hook_name not in HONOURED_HOOKS:
            self._plugin.notes.append(
                f"hook {hook_name}: not honoured ({not_honoured_reason(hook_name)})"
            )

    # --- commands --------------------------------------------------------------------------

    def register_command(
        self,
        name: str,
        handler: Callable[[str], Any],
        description: str = "",
        args_hint: str = "",
        argument_mode: str | None = None,
    ) -> None:
        """Register the slash command ``/name``; ``handler(raw_args) -> str | None``. It runs as
        ``hermes agent-plugins command NAME [ARGS...]``."""
        clean = str(name).lower().strip().lstrip("/").replace(" ", "-")
        if not clean:
            raise ValueError("a command needs a name")
        if not callable(handler):
            raise ValueError(f"command {clean!r} has no callable handler")
        if clean in self._host.commands:
            other = self._host.commands[clean]["plugin"]
            raise ValueError(f"command /{clean} is already registered by Hermes plugin {other!r}")
        self._host.commands[clean] = {
            "handler": handler,
            "description": description or "Plugin command",
            "args_hint": (args_hint or "").strip(),
            "plugin": self.plugin_id,
        }
        self._plugin.commands.append(f"/{clean}")

    def register_cli_command(
        self,
        name: str,
        help: str,
        setup_fn: Callable[[Any], Any],
        handler_fn: Callable[[Any], Any] | None = None,
        description: str = "",
    ) -> None:
        """Register ``hermes <name> ...``: ``setup_fn`` receives an ``argparse`` parser,
        ``handler_fn(namespace)`` (or the parser's ``func`` default) runs the command."""
        if not name or not callable(setup_fn):
            raise ValueError(f"CLI command {name!r} needs a name and a setup function")
        if name in self._host.cli_commands:
            other = self._host.cli_commands[name]["plugin"]
            raise ValueError(f"CLI command {name!r} is already registered by {other!r}")
        self._host.cli_commands[name] = {
            "help": help,
            "description": description,
            "setup_fn": setup_fn,
            "handler_fn": handler_fn,
            "plugin": self.plugin_id,
        }
        self._plugin.cli_commands.append(name)

    # --- skills ----------------------------------------------------------------------------

    def register_skill(
        self,
        name: str,
        path: Path | str,
        description: str = "",
        frontmatter: dict[str, Any] | None = None,
    ) -> None:
        """Register a read-only skill, read as ``<plugin>:<name>`` with the
        ``hermes_plugin_skill`` tool."""
        if ":" in name:
            raise ValueError(f"skill name {name!r} must not contain ':'")
        if not _SKILL_NAME.match(name or ""):
            raise ValueError(f"invalid skill name {name!r}: use letters, digits, '_' and '-'")
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"SKILL.md not found at {path}")
        qualified = f"{self.manifest.skill_namespace}:{name}"
        self._host.skills[qualified] = {
            "path": path,
            "description": description,
            "frontmatter": dict(frontmatter or {}),
            "plugin": self.plugin_id,
        }
        self._plugin.skills.append(qualified)

    # --- system prompt sections -------------------------------------------------------------

    def register_system_prompt_section(
        self,
        id: str,
        content: str | Callable[[Any], str],
        *,
        position: str = "after_memory",
        max_chars: int = SECTION_MAX_CHARS,
    ) -> None:
        """Register a bounded section of the system prompt, built once per new session (a
        callable gets a read-only mapping: ``session_id``, ``model``, ``provider``, ``platform``,
        ``profile_name``, ``cwd``). Sections are sorted by id and placed after the memory
        snapshot."""
        if not isinstance(id, str) or not _SECTION_ID.match(id):
            raise ValueError(
                "system prompt section id must be 1-128 lowercase letters, digits, '.', '_', '-'"
            )
        if not isinstance(content, str) and not callable(content):
            raise TypeError("system prompt section content must be a string or callable")
        if position != "after_memory":
            raise ValueError("system prompt section position must be after_memory")
        if isinstance(max_chars, bool) or not isinstance(max_chars, int):
            raise ValueError("system prompt section max_chars must be an integer")
        if not 0 < max_chars <= SECTION_MAX_CHARS:
            raise ValueError(f"system prompt section max_chars must be 1 to {SECTION_MAX_CHARS}")
        if id in self._host.prompt_sections:
            other = self._host.prompt_sections[id]["plugin"]
            raise ValueError(f"system prompt section {id!r} is already registered by {other!r}")
        self._host.prompt_sections[id] = {
            "content": content,
            "max_chars": max_chars,
            "plugin": self.plugin_id,
        }
        self._plugin.prompt_sections.append(id)

    def inject_message(self, content: str, role: str = "user") -> bool:
        """Not honoured: hermes has no queue for messages from outside a session. Returns
        ``False``, as the Hermes agent does when no interactive session is there to take it,
        and notes it once."""
        note = "inject_message: not honoured (no queue for messages from outside a session)"
        if note not in self._plugin.notes:
            self._plugin.notes.append(note)
        return False

    # --- everything else -------------------------------------------------------------------

    def __getattr__(self, attribute: str) -> Any:
        if attribute in UNSUPPORTED_REGISTRATIONS or attribute.startswith("register_"):
            reason = UNSUPPORTED_REGISTRATIONS.get(attribute, "no equivalent in hermes")

            def not_honoured(*args: Any, **kwargs: Any) -> None:
                self._plugin.notes.append(f"{attribute}: not honoured ({reason})")
                return None

            return not_honoured
        raise AttributeError(f"the Hermes plugin context here has no attribute {attribute!r}")


def _env_name(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        return str(entry.get("name") or entry.get("env") or "")
    return ""


def call_command(handler: Callable[[str], Any], raw_args: str) -> str:
    """Run a slash command handler with the text after the command; return what it answered."""
    value = resolve(handler(raw_args))
    return "" if value is None else str(value)
