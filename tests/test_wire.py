"""The wire messages built request after request (WireCache) are those the full computation
gives, images included: tool results' images shown after their run of results, file images
read again on every request (a file that is gone becomes a note)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hermes_core.loop import images
from hermes_core.loop.transcript import wire_and_source
from hermes_core.loop.wire import WireCache

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
    "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
)


def _grow(rng: random.Random, picture: Path) -> tuple[list[dict], list[int]]:
    """A valid transcript growing the way the loop grows it, with images in user messages and
    in tool results; and its length after each step."""
    part = {"type": "image_url", "image_url": {"url": picture.as_uri()}}
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}]
    lengths = []
    for step in range(40):
        if rng.random() < 0.6:
            ids = [f"c{step}_{i}" for i in range(rng.randint(1, 3))]
            calls = [
                {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
                for i in ids
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for i in ids:
                result = {"role": "tool", "tool_call_id": i, "content": i, "tool_name": "t"}
                if rng.random() < 0.3:
                    result[images.IMAGES_FIELD] = [str(picture)]
                messages.append(result)
                if rng.random() < 0.3:  # results of one batch may be seen one by one
                    lengths.append(len(messages))
        else:
            messages.append({"role": "assistant", "content": f"answer {step}"})
            content = [part] if rng.random() < 0.2 else f"next {step}"
            messages.append({"role": "user", "content": content})
        lengths.append(len(messages))
    return messages, lengths


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("described", [False, True])
def test_the_cache_gives_what_the_full_computation_gives(
    tmp_path: Path, seed: int, described: bool
) -> None:
    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    describe = (lambda path: f"a picture called {path.name}") if described else None
    messages, lengths = _grow(random.Random(seed), picture)
    cache = WireCache()
    grown: list[dict] = []
    for length in lengths:
        grown.extend(messages[len(grown) : length])
        expected = images.prepare(*wire_and_source(grown, "SYS"), describe)
        assert cache.build(grown, "SYS", describe) == expected


def test_a_file_image_is_read_again_on_every_request(tmp_path: Path) -> None:
    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    part = {"type": "image_url", "image_url": {"url": picture.as_uri()}}
    messages = [{"role": "user", "content": [part]}]
    cache = WireCache()
    first, _ = cache.build(messages, None)
    assert first[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    picture.unlink()
    messages.append({"role": "assistant", "content": "a red pixel"})
    messages.append({"role": "user", "content": "and now?"})
    second, _ = cache.build(messages, None)
    assert "no longer available" in second[0]["content"][0]["text"]
    assert messages[0]["content"] == [part]  # the transcript keeps the reference


def test_valid_checks_what_was_appended_and_agrees_with_validate(tmp_path: Path) -> None:
    from hermes_core.loop.transcript import validate

    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    messages, lengths = _grow(random.Random(3), picture)
    cache = WireCache()
    grown: list[dict] = []
    for length in lengths:
        grown.extend(messages[len(grown) : length])
        assert cache.valid(grown) == (validate(grown) == [])
    grown.append({"role": "tool", "tool_call_id": "nobody", "content": "orphan"})
    assert not cache.valid(grown)
    assert cache.build(grown, None) == images.prepare(*wire_and_source(grown, None))


@pytest.mark.parametrize("seed", range(8))
def test_lists_no_one_kept_hold_what_the_full_computation_gives_request_after_request(
    tmp_path: Path, seed: int
) -> None:
    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    messages, lengths = _grow(random.Random(seed), picture)
    cache = WireCache()
    grown: list[dict] = []
    for step, length in enumerate(lengths):
        grown.extend(messages[len(grown) : length])
        system = "SYS" if step < 20 else "NEW SYSTEM PROMPT"  # compression rebuilds it
        expected = images.prepare(*wire_and_source(grown, system))
        assert cache.build(grown, system) == expected  # the lists are not kept


def test_lists_a_caller_keeps_are_never_changed_by_later_requests() -> None:
    messages: list[dict] = [{"role": "user", "content": "q"}]
    cache = WireCache()
    kept = []
    for step in range(5):
        wire, source = cache.build(messages, "SYS")
        kept.append((wire, source, [dict(m) for m in wire], list(source)))
        del wire, source
        messages.append({"role": "assistant", "content": f"a{step}"})
        messages.append({"role": "user", "content": f"q{step}"})
    for wire, source, wire_then, source_then in kept:
        assert wire == wire_then and source == source_then


def test_lists_changed_by_their_holder_are_not_reused() -> None:
    messages: list[dict] = [{"role": "user", "content": "q"}]
    cache = WireCache()
    for step in range(6):
        wire, source = cache.build(messages, "SYS")
        assert (wire, source) == wire_and_source(messages, "SYS")
        if step % 3 == 0:
            wire.append({"role": "user", "content": "added by whoever held the list"})
        elif step % 3 == 1:
            source.pop()
            wire[0] = {"role": "system", "content": "replaced"}
        messages.append({"role": "assistant", "content": f"a{step}"})
        messages.append({"role": "user", "content": f"q{step}"})
    assert cache.build(messages, "SYS") == wire_and_source(messages, "SYS")
