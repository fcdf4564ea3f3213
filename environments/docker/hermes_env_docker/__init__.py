"""hermes execution backend ``docker``: one long-lived container per task, commands through
``docker exec``.

The container is created on first use of a task from ``terminal.docker_image`` with the network
``none``, a read-only root file system (``/tmp`` and the working folder stay writable), all
capabilities dropped but a few, ``no-new-privileges``, an init process, and memory / CPU / pids
limits. Settings that would let it reach the host are refused unless
``terminal.docker_allow_unsafe`` is true (:mod:`hermes_env_docker.safety`). The container is
removed at clean-up unless ``terminal.container_persistent`` is true, in which case it is stopped
and found again by name for the next task with the same id. The engine is the one
``DOCKER_HOST`` (or ``terminal.docker_host``) points at, local or remote.

Commands, files and background processes go through exec (see :mod:`hermes_env_common`); the
``docker`` SDK is imported only when an environment is created.
"""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import hookimpl

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .container import DockerEnvironment
from .settings import DEFAULT_IMAGE, DockerSettings

__all__ = ["DEFAULT_IMAGE", "DockerEnvironment", "DockerSettings", "hermes_register_environments"]


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register the ``docker`` backend."""
    register("docker", DockerEnvironment)
