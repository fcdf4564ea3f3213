"""Fixtures of the docker backend's tests: environments on the real test engine, cleaned up
after each test, and a client of that engine (``docker_service`` comes from
``environments/conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hermes_env_docker import DockerEnvironment


@pytest.fixture
def make_env(docker_service: Mapping[str, str]) -> Iterator[Callable[..., DockerEnvironment]]:
    """A factory ``make(task_id="test", **terminal)`` of docker environments on the test engine
    (``terminal`` keys on top of its host and image), all cleaned up after the test."""
    made: list[DockerEnvironment] = []

    def make(task_id: str = "test", **terminal: Any) -> DockerEnvironment:
        settings = {"docker_host": docker_service["host"], "docker_image": docker_service["image"]}
        env = DockerEnvironment({"terminal": {**settings, **terminal}}, task_id)
        made.append(env)
        return env

    yield make
    for env in made:
        env.cleanup()


@pytest.fixture
def docker_client(docker_service: Mapping[str, str]) -> Iterator[Any]:
    """A client of the test engine."""
    import docker

    client = docker.DockerClient(base_url=docker_service["host"])
    yield client
    client.close()
