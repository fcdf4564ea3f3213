"""What a chat shows on the terminal: the model's text (rendered markdown on a terminal, plain
otherwise), one line per tool call with an output preview, refusals with their reason, a
spinner, and questions to the person (approvals, clarifications) asked on the main thread.

rich and prompt_toolkit are imported inside the functions that render or prompt, so that
``hermes --help`` never loads them.
"""

from __future__ import annotations

import json
import queue
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

from hermes_hookspecs import ApprovalRequest
from hermes_hookspecs.refusals import BLOCKED_MARKER

SPINNER = "|/-\\"
PREVIEW_LINES = 4
T = TypeVar("T")


# --- one line per tool call ----------------------------------------------------------------


def shorten(text: str, width: int) -> str:
    """``text`` on one line (whitespace runs folded), cut to ``width`` characters with ``…``."""
    line = " ".join(str(text).split())
    if width < 2 or len(line) <= width:
        return line
    return line[: width - 1] + "…"


def clip(text: str, width: int) -> str:
    """One line of output cut to ``width`` characters with ``…``, its indentation kept."""
    line = text.expandtabs(4).rstrip()
    if width < 2 or len(line) <= width:
        return line
    return line[: width - 1] + "…"


def call_summary(arguments: Mapping[str, Any] | Any) -> str:
    """What a tool call does, in words a person reads at a glance: the command of a terminal
    call, the path of a file call, else ``key=value`` pairs."""
    if not isinstance(arguments, Mapping):
        return str(arguments or "")
    for key in ("command", "cmd", "code", "query", "pattern", "path", "url", "goal"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            rest = {k: v for k, v in arguments.items() if k != key and k != "escalate"}
            text = value
            if key in ("pattern", "query") and isinstance(arguments.get("path"), str):
                text = f"{value} in {arguments['path']}"
            elif key == "path" and not rest:
                text = value
            if arguments.get("escalate"):
                text += "  (outside the sandbox)"
            return text
    parts = []
    for key, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={shown}")
    return " ".join(parts)


def refusal_reason(result: str) -> str | None:
    """The reason of a refused call (a ``BLOCKED:`` result), or ``None`` when it was not one."""
    if not result.startswith(BLOCKED_MARKER):
        return None
    reason = result[len(BLOCKED_MARKER) :].strip()
    for tail in (" Target:", " Do not retry"):
        cut = reason.find(tail)
        if cut > 0:
            reason = reason[:cut]
    return reason.strip()


def preview(result: str, lines: int = PREVIEW_LINES) -> tuple[list[str], int]:
    """The first ``lines`` non-empty lines of a tool's output and how many more lines it has."""
    text = result.strip("\n")
    if not text.strip():
        return [], 0
    all_lines = text.splitlines()
    return all_lines[:lines], max(0, len(all_lines) - lines)


# --- streamed markdown, rendered block by block --------------------------------------------


class MarkdownBlocks:
    """Cuts streamed markdown into complete blocks (paragraphs, lists, fenced code) so each can
    be rendered once it is whole; a blank line outside a code fence, or a closing fence, ends
    one."""

    def __init__(self) -> None:
        self.buffer = ""

    def feed(self, text: str) -> list[str]:
        """Add streamed ``text``; return the blocks it completed."""
        self.buffer += text
        blocks: list[str] = []
        start = 0
        fence: str | None = None
        position = 0
        while True:
            end = self.buffer.find("\n", position)
            if end < 0:
                break
            line = self.buffer[position:end]
            stripped = line.strip()
            if fence is None and stripped[:3] in ("```", "~~~"):
                fence = stripped[:3]
            elif fence is not None and stripped.startswith(fence):
                fence = None
                blocks.append(self.buffer[start : end + 1])
                start = end + 1
            elif fence is None and not stripped and self.buffer[start:position].strip():
                blocks.append(self.buffer[start:end])
                start = end + 1
            position = end + 1
        self.buffer = self.buffer[start:]
        return [b for b in blocks if b.strip()]

    def flush(self) -> str:
        """What is left (an unfinished block), emptied."""
        rest, self.buffer = self.buffer, ""
        return rest if rest.strip() else ""


# --- questions asked on the main thread ------------------------------------------------------


@dataclass
class Question:
    """A question a worker thread asks the person, answered on the main thread."""

    ask: Callable[[], Any]
    on_interrupt: Any
    answered: threading.Event = field(default_factory=threading.Event)
    answer: Any = None
    interrupted: bool = False


class Display:
    """Terminal output of a chat.

    :param interactive: the interactive chat (tool lines, spinner, status lines); a one-shot chat
        shows only refusals and the answer.
    :param stream: the answer is streamed as it is written.
    :param render: render markdown and colours with rich (a terminal and no ``--plain``).
    """

    def __init__(self, interactive: bool, stream: bool, render: bool = False) -> None:
        self.interactive = interactive
        self.stream = stream
        self.render = render
        self.streamed = False
        self._spinning = threading.Event()
        self._label = ""
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self._quiet = False
        self._blocks = MarkdownBlocks()
        self._questions: queue.Queue[Question] = queue.Queue()
        self._console: Any = None
        self._err_console: Any = None
        self._held: tuple[str, ...] = ()
        self._summaries: dict[str, str] = {}  # call id -> what the call does, from its start

    # --- output ------------------------------------------------------------------------------

    def console(self, err: bool = False) -> Any:
        """The rich console on stdout (or stderr), made on first use."""
        from rich.console import Console

        if err:
            if self._err_console is None:
                self._err_console = Console(file=sys.stderr, highlight=False, soft_wrap=False)
            return self._err_console
        if self._console is None:
            self._console = Console(file=sys.stdout, highlight=False)
        return self._console

    def _markdown(self, text: str) -> None:
        from rich.markdown import Markdown

        self.console().print(Markdown(text, code_theme="monokai"))

    def text_delta(self, text: str) -> None:
        """Show streamed answer text: block by block, rendered, on a terminal; as it arrives
        otherwise."""
        with self._lock:
            self.streamed = True
            if not self.render:
                self.stop_spinner()
                sys.stdout.write(text)
                sys.stdout.flush()
                return
            blocks = self._blocks.feed(text)
            if blocks:
                self.stop_spinner()
                for block in blocks:
                    self._markdown(block)
                self.start_spinner("writing")

    def end_text(self) -> None:
        """Show what is left of the streamed text (before a tool runs, at the end of a turn)."""
        with self._lock:
            if not self.render:
                return
            rest = self._blocks.flush()
            if rest:
                self.stop_spinner()
                self._markdown(rest)

    def answer(self, text: str) -> None:
        """Show a whole (not streamed) answer."""
        with self._lock:
            self.stop_spinner()
            if self.render:
                self._markdown(text)
            else:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()

    def finish_turn(self) -> None:
        """End the turn's output: the rest of the streamed text, the newline after it."""
        self.stop_spinner()
        if self.render:
            self.end_text()
        elif self.streamed:
            sys.stdout.write("\n")
            sys.stdout.flush()

    def line(self, text: str, style: str = "") -> None:
        """One line on stderr (a status, a tool call), styled on a terminal."""
        with self._lock:
            self.stop_spinner()
            if self.render:
                self.console(err=True).print(text, style=style or None, markup=False, emoji=False)
            else:
                sys.stderr.write(text + "\n")
                sys.stderr.flush()

    def tool_progress(self, phase: str, data: dict[str, Any]) -> None:
        """A tool call: a spinner naming it while it runs, then one line with its command or
        arguments and a preview of its output; a refusal says why. A one-shot chat shows only
        refusals."""
        name = str(data.get("name") or "tool")
        call_id = str(data.get("call_id") or "")
        if phase == "start":
            summary = self._summaries[call_id] = call_summary(data.get("arguments") or {})
            if self.interactive:
                self.end_text()
                self.start_spinner(shorten(f"{name} {summary}", self._width() - 4))
            return
        summary = self._summaries.pop(call_id, "")
        result = str(data.get("result") or "")
        reason = refusal_reason(result)
        if not self.interactive:
            if reason is not None:
                self.line(f"hermes: refused {name}: {reason}")
            return
        width = self._width()
        duration = f"({float(data.get('duration') or 0.0):.2f}s)"
        if reason is not None:
            head = f"  [x] {name}: {shorten(summary, width // 2)}" if summary else f"  [x] {name}"
            self.line(head + " refused", "bold red")
            self.line("      " + shorten(reason, width - 8), "red")
            return
        mark, style = ("[x]", "red") if data.get("is_error") else ("[+]", "green")
        room = width - len(name) - len(duration) - 8
        head = f"  {mark} {name}"
        if summary:
            head += f": {shorten(summary, max(10, room))}"
        self.line(f"{head} {duration}", style)
        shown, more = preview(result)
        for text in shown:
            self.line("      " + clip(text, width - 8), "dim")
        if more:
            self.line(f"      … {more} more line{'s' if more != 1 else ''}", "dim")

    def thinking(self, active: bool) -> None:
        """Show the spinner while the model works."""
        if active:
            self.start_spinner("thinking")

    def status(self, text: str) -> None:
        """Show a status line (unless one starting as :meth:`hold_status` said is held back)."""
        if self._held and text.startswith(self._held):
            return
        self.line(f"  ({text})", "dim")

    def hold_status(self, prefixes: tuple[str, ...]) -> None:
        """Hold back status lines starting with one of ``prefixes`` (``()``: none) while the
        caller reports the same thing itself."""
        self._held = prefixes

    def _width(self) -> int:
        return max(40, shutil.get_terminal_size((100, 24)).columns)

    # --- the spinner -------------------------------------------------------------------------

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
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout=1)
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    def _spin(self) -> None:
        i = 0
        while self._spinning.is_set() and not self._quiet:
            with self._lock:
                if self._spinning.is_set():
                    label = shorten(self._label, self._width() - 4)
                    sys.stderr.write(f"\r\033[K{SPINNER[i % 4]} {label}")
                    sys.stderr.flush()
            i += 1
            time.sleep(0.1)

    # --- questions ---------------------------------------------------------------------------

    def ask(self, question: Callable[[], T], on_interrupt: T) -> T:
        """Ask the person ``question`` on the main thread, with the spinner off.

        From a worker thread the question waits for the main thread (:meth:`serve_questions`),
        which is the thread Ctrl-C reaches: Ctrl-C there answers ``on_interrupt`` at once.
        """
        if threading.current_thread() is threading.main_thread():
            return self._ask_here(Question(question, on_interrupt))  # type: ignore[no-any-return]
        pending = Question(question, on_interrupt)
        self._questions.put(pending)
        pending.answered.wait()
        return pending.answer  # type: ignore[no-any-return]

    def serve_questions(self, timeout: float) -> Question | None:
        """On the main thread: answer the question a worker asked, if one comes within
        ``timeout`` seconds; return it (``interrupted`` says Ctrl-C answered it)."""
        try:
            pending = self._questions.get(timeout=timeout)
        except queue.Empty:
            return None
        self._ask_here(pending)
        return pending

    def refuse_questions(self) -> None:
        """Answer every waiting question with its interrupt answer (the turn is stopping)."""
        while True:
            try:
                pending = self._questions.get_nowait()
            except queue.Empty:
                return
            pending.answer, pending.interrupted = pending.on_interrupt, True
            pending.answered.set()

    def _ask_here(self, pending: Question) -> Any:
        with self._lock:
            self._quiet = True
            self.stop_spinner()
            self.end_text()
        try:
            pending.answer = pending.ask()
        except (KeyboardInterrupt, EOFError):
            sys.stderr.write("\n")
            pending.answer, pending.interrupted = pending.on_interrupt, True
        finally:
            self._quiet = False
            pending.answered.set()
        return pending.answer


# --- reading a line ------------------------------------------------------------------------


def read_line(message: str, stream: TextIO | None = None) -> str:
    """Read one line after ``message`` on stderr; Ctrl-C raises KeyboardInterrupt, end of input
    EOFError."""
    out = stream or sys.stderr
    out.write(message)
    out.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


APPROVAL_ANSWERS = {"o": "once", "once": "once", "d": "deny", "deny": "deny", "n": "deny"}
REMEMBERED_ANSWERS = {"s": "session", "session": "session", "a": "always", "always": "always"}


def approval_answer(text: str, once_only: bool) -> str | None:
    """The decision a typed answer means, or ``None`` when it is not one of the choices."""
    word = text.strip().lower()
    if word in APPROVAL_ANSWERS:
        return APPROVAL_ANSWERS[word]
    if not once_only and word in REMEMBERED_ANSWERS:
        return REMEMBERED_ANSWERS[word]
    return None


def ask_approval(
    display: Display, request: ApprovalRequest, read: Callable[[str], str] = read_line
) -> str:
    """Ask the person to approve a dangerous action until the answer is one of the choices;
    Ctrl-C or end of input denies (and the caller interrupts the turn)."""
    display.line(f"  approval needed: {request.reason}", "bold yellow")
    display.line(f"    {request.action}", "bold")
    choices = "[o]nce, [d]eny" if request.once_only else "[o]nce, [s]ession, [a]lways, [d]eny"
    while True:
        decision = approval_answer(read(f"  allow? {choices}: "), request.once_only)
        if decision is not None:
            return decision
        display.line(f"  please answer with one of {choices}")


def ask_clarify(
    display: Display,
    question: str,
    choices: Sequence[str] | None,
    read: Callable[[str], str] = read_line,
) -> str:
    """Ask the person a question from the model (numbered choices may be picked by number)."""
    display.line(f"  {question}", "bold")
    for i, choice in enumerate(choices or [], 1):
        display.line(f"    {i}. {choice}")
    answer = read("  answer: ")
    if choices and answer.strip().isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    return answer
