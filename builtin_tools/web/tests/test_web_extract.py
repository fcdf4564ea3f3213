"""web_extract against pages served on 127.0.0.1: main content as markdown, charsets, gzip,
PDFs, size caps, timeouts, errors, and long pages summarised by the auxiliary model."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest
from hermes_toolset_web import web_extract

from hermes_core.testing import make_agent, tool_call
from hermes_hookspecs import ToolContext

ARTICLE = """<!doctype html><html><head><title>Moths of the Alps</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a> | <a href="/login">Log in</a></nav>
<main><article>
<h1>Moths of the Alps</h1>
<p>The alpine moth flies at night between June and August, above 2000 metres, and feeds on
the nectar of gentians. Its wings span about four centimetres and are grey with white
bands, which hide it on lichen-covered rocks during the day.</p>
<h2>Where to see them</h2>
<p>Look for them on warm evenings near a light. See <a href="https://moths.example/guide">the
field guide</a> for the other species of the valley and their flight seasons.</p>
<table><tr><th>Species</th><th>Months</th></tr><tr><td>Alpine moth</td><td>6-8</td></tr></table>
</article></main>
<footer>Copyright 2026 Moth Society. Cookie settings. Privacy policy.</footer>
</body></html>"""


def extract(urls: list[str], ctx: ToolContext | None = None, **web: Any) -> list[dict[str, Any]]:
    config = {"web": {"allow_private": ["127.0.0.1"], **web}}
    context = ctx or ToolContext(task_id="t", config=config)
    return web_extract({"urls": urls}, context)["results"]


def test_an_article_becomes_markdown_without_the_boilerplate(site: Any) -> None:
    [page] = extract([site.page("/moths", ARTICLE)])
    assert page["title"] == "Moths of the Alps"
    content = page["content"]
    assert "feeds on\nthe nectar of gentians" in content or "nectar of gentians" in content
    assert "## Where to see them" in content
    assert "[the field guide](https://moths.example/guide)" in content.replace("\n", " ")
    assert "Alpine moth" in content and "|" in content  # the table, in markdown
    assert "Cookie settings" not in content and "Log in" not in content


CAFE = "Caf\u00e9 cr\u00e8me \u00e0 l'\u00e9t\u00e9"
HELLO_RU = "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440"
JAPANESE = "\u65e5\u672c\u8a9e\u306e\u30da\u30fc\u30b8"


@pytest.mark.parametrize(
    ("text", "encoding", "head", "content_type"),
    [
        (CAFE, "latin-1", "", "text/html; charset=ISO-8859-1"),
        (HELLO_RU, "cp1251", '<meta charset="windows-1251">', "text/html"),
        (
            JAPANESE,
            "shift_jis",
            '<meta http-equiv="Content-Type" content="text/html; charset=shift_jis">',
            "text/html",
        ),
        (CAFE, "cp1252", "", "text/html"),  # no charset anywhere, not UTF-8
    ],
    ids=["header-latin1", "meta-cp1251", "meta-http-equiv-shift-jis", "guessed-cp1252"],
)
def test_charsets_from_the_header_or_the_page(
    site: Any, text: str, encoding: str, head: str, content_type: str
) -> None:
    body = f"<html><head>{head}</head><body><p>{text}</p></body></html>".encode(encoding)
    [page] = extract([site.page("/p", body, content_type=content_type)])
    assert text in page["content"]


def test_gzip_bodies_are_decoded(site: Any) -> None:
    body = gzip.compress(ARTICLE.encode("utf-8"))
    url = site.page("/gz", body, headers={"Content-Encoding": "gzip"})
    [page] = extract([url])
    assert "nectar of gentians" in page["content"]
    assert "gzip" in site.seen[-1].headers["Accept-Encoding"]


def _pdf(lines: list[str]) -> bytes:
    """A minimal one-page PDF with a text layer."""
    text = " ".join(f"({line}) Tj 0 -20 Td" for line in lines)
    stream = f"BT /F1 14 Tf 72 720 Td {text} ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_a_pdf_becomes_its_text(site: Any) -> None:
    url = site.page(
        "/paper.pdf",
        _pdf(["Quarterly report", "Revenue grew 12 percent"]),
        content_type="application/pdf",
    )
    [page] = extract([url])
    assert "Quarterly report" in page["content"] and "Revenue grew 12 percent" in page["content"]


def test_plain_text_and_json_are_returned_as_they_are(site: Any) -> None:
    text_url = site.page("/notes.txt", "line one\nline two\n", content_type="text/plain")
    json_url = site.page("/data", json.dumps({"a": 1}), content_type="application/json")
    first, second = extract([text_url, json_url])
    assert first["content"] == "line one\nline two"
    assert json.loads(second["content"]) == {"a": 1}


def test_binary_content_is_refused_in_one_line(site: Any) -> None:
    url = site.page("/cat.png", b"\x89PNG\r\n\x1a\n" + bytes(64), content_type="image/png")
    [page] = extract([url])
    assert "image/png" in page["error"] and "\n" not in page["error"]


def test_the_size_cap_stops_reading(site: Any) -> None:
    big = "<html><body>" + "<p>" + "word " * 200 + "</p>" * 1 + ("<p>filler</p>" * 100_000)
    url = site.page("/big", big + "</body></html>")
    [page] = extract([url], max_bytes=64 * 1024)
    assert "64 KB" in page["body_truncated"] or "65536" in page["body_truncated"]
    assert "word word" in page["content"]


def test_a_page_that_hangs_times_out(site: Any) -> None:
    def hang(handler: Any) -> None:
        time.sleep(3)
        handler.send_response(200)
        handler.end_headers()

    site.routes["/slow"] = hang
    started = time.monotonic()
    [page] = extract([site.url + "/slow"], timeout=0.5)
    assert "timed out" in page["error"] and time.monotonic() - started < 2.5


def test_a_failed_url_does_not_spoil_the_others(site: Any) -> None:
    good = site.page("/moths", ARTICLE)
    missing, found = extract([site.url + "/nowhere", good])
    assert missing["error"] == f"{site.url}/nowhere answered HTTP 404 Not Found"
    assert "nectar" in found["content"]


def test_long_pages_are_cut_with_a_note_without_an_auxiliary_model(site: Any) -> None:
    paragraphs = "".join(f"<p>Paragraph {i} about moths and their habits.</p>" for i in range(3000))
    url = site.page("/long", f"<html><body><article>{paragraphs}</article></body></html>")
    [page] = extract([url], max_chars=5000, summarize_over=4000)
    assert len(page["content"]) == 5000
    assert "auxiliary.web_extract" in page["truncated"]


def test_long_pages_are_summarised_by_the_auxiliary_model(
    site: Any, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUSTOM_API_KEY", "test-key-0000")
    paragraphs = "".join(f"<p>Paragraph {i} about moths and their habits.</p>" for i in range(3000))
    url = site.page("/long", f"<html><body><article>{paragraphs}</article></body></html>")
    fake_llm.add("SUMMARY: three thousand paragraphs about moths.")
    config = {
        "web": {"allow_private": ["127.0.0.1"], "summarize_over": 4000},
        "auxiliary": {
            "web_extract": {
                "provider": "custom",
                "model": "small",
                "base_url": fake_llm.openai_base_url,
            }
        },
    }
    agent = make_agent(
        tool_call("web_extract", {"urls": [url]}),
        "Done.",
        plugins=["web", "openai"],
        config=config,
    )
    with agent:
        agent.chat("Read it")
    result = json.loads([m for m in agent.messages if m["role"] == "tool"][0]["content"])
    [page] = result["results"]
    assert page["content"] == "SUMMARY: three thousand paragraphs about moths."
    assert "summary of" in page["summarized"]
    [request] = fake_llm.requests
    assert request.model == "small" and not request.json.get("tools")
    assert "Paragraph 2999 about moths" in json.dumps(request.json)


def test_the_model_calls_web_extract_through_the_agent(site: Any) -> None:
    url = site.page("/moths", ARTICLE)
    agent = make_agent(
        tool_call("web_extract", {"urls": [url]}),
        "Alpine moths fly in summer.",
        plugins=["web"],
        config={"web": {"allow_private": ["127.0.0.1"]}},
    )
    with agent:
        assert agent.chat("When do alpine moths fly?") == "Alpine moths fly in summer."
    tool_message = [m for m in agent.messages if m["role"] == "tool"][0]
    assert "between June and August" in tool_message["content"]
    assert "web_extract" in agent.client.requests[0].tool_names
