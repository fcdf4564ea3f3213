"""The ``hermes`` console script: hand a one-shot chat to a resident process when there is one,
else run the command line in this process (and then, when ``serve.auto`` asks for it, start a
resident process for the calls after it).

Garbage collection is tuned for a short-lived process: collections are rarer while start-up
creates its long-lived objects (modules, plugins, an SDK's classes), and whatever is alive
when a command ends is frozen, and the process ends without taking every object apart.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

GC_THRESHOLDS = (20_000, 10, 10)
"""Young objects before a collection, then the default ratios of the older generations:
start-up allocates hundreds of thousands of objects that live as long as the process, and the
default 700 walks them again and again (full collections during an SDK's import). Measured on a
one-shot chat: 2.4 % fewer instructions than (700, 10, 10); raising the older ratios too saved
0.6 % more, not worth longer-lived garbage in a long-running chat or gateway."""


def console_main() -> int:
    """Run ``hermes`` with the process's arguments; return the exit status."""
    gc.set_threshold(*GC_THRESHOLDS)
    from .serve import ForkedCall
    from .serve.calls import servable

    code = None
    served = servable(sys.argv[1:])
    if served:
        from .serve.client import run as run_warm

        environ = dict(os.environ)
        try:
            code = run_warm(sys.argv)
        except KeyboardInterrupt:
            os.write(2, b"hermes: interrupted\n")
            return 130
    if code is None:
        from .app import main

        try:
            code = main()
        except ForkedCall as forked:
            code = forked.call.run(main)
        else:
            if served:
                from .serve.auto import start_if_wanted

                start_if_wanted(sys.argv, environ)
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return code  # a profiler or debugger writes its report once the script returns
    _end(code)


def _end(code: int) -> NoReturn:
    """End the process with ``code`` as the interpreter would (thread pools' workers and
    non-daemon threads joined, ``atexit`` handlers run, standard streams flushed) without then
    taking apart every module and object one by one: with an SDK loaded that costs tens of
    milliseconds, and hundreds in a child of a resident process, which holds every plugin's
    SDK."""
    import atexit
    import threading

    gc.freeze()
    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        # What the interpreter runs first when it exits: the thread pools' exit handlers
        # (which let running workers finish, e.g. subagents recording their interruption),
        # then it joins the non-daemon threads.
        shutdown()
    else:  # pragma: no cover - every CPython has it
        current = threading.current_thread()
        for thread in threading.enumerate():
            if thread is not current and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
