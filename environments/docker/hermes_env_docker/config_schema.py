"""The configuration keys the docker backend reads (``terminal.docker_*``, ``container_*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl

_FLAG = ("boolean", "string")


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare the ``terminal`` keys of the docker backend."""
    register(
        ConfigSection(
            "terminal",
            [
                ConfigKey(
                    "timeout", "integer", 180, "seconds a command may run", minimum=1, shared=True
                ),
                ConfigKey("docker_image", "string", doc="image (unset: python:3.11-slim)"),
                ConfigKey("docker_workdir", "string", doc="working folder (unset: /workspace)"),
                ConfigKey("docker_volumes", "array", doc="volumes to mount (host:container[:ro])"),
                ConfigKey("docker_env", "object", doc="variables set in the container"),
                ConfigKey("docker_pull", "string", doc="pull the image: missing, always, never"),
                ConfigKey("docker_network", "string", doc="network (unset: none)"),
                ConfigKey("docker_user", ("string", "integer"), doc="user commands run as"),
                ConfigKey("docker_host", "string", doc="docker daemon URL (unset: local)"),
                ConfigKey("docker_read_only", _FLAG, doc="read-only root file system (true)"),
                ConfigKey("docker_privileged", _FLAG, doc="privileged container (unsafe)"),
                ConfigKey("docker_cap_add", "array", items="string", doc="capabilities to add"),
                ConfigKey("docker_run_options", "object", doc="extra `docker run` options"),
                ConfigKey("docker_allow_unsafe", _FLAG, doc="let unsafe settings through"),
                ConfigKey("container_pids", ("integer", "string"), doc="most processes"),
                *CONTAINER_KEYS,
            ],
        )
    )


CONTAINER_KEYS = (
    ConfigKey("container_cpu", ("number", "string"), doc="CPUs of the sandbox", shared=True),
    ConfigKey(
        "container_memory",
        ("integer", "number", "string"),
        doc="memory of the sandbox (MiB, or 4g)",
        shared=True,
    ),
    ConfigKey("container_persistent", _FLAG, doc="keep the sandbox between sessions", shared=True),
)
"""The sandbox keys the docker and modal backends both read (declared alike by both)."""
