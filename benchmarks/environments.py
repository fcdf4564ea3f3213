"""Round-trip cost of one command through an execution environment, next to the raw mechanism.

For each target the script runs the same short command many times through
``Environment.run`` and through the bare mechanism underneath it, and reports medians and 90th
percentiles in milliseconds, the overhead (environment minus raw) and the issue's budget:

- ``local``: ``LocalEnvironment.run`` (persistent cwd/exports, own process group, timeout
  handling) against a bare ``subprocess.run(["bash", "-c", cmd])`` capturing output;
  budget: at most 5 ms of overhead.
- file round trip: ``write_file`` + ``read_file`` of 4 KiB, against plain ``open()``.

- ``docker``: ``DockerEnvironment.run`` in the test container against one docker-py
  ``exec_run`` in the same container; budget: at most 150 ms per command in total.
- ``ssh``: ``SSHEnvironment.run`` on its reused connection against one paramiko
  ``exec_command`` on another open connection; budget: at most 30 ms per command in total.
  Both need ``bash .ci/services.sh start`` (they read the variables it writes).

Other backends plug in with :func:`target`: a function that takes the parsed arguments and
returns a :class:`Target` (the environment, a callable that runs a command through the raw
mechanism such as ``docker exec`` or an already-open SSH connection, and the budget). The
docker and ssh distributions add theirs here; ``--target NAME`` picks which run.

Usage: python benchmarks/environments.py [--runs 300] [--target local ...]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from hermes_hookspecs import Environment


@dataclass
class Target:
    """One environment to measure.

    :param env: the environment under test.
    :param raw: runs one command through the bare mechanism (``None``: no comparison).
    :param budget_ms: the issue's budget in milliseconds.
    :param budget_of: ``"overhead"`` (environment minus raw) or ``"total"`` (environment alone).
    :param close: releases what the target holds.
    """

    env: Environment
    raw: Callable[[str], object] | None
    budget_ms: float
    budget_of: str = "overhead"
    close: Callable[[], None] = lambda: None


TARGETS: dict[str, Callable[[argparse.Namespace], Target]] = {}


def target(name: str) -> Callable[[Callable[[argparse.Namespace], Target]], Callable]:
    """Register a target factory under ``name``."""

    def decorate(factory: Callable[[argparse.Namespace], Target]) -> Callable:
        TARGETS[name] = factory
        return factory

    return decorate


@target("local")
def local_target(args: argparse.Namespace) -> Target:
    from hermes_env_local import LocalEnvironment

    folder = tempfile.mkdtemp(prefix="hermes-bench-")
    env = LocalEnvironment(folder)

    def raw(command: str) -> object:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    return Target(env=env, raw=raw, budget_ms=5.0, close=env.cleanup)


def _services() -> dict[str, str]:
    """``DOCKER_HOST`` and ``HERMES_TEST_*`` from the environment, else from the file
    ``.ci/services.sh start`` writes (``$HERMES_SERVICES_DIR/env``)."""
    from hermes_core.testing.services import service_variables

    return service_variables()


@target("docker")
def docker_target(args: argparse.Namespace) -> Target:
    """A container of the test image (``bash .ci/services.sh start``); the raw mechanism is one
    docker-py ``exec_run`` of ``sh -c`` in the same container. Budget: 150 ms per command."""
    import docker
    from hermes_env_docker import DockerEnvironment

    services = _services()
    host = services.get("HERMES_TEST_DOCKER_HOST") or services.get("DOCKER_HOST")
    image = services.get("HERMES_TEST_DOCKER_IMAGE") or "local/busybox:latest"
    config = {"terminal": {"docker_image": image, **({"docker_host": host} if host else {})}}
    env = DockerEnvironment(config, "benchmark")
    client = docker.DockerClient(base_url=host) if host else docker.from_env()
    container = client.containers.get(env.container.id)

    def raw(command: str) -> object:
        return container.exec_run(["/bin/sh", "-c", command])

    def close() -> None:
        env.cleanup()
        client.close()

    return Target(env=env, raw=raw, budget_ms=150.0, budget_of="total", close=close)


@target("ssh")
def ssh_target(args: argparse.Namespace) -> Target:
    """The test sshd (``bash .ci/services.sh start``); the raw mechanism is one paramiko
    ``exec_command`` on a second, already-open connection (TCP_NODELAY, as the environment's).
    Budget: 30 ms per command on the reused connection."""
    import paramiko
    from hermes_env_ssh import SSHEnvironment

    services = _services()
    settings = {
        "ssh_host": services.get("HERMES_TEST_SSH_HOST", "127.0.0.1"),
        "ssh_port": int(services.get("HERMES_TEST_SSH_PORT", "22")),
        "ssh_user": services.get("HERMES_TEST_SSH_USER"),
        "ssh_key": services.get("HERMES_TEST_SSH_KEY"),
        "ssh_known_hosts": services.get("HERMES_TEST_SSH_KNOWN_HOSTS"),
    }
    env = SSHEnvironment({"terminal": settings}, "benchmark")
    client = paramiko.SSHClient()
    client.load_host_keys(settings["ssh_known_hosts"])
    sock = socket.create_connection((settings["ssh_host"], settings["ssh_port"]))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.connect(
        settings["ssh_host"],
        port=settings["ssh_port"],
        sock=sock,
        username=settings["ssh_user"],
        key_filename=settings["ssh_key"],
        allow_agent=False,
        look_for_keys=False,
    )

    def raw(command: str) -> object:
        _, stdout, _ = client.exec_command(command)
        output = stdout.read()
        stdout.channel.recv_exit_status()
        return output

    def close() -> None:
        env.cleanup()
        client.close()

    return Target(env=env, raw=raw, budget_ms=30.0, budget_of="total", close=close)


def timings(fn: Callable[[], object], runs: int, warmup: int = 10) -> list[float]:
    """Milliseconds per call of ``fn``."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def summary(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[int(len(values) * 0.9) - 1]
    return f"median {statistics.median(values):7.2f} ms   p90 {p90:7.2f} ms"


def measure(name: str, t: Target, runs: int) -> bool:
    """Print the figures of one target; return whether it kept its budget."""
    print(f"== {name} ==")
    ok = True
    for label, command in (("true", "true"), ("echo", "echo hello world")):
        env_ms = timings(lambda command=command: t.env.run(command), runs)
        print(f"  {label:5} env        {summary(env_ms)}")
        if t.raw is not None:
            raw_ms = timings(lambda command=command: t.raw(command), runs)
            overhead = statistics.median(env_ms) - statistics.median(raw_ms)
            print(f"  {label:5} raw        {summary(raw_ms)}")
            print(f"  {label:5} overhead   {overhead:7.2f} ms")
        else:
            overhead = statistics.median(env_ms)
        measured = overhead if t.budget_of == "overhead" else statistics.median(env_ms)
        verdict = "ok" if measured <= t.budget_ms else "OVER BUDGET"
        print(f"  {label:5} budget     {t.budget_of} <= {t.budget_ms:g} ms: {verdict}")
        ok = ok and measured <= t.budget_ms
    t.env.run("cd / && export HERMES_BENCH=1")
    stateful = timings(lambda: t.env.run('echo "$HERMES_BENCH"'), runs)
    print(f"  state env        {summary(stateful)}  (after cd and export)")
    data = os.urandom(4096)
    scratch = t.env.run("mktemp -d").output.strip()

    def file_round_trip() -> None:
        t.env.write_file(f"{scratch}/bench.bin", data)
        assert t.env.read_file(f"{scratch}/bench.bin") == data

    print(f"  files env        {summary(timings(file_round_trip, runs))}  (write+read 4 KiB)")
    if name == "local":
        path = os.path.join(scratch, "plain.bin")

        def plain() -> None:
            with open(path, "wb") as handle:
                handle.write(data)
            with open(path, "rb") as handle:
                handle.read()

        print(f"  files raw        {summary(timings(plain, runs))}  (open/write/read)")
    t.env.run(f"rm -rf {scratch}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.runs} runs each")
    ok = True
    for name in args.target or ["local"]:
        t = TARGETS[name](args)
        try:
            ok = measure(name, t, args.runs) and ok
        finally:
            t.close()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
