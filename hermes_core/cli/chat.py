"""``hermes chat``: one-shot answers (``-q``) and the interactive chat."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hermes_hookspecs import API_MODES, ApprovalRequest, HermesError

from .state import CliState

if TYPE_CHECKING:
    from hermes_hookspecs import TurnResult

    from ..loop.agent import Agent

SPINNER = "|/-\\"
T = TypeVar("T")


def _state() -> CliState:
    state: CliState = click.get_current_context().find_root().obj
    return state


class Display:
    """Terminal output of a chat: streamed text, a spinner while tools run, tool progress."""

    def __init__(self, interactive: bool, stream: bool) -> None:
        self.interactive = interactive
        self.stream = stream
        self.streamed = False
        self._spinning = threading.Event()
        self._label = ""
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._asking = threading.RLock()  # held while the user is asked: no spinner, no output
        self._quiet = False

    def text_delta(self, text: str) -> None:
        """Print streamed answer text as it arrives."""
        self.stop_spinner()
        with self._lock:
            self.streamed = True
            sys.stdout.write(text)
            sys.stdout.flush()

    def tool_progress(self, phase: str, data: dict[str, Any]) -> None:
        """Show a spinner while a tool runs, then one line with its duration."""
        if not self.interactive:
            return
        if phase == "start":
            self.start_spinner(f"{data.get('name')} running")
        else:
            mark = "x" if data.get("is_error") else "+"
            with self._asking:  # never print over a question the user is answering
                self.stop_spinner()
                click.echo(
                    f"  [{mark}] {data.get('name')} ({data.get('duration', 0.0):.2f}s)", err=True
                )

    def thinking(self, active: bool) -> None:
        """Show the spinner while the model works, until its answer starts streaming."""
        if active and not self.streamed:
            self.start_spinner("thinking")

    def status(self, text: str) -> None:
        """Show a status line."""
        with self._asking:
            self.stop_spinner()
            click.echo(f"  ({text})", err=True)

    def ask(self, question: Callable[[], T]) -> T:
        """Run ``question`` (which prompts the user) with the spinner stopped and kept off, so
        the prompt stands alone on its line and what the user types is not overwritten."""
        with self._asking:
            self._quiet = True
            self.stop_spinner()
            try:
                return question()
            finally:
                self._quiet = False

    def start_spinner(self, label: str) -> None:
        """Start (or relabel) the spinner on stderr, on a terminal only."""
        self._label = label
        if self._quiet or not sys.stderr.isatty() or self._spinning.is_set():
            return
        self._spinning.set()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def stop_spinner(self) -> None:
        """Stop the spinner and clear its line."""
        if self._spinning.is_set():
            self._spinning.clear()
            if self._thread is not None:
                self._thread.join(timeout=1)
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    def _spin(self) -> None:
        i = 0
        while self._spinning.is_set() and not self._quiet:
            sys.stderr.write(f"\r{SPINNER[i % 4]} {self._label}")
            sys.stderr.flush()
            i += 1
            time.sleep(0.1)


def _ask_approval(request: ApprovalRequest) -> str | None:
    """Ask the person at the terminal to approve a dangerous action."""
    click.echo(f"  approval needed: {request.reason}\n    {request.action}", err=True)
    choices = "[o]nce, [d]eny" if request.once_only else "[o]nce, [s]ession, [a]lways, [d]eny"
    answer = (
        click.prompt(
            f"  allow? {choices}",
            default="d",
            show_default=False,
            err=True,
        )
        .strip()
        .lower()
    )
    return {"o": "once", "s": "session", "a": "always"}.get(answer[:1], "deny")


def _ask_clarify(question: str, choices: Sequence[str] | None) -> str:
    """Ask the person at the terminal a question from the model."""
    click.echo(f"  {question}", err=True)
    for i, choice in enumerate(choices or [], 1):
        click.echo(f"    {i}. {choice}", err=True)
    answer = click.prompt("  answer", err=True)
    if choices and answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    return str(answer)


def make_agent(
    state: CliState,
    *,
    interactive: bool,
    display: Display,
    yolo: bool,
    stream: bool,
    session_id: str | None = None,
) -> Agent:
    """Build the agent for a chat command from the CLI state."""
    from ..loop.events import Callbacks

    can_ask = sys.stdin.isatty()
    callbacks = Callbacks(
        stream_delta=display.text_delta if stream else None,
        tool_progress=display.tool_progress,
        status=display.status if interactive else None,
        thinking=display.thinking if interactive else None,
        approval=(lambda r: display.ask(lambda: _ask_approval(r))) if can_ask else None,
        clarify=(lambda q, c: display.ask(lambda: _ask_clarify(q, c))) if can_ask else None,
    )
    host = state.host.with_overrides({"agent.platform": "cli", "agent.stream": stream})
    return host.agent(session_id=session_id, callbacks=callbacks, yolo=yolo)


@click.command("chat")
@click.option("-q", "--query", metavar="TEXT", help="Answer TEXT once and print the answer.")
@click.option("--json", "as_json", is_flag=True, help="With -q: print the whole result as JSON.")
@click.option("-m", "--model", help="Model name (model.default).")
@click.option("--provider", help="Provider name (model.provider).")
@click.option("--base-url", help="API endpoint (model.base_url).")
@click.option("--api-key", help="API key (prefer the provider's variable in .env).")
@click.option("--api-mode", type=click.Choice(API_MODES), help="Wire format (model.api_mode).")
@click.option("-t", "--toolsets", metavar="A,B", help="Toolsets to enable (toolsets).")
@click.option("--max-turns", type=click.IntRange(min=1), help="Iteration budget (agent.max_turns).")
@click.option("--yolo", is_flag=True, help="Approve every dangerous action without asking.")
@click.option("--stream/--no-stream", default=None, help="Stream the answer as it is written.")
@click.option("-r", "--resume", "resume", metavar="ID", help="Continue the stored session ID.")
@click.option("-c", "--continue", "continue_", is_flag=True, help="Continue the latest session.")
@click.option(
    "--image",
    "image_paths",
    multiple=True,
    metavar="PATH",
    help="With -q: send the image file PATH with the question (repeatable).",
)
def chat(
    query: str | None = None,
    as_json: bool = False,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    api_mode: str | None = None,
    toolsets: str | None = None,
    max_turns: int | None = None,
    yolo: bool = False,
    stream: bool | None = None,
    resume: str | None = None,
    continue_: bool = False,
    image_paths: tuple[str, ...] = (),
) -> None:
    """Chat with the agent (interactive), or answer one query with -q. In the interactive chat,
    paste or drop an image file's path into a message to send the image."""
    state = _state()
    from .sessions_cmd import open_store

    store = open_store(state)
    session_id = _session_to_resume(store, resume, continue_)
    state.overrides.update(
        {
            "model.default": model,
            "model.provider": provider,
            "model.base_url": base_url,
            "model.api_key": api_key,
            "model.api_mode": api_mode,
            "toolsets": [t.strip() for t in toolsets.split(",") if t.strip()] if toolsets else None,
            "agent.max_turns": max_turns,
        }
    )
    state.reload_config()
    if query is None and not sys.stdin.isatty():
        query = sys.stdin.read().strip()
        if not query:
            raise HermesError("nothing to answer: pass -q TEXT or a question on standard input")
    if image_paths and query is None:
        raise HermesError(
            "--image needs -q; in the interactive chat, paste or drop the image's path into"
            " your message"
        )
    if query is not None:
        _one_shot(
            state,
            store,
            session_id,
            query,
            as_json=as_json,
            yolo=yolo,
            stream=bool(stream) and not as_json,
            image_paths=image_paths,
        )
    else:
        _interactive(state, store, session_id, yolo=yolo, stream=stream is not False)


def _session_to_resume(store: Any, resume: str | None, continue_: bool) -> str | None:
    if resume and continue_:
        raise HermesError("use either --resume ID or --continue, not both")
    if continue_:
        latest: str | None = store.latest_session_id()
        if latest is None:
            raise HermesError("no session to continue yet; start one with `hermes chat`")
        return latest
    if resume:
        from .sessions_cmd import resolve_session

        return resolve_session(store, resume)
    return None


def _one_shot(
    state: CliState,
    store: Any,
    session_id: str | None,
    query: str,
    *,
    as_json: bool,
    yolo: bool,
    stream: bool,
    image_paths: tuple[str, ...] = (),
) -> None:
    display = Display(interactive=False, stream=stream)
    announce_plugin_failures(state)
    agent = make_agent(
        state,
        interactive=False,
        display=display,
        yolo=yolo,
        stream=stream,
        session_id=session_id,
    )
    for line in agent.tool_problems:
        click.echo(f"hermes: warning: {line}", err=True)
    try:
        result = agent.run_conversation(agent.user_content(query, image_paths))
    except KeyboardInterrupt:
        agent.interrupt()
        raise
    finally:
        agent.close()
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    elif result["final_response"] is not None:
        if display.streamed:
            click.echo()
        else:
            click.echo(result["final_response"])
    if result["error"]:
        if not as_json:
            click.echo(f"hermes: error: {result['error']}", err=True)
        raise click.exceptions.Exit(130 if result["interrupted"] else 1)


def _sandbox_off(config: Mapping[str, Any]) -> bool:
    """Whether the person turned the local backend's command sandbox off."""
    terminal = config.get("terminal") or {}
    if (terminal.get("backend") or "local") != "local":
        return False
    setting = terminal.get("sandbox")
    if isinstance(setting, Mapping):
        setting = setting.get("profile")
    return setting is False or str(setting).lower() == "off"


def _interactive(
    state: CliState, store: Any, session_id: str | None, *, yolo: bool, stream: bool
) -> None:
    display = Display(interactive=True, stream=stream)

    def new_agent(session: str | None) -> Agent:
        return make_agent(
            state,
            interactive=True,
            display=display,
            yolo=yolo,
            stream=stream,
            session_id=session,
        )

    agent = new_agent(session_id)
    # Import the provider's SDK while the user types, so the first answer does not wait for it.
    threading.Thread(target=_prepare_quietly, args=(agent,), daemon=True).start()
    history = _setup_readline(state.home)
    click.echo(
        f"hermes: {agent.model} via {agent.provider_name}; /help for commands, Ctrl-D to quit",
        err=True,
    )
    if session_id is not None:
        click.echo(f"  {_resumed_line(store, agent.session_id)}", err=True)
    if _sandbox_off(state.config):
        click.echo(
            "  sandbox OFF (terminal.sandbox: off): commands run with your full authority",
            err=True,
        )
    announce_plugin_failures(state)
    from ..loop.images import dropped_images

    try:
        while True:
            try:
                line = input("> ").strip()
            except EOFError:
                click.echo(err=True)
                break
            except KeyboardInterrupt:
                click.echo(err=True)
                continue
            if not line:
                continue
            text, dropped = dropped_images(line)
            if dropped:  # image files pasted or dropped into the message
                try:
                    content = agent.user_content(text, dropped)
                except HermesError as exc:
                    click.echo(f"hermes: error: {exc}", err=True)
                    continue
                names = ", ".join(path.name for path in dropped)
                click.echo(f"  (with {len(dropped)} image(s): {names})", err=True)
                _turn(agent, display, content)
                continue
            if line.startswith("/"):
                verdict = _slash(line, agent, store)
                if verdict is True:
                    break
                if isinstance(verdict, str):  # switch to another session
                    agent.close()
                    agent = new_agent(verdict or None)
                    click.echo(f"  (session {agent.session_id})", err=True)
                continue
            _turn(agent, display, line)
    finally:
        if history is not None:
            _save_history(history)
        agent.close()


def _resumed_line(store: Any, session_id: str) -> str:
    """One line saying which stored session the chat continues."""
    session = store.get_session(session_id)
    if session is None:  # a compressed lineage's newest child is created on first use
        return f"(resumed session {session_id})"
    count = len(store.get_messages(session_id))
    return f"(resumed session {session_id}: {session.title or 'untitled'}, {count} messages)"


def announce_plugin_failures(state: CliState) -> None:
    """Say once, in one line, that some plugins failed to load and how to see why."""
    try:
        failed = state.plugins.failures()
    except Exception:  # listing failures must never stop a chat
        return
    if failed:
        names = ", ".join(record.name for record in failed)
        click.echo(
            f"hermes: {len(failed)} plugin(s) failed to load ({names});"
            " `hermes plugins list` shows why",
            err=True,
        )


def _prepare_quietly(agent: Agent) -> None:
    try:
        agent.connection.prepare()
    except Exception:  # the first real call reports any problem properly
        pass


def _turn(agent: Agent, display: Display, line: str | list[dict[str, Any]]) -> None:
    display.streamed = False
    done = threading.Event()
    holder: dict[str, TurnResult] = {}

    def work() -> None:
        holder["result"] = agent.run_conversation(line)
        done.set()

    worker = threading.Thread(target=work, daemon=True)
    display.start_spinner("thinking")  # before the worker: its first output stops the spinner
    worker.start()
    try:
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:
        agent.interrupt()
        done.wait()
    display.stop_spinner()
    result = holder["result"]
    if result["interrupted"]:
        click.echo("\n  (interrupted)", err=True)
    elif result["error"]:
        click.echo(f"  error: {result['error']}", err=True)
    elif display.streamed:
        click.echo()
    elif result["final_response"] is not None:
        click.echo(result["final_response"])


def _slash(line: str, agent: Agent, store: Any) -> bool | str:
    """Handle a /command: True to leave the chat, a session id to switch to (``""``: a new
    session), False to go on."""
    words = line.split()
    command = words[0].lower()
    if command in ("/exit", "/quit"):
        return True
    if command == "/new":
        return ""
    if command == "/resume":
        if len(words) > 1:
            from .sessions_cmd import resolve_session

            try:
                return resolve_session(store, " ".join(words[1:]))
            except HermesError as exc:
                click.echo(f"  {exc}; /resume alone lists recent ones")
                return False
        for session in store.list_sessions(limit=10):
            click.echo(f"  {session.id}  {session.title or '(untitled)'}")
        return False
    if command == "/tools":
        click.echo(", ".join(agent.toolbox.names) or "no tools enabled")
    elif command == "/usage":
        click.echo(usage_table(agent.usage.as_dict(), agent.cost_usd))
    elif command == "/prompt":
        click.echo(agent.system_prompt or "(empty system prompt)")
    elif command == "/compress":
        _compress(agent, line.strip()[len(words[0]) :].strip() or None)
    elif command == "/context":
        engine = agent.engine
        click.echo(figures_table(engine.status()) if engine else "  no context engine")
    elif command == "/help":
        click.echo(
            "/tools  enabled tools\n/usage  token usage\n/prompt  the system prompt\n"
            "/compress [FOCUS]  compress the conversation now, keeping FOCUS in detail\n"
            "/context  the context engine's figures\n"
            "/resume [ID]  list recent sessions, or continue one\n/new  start a new session\n"
            "/help  this list\n/exit   leave (or Ctrl-D)"
        )
    else:
        click.echo(f"  unknown command {command}; /help lists the commands")
    return False


def usage_table(usage: dict[str, int], cost_usd: float | None) -> str:
    """The session's token usage as an aligned two-column table."""
    rows = [(name.replace("_", " "), f"{value:,}") for name, value in usage.items()]
    rows.append(
        ("total tokens", f"{usage.get('input_tokens', 0) + usage.get('output_tokens', 0):,}")
    )
    if cost_usd is not None:
        rows.append(("estimated cost", f"${cost_usd:.4f}"))
    return _table(rows)


def figures_table(figures: dict[str, Any]) -> str:
    """A context engine's figures as an aligned two-column table (nested values flattened)."""
    rows: list[tuple[str, str]] = []
    for name, value in figures.items():
        if isinstance(value, dict):
            rows.extend((f"{name}.{k}", _cell(v)) for k, v in value.items())
        else:
            rows.append((name, _cell(value)))
    return _table(rows)


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "-"}[value]
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def _table(rows: list[tuple[str, str]]) -> str:
    width = max((len(name) for name, _ in rows), default=0)
    value_width = max((len(value) for _, value in rows), default=0)
    return "\n".join(f"  {name:<{width}}  {value:>{value_width}}" for name, value in rows)


def _compress(agent: Agent, focus: str | None) -> None:
    """``/compress [focus]``: compress now and say what it did."""
    current = agent.session_id
    try:
        figures = agent.compress(focus)
    except HermesError as exc:
        click.echo(f"  cannot compress: {exc}")
        return
    except KeyboardInterrupt:
        click.echo("  (compression interrupted; nothing changed)")
        return
    if figures["session_id"] == current:
        click.echo("  nothing to compress: the context engine kept every message")
        return
    click.echo(
        f"  compressed {figures['messages_before']} -> {figures['messages_after']} messages "
        f"(~{figures['tokens_before']:,} -> ~{figures['tokens_after']:,} tokens); "
        f"session {figures['session_id']} continues {figures['parent_session_id']}"
    )


def _setup_readline(home: Path) -> Path | None:
    try:
        import readline
    except ImportError:  # pragma: no cover - not on every platform
        return None
    path = home / ".chat_history"
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)
    return path


def _save_history(path: Path) -> None:
    import os
    import readline

    from ..config.loading import ensure_home

    try:
        ensure_home(path.parent)
        if not path.exists():  # what was typed may hold a key: owner only, as .env
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        readline.write_history_file(path)
    except OSError:
        pass
