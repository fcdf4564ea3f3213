"""The hook specifications: every way a plugin can extend hermes.

Hooks are only ever added to, never changed incompatibly. An implementation may accept fewer
arguments than the specification lists (pluggy passes only the ones it names).

Unless a hook says otherwise, every implementation is called, newest-registered plugin first
(see docs/plugins.md for the load order), and an exception in one implementation is recorded
against its plugin and does not stop the others. The two guard hooks fail closed instead: an
exception in ``hermes_pre_tool_call`` blocks the call, one in ``hermes_approve`` denies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .markers import hookspec

if TYPE_CHECKING:  # annotations only: importing the spec module stays cheap at start-up
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from .agents import AgentOutcome
    from .approval import ApprovalDecision, ApprovalRequest
    from .calls import Block, ToolCall, ToolContext, ToolResult
    from .config_schema import ConfigSection
    from .context_engine import ContextEngine
    from .environment import EnvironmentFactory
    from .people import PersonScope
    from .prompt import PromptContext, PromptLayer
    from .providers import ModelRequest, ModelResponse, Provider, ProviderSettings
    from .reports import PluginReport
    from .sessions import SessionInfo, SessionStoreFactory
    from .slash import SlashCommand
    from .tools import Toolset
    from .turns import TurnResult

# --- registration -------------------------------------------------------------------------


@hookspec
def hermes_register_toolsets(register: Callable[[Toolset], None]) -> None:
    """Register toolsets.

    Called once per process when the tool registry is first needed.

    :param register: call ``register(Toolset(...))`` once per toolset. The host validates the
        toolset, rejects a tool or toolset name another plugin already registered (naming both
        plugins) and remembers which plugin registered it.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_configured_toolsets(
    config: Mapping[str, Any], register: Callable[[Toolset], None]
) -> None:
    """Register toolsets that depend on the configuration (e.g. one per configured server).

    Called once per process, right after ``hermes_register_toolsets``, when the host has a
    configuration (an agent or a CLI command that reads one); with the configuration the
    registry was first given. Must not start anything slow: tools that are only known once a
    server runs go in ``Toolset.discover``.

    :param config: the effective configuration (read-only mapping of nested dicts).
    :param register: as for ``hermes_register_toolsets``: ``register(Toolset(...))``, with the
        same validation, duplicate detection and attribution.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_environments(register: Callable[[str, EnvironmentFactory], None]) -> None:
    """Register execution environment backends.

    Called once per process when an environment is first needed or listed.

    :param register: call ``register(name, factory)``; ``name`` is what users put in
        ``terminal.backend``, ``factory(config, task_id)`` returns an
        :class:`~hermes_hookspecs.Environment`. It must import heavy clients (docker, paramiko...)
        inside the factory, not at module import. Duplicate names are an error naming both plugins.
        A factory may carry ``check_config(config) -> list[str]``
        (:data:`~hermes_hookspecs.EnvironmentConfigCheck`: problems found without starting
        anything) and ``check(config) -> str`` (:data:`~hermes_hookspecs.EnvironmentProbe`: a
        live probe); ``hermes doctor`` calls them.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_providers(register: Callable[[Provider], None]) -> None:
    """Register model providers.

    Called once per process when a provider is resolved or listed.

    :param register: call ``register(Provider(...))``. Duplicate names are an error naming both
        plugins.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_context_engines(register: Callable[[type[ContextEngine]], None]) -> None:
    """Register context engine classes.

    Called once per process when the engine named in ``context.engine`` is looked up or listed.
    Registering an engine does not make it active.

    :param register: call ``register(EngineClass)``; the class's ``name`` attribute is its name.
        Duplicate names are an error naming both plugins.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_session_stores(register: Callable[[str, SessionStoreFactory], None]) -> None:
    """Register session stores by the URL scheme they serve (``store.url``).

    Called once per process, when a host opens its session store and ``store.url`` (or
    ``HERMES_STORE_URL``) names a scheme other than ``sqlite``. Registering a store opens
    nothing: the factory is called only for the configured URL.

    :param register: call ``register(scheme, factory)``; ``factory(url, home)`` returns the
        :class:`~hermes_hookspecs.SessionStore` at ``url`` (``home`` is the hermes home, or
        ``None``), raising :class:`~hermes_hookspecs.HermesError` with one readable line when
        it cannot (the host then refuses to run; it never falls back to another store). A
        scheme registered twice is an error naming both plugins.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_slash_commands(register: Callable[[SlashCommand], None]) -> None:
    """Register slash commands of the interactive chat (``/rollback``...).

    Called once per process, when the interactive chat starts. The chat runs a command between
    turns, never while one runs, and shows it in ``/help``.

    :param register: call ``register(SlashCommand(...))`` once per command. A name a builtin
        command has, or another plugin registered, is refused and recorded against the later
        plugin, naming both.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the configuration keys this plugin reads: their types, defaults and docs.

    Called once per process, when the effective configuration is first built with the plugins
    loaded (an agent is created, or a CLI command reads the configuration), before any other
    hook sees that configuration.

    :param register: call ``register(ConfigSection(name, keys=[ConfigKey(...), ...]))`` once per
        section. The host attributes every key to the plugin, refuses a key that the core or
        another plugin already declares (a one-line error naming both, recorded against the
        later plugin; its other keys are kept), merges the declared defaults under
        ``config.yaml``, and checks the effective configuration (file, environment, command
        line) against every declaration: a value of the wrong type is a configuration error
        naming the key, the value and the type expected; a key no plugin declares is a warning
        naming the closest declared key. Keys declared ``secret`` are masked by
        ``hermes config show``.
    :return: nothing; return values are ignored. Declarations of several plugins are merged
        into one schema; the sections they declare may overlap, their keys may not.
    """


@hookspec
def hermes_register_commands(cli: Any) -> None:
    """Add commands to the ``hermes`` command line.

    Called once when the CLI is built, before arguments are parsed.

    :param cli: the root ``click.Group``; use ``@cli.command()`` or ``cli.add_command(...)``.
        A command whose name is taken is rejected and reported against the plugin.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_describe_plugins(report: Callable[[PluginReport], None]) -> None:
    """Describe plugins this plugin loads on behalf of another plugin system.

    Called when ``hermes plugins list`` (or ``--json``) is printed, after the registration hooks,
    for a plugin that hosts other plugins, e.g. a loader of plugins written for another agent.

    :param report: call ``report(PluginReport(...))`` once per hosted plugin, whether it loaded or
        not; the host lists them under this plugin, with their notes (what does not work here).
    :return: nothing; return values are ignored.
    """


# --- prompt ----------------------------------------------------------------------------------


@hookspec
def hermes_prompt_layers(context: PromptContext) -> PromptLayer | list[PromptLayer] | None:
    """Contribute layers to the system prompt.

    Called once per session, when its system prompt is first built (and again only after
    compression). The prompt is stored with the session and replayed byte for byte, so a layer must
    not depend on the time of day; per-turn context does not belong here.

    :param context: what the prompt is being built for.
    :return: a layer, a list of layers, or ``None``. Layers of all plugins are joined tier by
        tier (stable, context, volatile), by ``order`` inside a tier; a layer whose name repeats
        an earlier one replaces it.
    """


# --- tool calls ------------------------------------------------------------------------------


@hookspec
def hermes_pre_tool_call(call: ToolCall, context: ToolContext) -> Block | dict[str, Any] | None:
    """Observe, block or rewrite a tool call before it runs.

    Called for every call whose tool exists and whose arguments are valid, before approval.

    :param call: the call; ``call.arguments`` are the validated arguments.
    :param context: the context the handler will receive.
    :return: ``None`` to let it run; a :class:`~hermes_hookspecs.Block` to stop it (its reason is
        sent to the model as the result); or a ``dict`` of new arguments. Implementations run in
        order and each sees the arguments left by the previous one; the first ``Block`` stops the
        call. A returned dict replaces the arguments whole and is validated against the tool's
        schema again; the transcript keeps the arguments the model sent. An exception blocks the
        call (guards fail closed).
    """


@hookspec
def hermes_post_tool_call(call: ToolCall, result: ToolResult, context: ToolContext) -> str | None:
    """Observe or replace a tool's result before the model sees it.

    Called after every call whose tool exists and whose arguments were valid, including calls
    that were blocked, denied or raised; not for malformed calls nor calls an interrupt dropped.

    :param call: the call as it was executed.
    :param result: the result; ``result.content`` is what the model will see.
    :param context: the handler's context.
    :return: ``None`` to keep the result, or a string to replace its content. Implementations
        run in order and each sees the content left by the previous one.
    """


@hookspec(firstresult=True)
def hermes_approve(request: ApprovalRequest, context: ToolContext) -> ApprovalDecision | None:
    """Decide whether a dangerous action may go ahead.

    Called when a tool asks for approval, after the session's remembered decisions and before the
    interactive prompt (if there is one).

    :param request: what the tool wants to do and why it needs approval.
    :param context: the asking tool's context.
    :return: ``"once"``, ``"session"``, ``"always"`` or ``"deny"`` to decide; ``None`` for no
        opinion. The first non-``None`` answer wins (``firstresult``); anything else than the four
        decisions counts as ``deny``, and so does an exception. With no answer and no one to ask,
        the action is denied. ``--yolo`` approves without calling this hook.
    """


# --- sessions and requests -----------------------------------------------------------------


@hookspec
def hermes_session_start(session: SessionInfo) -> None:
    """A session started (new, or resumed in this process).

    :param session: the session; its ``system_prompt`` is not built yet for a new session.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_session_end(session: SessionInfo) -> None:
    """A session ended (the agent was closed or the process is leaving).

    :param session: the session, with ``ended_at`` and ``end_reason`` set.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_before_request(request: ModelRequest) -> None:
    """A model request is about to be sent.

    :param request: the request; implementations may change ``options`` or ``max_tokens``, and
        should not touch ``messages`` or ``tools`` (the transcript was already validated and the
        tool schemas must stay byte-stable for prompt caching).
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_after_response(response: ModelResponse, request: ModelRequest) -> None:
    """A model response arrived, before the loop acts on it.

    :param response: the converted response (message, finish reason, usage).
    :param request: the request it answers (the attempt that succeeded, as
        ``hermes_before_request`` saw it).
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_request_failed(request: ModelRequest, error: BaseException) -> None:
    """An attempt of a model call failed: the provider answered with an error, the connection
    broke, the call timed out or was interrupted.

    Called for every failed attempt (side requests such as compression summaries included),
    on the thread that made the request, before the host retries, refreshes the key, moves to
    a fallback provider or gives up: a request ``hermes_before_request`` saw gets either this
    hook or ``hermes_after_response``.

    :param request: the request of the failed attempt.
    :param error: what it failed with: a :class:`~hermes_hookspecs.ProviderError` (its ``kind``
        and ``status`` say why), :class:`~hermes_hookspecs.Cancelled` for an interrupt, or
        another exception.
    :return: nothing; return values are ignored.
    """


# --- turns -----------------------------------------------------------------------------------


@hookspec
def hermes_turn_start(
    session_id: str,
    task_id: str,
    source: str,
    model: str,
    provider: str,
    config: Mapping[str, Any],
    trace_context: Mapping[str, str],
) -> None:
    """A turn (one user message, run until the model answers) starts.

    Called on the thread that runs the turn, before the session is opened and before the
    turn's first model call; every ``hermes_turn_start`` is followed by one
    ``hermes_turn_end`` with the same ``task_id``, however the turn ends.

    :param session_id: the session the turn runs in (a compression during the turn may move it
        to a child session: ``hermes_turn_end`` names the session it ended in).
    :param task_id: the turn's task id; the turn's model requests and tool contexts carry it.
    :param source: where the turn comes from (``cli``, ``library``, ``cron``, ``subagent``,
        a gateway platform...).
    :param model: the model the turn starts with.
    :param provider: that model's provider.
    :param config: the effective configuration (read-only mapping of nested dicts).
    :param trace_context: the W3C trace context the turn was started under, as text headers
        (``traceparent``, ``tracestate``), e.g. from the HTTP request that asked for it; empty
        when there is none.
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_turn_end(session_id: str, task_id: str, result: TurnResult) -> None:
    """A turn ended: answered, stopped by its budget, interrupted or failed.

    Called once for every ``hermes_turn_start``, on the thread that started the turn, after
    the turn's last step is stored.

    :param session_id: the session the turn ended in.
    :param task_id: as for ``hermes_turn_start``.
    :param result: the :class:`~hermes_hookspecs.TurnResult` the turn returns (exit reason,
        error, usage, estimated cost, model and provider after any fallback).
    :return: nothing; return values are ignored.
    """


@hookspec(firstresult=True)
def hermes_refresh_credentials(provider: str, settings: ProviderSettings) -> str | None:
    """Provide a fresh API key after a provider rejected the current one (401/403).

    Called at most once per turn and provider, before the host moves on to a fallback provider;
    for a provider with a credential pool, once per turn and pooled key (``settings.api_key`` is
    that key's value, and the answer replaces it in this process).

    :param provider: the name of the provider whose key was rejected.
    :param settings: what the host resolved for it (model, endpoint, the rejected key).
    :return: a new key to retry with, or ``None`` when this plugin has none. The first
        non-``None`` answer wins (``firstresult``).
    """


# --- people ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def hermes_person_scope(
    person: str, config: Mapping[str, Any], home: Path | None
) -> PersonScope | None:
    """Say what the runs of ``person`` may do: their allowed toolsets, whose sessions they may
    search besides their own, and configuration that holds for them (their workspace, model,
    approvals, sandbox, budgets, memory on or off).

    Called by the host before every run that acts for a person (``AgentTask.person``): a
    gateway turn, a scheduled job created by that person, each of their subagents.

    :param person: the person id.
    :param config: the configuration the run starts from.
    :param home: the hermes home (``None`` for an agent without one).
    :return: a :class:`~hermes_hookspecs.PersonScope`, or ``None`` when this plugin does not
        define people (the run then keeps only its data apart). The first non-``None`` answer
        wins (``firstresult``). An exception fails the run (an ``error`` outcome): a person's
        limits that cannot be read are never skipped.
    """


# --- subagents -------------------------------------------------------------------------------


@hookspec
def hermes_subagent_start(
    parent_session_id: str, child_session_id: str, goal: str, source: str, parent_call_id: str
) -> None:
    """Observe a subagent starting: a run a tool started through ``ToolContext.agents``.

    Called in the thread that runs the child, before its first model call; parallel children
    call it from several threads.

    :param parent_session_id: the session of the agent whose tool started the child.
    :param child_session_id: the child's own session (linked to the parent's).
    :param goal: the child's task (the prompt it was given).
    :param source: the child session's source, e.g. ``subagent``.
    :param parent_call_id: the id of the tool call that started the child (``""`` when the
        runner was not made for a tool call).
    :return: nothing; return values are ignored.
    """


@hookspec
def hermes_subagent_stop(
    parent_session_id: str,
    child_session_id: str,
    goal: str,
    status: str,
    duration: float,
    outcome: AgentOutcome,
) -> None:
    """Observe a subagent ending, however it ended.

    Called once for every ``hermes_subagent_start``, in the same thread, after the child's
    session is stored.

    :param parent_session_id: the session of the agent whose tool started the child.
    :param child_session_id: the child's session.
    :param goal: the child's task.
    :param status: ``completed``, ``interrupted``, ``max_iterations`` or ``error``.
    :param duration: seconds the child ran.
    :param outcome: the whole :class:`~hermes_hookspecs.AgentOutcome` (answer, error, usage).
    :return: nothing; return values are ignored.
    """
