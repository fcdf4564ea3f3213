"""Turning a fetched body into text for the model: readable markdown from HTML (main content
through trafilatura), the text of a PDF (pypdf), plain text as it is."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from html import unescape

from hermes_hookspecs import ToolError

from .fetch import Fetched

TEXT_TYPES = (
    "text/plain",
    "text/markdown",
    "text/x-markdown",
    "text/csv",
    "application/json",
    "application/ld+json",
    "application/xml",
    "text/xml",
    "application/rss+xml",
    "application/atom+xml",
)
HTML_TYPES = ("text/html", "application/xhtml+xml")
PDF_TYPES = ("application/pdf", "application/x-pdf")

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
_TITLE = re.compile(r"<title[^>]*>([^<]{1,2000})</title\s*>", re.I)
_OG_TITLE = re.compile(
    r"""<meta[^>]+property\s*=\s*["']og:title["'][^>]+content\s*=\s*["']([^"']{1,2000})""", re.I
)


@dataclass
class Page:
    """What ``web_extract`` returns for one URL.

    :param title: the page's title, ``""`` when it has none.
    :param content: markdown (HTML), the text (PDF) or the body as it is (plain text).
    :param kind: ``html``, ``pdf`` or ``text``.
    """

    title: str
    content: str
    kind: str


def _known(charset: str | None) -> str | None:
    if not charset:
        return None
    try:
        return codecs.lookup(charset.strip().strip("\"'")).name
    except LookupError:
        return None


def decode(fetched: Fetched) -> str:
    """The body as text: the ``Content-Type`` charset, else a ``<meta charset>`` or XML
    declaration in the first 4 KB, else UTF-8, else Windows-1252 (what browsers assume)."""
    head = fetched.body[:4096]
    charset = _known(fetched.charset)
    if charset is None and fetched.body.startswith(codecs.BOM_UTF8):
        charset = "utf-8-sig"
    if charset is None:
        found = _META_CHARSET.search(head) or _XML_ENCODING.search(head)
        charset = _known(found.group(1).decode("ascii")) if found else None
    if charset is None:
        try:
            return fetched.body.decode("utf-8")
        except UnicodeDecodeError:
            charset = "cp1252"
    return fetched.body.decode(charset, errors="replace")


def sniff(fetched: Fetched) -> str:
    """``html``, ``pdf`` or ``text`` from the media type, else from the first bytes."""
    media = fetched.content_type
    if media in HTML_TYPES:
        return "html"
    if media in PDF_TYPES or fetched.body.startswith(b"%PDF-"):
        return "pdf"
    if media in TEXT_TYPES or media.startswith("text/") or media.endswith(("+json", "+xml")):
        return "text"
    start = fetched.body[:512].lstrip().lower()
    if not media or media == "application/octet-stream":
        if start.startswith((b"<!doctype html", b"<html")):
            return "html"
        if b"\x00" not in fetched.body[:4096]:
            return "text"
    raise ToolError(
        f"{fetched.final_url} is {media or 'binary data'}, not a web page, PDF or text;"
        " web_extract reads only those"
    )


def html_to_markdown(html: str, url: str) -> Page:
    """The main content of ``html`` as markdown, links and tables kept; the whole page's text
    when no main content stands out (a short page, a list of links)."""
    import trafilatura

    # the <title> (or og:title) by a bounded search: trafilatura's own metadata pass costs as
    # much as the extraction on a large page
    head = html[:200_000]
    found = _TITLE.search(head) or _OG_TITLE.search(head)
    title = " ".join(unescape(found.group(1)).split()) if found else ""
    content = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_images=False,
        include_comments=False,
        favor_recall=True,
        with_metadata=False,
    )
    if not content:
        content = trafilatura.html2txt(html) or ""
    return Page(title=title, content=content.strip(), kind="html")


def pdf_to_text(fetched: Fetched) -> Page:
    """The text of every page of a PDF, pages separated by a rule."""
    import io

    if fetched.truncated:
        raise ToolError(
            f"the PDF at {fetched.final_url} is larger than web.max_bytes"
            f" ({len(fetched.body)} bytes); raise the limit to read it"
        )
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(fetched.body))
        if reader.is_encrypted:
            raise ToolError(f"the PDF at {fetched.final_url} is encrypted")
        texts = [(page.extract_text() or "").strip() for page in reader.pages]
        title = ""
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title)
    except PdfReadError as exc:
        raise ToolError(f"cannot read the PDF at {fetched.final_url}: {exc}") from None
    content = "\n\n---\n\n".join(text for text in texts if text)
    if not content:
        content = "(the PDF has no text layer: it is scanned images)"
    return Page(title=title, content=content, kind="pdf")


def extract(fetched: Fetched) -> Page:
    """The readable text of a fetched body, by its kind.

    :raises ToolError: the body is neither HTML, a PDF nor text.
    """
    kind = sniff(fetched)
    if kind == "pdf":
        return pdf_to_text(fetched)
    text = decode(fetched)
    if kind == "html":
        return html_to_markdown(text, fetched.final_url)
    return Page(title="", content=text.strip(), kind="text")
