"""Where the browser tools can run, and what `hermes tools list` says where they cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_toolset_browser.manager import find_chromium, unavailable


def test_debian_chromium_is_found_and_an_executable_can_be_named(tmp_path: Path) -> None:
    assert find_chromium({}) is not None
    assert unavailable({"browser": {"executable": str(tmp_path / "nothing")}}) == (
        f"browser.executable {str(tmp_path / 'nothing')!r} is not an executable"
    )


def test_tools_list_says_why_the_browser_is_unavailable(hermes_cli: Any, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        "browser:\n  executable: /nonexistent/chromium\n", encoding="utf-8"
    )
    listing = hermes_cli("tools", "list")
    assert listing.exit_code == 0, listing.stderr
    rows = [row for row in listing.output.splitlines() if " browser_" in row]
    assert len(rows) == 10
    assert all(
        "unavailable: browser.executable '/nonexistent/chromium' is not an executable" in row
        for row in rows
    )
