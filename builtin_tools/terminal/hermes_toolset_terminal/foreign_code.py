"""The commands code for perl, ruby, node, php and the like runs, read from its text.

These languages are not parsed: :func:`scan_code` finds the calls that run commands
(``system``, ``exec``, ``qx``/backticks, ``%x``, ``IO.popen``, ``Open3``, ``spawn``,
``execSync``/``spawnSync``/``execFile``, ``shell_exec``, ``passthru``, ``proc_open``, ``popen``)
and the calls that delete folder trees (``rmtree``, ``remove_tree``, ``FileUtils.rm_rf``,
``fs.rmSync``, ``rimraf``…), and the calls that write, truncate or delete one file
(``fs.writeFileSync``/``appendFile``/``unlink``/``createWriteStream``, ruby's ``File.write``/
``File.delete``/``IO.write``, php's ``file_put_contents``/``unlink``, perl's ``unlink`` and
``open`` for writing). When such a call is given plain string literals (no interpolation), they
are returned as the shell command they run (a write of a file as ``true > FILE``, a delete as
``rm -f FILE``), so the shell rules judge the path; when it is given anything else, or when
code is built at run time (string ``eval``, ``new Function``, ``vm.run*``, ``require``/
``import()`` of a computed name, ``instance_eval``/``send``, PHP variable functions), the call
is reported as undecidable. A literal that only looks like a call (in a
comment, or inside another string) may be read as one: that errs on the side of asking.
"""

from __future__ import annotations

import re

__all__ = ["scan_code"]

_STRING = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`"""
_RUNNERS = (
    r"(?<![\w.$])(?:Kernel\s*\.\s*)?(?:system|exec|spawn|qx|shell_exec|passthru|proc_open|popen"
    r"|pcntl_exec)(?![\w$])"
    r"|\bIO\s*\.\s*popen\b|\bOpen3\s*\.\s*(?:capture[23]?e?|popen[23]?e?|pipeline\w*)\b"
    r"|\b(?:execSync|execFileSync|spawnSync|execFile|child_process\s*\.\s*(?:exec|spawn|fork))\b"
    r"|\.\s*(?:exec|spawn)(?=\s*\()"
)
_DELETERS = (
    r"\b(?:rmtree|remove_tree|rm_rf|rm_r|rimraf|rmSync|rmdirSync|remove_dir_all|RemoveAll"
    r"|delete_tree)\b|\bFileUtils\s*\.\s*(?:rm|remove)\w*\b|\bfs\s*\.\s*(?:promises\s*\.\s*)?"
    r"rm(?:dir)?\b"
)
_WRITERS = (
    r"\b(?:writeFileSync|appendFileSync|writeFile|appendFile|createWriteStream|truncateSync"
    r"|file_put_contents)\b|\b(?:File|IO)\s*\.\s*(?:write|binwrite|truncate)\b"
)
_UNLINKERS = r"\bunlink(?:Sync)?\b|\bFile\s*\.\s*delete\b"
_PERL_WRITE_OPEN = re.compile(
    r"\bopen\s*\(?\s*(?:my\s+)?[$\w]+\s*,\s*(?:(['\"])\+?>>?\1\s*,|(?=['\"]\s*\+?>))"
)
_CALL = re.compile(
    rf"(?P<runner>{_RUNNERS})|(?P<deleter>{_DELETERS})|(?P<writer>{_WRITERS})"
    rf"|(?P<unlinker>{_UNLINKERS})"
)
_ARGUMENT = re.compile(rf"\s*(?:\(\s*)?(?P<first>{_STRING}|[^\s(),;]+)?")
_PIECE = re.compile(rf"\s*(?P<literal>{_STRING})\s*(?P<sep>[,.+\]]|\)|;|\n|$|\{{|\}}|=>|\bor\b)?")
_BACKTICKS = re.compile(r"`((?:[^`\\]|\\.)*)`|%x\(([^)]*)\)|%x\{([^}]*)\}|\bqx\s*([{(/|!])")
_DYNAMIC_CODE = re.compile(
    r"\beval\s*\(?\s*(?![\s({'\"]|$)|\beval\s*\(\s*(?!['\"]|\))|\bnew\s+Function\s*\("
    r"|\bvm\s*\.\s*run\w*|\b(?:require|import)\s*\(\s*(?![\s'\"`])|\binstance_eval\b"
    r"|\bclass_eval\b|\b(?:public_)?send\s*\(\s*(?![:'\"])|\bcreate_function\b"
    r"|\bdo\s+\$|\brequire\s+\$|\bassert\s*\(\s*\$"
)
_PHP_DYNAMIC = re.compile(r"\$\w+\s*\(|\bcall_user_func(?:_array)?\s*\(")
_JAVASCRIPT = re.compile(r"^(?:node|nodejs|deno|bun)$")
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_INTERPOLATED = re.compile(r"\$[\w{(]|#\{|@\w")


def _unquote(literal: str) -> str | None:
    """The text of a string literal, or ``None`` when it interpolates values."""
    quote, body = literal[0], literal[1:-1]
    if quote in '"`' and _INTERPOLATED.search(body):
        return None
    if quote == "`" and "${" in body:
        return None
    if quote == "'":
        return body.replace("\\'", "'").replace("\\\\", "\\")
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _literal_arguments(code: str, start: int) -> list[str] | None:
    """The plain string literals a call starting at ``start`` is given (joined by ``,`` as a
    list of words, by ``.``/``+`` as one string), or ``None`` when it is given anything else."""
    words: list[str] = []
    current = ""
    i = start
    opened = code[i:].lstrip().startswith("(")
    if opened:
        i = code.index("(", i) + 1
    for _ in range(64):
        match = _PIECE.match(code, i)
        if match is None:
            return None
        text = _unquote(match.group("literal"))
        if text is None:
            return None
        current += text
        sep = match.group("sep")
        i = match.end()
        if sep in ("+", "."):
            continue
        words.append(current)
        current = ""
        if sep == ",":
            rest = code[i:].lstrip()
            if rest[:1] == "{":  # options (node, ruby)
                return words
            if rest[:1] == "[":  # an argument list (node's spawn, execFile)
                i = code.index("[", i) + 1
                if code[i:].lstrip().startswith("]"):
                    return words
                continue
            if rest[:1] == "$":
                return None
            continue
        if sep == "]":
            rest = code[i:].lstrip()
            if rest[:1] == ",":
                i = code.index(",", i) + 1
                if code[i:].lstrip()[:1] == "{":
                    return words
            return words if rest[:1] in ("", ")", ";", ",") else None
        return words
    return None


def _first_literal(code: str, start: int) -> str | None:
    """The path a file call starting at ``start`` is given as its first argument, when that is
    plain string literals (joined by ``.``/``+``); ``None`` for anything else."""
    i = start
    if code[i:].lstrip().startswith("("):
        i = code.index("(", i) + 1
    text = ""
    for _ in range(16):
        match = _PIECE.match(code, i)
        if match is None:
            return None
        piece = _unquote(match.group("literal"))
        if piece is None:
            return None
        text += piece
        i = match.end()
        if match.group("sep") not in ("+", "."):
            return text if match.group("sep") in (",", ")", ";", "\n", "", None) else None
    return None


def _file_commands(code: str, quoted: list[tuple[int, int]]) -> tuple[list[str], list[str]]:
    """Shell commands for perl's ``open(FH, '>', PATH)`` / ``open(FH, ">PATH")``, and the
    snippets of such opens whose path is computed."""
    commands: list[str] = []
    computed: list[str] = []
    for match in _PERL_WRITE_OPEN.finditer(code):
        if any(start < match.start() < end for start, end in quoted):
            continue
        path = _first_literal(code, match.end())
        snippet = " ".join(code[match.start() : match.start() + 80].split())
        if path is None:
            computed.append(f"{snippet} (computed at run time)")
        else:
            path = path.lstrip("+").lstrip(">").strip()
            commands.append(f"true > {_shell_word(path)}")
    return commands, computed


def _shell_word(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def scan_code(code: str, language: str = "") -> tuple[list[str], dict[str, list[str]]]:
    """The shell commands ``code`` runs with plain strings, and what it does that cannot be
    decided (``dynamic-command``/``dynamic-code`` → reasons). ``language`` is the interpreter's
    name (``perl``, ``node``…; ``""``: unknown, every language's forms are looked for)."""
    commands: list[str] = []
    dynamic: dict[str, list[str]] = {}
    javascript = bool(_JAVASCRIPT.match(language))
    node_exec = "child_process" in code or "execSync" in code

    def unsure(kind: str, what: str) -> None:
        reasons = dynamic.setdefault(kind, [])
        if what not in reasons and len(reasons) < 8:
            reasons.append(what)

    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(code)]
    for match in _CALL.finditer(code):
        name = match.group()
        if any(start < match.start() < end for start, end in quoted):
            continue  # a word inside a string, not a call
        if name.lstrip(". \t").startswith("exec") and name.startswith(".") and not node_exec:
            continue  # a regular expression's .exec(): not a command
        end = match.end()
        rest = code[end : end + 2].lstrip()
        if not rest or rest[0] in "=:;,)}]" or rest.startswith("{"):
            continue  # a name, not a call (`exec: true`, `{ exec }`, `qx{` handled below)
        snippet = " ".join(code[match.start() : match.start() + 80].split())
        if match.group("writer") or match.group("unlinker"):
            path = _first_literal(code, end)
            if path is None:
                unsure("dynamic-command", f"{snippet} (computed at run time)")
            elif match.group("writer"):
                commands.append(f"true > {_shell_word(path)}")
            else:
                commands.append(f"rm -f {_shell_word(path)}")
            continue
        words = _literal_arguments(code, end)
        if words is None:
            if name.strip() == "qx":
                continue
            unsure("dynamic-command", f"{snippet} (computed at run time)")
            continue
        if match.group("deleter"):
            commands.extend(f"rm -r -f {w}" if w else "rm -r -f ." for w in words[:1])
        else:
            commands.append(" ".join(words))
    if not javascript:
        opened, computed = _file_commands(code, quoted)
        commands.extend(opened)
        for what in computed:
            unsure("dynamic-command", what)
    if not javascript and "child_process" not in code:  # backticks run commands
        for match in _BACKTICKS.finditer(code):
            body = next((g for g in match.groups() if g is not None), "")
            if match.group(4) is not None:
                continue  # qx with other delimiters: read as literals by the caller
            if _INTERPOLATED.search(body):
                unsure("dynamic-command", f"`{body[:60]}` (computed at run time)")
            else:
                commands.append(body)
    patterns = [_DYNAMIC_CODE] + ([_PHP_DYNAMIC] if language.startswith("php") else [])
    for pattern in patterns:
        for match in pattern.finditer(code):
            snippet = " ".join(code[match.start() : match.start() + 60].split())
            unsure("dynamic-code", snippet)
    return commands, dynamic
