"""What the resident process does before it serves: load everything a one-shot chat needs, and
answer one question per wire format so that the SDKs' lazy set-up (response classes, parsers,
the HTTP stack) is done once, here, instead of in every call.

The questions go to the test kit's fake model on 127.0.0.1, from a scratch home folder that is
deleted afterwards, with the output discarded; the user's home, configuration and sessions are
not touched. Nothing is kept but imported modules and their caches (such as the HTTP library and
the verifying TLS context, :mod:`hermes_runtime.tls`): every call builds its own configuration,
plugins, registry, store and client. Threads started meanwhile are ended, since
the resident process must fork with no other thread.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Callable, Iterator, Sequence

WIRE_FORMATS = (
    ("chat_completions", "openai"),
    ("codex_responses", "openai"),
    ("anthropic_messages", "anthropic"),
)
"""The wire formats asked once, and which of the fake model's addresses each speaks to."""


def warm_up(main: Callable[[Sequence[str]], int]) -> None:
    """Load the configuration and plugins of the user's home, then run one one-shot chat per
    wire format a plugin speaks through ``main`` (the command line's entry function)."""
    from ...host import Host

    host = Host()
    _ = host.config
    modes = {entry.value.api_mode for entry in host.registry.providers.values()}
    for entry in host.registry.providers.values():
        modes.update(entry.value.api_modes)
    from ...testing import FakeLLM, text

    with tempfile.TemporaryDirectory(prefix="hermes-warm-up-") as scratch, FakeLLM() as llm:
        with _scratch_environment(scratch), _quiet():
            for mode, family in WIRE_FORMATS:
                if mode not in modes:
                    continue
                llm.add(text("ready"))
                url = llm.anthropic_base_url if family == "anthropic" else llm.openai_base_url
                main(_question(mode, url))
    from hermes_runtime.http_json import close_pools
    from hermes_runtime.threads import retire_idle_threads
    from hermes_runtime.tls import read_trust_now

    close_pools()  # the fake model's connections: no child is to inherit them
    read_trust_now()  # the warm-up spoke plain HTTP; calls to a https model must not each read
    retire_idle_threads()


def _question(mode: str, url: str) -> list[str]:
    return [
        "chat",
        "-q",
        "ready?",
        "--provider",
        "custom",
        "--base-url",
        url,
        "--api-mode",
        mode,
        "--model",
        "warm-up",
        "--api-key",
        secrets.token_hex(16),  # a key no real call uses: the warm-up's client is never reused
    ]


@contextlib.contextmanager
def _scratch_environment(home: str) -> Iterator[None]:
    """``HERMES_HOME`` set to ``home`` and no other ``HERMES_*`` variable, restored after."""
    saved = dict(os.environ)
    for name in [n for n in os.environ if n.startswith("HERMES_")]:
        del os.environ[name]
    os.environ["HERMES_HOME"] = home
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Standard output and error discarded (the file descriptors too)."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)
