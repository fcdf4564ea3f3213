"""Outside a ``hermes`` command (a gateway turn, an embedding program) the plugin reads the home's
config.yaml itself: once, and again only when the file changes."""

from __future__ import annotations

import os

import yaml
from hermes_compat_agent_plugins import plugin


def test_config_is_read_once_and_again_when_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    config = tmp_path / "config.yaml"
    config.write_text("plugins:\n  enabled: [one]\n")
    loads = []
    real = yaml.safe_load
    monkeypatch.setattr(yaml, "safe_load", lambda text: loads.append(1) or real(text))
    for _ in range(200):
        home, data = plugin._where()
        assert home == tmp_path and data["plugins"]["enabled"] == ["one"]
    assert len(loads) == 1
    config.write_text("plugins:\n  enabled: [one, two]\n")
    stat = config.stat()
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert plugin._where()[1]["plugins"]["enabled"] == ["one", "two"]
    assert len(loads) == 2
    config.unlink()
    assert plugin._where()[1] == {}
