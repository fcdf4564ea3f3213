"""The configuration keys the docker backend reads (``terminal.docker_*``, ``container_*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_env_common.config_keys import CONTAINER_KEYS, FLAG, TIMEOUT_KEY

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the ``terminal`` keys of the docker backend."""
    register(
        ConfigSection(
            "terminal",
            [
                TIMEOUT_KEY,
                ConfigKey("docker_image", "string", doc="image (unset: python:3.11-slim)"),
                ConfigKey("docker_workdir", "string", doc="working folder (unset: /workspace)"),
                ConfigKey("docker_volumes", "array", doc="volumes to mount (host:container[:ro])"),
                ConfigKey("docker_env", "object", doc="variables set in the container"),
                ConfigKey("docker_pull", "string", doc="pull the image: missing, always, never"),
                ConfigKey("docker_network", "string", doc="network (unset: none)"),
                ConfigKey("docker_user", ("string", "integer"), doc="user commands run as"),
                ConfigKey("docker_host", "string", doc="docker daemon URL (unset: local)"),
                ConfigKey("docker_read_only", FLAG, doc="read-only root file system (true)"),
                ConfigKey("docker_privileged", FLAG, doc="privileged container (unsafe)"),
                ConfigKey("docker_cap_add", "array", items="string", doc="capabilities to add"),
                ConfigKey("docker_run_options", "object", doc="extra `docker run` options"),
                ConfigKey("docker_allow_unsafe", FLAG, doc="let unsafe settings through"),
                ConfigKey("container_pids", ("integer", "string"), doc="most processes"),
                *CONTAINER_KEYS,
            ],
        )
    )
