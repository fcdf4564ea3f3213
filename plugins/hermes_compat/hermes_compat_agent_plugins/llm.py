"""``ctx.llm``: completions on the user's configured model for a Hermes agent plugin, run by the
host's agent runner (a one-turn agent with no tools), so provider, key and fallbacks are hermes's.

The runner is the one of the tool call the plugin's code runs in (``ToolContext.agents``), else
the one of the running ``hermes`` command. Choosing another provider or model needs the same
opt-in as in the Hermes agent: ``plugins.entries.<id>.llm.allow_model_override`` (and
``allowed_models``) or ``allow_provider_override`` (and ``allowed_providers``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import current

if TYPE_CHECKING:
    from .host import HermesPluginHost


class PluginLlmTrustError(PermissionError):
    """A plugin asked for a provider or model it is not allowed to choose."""


@dataclass
class PluginLlmUsage:
    """Token counts of one completion."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


@dataclass
class PluginLlmCompleteResult:
    """What :meth:`PluginLlm.complete` returns."""

    text: str
    provider: str
    model: str
    agent_id: str = ""
    usage: PluginLlmUsage = field(default_factory=PluginLlmUsage)
    audit: dict[str, Any] = field(default_factory=dict)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


class PluginLlm:
    """The ``ctx.llm`` of one plugin."""

    def __init__(self, plugin_id: str, host: HermesPluginHost) -> None:
        self.plugin_id = plugin_id
        self._host = host

    def _allowed(self, kind: str, value: str | None) -> str | None:
        if not value:
            return None
        policy = self._host.plugin_entry(self.plugin_id).get("llm")
        policy = policy if isinstance(policy, Mapping) else {}
        if policy.get(f"allow_{kind}_override") is not True:
            raise PluginLlmTrustError(
                f"plugin {self.plugin_id!r} cannot choose the {kind} (set plugins.entries."
                f"{self.plugin_id}.llm.allow_{kind}_override: true to allow it)"
            )
        allowed = policy.get(f"allowed_{kind}s")
        if isinstance(allowed, list) and "*" not in allowed and value not in allowed:
            raise PluginLlmTrustError(
                f"plugin {self.plugin_id!r}: {kind} {value!r} is not in plugins.entries."
                f"{self.plugin_id}.llm.allowed_{kind}s"
            )
        return value

    def _runner(self) -> Any:
        context = current.tool_context()
        runner = getattr(context, "agents", None)
        if runner is None:
            command = current.command_context()
            runner = command.agent_runner() if command is not None else None
        if runner is None:
            raise RuntimeError(
                "ctx.llm works inside a tool call or a hermes command; there is no model to "
                "ask here"
            )
        return runner

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        provider: str | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        agent_id: str | None = None,
        profile: str | None = None,
        purpose: str = "",
        **_: Any,
    ) -> PluginLlmCompleteResult:
        """Ask the user's model for one answer to ``messages`` (OpenAI-style; system messages
        become the system context, the other messages the prompt). Raises
        :class:`PluginLlmTrustError` for an override the configuration does not allow, and
        ``RuntimeError`` when the model could not answer."""
        from hermes_hookspecs import AgentTask

        if agent_id or profile:
            raise PluginLlmTrustError(
                f"plugin {self.plugin_id!r}: agent_id and profile overrides are not honoured here"
            )
        chosen_provider = self._allowed("provider", provider)
        chosen_model = self._allowed("model", model)
        system = [_text_of(m.get("content")) for m in messages if m.get("role") == "system"]
        turns = [m for m in messages if m.get("role") != "system"]
        if len(turns) == 1:
            prompt = _text_of(turns[0].get("content"))
        else:
            prompt = "\n\n".join(
                f"{m.get('role', 'user')}: {_text_of(m.get('content'))}" for m in turns
            )
        overrides: dict[str, Any] = {}
        if temperature is not None:
            overrides["model.temperature"] = temperature
        task = AgentTask(
            prompt=prompt,
            source="plugin",  # plugin.PLUGIN_SOURCE: no turn hooks fire for it
            toolsets=[],
            model=chosen_model,
            provider=chosen_provider,
            max_iterations=1,
            system_context="\n\n".join(s for s in system if s) or None,
            config_overrides=overrides,
        )
        outcome = self._runner().run(task)
        if outcome.status != "completed":
            raise RuntimeError(
                f"ctx.llm: the model did not answer ({outcome.error or outcome.status})"
            )
        usage = outcome.usage
        return PluginLlmCompleteResult(
            text=outcome.text,
            provider=chosen_provider or "",
            model=chosen_model or "",
            usage=PluginLlmUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.input_tokens + usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost_usd=outcome.cost_usd or None,
            ),
            audit={
                "plugin_id": self.plugin_id,
                "purpose": purpose,
                "session_id": outcome.session_id,
            },
        )

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> Any:
        """:meth:`complete` for ``async`` code (runs it in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.complete, messages, **kwargs)

    def complete_structured(self, *args: Any, **kwargs: Any) -> Any:
        """Not honoured here: structured completions (JSON schema, images) raise."""
        raise NotImplementedError("ctx.llm.complete_structured is not honoured by hermes")


__all__ = ["PluginLlm", "PluginLlmCompleteResult", "PluginLlmTrustError", "PluginLlmUsage"]
