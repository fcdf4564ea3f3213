"""The shared list of secret classes: well formed, and each class's home paths are its own
files (the sandbox hides them, the policy's pattern recognises them)."""

from __future__ import annotations

import re

from hermes_runtime.secret_classes import home_paths, secret_classes


def test_every_class_is_named_once_and_its_pattern_compiles():
    classes = secret_classes()
    names = [c.name for c in classes]
    assert len(names) == len(set(names))
    assert {"ssh-key", "credentials", "key-store", "history", "env-file"} <= set(names)
    for c in classes:
        re.compile(c.pattern)
        assert c.about


def test_a_home_path_of_a_class_is_matched_by_its_pattern():
    for c in secret_classes():
        for path in c.home:
            probes = [f"~/{path}", f"~/{path}/x", f"~/{path}/id_ed25519"]
            assert any(re.search(c.pattern, p) for p in probes), (c.name, path)


def test_home_paths_are_relative_and_unique():
    paths = home_paths()
    assert len(paths) == len(set(paths))
    assert ".ssh" in paths and ".config/git/credentials" in paths and ".password-store" in paths
    assert not any(p.startswith(("/", "~")) for p in paths)


def test_the_pattern_leaves_ordinary_files_alone():
    ordinary = ["src/main.py", "~/.cargo/bin/cargo", "~/.ssh/known_hosts", "~/.ssh/id_rsa.pub",
                ".env.example", "README.md"]  # fmt: skip
    for path in ordinary:
        assert not any(re.search(c.pattern, path) for c in secret_classes()), path


def test_the_toolchain_paths_hold_no_secret_class():
    from hermes_runtime.secret_classes import toolchain_paths

    paths = toolchain_paths()
    assert ".cargo/bin" in paths and ".local/lib/python*" in paths and ".rustup" in paths
    assert ".cargo" not in paths and ".config" not in paths
