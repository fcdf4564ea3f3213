"""Every Mermaid diagram of the docs renders: each ```mermaid block of docs/ is given to the Mermaid
library (installed from the npm registry by ``scripts/mermaid_env.py``) in a headless Chromium,
which must draw it as SVG without a parse error. Skipped with the reason where Chromium or the
library cannot be had; under CI (which installs both) a failure instead."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mermaid_env
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```mermaid\s*$\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)

RENDER = """async ([id, text]) => {
    try {
        const { svg } = await window.mermaid.render(id, text);
        return { svg };
    } catch (error) {
        document.getElementById("d" + id)?.remove();
        return { error: String((error && error.message) || error) };
    }
}"""
"""Render one diagram; what Mermaid raised (a parse error) instead of the SVG when it fails."""


def diagrams() -> list[tuple[str, str]]:
    """``(page:line, source)`` of every ```mermaid block under docs/."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI installs it (.ci/run), yet: {reason}")
    pytest.skip(reason)


def _mermaid_bundle() -> Path:
    try:
        return Path(mermaid_env.ensure())
    except mermaid_env.InstallError as exc:
        _unavailable(f"the Mermaid library could not be installed: {exc}")
        raise


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    """A headless Chromium page with the Mermaid library loaded and initialised."""
    bundle = _mermaid_bundle()
    from hermes_toolset_browser.manager import find_chromium, unavailable

    reason = unavailable({})
    if reason:
        _unavailable(reason)
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=find_chromium({}), args=args, headless=True, timeout=60_000
        )
        try:
            tab = browser.new_page()
            tab.set_content("<!doctype html><html><body></body></html>")
            tab.add_script_tag(path=str(bundle))
            tab.evaluate("() => window.mermaid.initialize({ startOnLoad: false })")
            yield tab
        finally:
            browser.close()


def render(page: Any, source: str, number: int) -> dict[str, str]:
    """``{"svg": ...}`` for a diagram Mermaid draws, ``{"error": ...}`` for one it refuses."""
    result: dict[str, str] = page.evaluate(RENDER, [f"diagram{number}", source])
    return result


def labels(source: str) -> set[str]:
    """The words a reader should see in a diagram: its quoted and bracketed labels, and in a
    sequence diagram the participants' names and the messages."""
    texts = re.findall(r'"([^"\n]*)"', source)
    texts += re.findall(r"\[([^\]\"\n]+)\]", source) + re.findall(r"\|([^|\"\n]+)\|", source)
    if source.lstrip().startswith("sequenceDiagram"):
        for line in source.splitlines():
            named = re.match(r"\s*(?:participant|actor)\s+(\S+)(?:\s+as\s+(.+))?", line)
            if named:
                texts.append(named.group(2) or named.group(1))
            elif ":" in line:
                texts.append(line.split(":", 1)[1])
    return {word for text in texts for word in re.findall(r"[A-Za-z_]{4,}", text)}


DIAGRAMS = diagrams()


def test_the_pages_that_should_have_diagrams_have_them() -> None:
    pages = [where.split(":")[0] for where, _ in DIAGRAMS]
    assert pages.count("docs/architecture.md") >= 2, "one turn and the rooms"
    assert pages.count("docs/plugins.md") >= 1, "plugin discovery"


@pytest.mark.parametrize(("where", "source"), DIAGRAMS, ids=[w for w, _ in DIAGRAMS])
def test_each_diagram_renders_to_svg(page: Any, where: str, source: str) -> None:
    result = render(page, source, DIAGRAMS.index((where, source)))
    assert "error" not in result, f"{where}: {result.get('error')}"
    svg = result["svg"]
    assert svg.startswith("<svg") and "Syntax error" not in svg, where
    shown = page.evaluate(
        "svg => { const d = document.createElement('div'); d.innerHTML = svg;"
        " return d.textContent; }",
        svg,
    )
    missing = {word for word in labels(source) if word not in shown}
    assert not missing, f"{where}: not drawn: {sorted(missing)}"


@pytest.mark.parametrize(
    "broken",
    [
        "sequenceDiagram\n    participant A\n    A->>: a message to no one\n",
        "flowchart LR\n    A[host --> B\n",
        "sequencediagrm\n    A->>B: hi\n",
    ],
)
def test_a_broken_diagram_is_reported_not_drawn(page: Any, broken: str) -> None:
    result = render(page, broken, 9000 + len(broken))
    assert "svg" not in result
    assert result["error"].strip()
