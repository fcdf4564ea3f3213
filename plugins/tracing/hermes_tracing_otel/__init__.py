"""OpenTelemetry GenAI traces of hermes: an ``invoke_agent hermes`` span per turn, ``chat
{model}`` per model request and ``execute_tool {tool}`` per tool call, with the two
``gen_ai.client`` metrics, exported over OTLP/HTTP. See docs/tracing.md.

Off by default: on when ``tracing.enabled`` is true, or (unset) when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, or when an embedder called :func:`configure`. This
module imports only the contract: OpenTelemetry is imported when the first traced turn starts,
so ``hermes --help`` and an untraced chat never pay for it, and every hook of an untraced turn
returns after one lookup.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

if TYPE_CHECKING:  # annotations only
    from collections.abc import Mapping

    from hermes_hookspecs import (
        ModelRequest,
        ModelResponse,
        ToolCall,
        ToolContext,
        ToolResult,
        TurnResult,
    )

    from .providers import Providers
    from .spans import Tracing

__version__ = "0.1.0"

_tracing: Tracing | None = None
"""The tracer of this process, once a traced turn started (or :func:`configure` ran)."""
_providers: Providers | None = None
"""The providers this plugin built from the configuration (``None`` when an embedder gave
its own)."""
_configured = False
"""An embedder called :func:`configure`: turns are traced unless their configuration says
``tracing.enabled: false``."""
_broken = False
"""OpenTelemetry could not be imported: said once, not tried again."""
_lock = threading.Lock()


def configure(
    tracer_provider: Any = None,
    meter_provider: Any = None,
    *,
    capture_content: bool | None = None,
) -> None:
    """Trace with the given OpenTelemetry providers (an application's own, or an in-memory
    exporter's in a test) instead of building OTLP exporters from the configuration.

    :param tracer_provider: where spans go (default: the global tracer provider).
    :param meter_provider: where the metrics go (default: the global meter provider).
    :param capture_content: record message and tool content whatever the configuration and
        environment say (``None``: as they say).
    """
    global _tracing, _configured
    from opentelemetry import metrics, trace

    from . import settings
    from .spans import Tracing

    environ = settings.environ()

    def capture(config: Mapping[str, Any]) -> bool:
        if capture_content is not None:
            return capture_content
        return settings.capture_content(config, environ)

    with _lock:
        _tracing = Tracing(
            tracer_provider or trace.get_tracer_provider(),
            meter_provider or metrics.get_meter_provider(),
            capture,
            environ,
            __version__,
        )
        _configured = True


def reset() -> None:
    """Stop tracing in this process: flush and close what :func:`configure` or the
    configuration set up (tests, and embedders that switch providers)."""
    global _tracing, _providers, _configured
    with _lock:
        providers, _providers, _tracing, _configured = _providers, None, None, False
    if providers is not None:
        providers.close()


def _start(config: Mapping[str, Any]) -> Tracing | None:
    """The tracer for a turn with ``config`` (built on first use); ``None`` when the turn is
    not traced."""
    from . import settings

    environ = settings.environ()
    if not settings.wanted(config, environ, _configured):
        return None
    global _tracing, _providers, _broken
    with _lock:
        if _tracing is None:
            if _broken:
                return None
            try:
                from .providers import build
                from .spans import Tracing
            except ImportError as exc:  # installed without its dependencies
                _broken = True
                import logging

                logging.getLogger("hermes.tracing").warning(
                    "tracing: OpenTelemetry cannot be imported (%s); turns are not traced "
                    "(pip install hermes-tracing-otel installs it)",
                    exc,
                )
                return None
            _providers = build(settings.export_settings(config, environ), __version__)
            _tracing = Tracing(
                _providers.tracer_provider,
                _providers.meter_provider,
                lambda cfg: settings.capture_content(cfg, environ),
                environ,
                __version__,
            )
        return _tracing


@hookimpl
def hermes_turn_start(
    session_id: str,
    task_id: str,
    source: str,
    model: str,
    provider: str,
    config: Mapping[str, Any],
    trace_context: Mapping[str, str],
) -> None:
    """Open the turn's ``invoke_agent`` span when the turn is traced."""
    tracing = _start(config)
    if tracing is not None:
        tracing.turn_start(session_id, task_id, source, model, provider, config, trace_context)


@hookimpl
def hermes_turn_end(session_id: str, task_id: str, result: TurnResult) -> None:
    """Close the turn's span."""
    if _tracing is not None:
        _tracing.turn_end(session_id, task_id, result)


@hookimpl
def hermes_before_request(request: ModelRequest) -> None:
    """Open a ``chat`` span."""
    if _tracing is not None:
        _tracing.request_start(request)


@hookimpl
def hermes_after_response(response: ModelResponse, request: ModelRequest) -> None:
    """Close the ``chat`` span with the response."""
    if _tracing is not None:
        _tracing.request_end(response, request)


@hookimpl
def hermes_request_failed(request: ModelRequest, error: BaseException) -> None:
    """Close the ``chat`` span as failed."""
    if _tracing is not None:
        _tracing.request_failed(request, error)


@hookimpl(tryfirst=True)
def hermes_pre_tool_call(call: ToolCall, context: ToolContext) -> None:
    """Open an ``execute_tool`` span (first, so that a call another guard blocks has one).
    Never blocks the call: an exception here would (guards fail closed), so none escapes."""
    if _tracing is not None:
        try:
            _tracing.tool_start(call, context)
        except Exception:
            import logging

            logging.getLogger("hermes.tracing").debug("tool span not opened", exc_info=True)


@hookimpl(trylast=True)
def hermes_post_tool_call(call: ToolCall, result: ToolResult, context: ToolContext) -> None:
    """Close the ``execute_tool`` span (last, with the result the model will see)."""
    if _tracing is not None:
        _tracing.tool_end(call, result, context)


@hookimpl
def hermes_subagent_start(
    parent_session_id: str, child_session_id: str, parent_call_id: str
) -> None:
    """Nest the subagent's turn under the tool call that started it."""
    if _tracing is not None:
        _tracing.subagent_start(parent_session_id, child_session_id, parent_call_id)


@hookimpl
def hermes_subagent_stop(child_session_id: str) -> None:
    """Forget the subagent's parent."""
    if _tracing is not None:
        _tracing.subagent_stop(child_session_id)


__all__ = ["configure", "reset"]
