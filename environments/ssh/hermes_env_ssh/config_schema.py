"""The configuration keys the ssh backend reads (``terminal.ssh_*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_env_common.config_keys import TIMEOUT_KEY

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the ``terminal`` keys of the ssh backend."""
    register(
        ConfigSection(
            "terminal",
            [
                TIMEOUT_KEY,
                ConfigKey("ssh_host", "string", doc="host to run commands on (TERMINAL_SSH_HOST)"),
                ConfigKey("ssh_user", "string", doc="user name (unset: yours)"),
                ConfigKey("ssh_port", ("integer", "string"), doc="port (unset: 22)"),
                ConfigKey("ssh_key", "string", doc="private key file"),
                ConfigKey("ssh_key_passphrase", "string", doc="passphrase of the key", secret=True),
                ConfigKey("ssh_known_hosts", "string", doc="known hosts file (~/.ssh/known_hosts)"),
                ConfigKey(
                    "ssh_host_key_policy",
                    "string",
                    doc="unknown host keys: refused, or accepted once",
                    enum=("strict", "accept-new"),
                ),
                ConfigKey(
                    "ssh_connect_timeout",
                    "number",
                    doc="seconds to connect (unset: 10)",
                    minimum=0,
                ),
                ConfigKey("ssh_cwd", "string", doc="working folder on the host"),
                ConfigKey(
                    "ssh_max_sessions", "integer", doc="channels at once (unset: 8)", minimum=1
                ),
            ],
        )
    )
