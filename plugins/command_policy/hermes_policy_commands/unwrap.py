"""Programs whose lowering does more than record them: builtins and filters that print or change
what the rest of the command reads (``cd``, ``alias``, ``echo``, ``printf``, ``base64 -d``,
downloads), and programs that run other programs (wrappers, ``find -exec``, ``xargs``, shells,
``eval``, ``source``, interpreters and the scripts they run), part of :class:`~.shell.Lowering`.
"""

from __future__ import annotations

import base64
import posixpath
import re
from itertools import pairwise, takewhile
from typing import Any

from .foreign_code import lower_foreign
from .programs import PROGRAMS
from .python_code import lower_python
from .tables import TABLES
from .words import MAX_FIELDS, MAX_VALUE, UNKNOWN, Arguments, Output, Simple, Via, Words, c_escapes

__all__ = ["Unwrapping"]

_ECHO_FLAGS = re.compile(r"-[neE]+")
_PLAIN = re.compile(r"\^?[\w-]+=?")  # a filter of variables by a plain name (env | grep LANG)
_SECRET_NAME = re.compile(r"(?i)key|token|secret|pass|auth|cred|cookie|session")
MAX_CODE = 200_000  # a longer program is not read: it asks
_LISTING = re.compile(r"git (?:ls-files|diff\b.* --name-only|grep\b.* -l)|(?:e|f)?grep .*-\w*[lL]\b"
                      r"|rg\b.* (?:-\w*[lL]\b|--files)|fdf?i?n?d?\b")  # fmt: skip
_LATER = frozenset({"trap", "coproc", "let", "mapfile", "readarray", "read", "getopts"})
_CODE_MODULES = frozenset(TABLES["python"]["code_modules"])  # python -m M runs code it is given
_PIPED = {"download": "download-to-shell", "decode": "decode-to-shell"}  # code read from stdin


def _attached(word: str, code: tuple[str, ...]) -> list[str]:
    """``--command=CODE`` or ``-SCODE`` split into the option and its code, when the option takes
    code (``[]`` otherwise)."""
    name, eq, value = word.partition("=")
    if eq and name in code:
        return [name, value]
    return [word[:2], word[2:]] if word[:2] in code and not word[2:].isalpha() else []


class Unwrapping(Words):
    """What programs that print or run others do, part of :class:`~.shell.Lowering`."""

    def filled(self, argv: list[str]) -> None:
        """Record the files a command gives new content (and the links ``ln -s`` makes)."""
        args = Arguments(argv)
        content = ("download" if args.spec["writes"] == "download" else "other", None)
        self.files.update((posixpath.normpath(path), content) for path in args.written())
        if args.program == "ln" and args.has("-s") and args.positional[1:]:
            self.links[args.positional[-1].strip("/").removeprefix("./")] = args.positional[-2]

    def later(self, base: str, args: list[str], stdin: Output, via: Via) -> Output:
        """Shell builtins whose words run later or set variables from what they read: a
        ``trap``'s code and a ``coproc`` (judged as if they ran now), ``mapfile -C``'s
        callback, ``let``'s arithmetic; ``read``, ``mapfile`` and ``getopts`` make their
        variables unknown."""
        names = [a for a in args if re.fullmatch(r"[A-Za-z_]\w*", a)]
        if base == "trap" and (code := args[1:] if args[:1] == ["--"] else args):
            if code[0][:1] != "-":
                self.nested(code[0], via)
        elif base == "coproc" and "{" in args[:2]:  # coproc NAME { CMD; }
            self.nested(" ".join(args[args.index("{") + 1 :]), via)
        elif base == "coproc":
            return self.run(args, [], stdin, via)
        elif base == "let":
            self.evaluated(" ".join(args))
        if base in ("mapfile", "readarray") and "-C" in args[:-1]:  # a callback per line
            self.nested(args[args.index("-C") + 1], via)
        self.vars.update(dict.fromkeys(names if base not in ("trap", "let") else [], UNKNOWN))
        return ("other", None)

    def local_tool(self, args: list[str]) -> bool:
        """Whether ``npx TOOL`` runs a tool the workspace holds (``node_modules/.bin/TOOL``)
        rather than one it downloads (``--no-install``/``--no`` never downloads)."""
        if {"--no-install", "--no"} & set(args):
            return True
        tool = next((a for a in args if a[:1] != "-"), "")
        if not re.fullmatch(r"[\w.-]+", tool) or {"-y", "--yes", "-p", "--package"} & set(args):
            return False
        folder = self.cwd if self.cwd and UNKNOWN not in self.cwd else ""
        found = self.source(posixpath.join(folder, "node_modules/.bin", tool))[0]
        return found in ("text", "other")

    def linked(self, word: str) -> str:
        """``word`` with a symbolic link the command made followed to its target."""
        head, sep, rest = word.removeprefix("./").partition("/")
        target = self.links.get(head.rstrip("/"))
        return word if target is None else target.rstrip("/") + "/" + rest if sep else target

    def unwrap(self, base: str, argv: list[str], stdin: Output, via: Via) -> Output:
        """Lower what a program runs or prints (wrappers, shells, interpreters, scripts)."""
        spec, args = PROGRAMS.get(base, {}), argv[1:]
        if (printed := self.prints(base, args, stdin)) is not None:
            return printed
        if base == "find":
            return self.find(args, via)
        if base == "xargs":
            self.xargs(args, stdin, via)
        elif base == "eval":
            return self.nested(" ".join(args), via + (base,))
        elif base in _LATER:
            return self.later(base, args, stdin, via + (base,))
        elif base in ("source", "."):
            self.script(args[:1] or [UNKNOWN], via + (base,))
        elif "lang" in spec:
            return self.code(base, str(spec["lang"]), args, stdin, via)
        elif "/" in argv[0] and "wraps" not in spec:
            self.script(argv[:1], via)
        elif "wraps" in spec and (inner := self.inner(spec, args, via)) is not None:
            if spec.get("joined"):
                return self.nested(" ".join(inner), via + (base,))
            return self.run(inner, [], stdin, via + (base,))
        return ("other", None)

    def prints(self, base: str, args: list[str], stdin: Output) -> Output | None:
        """What a builtin or a filter prints (``None`` for other programs); ``cd`` and
        ``alias`` change what the rest of the command reads."""
        if base in ("cd", "pushd"):
            self.change_dir(args)
        elif base == "alias":
            for key, _, value in (a.partition("=") for a in args if "=" in a):
                self.aliases[key] = value
        elif base == "echo":
            flags = "".join(a for a in args if _ECHO_FLAGS.fullmatch(a))
            words = " ".join(a for a in args if not _ECHO_FLAGS.fullmatch(a))
            words = c_escapes(words) if "e" in flags else words
            return ("text", words + "\n") if UNKNOWN not in words else ("other", None)
        elif base in ("env", "printenv", "grep", "egrep", "fgrep", "rg"):
            return self.environment(base, args, stdin) or self.listing(base, args)
        elif base in ("git", "fd", "fdfind"):
            return self.listing(base, args)
        elif base == "printf":
            return self.printf(args)
        elif base in ("cat", "tee", "tac") and all(a.startswith("-") for a in args):
            return stdin
        elif base == "cat" and len(args) == 1:
            return self.files.get(args[0]) or ("file", args[0])
        elif base == "base64" and ("--decode" in args or Arguments([base, *args]).has("-d")):
            return self.decoded("base64", stdin)
        elif base == "xxd" and Arguments([base, *args]).has("-r"):
            return self.decoded("hex", stdin)
        elif base in ("curl", "wget"):  # a saved download is recorded as a written file
            return ("", None) if Arguments([base, *args]).written() else ("download", None)
        else:
            return None
        return ("other", None)

    def change_dir(self, args: list[str]) -> None:
        """Follow ``cd``: later commands start in that folder."""
        target = next((a for a in args if not a.startswith("-")), "~")
        if UNKNOWN in target:
            target = UNKNOWN
        elif not target.startswith(("/", "~")):
            target = posixpath.normpath(posixpath.join(self.cwd or "", target))
        self.cwd = target if len(target) <= 256 else UNKNOWN  # this long: a trick, not a folder
        self.vars["PWD"] = self.cwd or "."

    def environment(self, base: str, args: list[str], stdin: Output) -> Output | None:
        """An environment dump (``env``, ``printenv``), and a filter of one by a plain name
        that is no secret's (``env | grep LANG`` shows LANG alone: the dump is noted
        ``filtered``)."""
        if base in ("env", "printenv"):
            self.dumped = self.out[-1] if not args else self.dumped
            return ("environment", None) if not args else None
        pattern = [a for a in args if a[:1] != "-"]
        if stdin[0] != "environment" or len(pattern) != 1 or {"-v", "--invert-match"} & set(args):
            return None
        if _PLAIN.fullmatch(pattern[0]) and not _SECRET_NAME.search(pattern[0]):
            self.dumped.notes += ("filtered",)
        return None

    def listing(self, base: str, args: list[str]) -> Output | None:
        """What a program that lists files of the folders it is given prints (``git
        ls-files``, ``grep -rl PATTERN src``, ``rg --files``, ``fd``): paths under them, names
        only known when it runs (``None`` for its other uses, and for a folder outside)."""
        if not _LISTING.match(" ".join([base, *args])):
            return None
        operands = [a for a in args[1:] if a[:1] != "-"]
        outside = any(a.startswith(("/", "~", "..")) or UNKNOWN in a for a in operands)
        return None if outside else ("text", "./" + UNKNOWN)

    def printf(self, args: list[str]) -> Output:
        """What ``printf`` prints when its format and arguments are known (``printf -v NAME``
        sets the variable instead)."""
        if "-v" in args[:-1]:
            i = args.index("-v")
            kind, text = self.printf(args[:i] + args[i + 2 :])
            self.vars[args[i + 1]] = text if kind == "text" and text is not None else UNKNOWN
            return ("", None)
        if not args or UNKNOWN in "".join(args):
            return ("other", None)
        parts = re.split(r"%[-0-9.]*[sdbcq]", c_escapes(args[0].replace("%%", "\x01")))
        count, rest = max(1, len(parts) - 1), args[1:] or [""]
        text = ""
        for i in range(0, len(rest), count):  # the format again while arguments are left
            values = rest[i : i + count] + [""] * count
            text += parts[0] + "".join(v + p for v, p in zip(values, parts[1:], strict=False))
        return ("text", text.replace("\x01", "%"))

    def decoded(self, kind: str, stdin: Output) -> Output:
        """What ``base64 -d`` or ``xxd -r`` prints, from the text it reads."""
        if stdin[0] != "text" or stdin[1] is None:
            return stdin if stdin[0] == "download" else ("decode", None)
        data = "".join(stdin[1].split())
        try:
            raw = base64.b64decode(data, validate=True) if kind == "base64" else bytes.fromhex(data)
            self.decoded_texts.add(text := raw.decode())
        except (ValueError, UnicodeDecodeError):
            return ("decode", None)
        return ("text", text)

    def find(self, args: list[str], via: Via) -> Output:
        """Lower ``find -delete`` and ``-exec``/``-ok`` into the commands they run; the answer
        is what it prints (paths under its first root)."""
        roots = list(takewhile(lambda a: not a.startswith(("-", "(", "!")), args))[:8] or ["."]
        names = [v for a, v in pairwise(args) if a in ("-name", "-iname") and UNKNOWN not in v]
        targets = [r.rstrip("/") + "/" + (names[-1] if names else UNKNOWN) for r in roots]
        if "-delete" in args:
            self.each(["rm", "-r", "{}"], "{}", targets, via + ("find",))
        for i in [i for i, a in enumerate(args) if a in ("-exec", "-execdir", "-ok", "-okdir")]:
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            self.each(args[i + 1 : end], "{}", targets[:4], via + ("find",))
        return ("text", roots[0].rstrip("/") + "/" + UNKNOWN + "".join("/" + n for n in names[-1:]))

    def each(self, argv: list[str], mark: str, items: list[str], via: Via) -> None:
        """Lower ``argv`` once per item, ``mark`` in its words replaced by the item."""
        for item in items:
            self.run([w.replace(mark, item) for w in argv], [], ("", None), via)

    def xargs(self, args: list[str], stdin: Output, via: Via) -> None:
        """Lower ``xargs``: its command with the items it reads."""
        inner = self.inner(PROGRAMS["xargs"], args, via) or ["echo"]
        marks = [v for a, v in pairwise(args) if a == "-I"]  # -I MARK, else -IMARK
        marks += [a[2:] for a in args if a[:2] == "-I"]
        if stdin[0] == "text" and stdin[1] is not None and len(stdin[1]) < MAX_VALUE:
            items = stdin[1].split("\0" if "-0" in args else None)[:MAX_FIELDS] or [""]
        else:
            items = [UNKNOWN]
        if marks and marks[0]:
            self.each(inner, marks[0], items[:4], via + ("xargs",))
        else:
            self.run(inner + items, [], ("", None), via + ("xargs",))

    def operand(self, spec: dict[str, Any], args: list[str]) -> tuple[str, int]:
        """Where the command line of a wrapper, a shell or an interpreter (``spec``) leads:
        ``("code", i)`` when ``args[i]`` is inline code, ``("module", i)`` for ``python -m``,
        ``("operand", i)`` for its first operand (the command it wraps, the script it runs),
        ``("quiet", i)`` when it only prints its version or help, ``("none", i)`` for none."""
        with_value, code = set(spec.get("options", ())), tuple(spec.get("code", ()))
        prefix, skip = list(spec.get("prefix", ())), int(spec.get("skip", 0))
        i = 0
        while i < len(args):
            a = args[i]
            if a in code or a[:1] == "-" and a[1:-1].isalpha() and "-" + a[-1] in code:
                return ("code", i + 1)  # -c CODE, -lc CODE, -ne CODE
            attached = _attached(a, code)
            if attached:  # --command=CODE, -SCODE: the option and its code as two words
                args[i : i + 1] = attached
                return ("code", i + 1)
            if spec.get("lang") == "python" and a.startswith("-m"):
                return ("module", i)
            if a in ("-V", "--version", "-h", "--help") and "lang" in spec:
                return ("quiet", i)
            if prefix and a == prefix[0]:
                prefix.pop(0)
            elif a == "--" and "lang" not in spec:  # sh -s -- ARGS: arguments of stdin's code
                return ("operand" if not prefix else "none", i + 1)
            elif a in with_value:
                i += 1
            elif a.startswith("-") and a != "-" or (spec.get("assignments") and "=" in a[1:]):
                pass
            elif skip:
                skip -= 1
            else:
                return ("operand" if not prefix else "none", i)
            i += 1
        return ("none", i)

    def inner(self, spec: dict[str, Any], args: list[str], via: Via) -> list[str] | None:
        """The command a wrapper runs (``sudo -u x CMD`` -> ``CMD``), ``None`` when none (the
        shell code of ``su -c CODE`` and the like is read here)."""
        kind, i = self.operand(spec, args)
        if kind == "code":
            self.nested(args[i] if i < len(args) else UNKNOWN, via + (str(spec["name"]),))
        return args[i:] if kind == "operand" and args[i:] else None

    def stdin_code(self, stdin: Output, via: Via, lang: str | None = None) -> None:
        """Judge the code a shell (or an interpreter of ``lang``) reads on stdin."""
        kind, text = stdin
        if kind == "text" and text is not None:
            if text in self.decoded_texts:
                self.note("decode-to-shell", argv=list(via[-1:]))
            self.lower_code(lang, text, [], via)
        elif kind == "file" and text and self.source(text)[0] not in ("unread", "missing"):
            self.script([text], via, lang)
        elif kind or self.in_pipeline:
            self.note(_PIPED.get(kind, "pipe-to-shell"), argv=list(via[-1:]))

    def source(self, path: str) -> tuple[str, str | None]:
        """The text of a file the command runs: ``(kind, text)``; kind ``"unread"`` when no
        reader was given, ``"missing"`` when it cannot be read."""
        path = posixpath.normpath(path) if path else path
        if path in self.files:
            return self.files[path]
        if UNKNOWN in path:
            return ("missing", None)
        if self.read_script is None:
            return ("unread", None)
        text = self.read_script(path)
        return ("text", text) if text is not None else ("missing", None)

    def script(self, argv: list[str], via: Via, lang: str | None = None) -> None:
        """Judge the file ``argv[0]`` a command runs (with the arguments that follow it): as
        ``lang`` code when given, else as the language its ``#!`` line names, else as shell."""
        kind, text = self.source(argv[0])
        if kind == "text" and text is not None:
            first = text.split("\n", 1)[0] if text.startswith("#!") else ""
            named = [w for w in re.findall(r"[\w.]+", first) if "lang" in PROGRAMS.get(w, {})]
            lang = lang or (str(PROGRAMS[named[0]]["lang"]) if named else None)
            self.lower_code(lang, text, argv, via)
        elif kind == "download":
            self.note("download-to-shell", argv=argv[:1])
        elif kind != "unread":
            self.note("uncheckable", argv=argv[:1])

    def code(self, base: str, lang: str, args: list[str], stdin: Output, via: Via) -> Output:
        """Lower a shell's or an interpreter's command line: inline code, a module, a script or
        stdin; the answer is what inline shell code prints."""
        here = via + (base,)
        kind, i = self.operand(PROGRAMS[base], args)
        if kind == "code":
            code = args[i] if i < len(args) else UNKNOWN
            if not lang:  # shell code: its commands read the shell's stdin
                return self.nested(code, here, stdin)
            return self.lower_code(lang, code, args[i + 1 :], here)
        if kind == "module":
            words = [args[i][2:], *args[i + 1 :]] if args[i][2:] else args[i + 1 :] or [""]
            self.module(words[0].replace(".", "/"), here, words[1:])  # -mNAME ARGS, -m NAME ARGS
        elif kind == "operand" and args[i] != "-":
            self.script(args[i:], here, lang)
        elif kind != "quiet":
            self.stdin_code(stdin, here, lang)
        return ("other", None)

    def module(self, path: str, via: Via, rest: list[str] | None = None) -> None:
        """Read a local Python module (``pkg/mod`` for ``pkg.mod``) a program imports, or the one
        ``python -m`` runs with the arguments ``rest`` (the program of that name when the
        workspace holds no such module)."""
        name, kind, text = self.module_file(path)
        if rest is not None and text is not None:
            self.lower_code("python", text, [name, *rest], via)
        elif rest is not None and path.split("/")[0] in _CODE_MODULES:  # python -m timeit CODE
            self.note("script-dynamic-code", argv=[path.split("/")[0]])
        elif rest is not None:
            self.run([path.split("/")[0].lower(), *rest], [], ("", None), via)
        elif kind == "other":
            self.note("uncheckable", argv=[name])
        elif text is not None and name not in self.modules:
            self.modules.add(name)
            if len(self.modules) > 32:
                self.note("uncheckable")
                return
            self.lower_code("python", text, [name], via)

    def module_file(self, path: str) -> tuple[str, str, str | None]:
        """The file of a local Python module (``pkg/mod`` for ``pkg.mod``): its name, its kind
        (:meth:`source`) and its text; kind ``"missing"`` when the workspace holds none."""
        for folder in self.folders:
            for name in [posixpath.join(folder, path + end) for end in (".py", "/__init__.py")]:
                kind, text = self.source(name)
                if kind in ("text", "other"):
                    return name, kind, text
        return "", "missing", None

    def module_text(self, path: str) -> str | None:
        """The text of a local Python module, ``None`` when the workspace holds none (the front
        end follows names the module re-exports)."""
        return self.module_file(path)[2]

    def lower_code(self, lang: str | None, code: str, argv: list[str], via: Via) -> Output:
        """Judge a program by what its front end says it does (with no ``lang``, shell code read
        as shell); the answer is what shell code prints.

        A front end answers items: ``("shell", text)`` for a command line the program runs,
        ``("argv", words)`` for a program it starts or a file operation written as the command
        that does the same (``shutil.rmtree(p)`` is ``rm -rf p``), ``("start", (words, cwd,
        stdin))`` for a program started in a folder or with what it reads on stdin, ``("write",
        path)`` and ``("read", path)`` for files it opens, ``("module", path)`` and ``("folder",
        path)`` for local Python modules it imports and where it looks for them, and ``("note",
        name)`` for what cannot be decided (``script-dynamic-code``, ``script-dynamic-command``)."""
        if not lang:
            return self.nested(code, via)
        if len(code) > MAX_CODE:
            self.note("uncheckable", argv=[lang])
            return ("other", None)
        python = lang == "python"
        items = lower_python(code, argv, self.module_text) if python else lower_foreign(lang, code)
        for kind, item in items:
            if kind == "shell":
                self.nested(str(item), via)
            elif kind in ("argv", "start"):  # argv, or (argv, the folder it starts in, stdin)
                words, cwd, stdin = (item, None, ("", None)) if kind == "argv" else item
                outer = self.cwd
                if cwd is not None:
                    self.change_dir([cwd])
                self.run(list(words), [], stdin, via)
                self.cwd = outer if kind == "start" else self.cwd  # os.chdir is an argv: cd
            elif kind == "write":
                self.files[posixpath.normpath(str(item))] = ("other", None)
                self.out.append(Simple([lang], [(">", str(item))], via, cwd=self.cwd))
            elif kind == "read":
                self.out.append(Simple([lang], [("<", str(item))], via, cwd=self.cwd))
            elif kind == "module":
                self.module(str(item), via)
            elif kind == "folder":
                self.folders.append(str(item))
            else:
                self.note(str(item), argv=[lang])
        return ("other", None)
