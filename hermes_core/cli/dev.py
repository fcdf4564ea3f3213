"""``hermes dev``: tools for plugin authors."""

from __future__ import annotations

import click


@click.group("dev")
def dev_group() -> None:
    """Tools for plugin authors: a local fake LLM server."""


@dev_group.command("fake-llm")
@click.option(
    "--script",
    "script",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="JSON list of steps, one per model request (see hermes_core.testing.fake_llm).",
)
@click.option("--port", type=int, default=0, show_default=True, help="Port; 0 picks a free one.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address to bind.")
@click.option("--quiet", is_flag=True, help="Do not log requests to stderr.")
def fake_llm(script: str, port: int, host: str, quiet: bool) -> None:
    """Serve a scripted fake LLM on loopback until Ctrl-C.

    It answers OpenAI chat completions (/v1/chat/completions), the OpenAI Responses API
    (/v1/responses) and Anthropic messages (/v1/messages), streamed or not, one script step per
    request. The base URL is printed on the first line of standard output; point a provider at
    it, e.g. `hermes chat --provider custom --base-url URL/v1 -q ...`.
    """
    import signal
    import sys
    import threading

    from ..testing.fake_llm import FakeLLM, load_script

    try:
        steps = load_script(script)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--script") from None
    log = None if quiet else (lambda line: click.echo(f"fake-llm: {line}", err=True))
    try:
        server = FakeLLM(*steps, host=host, port=port, log=log)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--host") from None
    try:
        server.start()
    except OSError as exc:
        message = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        raise click.ClickException(message) from None
    click.echo(server.url)
    sys.stdout.flush()
    click.echo(
        f"fake-llm: {len(steps)} step(s); OpenAI base URL {server.openai_base_url}, "
        f"Anthropic base URL {server.anthropic_base_url}; Ctrl-C stops",
        err=True,
    )
    done = threading.Event()
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: done.set()) if main_thread else None
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        server.stop()
        click.echo(
            f"fake-llm: stopped after {len(server.requests)} request(s), "
            f"{server.remaining} step(s) left",
            err=True,
        )
