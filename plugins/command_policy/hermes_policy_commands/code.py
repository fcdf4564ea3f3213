"""Front ends: what a Python, perl, ruby, node or php program would do, lowered to the shell form.

:func:`lower` answers items the shell lowering judges with the same rules: ``("shell", text)``
for a command line the program runs, ``("argv", words)`` for a program it starts or a file
operation written as the command that does the same (``shutil.rmtree(p)`` is ``rm -rf p``),
``("write", path)``/``("read", path)`` for files it opens, ``("module", path)`` for a local
module it imports, and ``("note", name)`` for what cannot be decided (code built at run time:
``script-dynamic-code``; a command or path only known at run time: ``script-dynamic-command``).
Python is read with :mod:`ast` (nothing runs); the other languages are scanned for their few
calls that run commands or touch files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .foreign_code import lower_foreign
from .python_code import lower_python

__all__ = ["lower"]

MAX_CODE = 200_000


def lower(
    lang: str, code: str, argv: list[str], read_module: Callable[[str], str | None] | None = None
) -> list[tuple[str, Any]]:
    """The items the program ``code`` (of ``lang``, run with ``argv``) lowers to;
    ``read_module`` answers the text of a local Python module (``pkg/mod``), so a name one
    re-exports (``from os import system as run``) is followed."""
    if len(code) > MAX_CODE:
        return [("note", "uncheckable")]
    if lang == "python":
        return lower_python(code, argv, read_module)
    return list(lower_foreign(lang, code))
