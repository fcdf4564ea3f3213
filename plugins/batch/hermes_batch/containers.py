"""A row's container: a row that names a Docker image (its ``image`` field, else the run's
``--image``) runs its commands in a container of that image, made by hermes's ``docker``
execution backend for the row's session and removed when the session ends.

The container is the docker backend's, with its settings (``terminal.*``: read-only root, no
network, limits, the refusal of unsafe settings) and its working folder ``/workspace``, a
volume of the container. Once made, the row's workspace (its ``cwd`` copy and ``files``) is
copied into that folder in one archive, so a row's container needs no folder of this machine
(the engine may be remote) and what the row writes stays in its container and goes with it.
No ``terminal.docker_volumes`` are mounted into a row's container.

That is the ``batch-docker`` backend this plugin registers: the docker backend plus the copy.
The docker backend is imported only when a row names an image.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import Environment, EnvironmentUnavailable, HermesError

BACKEND = "batch-docker"
"""The execution backend a row with an image runs on."""

WORKSPACE_KEY = "batch.row_workspace"
"""The configuration key that names the folder copied into a row's container."""

WORKDIR = "/workspace"
"""Where the row's workspace is in its container, and where its commands start."""

INSTALL_HINT = "pip install hermes-env-docker"


def row_image(data: Mapping[str, Any], settings: Mapping[str, Any]) -> str | None:
    """The Docker image row ``data`` runs in: its own ``image``, else the run's; ``None``
    for the configured backend."""
    image = data.get("image") or settings.get("image")
    return str(image) if image else None


def container_overrides(image: str, workspace: Path) -> dict[str, Any]:
    """The configuration keys that give a row's session a container of ``image`` with a copy
    of ``workspace`` as its working folder."""
    return {
        "terminal.backend": BACKEND,
        "terminal.docker_image": image,
        "terminal.docker_workdir": WORKDIR,
        "terminal.docker_volumes": [],
        "terminal.container_persistent": False,
        WORKSPACE_KEY: str(workspace),
    }


def _owner(user: str | None) -> tuple[int, int] | None:
    """The numeric ``uid, gid`` of a ``terminal.docker_user`` written as numbers."""
    match = re.fullmatch(r"(\d+)(?::(\d+))?", user or "")
    if not match:
        return None
    uid = int(match.group(1))
    return uid, int(match.group(2) or uid)


def workspace_archive(folder: Path, user: str | None) -> bytes:
    """``folder``'s contents as a tar archive whose files belong to the container's user:
    ``user``'s numbers when it is written as ``uid[:gid]``, else root, with everything
    writable by every user of the container (symbolic links are kept as links)."""
    owner = _owner(user)

    def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid = owner or (0, 0)
        info.uname = info.gname = ""
        if owner is None and not info.issym():
            info.mode |= 0o777 if info.isdir() else 0o666
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for entry in sorted(folder.iterdir()):
            tar.add(entry, arcname=entry.name, filter=own)
    return buffer.getvalue()


class RowContainer:
    """The ``batch-docker`` backend's factory: a docker environment whose working folder is
    filled with the folder ``batch.row_workspace`` names, once its container is made."""

    def __call__(self, config: Mapping[str, Any], task_id: str) -> Environment:
        """The environment of ``task_id``: a new container, with the row's workspace in it."""
        try:
            from hermes_env_docker import DockerEnvironment
        except ImportError:
            raise EnvironmentUnavailable(
                f"a row with an image needs the docker execution backend: {INSTALL_HINT}"
            ) from None
        env = DockerEnvironment(config, task_id)
        section = config.get("batch")
        folder = section.get("row_workspace") if isinstance(section, Mapping) else None
        if not folder:
            return env
        try:
            data = workspace_archive(Path(str(folder)), env.settings.user)
            if not env.container.put_archive(env.settings.workdir, data):
                raise EnvironmentUnavailable(f"{env.where}: the row's workspace was not copied")
        except EnvironmentUnavailable:
            env.cleanup()
            raise
        except Exception as exc:  # the engine refused it, or the folder cannot be read
            env.cleanup()
            raise EnvironmentUnavailable(
                f"{env.where}: cannot copy the row's workspace into it: {exc}"
            ) from None
        return env

    @staticmethod
    def check_config(config: Mapping[str, Any]) -> list[str]:
        """The docker backend's check of the settings (nothing is created)."""
        try:
            from hermes_env_docker import DockerEnvironment
        except ImportError:
            return [f"the docker execution backend is not installed: {INSTALL_HINT}"]
        return DockerEnvironment.check_config(config)

    @staticmethod
    def check(config: Mapping[str, Any]) -> str:
        """The docker backend's report of the engine and the image."""
        from hermes_env_docker import DockerEnvironment

        return DockerEnvironment.check(config)


def image_problem(image: str) -> str | None:
    """Why ``image`` cannot be a row's image: not a valid image reference, or the docker
    backend is not installed; ``None`` when it can."""
    try:
        from hermes_env_docker.reference import image_problem as reference_problem
    except ImportError:
        return f"the image {image!r} needs the docker execution backend: {INSTALL_HINT}"
    problem = reference_problem(image)
    return problem.replace("terminal.docker_image", "the image") if problem else None


def container_problem(
    image: str, overrides: Mapping[str, Any], config: Mapping[str, Any]
) -> str | None:
    """Why a container of ``image`` cannot run this row (the backend is missing, a setting is
    bad or unsafe, the engine does not answer, the image cannot be had); ``None`` when it
    can. Checked before the row's model is called, so a row never runs without its world."""
    problem = image_problem(image)
    if problem:
        return problem
    terminal = dict(config.get("terminal") or {})
    for dotted, value in overrides.items():
        if dotted.startswith("terminal."):
            terminal[dotted.removeprefix("terminal.")] = value
    merged = {**config, "terminal": terminal}
    problems = RowContainer.check_config(merged)
    if problems:
        return "; ".join(problems)
    try:
        RowContainer.check(merged)
    except HermesError as exc:
        return str(exc)
    return None
