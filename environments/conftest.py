"""Fixtures for the tests of the docker and ssh environments: where the real services are.

``.ci/services.sh start`` starts a Docker engine and an OpenSSH server and writes the variables
that locate them (``DOCKER_HOST``, ``HERMES_TEST_*``) to ``$HERMES_SERVICES_DIR/env`` (default
``/tmp/hermes-services/env``); ``.ci/run`` also exports them. The fixtures take the variables from
the environment, else from that file. When a service is missing the tests fail under CI
(``CI=true``) and are skipped elsewhere, with the command that starts it.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from hermes_core.testing.services import service_variables, unavailable


@pytest.fixture(scope="session")
def docker_service() -> Mapping[str, str]:
    """``{"host": DOCKER_HOST, "image": test image}`` of a running engine that has the image."""
    values = service_variables()
    host = (
        values.get("HERMES_TEST_DOCKER_HOST")
        or values.get("DOCKER_HOST")
        or "unix:///var/run/docker.sock"
    )
    image = values.get("HERMES_TEST_DOCKER_IMAGE") or "local/busybox:latest"
    try:
        import docker

        client = docker.DockerClient(base_url=host, timeout=10)
        client.ping()
    except Exception as exc:
        unavailable(f"no Docker engine at {host} ({type(exc).__name__})")
    try:
        client.images.get(image)
    except Exception:
        unavailable(f"the Docker engine at {host} has no image {image}")
    finally:
        client.close()
    return {"host": host, "image": image}


@pytest.fixture(scope="session")
def ssh_service() -> Mapping[str, str]:
    """Host, port, user, key, other_key and known_hosts of a running test sshd."""
    values = service_variables()
    needed = ["HOST", "PORT", "USER", "KEY", "KNOWN_HOSTS"]
    missing = [f"HERMES_TEST_SSH_{n}" for n in needed if not values.get(f"HERMES_TEST_SSH_{n}")]
    if missing:
        unavailable(f"no test SSH server configured ({', '.join(missing)} unset)")
    service = {n.lower(): values[f"HERMES_TEST_SSH_{n}"] for n in needed}
    service["other_key"] = values.get("HERMES_TEST_SSH_OTHER_KEY", "")
    import socket

    try:
        socket.create_connection((service["host"], int(service["port"])), timeout=3).close()
    except OSError as exc:
        unavailable(f"no SSH server on {service['host']}:{service['port']} ({exc})")
    return service
