"""The browser toolset with the real Chromium, driven by a scripted model that reads each
snapshot and acts on the element references it finds, against pages served on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_toolset_browser import MANAGER

from hermes_core.testing import ScriptedModel, make_agent, text, tool_call

PLUGINS = ["browser", "web", "file"]


def config(tmp_path: Path, **browser: Any) -> dict[str, Any]:
    return {
        "web": {"allow_private": ["127.0.0.1"]},
        "browser": browser,
        "file": {"workspace": str(tmp_path)},
    }


def on(pattern: str, tool: str, **args: Any) -> Callable[[Any], Any]:
    """A model step: find the element matching ``pattern`` in the last snapshot and call
    ``tool`` with its ``ref``."""

    def step(request: Any) -> Any:
        content = json.loads(request.messages[-1]["content"])["snapshot"]
        found = re.search(pattern + r"[^\n]*?\[ref=(e\d+)\]", content)
        assert found, f"no element matching {pattern!r} in:\n{content}"
        return tool_call(tool, {"ref": found.group(1), **args})

    return step


def run(steps: list[Any], cfg: dict[str, Any]) -> list[Any]:
    """Play the steps in one turn; the tool results, parsed when they are JSON."""
    model = ScriptedModel(*steps, text("done"))
    with make_agent(model=model, plugins=PLUGINS, config=cfg) as agent:
        agent.chat("use the browser")
        results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    parsed = []
    for content in results:
        try:
            parsed.append(json.loads(content))
        except ValueError:
            parsed.append(content)
    return parsed


def test_navigate_click_a_link_and_go_back(site: Any, tmp_path: Path) -> None:
    home, form, back = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/"}),
            on(r'link "Go to the form"', "browser_click"),
            tool_call("browser_back"),
        ],
        config(tmp_path),
    )
    assert home["title"] == "Home" and home["url"] == site.url + "/"
    assert 'heading "Welcome" [level=1]' in home["snapshot"]
    assert form["url"] == site.url + "/form" and 'heading "Say hello"' in form["snapshot"]
    assert back["url"] == site.url + "/"


def test_fill_in_a_form_and_submit_it(site: Any, tmp_path: Path) -> None:
    _, typed, pressed = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/form"}),
            on(r'textbox "Name"', "browser_type", text="Ada Lovelace"),
            tool_call("browser_press", {"key": "Enter"}),
        ],
        config(tmp_path),
    )
    assert typed["url"].endswith("/form")
    assert pressed["title"] == "Hello"
    assert 'heading "Hello, Ada Lovelace"' in pressed["snapshot"]
    assert "/hello?name=Ada+Lovelace" in site.seen


def test_a_page_that_needs_javascript(site: Any, tmp_path: Path) -> None:
    page, clicked, again = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/js"}),
            on(r'button "Count"', "browser_click"),
            on(r'button "Count"', "browser_click"),
        ],
        config(tmp_path),
    )
    assert 'heading "Rendered by JavaScript"' in page["snapshot"]
    assert "Clicked 1 times" in clicked["snapshot"]
    assert "Clicked 2 times" in again["snapshot"]


def test_scroll(site: Any, tmp_path: Path) -> None:
    top, down, up = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/long"}),
            tool_call("browser_scroll", {"direction": "down", "amount": 2}),
            tool_call("browser_scroll", {"direction": "up", "amount": 5}),
        ],
        config(tmp_path),
    )
    assert (top["title"], down["title"], up["title"]) == ("top", "scrolled", "top")


def test_images_and_a_screenshot_the_model_is_shown(site: Any, tmp_path: Path) -> None:
    model = ScriptedModel(
        tool_call("browser_navigate", {"url": site.url + "/"}),
        tool_call("browser_get_images"),
        tool_call("browser_screenshot", {"full_page": True}),
        text("done"),
    )
    with make_agent(model=model, plugins=PLUGINS, config=config(tmp_path)) as agent:
        agent.chat("look")
        results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    images, shot = json.loads(results[1]), json.loads(results[2])
    assert images["count"] == 1
    [image] = images["images"]
    assert image["src"] == site.url + "/pixel.png" and image["alt"] == "a red pixel"
    path = Path(shot["path"])
    assert path.parent == tmp_path / "screenshots"
    assert path.read_bytes().startswith(b"\x89PNG") and shot["bytes"] > 100
    # the model sees the screenshot itself, in a message after the tool result
    last = model.requests[-1].messages
    assert last[-2]["role"] == "tool" and last[-1]["role"] == "user"
    label, picture = last[-1]["content"]
    assert label["text"] == "The images returned by browser_screenshot (call_3):"
    assert picture["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_downloads_land_in_the_workspace(site: Any, tmp_path: Path) -> None:
    _, clicked = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/download"}),
            on(r'link "Get the report"', "browser_click"),
        ],
        config(tmp_path),
    )
    target = tmp_path / "downloads" / "report.csv"
    if "downloads" not in clicked:  # the download finished after the snapshot was taken
        deadline = time.monotonic() + 5
        while not target.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        assert clicked["downloads"] == [str(target)]
    assert target.read_text() == "month,total\njune,42\n"


def test_a_page_that_hangs_times_out(site: Any, tmp_path: Path) -> None:
    started = time.monotonic()
    [result] = run(
        [tool_call("browser_navigate", {"url": site.url + "/slow"})], config(tmp_path, timeout=1)
    )
    assert isinstance(result, str)
    assert result.startswith("Error: navigating to") and "timed out after 1s" in result
    assert time.monotonic() - started < 6


def test_private_and_metadata_addresses_are_refused(site: Any, tmp_path: Path) -> None:
    a_file, meta, local, leaky = run(
        [
            tool_call("browser_navigate", {"url": "file:///etc/passwd"}),
            tool_call("browser_navigate", {"url": "http://169.254.169.254/latest/meta-data/"}),
            tool_call("browser_navigate", {"url": f"http://127.0.0.2:{site.server_address[1]}/"}),
            tool_call("browser_navigate", {"url": site.url + "/leaky"}),
        ],
        config(tmp_path),
    )
    assert a_file.startswith("Error: only http and https URLs can be fetched, not file:")
    assert meta.startswith("Error: refused 169.254.169.254: a cloud metadata address")
    assert local.startswith("Error: refused 127.0.0.2: a loopback address")
    # the page loads; its requests to refused addresses are blocked and reported
    assert leaky["title"] == "Leaky"
    blocked = " ".join(leaky["blocked_requests"])
    assert "169.254.169.254" in blocked and "127.0.0.2" in blocked
    # and without web.allow_private the test site itself is refused
    [refused] = run(
        [tool_call("browser_navigate", {"url": site.url + "/"})],
        {"file": {"workspace": str(tmp_path)}},
    )
    assert refused.startswith("Error: refused 127.0.0.1: a loopback address")


def test_each_session_has_its_own_context_closed_with_the_session(
    site: Any, tmp_path: Path
) -> None:
    cfg = config(tmp_path)
    model = ScriptedModel(
        tool_call("browser_navigate", {"url": site.url + "/setcookie"}),
        tool_call("browser_navigate", {"url": site.url + "/showcookie"}),
        text("done"),
    )
    first = make_agent(model=model, plugins=PLUGINS, config=cfg)
    first.chat("set a cookie")
    shown_first = json.loads([m for m in first.messages if m["role"] == "tool"][-1]["content"])
    assert "visited=yes" in shown_first["snapshot"]
    assert first.session_id in MANAGER.session_keys
    [shown_second] = run([tool_call("browser_navigate", {"url": site.url + "/showcookie"})], cfg)
    assert "no cookie" in shown_second["snapshot"]  # another session: another context
    first.close()
    assert first.session_id not in MANAGER.session_keys


def test_browser_close_and_reopen(site: Any, tmp_path: Path) -> None:
    _, closed, again, reopened = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/"}),
            tool_call("browser_close"),
            tool_call("browser_close"),
            tool_call("browser_snapshot"),
        ],
        config(tmp_path),
    )
    assert (closed, again) == ("closed the browser", "the browser was not open")
    assert reopened["url"] == "about:blank"


def test_a_bad_ref_is_explained(site: Any, tmp_path: Path) -> None:
    _, result = run(
        [
            tool_call("browser_navigate", {"url": site.url + "/"}),
            tool_call("browser_click", {"ref": "e999"}),
        ],
        config(tmp_path),
    )
    assert result.startswith("Error: no element [ref=e999] on the page")


def _chromium_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


SCRIPT = """
import json, sys
from hermes_core.testing import make_agent, tool_call, text
cfg = {{"web": {{"allow_private": ["127.0.0.1"]}}, "browser": {{"args": ["--{marker}"]}}}}
agent = make_agent(tool_call("browser_navigate", {{"url": "{url}/"}}), text("ok"),
                   plugins=["browser", "web"], config=cfg)
agent.chat("go")
print("NAVIGATED", flush=True)
if sys.argv[1] == "hang":
    import time
    time.sleep(60)
# exit without closing the agent: hermes' exit closes the browser
"""


def _run_and_check(site: Any, how: str) -> None:
    marker = f"hermes-test-{uuid.uuid4().hex}"
    script = textwrap.dedent(SCRIPT.format(marker=marker, url=site.url))
    process = subprocess.Popen(
        [sys.executable, "-c", script, how], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "NAVIGATED"
        assert _chromium_with(marker), "the browser should be running"
        if how == "hang":
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    deadline = time.monotonic() + 10
    while _chromium_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _chromium_with(marker) == [], "Chromium outlived hermes"


def test_the_browser_closes_when_hermes_exits(site: Any) -> None:
    _run_and_check(site, "exit")


def test_the_browser_dies_with_a_killed_hermes(site: Any) -> None:
    _run_and_check(site, "hang")
