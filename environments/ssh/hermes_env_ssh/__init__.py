"""hermes execution backend ``ssh``: commands on a remote host over one SSH connection per task.

The connection is opened once (paramiko, imported lazily) and every command, file transfer and
background-process query of the task is a new session channel on it, so a command costs a round
trip, not a handshake. The server's host key must already be in the known_hosts file
(``terminal.ssh_known_hosts``, default ``~/.ssh/known_hosts``); an unknown or changed key is an
error unless ``terminal.ssh_host_key_policy`` is ``accept-new``, which records a key seen for the
first time (never a changed one). Authentication is by key file (``terminal.ssh_key``) or, when
no key is configured, by the SSH agent and the default keys in ``~/.ssh``.

Settings come from ``terminal.ssh_*`` and, for keys not set there, from the variables
``TERMINAL_SSH_HOST``, ``_USER``, ``_PORT``, ``_KEY``, ``_KNOWN_HOSTS``, ``_KEY_PASSPHRASE``.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import os
import shlex
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_env_common import Channel, ShellEnvironment, module_installed, terminal_config

from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable, hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

__all__ = ["SSHEnvironment", "SSHSettings", "hermes_register_environments"]

HOST_KEY_POLICIES = ("strict", "accept-new")
HOST_KEY_RULE = "ssh-host-key"
"""The rule a refused host key names (:class:`~hermes_hookspecs.EnvironmentRefused`)."""


@dataclass
class SSHSettings:
    """Where and how to connect."""

    host: str
    user: str
    port: int = 22
    key: str | None = None
    key_passphrase: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    host_key_policy: str = "strict"
    connect_timeout: float = 10.0
    workdir: str | None = None
    timeout: float | None = None
    max_sessions: int = 8

    @property
    def target(self) -> str:
        """``user@host:port``, as messages name the server."""
        return f"{self.user}@{self.host}:{self.port}"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SSHSettings:
        """Read ``terminal.ssh_*`` (and the ``TERMINAL_SSH_*`` variables for keys not set)."""
        term = terminal_config(config)

        def get(key: str, variable: str) -> Any:
            value = term.get(key)
            if value in (None, ""):
                value = os.environ.get(variable) or None
            return value

        host = get("ssh_host", "TERMINAL_SSH_HOST")
        if not host:
            raise EnvironmentUnavailable(
                "ssh backend: no host configured; set terminal.ssh_host in config.yaml (or"
                " TERMINAL_SSH_HOST), plus ssh_user, ssh_port and ssh_key as needed"
            )
        try:
            port = int(get("ssh_port", "TERMINAL_SSH_PORT") or 22)
            if not 0 < port < 65536:
                raise ValueError
        except (TypeError, ValueError):
            raise EnvironmentUnavailable(
                f"ssh backend: terminal.ssh_port must be a port number, got"
                f" {get('ssh_port', 'TERMINAL_SSH_PORT')!r}"
            ) from None
        policy = str(term.get("ssh_host_key_policy") or "strict")
        if policy not in HOST_KEY_POLICIES:
            raise EnvironmentUnavailable(
                f"ssh backend: terminal.ssh_host_key_policy must be one of"
                f" {', '.join(HOST_KEY_POLICIES)}, got {policy!r}"
            )
        key = get("ssh_key", "TERMINAL_SSH_KEY")
        timeout = term.get("timeout")
        return cls(
            host=str(host),
            user=str(get("ssh_user", "TERMINAL_SSH_USER") or getpass.getuser()),
            port=port,
            key=os.path.expanduser(str(key)) if key else None,
            key_passphrase=get("ssh_key_passphrase", "TERMINAL_SSH_KEY_PASSPHRASE"),
            known_hosts=os.path.expanduser(
                str(get("ssh_known_hosts", "TERMINAL_SSH_KNOWN_HOSTS") or "~/.ssh/known_hosts")
            ),
            host_key_policy=policy,
            connect_timeout=float(term.get("ssh_connect_timeout") or 10.0),
            workdir=str(term["ssh_cwd"]) if term.get("ssh_cwd") else None,
            timeout=float(timeout) if timeout else None,
            max_sessions=max(2, int(term.get("ssh_max_sessions") or 8)),
        )


def _fingerprint(key: Any) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _known_host_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class _UnknownHostKey(Exception):
    def __init__(self, key: Any) -> None:
        super().__init__("unknown host key")
        self.key = key


def _import_paramiko() -> Any:
    try:
        import paramiko
    except ImportError:  # pragma: no cover - the dist depends on paramiko
        raise EnvironmentUnavailable(
            "ssh backend: paramiko is not installed; pip install hermes-env-ssh"
        ) from None
    return paramiko


def _load_key(paramiko: Any, settings: SSHSettings) -> Any:
    path = settings.key
    assert path is not None
    if not os.path.exists(path):
        raise EnvironmentUnavailable(
            f"ssh backend: key file {path} does not exist; fix terminal.ssh_key (or"
            " TERMINAL_SSH_KEY), or leave it empty to use the SSH agent"
        )
    try:
        return paramiko.PKey.from_path(path, password=settings.key_passphrase)
    except TypeError as exc:  # cryptography: "Key is password-protected, but ..."
        if "password" not in str(exc).lower():
            raise
        raise EnvironmentUnavailable(
            f"ssh backend: key {path} is encrypted; set terminal.ssh_key_passphrase (or"
            " TERMINAL_SSH_KEY_PASSPHRASE), or load it into ssh-agent and leave ssh_key empty"
        ) from None
    except paramiko.PasswordRequiredException:
        raise EnvironmentUnavailable(
            f"ssh backend: key {path} is encrypted; set terminal.ssh_key_passphrase (or"
            " TERMINAL_SSH_KEY_PASSPHRASE), or load it into ssh-agent and leave ssh_key empty"
        ) from None
    except PermissionError:
        raise EnvironmentUnavailable(f"ssh backend: cannot read key file {path}") from None
    except (paramiko.SSHException, ValueError) as exc:
        raise EnvironmentUnavailable(
            f"ssh backend: {path} is not a usable private key ({exc}); point terminal.ssh_key"
            " at the private half (not the .pub file), and check the passphrase if it has one"
        ) from None


def _known_hosts_problems(settings: SSHSettings) -> list[str]:
    """Why the known_hosts file cannot serve the host-key policy (empty: it can)."""
    path = settings.known_hosts
    name = _known_host_name(settings.host, settings.port)
    if os.path.exists(path):
        if not os.access(path, os.R_OK):
            return [f"ssh backend: cannot read known_hosts file {path}"]
        if settings.host_key_policy == "accept-new" and not os.access(path, os.W_OK):
            return [
                f"ssh backend: terminal.ssh_host_key_policy is accept-new but {path} is not"
                " writable, so a new host key could not be recorded"
            ]
        return []
    if settings.host_key_policy == "strict":
        return [
            f"ssh backend: known_hosts file {path} does not exist, so the host key of {name}"
            f" cannot be checked; add the key (ssh-keyscan -p {settings.port} {settings.host}"
            f" >> {path}, after checking its fingerprint) or set terminal.ssh_known_hosts"
        ]
    folder = os.path.dirname(path) or "."
    while not os.path.exists(folder):
        folder = os.path.dirname(folder) or "/"
    if not os.access(folder, os.W_OK):
        return [
            f"ssh backend: terminal.ssh_host_key_policy is accept-new but {path} cannot be"
            f" created ({folder} is not writable)"
        ]
    return []


def connect(settings: SSHSettings) -> Any:
    """An authenticated ``paramiko.SSHClient``, with the host key checked; every failure is an
    :class:`EnvironmentUnavailable` that says what failed and how to fix it."""
    _import_paramiko()  # one readable line when it is missing
    import paramiko

    known_hosts = settings.known_hosts
    name = _known_host_name(settings.host, settings.port)
    pkey = _load_key(paramiko, settings) if settings.key else None

    class Policy(paramiko.MissingHostKeyPolicy):
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            if settings.host_key_policy != "accept-new":
                raise _UnknownHostKey(key)
            os.makedirs(os.path.dirname(known_hosts) or ".", mode=0o700, exist_ok=True)
            with open(known_hosts, "a", encoding="ascii") as handle:
                handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            client.get_host_keys().add(hostname, key.get_name(), key)

    client = paramiko.SSHClient()
    if os.path.exists(known_hosts):
        try:
            client.load_host_keys(known_hosts)
        except OSError as exc:
            raise EnvironmentUnavailable(
                f"ssh backend: cannot read known_hosts file {known_hosts}: {exc}"
            ) from None
    elif settings.host_key_policy == "strict":
        raise EnvironmentUnavailable(
            f"ssh backend: known_hosts file {known_hosts} does not exist, so the host key of"
            f" {name} cannot be checked; add the key (ssh-keyscan -p {settings.port}"
            f" {settings.host} >> {known_hosts}, after checking its fingerprint) or set"
            " terminal.ssh_known_hosts"
        )
    client.set_missing_host_key_policy(Policy())
    try:
        # our own socket, for TCP_NODELAY: without it small SSH messages wait for delayed
        # acknowledgements and a command round trip takes 40 ms more
        sock = socket.create_connection(
            (settings.host, settings.port), timeout=settings.connect_timeout
        )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.connect(
            settings.host,
            port=settings.port,
            sock=sock,
            username=settings.user,
            pkey=pkey,
            allow_agent=pkey is None,
            look_for_keys=pkey is None,
            timeout=settings.connect_timeout,
            banner_timeout=settings.connect_timeout,
            auth_timeout=settings.connect_timeout,
            channel_timeout=settings.connect_timeout,
        )
    except _UnknownHostKey as exc:
        client.close()
        raise EnvironmentRefused(
            f"ssh backend: the host key of {name} ({exc.key.get_name()}"
            f" {_fingerprint(exc.key)}) is not in {known_hosts}; strict host-key checking"
            f" refuses unknown hosts. Check the fingerprint with the host's owner, then add it"
            f" (ssh-keyscan -p {settings.port} {settings.host} >> {known_hosts}), or set"
            " terminal.ssh_host_key_policy: accept-new to trust a host on first use",
            rule=HOST_KEY_RULE,
        ) from None
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise EnvironmentRefused(
            f"ssh backend: HOST KEY MISMATCH for {name}: the server sent"
            f" {_fingerprint(exc.key)} but {known_hosts} has {_fingerprint(exc.expected_key)}."
            " Someone may be intercepting the connection, or the host was reinstalled; refusing"
            f" to connect. Remove the old entry (ssh-keygen -R '{name}' -f {known_hosts}) only"
            " once you know why it changed",
            rule=HOST_KEY_RULE,
        ) from None
    except paramiko.AuthenticationException as exc:
        client.close()
        using = f"key {settings.key}" if settings.key else "the SSH agent and ~/.ssh keys"
        raise EnvironmentUnavailable(
            f"ssh backend: {settings.target} refused {using} ({exc}); check terminal.ssh_user"
            " and that the public key is in the user's ~/.ssh/authorized_keys"
        ) from None
    except (TimeoutError, OSError) as exc:
        client.close()
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        if isinstance(exc, TimeoutError) or "timed out" in str(exc):
            reason = f"no answer within {settings.connect_timeout:g} s"
        raise EnvironmentUnavailable(
            f"ssh backend: cannot reach {settings.host}:{settings.port} ({reason}); check"
            " terminal.ssh_host / ssh_port, that sshd runs there and that the network allows it"
        ) from None
    except paramiko.SSHException as exc:
        client.close()
        raise EnvironmentUnavailable(
            f"ssh backend: SSH handshake with {settings.host}:{settings.port} failed: {exc}"
        ) from None
    transport = client.get_transport()
    if transport is not None:  # always, once connected
        transport.set_keepalive(30)
    return client


class _SSHChannel(Channel):
    def __init__(self, chan: Any, release: Any, transport: Any, where: str) -> None:
        self._chan = chan
        self._release = release
        self._transport = transport
        self._where = where
        self._released = False

    def chunks(self) -> Iterator[bytes]:
        recv = self._chan.recv
        while True:
            data = recv(1 << 18)
            if not data:
                return
            yield data

    def exit_status(self, wait: float) -> int | None:
        if self._chan.status_event.wait(wait):
            return int(self._chan.recv_exit_status())
        if not self._transport.is_active():
            raise EnvironmentUnavailable(f"{self._where}: the SSH connection was lost")
        return None

    def close(self) -> None:
        try:
            self._chan.close()
        finally:
            if not self._released:
                self._released = True
                self._release()


class _HeldSession:
    """A session channel whose input this process holds open (the lifeline's)."""

    def __init__(self, chan: Any) -> None:
        self._chan = chan

    def close(self) -> None:
        """Close the channel: the program on it reads end of file."""
        try:
            self._chan.close()
        except Exception:  # noqa: BLE001 - the connection may be gone already
            pass


class SSHEnvironment(ShellEnvironment):
    """Commands of a task on a remote host; the factory registered as ``ssh``:
    ``SSHEnvironment(config, task_id)``.

    Tied to this process: a lifeline session (:meth:`ShellEnvironment.hold_lifeline`) kills
    every process the environment started on the host when the connection closes, which it does
    when hermes dies in any way. A connection that drops is made again on next use; the
    processes of the old one are stopped, the working directory and exports are kept when the
    reconnection comes within :attr:`lifeline_grace` seconds.
    """

    name = "ssh"
    lifeline_grace = 60.0

    def __init__(self, config: Mapping[str, Any], task_id: str) -> None:
        settings = SSHSettings.from_config(config)
        super().__init__(
            task_id=task_id,
            workdir=settings.workdir,
            default_timeout=settings.timeout,
            config=config,
        )
        self.settings = settings
        self.where = f"ssh {settings.target}"
        # one session is the lifeline's, the others carry commands (at least two: a timed-out
        # command's channel stays open while a second one kills it)
        self._sessions = threading.BoundedSemaphore(max(2, settings.max_sessions - 1))
        self._connect_lock = threading.Lock()
        self._renew_lock = threading.Lock()
        self._renew_pending = False
        self.client = connect(settings)
        self.connections = 1
        try:
            self.prepare_shell()
            self.hold_lifeline()
        except BaseException:
            self.teardown()
            raise

    def _transport(self) -> Any:
        """The live transport; reconnects once when the connection dropped (and notes that the
        lifeline must be renewed)."""
        with self._connect_lock:
            transport = self.client.get_transport() if self.client is not None else None
            if transport is None or not transport.is_active():
                if self._closed:
                    raise EnvironmentUnavailable(f"{self.where}: the environment was cleaned up")
                try:
                    self.client.close()
                except Exception:
                    pass
                self.client = connect(self.settings)
                self.connections += 1
                self._renew_pending = True
                transport = self.client.get_transport()
            return transport

    def _renew_if_needed(self) -> None:
        """After a reconnection: claim the state and hold a new lifeline, once."""
        if not self._renew_pending:
            return
        with self._renew_lock:
            if not self._renew_pending:
                return
            self._renew_pending = False
            self.renew_lifeline()

    def _drop_connection(self) -> None:
        with self._connect_lock:
            try:
                self.client.close()
            except Exception:
                pass

    def _exec_session(self, transport: Any, command: str) -> Any:
        chan = transport.open_session(
            window_size=8 * 1024 * 1024,
            max_packet_size=32768,
            timeout=self.settings.connect_timeout,
        )
        chan.exec_command(command)
        return chan

    def open_channel(self, argv: list[str], stdin: bytes | None) -> Channel:
        """Run ``argv`` on a new session channel of the task's connection (made again when it
        dropped), with ``stdin`` fed from a thread."""
        paramiko = _import_paramiko()
        for attempt in (1, 2):
            transport = self._transport()
            self._renew_if_needed()
            if not self._sessions.acquire(timeout=120):
                raise EnvironmentUnavailable(f"{self.where}: no free SSH session for 120 s")
            try:
                chan = self._exec_session(transport, "exec " + shlex.join(argv))
                break
            except (paramiko.SSHException, OSError, EOFError) as exc:
                self._sessions.release()
                if attempt == 1:  # a dropped connection that looked alive: reconnect, once
                    self._drop_connection()
                    continue
                raise EnvironmentUnavailable(
                    f"{self.where}: cannot open a session on the connection: {exc}"
                ) from None
            except EnvironmentUnavailable:
                self._sessions.release()
                raise
            except Exception as exc:
                self._sessions.release()
                raise EnvironmentUnavailable(
                    f"{self.where}: cannot open a session on the connection: {exc}"
                ) from None
        channel = _SSHChannel(chan, self._sessions.release, transport, self.where)
        if stdin:

            def feed() -> None:
                try:
                    view = memoryview(stdin)
                    for start in range(0, len(view), 1 << 16):
                        chan.sendall(view[start : start + (1 << 16)])
                except OSError:
                    pass
                finally:
                    try:
                        chan.shutdown_write()
                    except OSError:
                        pass

            threading.Thread(target=feed, name="hermes-ssh-stdin", daemon=True).start()
        else:
            chan.shutdown_write()
        return channel

    def open_held(self, argv: list[str]) -> _HeldSession:
        """Run ``argv`` on a session channel whose input stays open until it is closed or the
        connection ends (sshd then closes the program's input)."""
        paramiko = _import_paramiko()
        transport = self._transport()
        try:
            chan = self._exec_session(transport, "exec " + shlex.join(argv))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise EnvironmentUnavailable(
                f"{self.where}: cannot start the process lifeline: {exc}"
            ) from None
        return _HeldSession(chan)

    def teardown(self) -> None:
        """Close the connection (the lifeline ends with it)."""
        client, self.client = self.client, None
        if client is not None:
            try:
                client.close()
            except Exception:
                pass

    @classmethod
    def check_config(cls, config: Mapping[str, Any]) -> list[str]:
        """The problems of the ssh settings, without connecting: no host, a bad port or
        policy, no user name to log in with, paramiko missing, a key file that is missing,
        unreadable, encrypted without a passphrase or not a private key, a known_hosts file
        that strict checking needs but is missing or unreadable, or that ``accept-new``
        cannot write."""
        term = terminal_config(config)
        problems: list[str] = []
        if not (term.get("ssh_user") or os.environ.get("TERMINAL_SSH_USER")):
            try:
                getpass.getuser()
            except Exception:  # no login name, no passwd entry
                problems.append(
                    "ssh backend: no user to log in as; set terminal.ssh_user (or"
                    " TERMINAL_SSH_USER)"
                )
                return problems
        try:
            settings = SSHSettings.from_config(config)
        except EnvironmentUnavailable as exc:
            return [str(exc)]
        if not module_installed("paramiko"):
            return ["ssh backend: paramiko is not installed; pip install hermes-env-ssh"]
        if settings.key:
            if os.path.exists(settings.key) and not os.access(settings.key, os.R_OK):
                problems.append(f"ssh backend: cannot read key file {settings.key}")
            else:
                try:
                    _load_key(_import_paramiko(), settings)
                except EnvironmentUnavailable as exc:
                    problems.append(str(exc))
        problems += _known_hosts_problems(settings)
        return problems

    @classmethod
    def check(cls, config: Mapping[str, Any]) -> str:
        """What ``hermes doctor`` reports: the host answers, its key is known and the key is
        accepted. Raises :class:`EnvironmentUnavailable` with the fix otherwise."""
        settings = SSHSettings.from_config(config)
        started = time.monotonic()
        client = connect(settings)
        try:
            version = client.get_transport().remote_version
        finally:
            client.close()
        took = (time.monotonic() - started) * 1000
        return (
            f"{settings.target} reachable, host key verified, logged in ({version}, {took:.0f} ms)"
        )


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register the ``ssh`` backend."""
    register("ssh", SSHEnvironment)
