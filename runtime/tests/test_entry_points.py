"""The shared entry point reader: what importlib.metadata finds, each distribution read once per
process while its folder does not change."""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_runtime import entry_points
from hermes_runtime.entry_points import forget, scan


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    forget()
    yield
    forget()


def _dist(site: Path, name: str, sections: str, *, summary: str = "", author: str = "") -> Path:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    headers = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    headers += f"Summary: {summary}\n" if summary else ""
    headers += f"Author: {author}\n" if author else ""
    (info / "METADATA").write_text(headers + "\nLong description: not a header\n")
    (info / "entry_points.txt").write_text(sections)
    return info


def test_finds_what_importlib_metadata_finds(tmp_path: Path) -> None:
    _dist(tmp_path, "demo-one", "[hermes]\nalpha = demo_one\n[other]\nx = y\n")
    _dist(tmp_path, "demo-two", "[hermes]\nbeta = demo_two.mod:attr\n")
    ours = {(e.name, e.value, e.dist, e.version) for e in scan("hermes", [str(tmp_path)])}
    theirs = {
        (ep.name, ep.value, dist.metadata["Name"], dist.version)
        for dist in importlib.metadata.distributions(path=[str(tmp_path)])
        for ep in dist.entry_points
        if ep.group == "hermes"
    }
    assert (
        ours
        == theirs
        == {
            ("alpha", "demo_one", "demo-one", "1.0"),
            ("beta", "demo_two.mod:attr", "demo-two", "1.0"),
        }
    )


def test_metadata_holds_the_header_fields(tmp_path: Path) -> None:
    _dist(tmp_path, "demo", "[g]\na = m\n", summary="A demo", author="Someone")
    (found,) = scan("g", [str(tmp_path)])
    assert found.metadata() == {
        "Name": "demo",
        "Version": "1.0",
        "Summary": "A demo",
        "Author": "Someone",
    }


def test_a_second_group_reads_no_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dist(tmp_path, "demo", "[hermes]\na = m\n[hermes_agent.plugins]\nb = n\n")
    assert [e.name for e in scan("hermes", [str(tmp_path)])] == ["a"]
    reads: list[str] = []
    real_read = entry_points._read

    def counting(path: str) -> str | None:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(entry_points, "_read", counting)
    assert [e.name for e in scan("hermes_agent.plugins", [str(tmp_path)])] == ["b"]
    assert reads == []


def test_a_changed_folder_and_forget_are_read_again(tmp_path: Path) -> None:
    assert scan("hermes", [str(tmp_path)]) == []
    _dist(tmp_path, "late", "[hermes]\nlate = late_mod\n")
    stamp = os.stat(tmp_path).st_mtime_ns
    os.utime(tmp_path, ns=(stamp, stamp + 1_000_000_000))  # a later tick than the first read
    assert [e.name for e in scan("hermes", [str(tmp_path)])] == ["late"]
    (tmp_path / "late-1.0.dist-info" / "entry_points.txt").write_text("[hermes]\nother = o\n")
    assert [e.name for e in scan("hermes", [str(tmp_path)])] == ["late"]  # same folder stamp
    forget()
    assert [e.name for e in scan("hermes", [str(tmp_path)])] == ["other"]
