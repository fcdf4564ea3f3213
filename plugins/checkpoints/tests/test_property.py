"""A property test: random file trees, agent turns and a person's edits interleaved, restores of
random checkpoints; after each restore the workspace must hold exactly what an in-memory model
of the rule says.

The model knows nothing of git or trees: it keeps, per checkpoint, the files when it was taken,
and the set of paths the person touched after it (every edit the person makes is added to every
checkpoint that exists then). A restore of checkpoint k must leave:

- a path whose content equals the checkpoint's: as it is;
- a path present now that the person touched since k: as it is (kept);
- any other path: as in the checkpoint (restored, or removed when the checkpoint lacks it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hermes_checkpoints.catalog import list_checkpoints
from hermes_checkpoints.operations import (
    checkpoint_before_turn,
    open_workspace,
    record_after,
    restore,
)
from hermes_checkpoints.settings import Settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PATHS = [
    b"a.txt",
    b"dir/b.txt",
    b"dir/sub/c.txt",
    "ünï/d.md".encode(),
    b"sp ace",
    b"new\nline",
    b"caf\xe9",
    b"-rf",
]

edit = st.tuples(st.integers(0, len(PATHS) - 1), st.sampled_from(["write", "delete"]))
step = st.one_of(
    st.tuples(st.just("agent"), st.lists(edit, max_size=4)),
    st.tuples(st.just("person"), st.lists(edit, min_size=1, max_size=3)),
    st.tuples(st.just("restore"), st.integers(0, 50)),
)
start = st.dictionaries(st.integers(0, len(PATHS) - 1), st.binary(max_size=40), max_size=6)


def on_disk(root: bytes) -> dict[bytes, bytes]:
    found = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(folder, name)
            with open(full, "rb") as handle:
                found[os.path.relpath(full, root)] = handle.read()
    return found


class Model:
    """The files, and per checkpoint (by commit) what it held and what the person touched."""

    def __init__(self, root: bytes, files: dict[bytes, bytes]) -> None:
        self.root = root
        self.files = dict(files)
        self.held: dict[str, dict[bytes, bytes]] = {}
        self.touched: dict[str, set[bytes]] = {}
        self.counter = 0
        for path, data in files.items():
            self.put(path, data)

    def put(self, path: bytes, data: bytes) -> None:
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(data)
        self.files[path] = data

    def apply(self, edits: list[tuple[int, str]], by_person: bool) -> None:
        for index, action in edits:
            path = PATHS[index]
            if action == "delete":
                if path not in self.files:
                    continue
                os.unlink(os.path.join(self.root, path))
                del self.files[path]
            else:
                self.counter += 1
                self.put(path, f"version {self.counter} of {path!r}\n".encode())
            if by_person:
                for touched in self.touched.values():
                    touched.add(path)

    def expected_after_restore(self, commit: str) -> dict[bytes, bytes]:
        target, touched = self.held[commit], self.touched[commit]
        expected = dict(self.files)
        for path in set(target) | set(self.files):
            if target.get(path) == self.files.get(path):
                continue
            if path in self.files and path in touched:
                continue
            if path in target:
                expected[path] = target[path]
            else:
                del expected[path]
        return expected


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(start=start, steps=st.lists(step, min_size=1, max_size=12))
def test_restores_match_the_model(start, steps):
    scratch = Path(tempfile.mkdtemp(prefix="hermes-checkpoints-property-"))
    try:
        work = scratch / "work"
        work.mkdir()
        root = os.fsencode(os.path.realpath(work))
        model = Model(root, {PATHS[i]: data for i, data in start.items()})
        workspace = open_workspace(scratch / "home", Path(os.path.realpath(work)))
        config = Settings()
        for kind, argument in steps:
            if kind == "agent":
                checkpoint = checkpoint_before_turn(workspace, config, {"tool": "terminal"})
                if checkpoint.commit not in model.held:
                    model.held[checkpoint.commit] = dict(model.files)
                    model.touched[checkpoint.commit] = set()
                model.apply(argument, by_person=False)
                record_after(workspace, config, checkpoint)
            elif kind == "person":
                model.apply(argument, by_person=True)
            else:
                checkpoints = list_checkpoints(workspace)
                if not checkpoints:
                    continue
                chosen = checkpoints[argument % len(checkpoints)]
                expected = model.expected_after_restore(chosen.commit)
                before = dict(model.files)
                report = restore(workspace, config, chosen.id, [], dry_run=False)
                assert on_disk(root) == expected, [c.line() for c in report.changes]
                kept = {c.path for c in report.changes if c.action == "keep"}
                assert all(expected[p] == before[p] for p in kept)
                model.files = expected
                if report.before is not None:
                    model.held[report.before.commit] = before
                    model.touched[report.before.commit] = set()
            assert on_disk(root) == model.files
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
