"""``hermes chat``: one-shot answers (``-q``) and the interactive chat."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hermes_hookspecs import API_MODES, HermesError

from ..chat_commands import SLASH_COMMANDS
from .chat_agent import make_agent
from .display import Display, read_line
from .helpers import current_state
from .slash import handle_slash
from .state import CliState
from .turn_hold import hold_turn
from .workspace_check import settle_workspace

if TYPE_CHECKING:
    from hermes_hookspecs import TurnResult

    from ..loop.agent import Agent


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
@click.option("--plain", is_flag=True, help="No markdown rendering, no colours.")
@click.option(
    "-w",
    "--workdir",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    help="The folder to work in (terminal.cwd; default: the current folder).",
)
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
    plain: bool = False,
    image_paths: tuple[str, ...] = (),
    workdir: str | None = None,
) -> None:
    """Chat with the agent (interactive), or answer one query with -q. In the interactive chat,
    paste or drop an image file's path into a message to send the image."""
    state = current_state()
    from .session_refs import open_store

    store = open_store(state)
    session_id = _session_to_resume(store, resume, continue_)
    if provider and not base_url and _url_of_another_provider(state.config, provider):
        base_url = ""  # the chosen provider's own endpoint
    state.overrides.update(
        {
            "model.default": model,
            "model.provider": provider,
            "model.base_url": base_url,
            "model.api_key": api_key,
            "model.api_mode": api_mode,
            "toolsets": [t.strip() for t in toolsets.split(",") if t.strip()] if toolsets else None,
            "agent.max_turns": max_turns,
            "terminal.cwd": os.path.realpath(workdir) if workdir else None,
        }
    )
    state.reload_config()
    interactive = query is None and sys.stdin.isatty()
    folder = settle_workspace(state.config, read_line if interactive else None)
    if folder is not None:
        state.overrides["terminal.cwd"] = folder
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
        _interactive(state, store, session_id, yolo=yolo, stream=stream is not False, plain=plain)


def _url_of_another_provider(config: Mapping[str, Any], provider: str) -> bool:
    """Whether the configured ``model.base_url`` was set for a provider other than
    ``provider``: a base URL (and the key sent to it) belongs to the provider it was set for,
    so ``--provider`` alone never sends another provider's key to it."""
    section = config.get("model")
    if not isinstance(section, Mapping) or not section.get("base_url"):
        return False
    return str(section.get("provider") or "") != provider


def _session_to_resume(store: Any, resume: str | None, continue_: bool) -> str | None:
    if resume and continue_:
        raise HermesError("use either --resume ID or --continue, not both")
    if continue_:
        latest: str | None = store.latest_session_id()
        if latest is None:
            raise HermesError("no session to continue yet; start one with `hermes chat`")
        return latest
    if resume:
        from .session_refs import resolve_session

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
        result = run_turn(agent, display, agent.user_content(query, image_paths))
    finally:
        agent.close()
    if result["interrupted"]:
        raise KeyboardInterrupt
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


def run_turn(agent: Agent, display: Display, line: str | list[dict[str, Any]]) -> TurnResult:
    """Run one turn on a worker thread while the main thread (the one Ctrl-C reaches) asks the
    person the questions of the turn; Ctrl-C, at a question or not, interrupts the turn at once
    (a question it reaches is answered no)."""
    display.streamed = False
    done = threading.Event()
    holder: dict[str, Any] = {}

    cancel = threading.Event()

    def work() -> None:
        try:
            notice = display.status
            with hold_turn(agent.session_store, agent.session_id, cancel, notice) as held:
                if held:
                    holder["result"] = agent.run_conversation(line)
                else:
                    holder["result"] = _not_run(agent, "interrupted while waiting for the turn")
        except BaseException as exc:  # reported on the main thread
            holder["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="hermes-turn", daemon=True)
    if display.interactive:
        display.start_spinner("thinking")  # before the worker: its first output stops it
    worker.start()
    try:
        while not done.is_set():
            asked = display.serve_questions(0.05)
            if asked is not None and asked.interrupted:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        cancel.set()
        agent.interrupt()
        display.refuse_questions()
        while not done.wait(0.05):
            display.refuse_questions()
    display.finish_turn()
    if "error" in holder:
        raise holder["error"]
    result: TurnResult = holder["result"]
    return result


def _not_run(agent: Agent, why: str) -> TurnResult:
    """The result of a turn that never started (Ctrl-C while it waited for its session)."""
    return {
        "final_response": None,
        "messages": list(agent.messages),
        "session_id": agent.session_id,
        "task_id": "",
        "api_calls": 0,
        "usage": {},
        "estimated_cost_usd": None,
        "completed": False,
        "interrupted": True,
        "exit_reason": "interrupted",
        "error": why,
        "model": agent.model,
        "provider": agent.provider_name,
    }


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
    state: CliState,
    store: Any,
    session_id: str | None,
    *,
    yolo: bool,
    stream: bool,
    plain: bool = False,
) -> None:
    render = not plain and sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    display = Display(interactive=True, stream=stream, render=render)

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
    extra = [f"/{name}" for name in agent.registry.slash_commands]
    prompt = _prompter(state.home, fancy=render and sys.stdin.isatty(), commands=extra)
    display.line(
        f"hermes: {agent.model} via {agent.provider_name}; /help for commands, Ctrl-D to quit",
        "bold",
    )
    if session_id is not None:
        _show_resumed(display, store, agent.session_id)
    if _sandbox_off(state.config):
        display.line(
            "  sandbox OFF (terminal.sandbox: off): commands run with your full authority",
            "bold red",
        )
    announce_plugin_failures(state)
    from ..loop.images import dropped_images

    try:
        while True:
            try:
                line = prompt("> ").strip()
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
                verdict = handle_slash(line, agent, store, display)
                if verdict is True:
                    break
                if isinstance(verdict, str):  # switch to another session
                    agent.close()
                    agent = new_agent(verdict or None)
                    if verdict:
                        _show_resumed(display, store, agent.session_id)
                    else:
                        display.status(f"session {agent.session_id}")
                continue
            _turn(agent, display, line)
    finally:
        agent.close()


def _resumed_line(store: Any, session_id: str) -> str:
    """One line saying which stored session the chat continues."""
    session = store.get_session(session_id)
    if session is None:  # a compressed lineage's newest child is created on first use
        return f"(resumed session {session_id})"
    count = len(store.get_messages(session_id))
    return f"(resumed session {session_id}: {session.title or 'untitled'}, {count} messages)"


RECAP_EXCHANGES = 3
RECAP_CHARS = 300


def _show_resumed(display: Display, store: Any, session_id: str) -> None:
    """Say which session the chat continues and show its last exchanges, so the person sees
    where the conversation stands."""
    display.line(f"  {_resumed_line(store, session_id)}", "dim")
    try:
        messages = store.get_messages(session_id)
    except Exception:  # a recap must never stop a chat
        return
    for role, text in recap(messages, RECAP_EXCHANGES):
        who = "you" if role == "user" else "hermes"
        display.line(f"  {who}: {text}", "cyan" if role == "user" else "")


def recap(messages: list[dict[str, Any]], exchanges: int) -> list[tuple[str, str]]:
    """The last ``exchanges`` user messages and the assistant's text after each, one shortened
    line each (tool calls and results left out)."""
    from hermes_hookspecs import is_context_summary

    from .display import shorten

    lines: list[tuple[str, str]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant") or not isinstance(content, str) or not content:
            continue
        if is_context_summary(message):
            continue
        lines.append((str(role), shorten(content, RECAP_CHARS)))
    starts = [i for i, (role, _) in enumerate(lines) if role == "user"]
    if len(starts) > exchanges:
        lines = lines[starts[-exchanges] :]
    return lines


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
    """Import the provider's SDK, then move everything loaded so far out of the garbage
    collector's way: it lives as long as the chat, and later collections need not walk it."""
    try:
        agent.connection.prepare()
    except Exception:  # the first real call reports any problem properly
        return
    import gc

    gc.freeze()


def _turn(agent: Agent, display: Display, line: str | list[dict[str, Any]]) -> None:
    result = run_turn(agent, display, line)
    if result["interrupted"]:
        display.line("  (interrupted)", "yellow")
    elif result["error"]:
        display.line(f"  error: {result['error']}", "red")
    elif not display.streamed and result["final_response"] is not None:
        display.answer(result["final_response"])


def _prompter(home: Path, fancy: bool, commands: Sequence[str] = ()) -> Any:
    """The function that reads the person's next line: prompt_toolkit on a terminal (line
    editing, history search, completion of slash commands), else ``readline``'s ``input``.
    What was typed is kept in ``$HERMES_HOME/.chat_history`` (owner only: it may hold a key)."""
    path = home / ".chat_history"
    _private_file(path)
    if fancy:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory

        session: Any = PromptSession(
            history=FileHistory(str(path)),
            completer=WordCompleter(
                [name.split()[0] for name, _ in SLASH_COMMANDS] + list(commands), sentence=True
            ),
            complete_while_typing=False,
        )

        def ask(message: str) -> str:
            text: str = session.prompt(message)
            return text

        return ask
    try:
        import readline
    except ImportError:  # pragma: no cover - not on every platform
        return read_line
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)

    def ask_plain(message: str) -> str:
        text = input(message)
        if text.strip():
            try:
                readline.append_history_file(1, path)
            except OSError:
                pass
        return text

    return ask_plain


def _private_file(path: Path) -> None:
    from ..config.loading import ensure_home

    try:
        ensure_home(path.parent)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass
