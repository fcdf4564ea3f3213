"""The web tools refuse what they must not fetch, before any connection is made."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from hermes_toolset_web import web_extract
from hermes_toolset_web.guard import AllowList, address_problem, check_url, redact_url

from hermes_hookspecs import ToolContext, ToolError


def extract(urls: list[str], allow: list[str] | None = None, **web: Any) -> list[dict[str, Any]]:
    config = {"web": {"allow_private": allow or [], **web}}
    return web_extract({"urls": urls}, ToolContext(task_id="t", config=config))["results"]


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "gopher://127.0.0.1:70/_x",
        "javascript:alert(1)",
        "data:text/html,hello",
        "//127.0.0.1/no-scheme",
        "http:///no-host",
    ],
)
def test_only_http_urls_with_a_host(url: str, connections: list[Any]) -> None:
    [result] = extract([url])
    assert "error" in result and "content" not in result
    assert connections == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:{port}/", "loopback"),
        ("http://127.8.9.10:{port}/", "loopback"),
        ("http://[::1]:{port}/", "loopback"),
        ("http://[::ffff:127.0.0.1]:{port}/", "loopback"),
        ("http://localhost:{port}/", "loopback"),
        ("http://0.0.0.0:{port}/", "unspecified"),
        ("http://10.1.2.3/", "private"),
        ("http://172.16.5.4/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://[fc00::1]/", "private"),
        ("http://169.254.10.10/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/", "metadata"),
        ("http://100.100.100.200/", "metadata"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://100.64.0.7/", "shared"),
        ("http://224.0.0.1/", "multicast"),
        ("http://2130706433:{port}/", "loopback"),  # 127.0.0.1 as one decimal number
    ],
)
def test_local_private_and_metadata_addresses_are_refused_before_connecting(
    url: str, why: str, site: Any, connections: list[Any]
) -> None:
    site.page("/", "<html><body>secret intranet page</body></html>")
    [result] = extract([url.format(port=site.port)])
    assert why in result["error"], result
    assert "web.allow_private" in result["error"] or "metadata" in result["error"]
    assert "content" not in result
    assert connections == []
    assert site.connections == 0


def test_a_name_that_resolves_to_a_private_address_is_refused(
    monkeypatch: pytest.MonkeyPatch, connections: list[Any]
) -> None:
    answers = {"intranet.test": ["93.184.215.14", "10.20.30.40"], "rebind.test": ["127.0.0.1"]}
    real = socket.getaddrinfo

    def fake(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    first, second = extract(["http://intranet.test/", "https://rebind.test/"])
    assert "resolves to 10.20.30.40" in first["error"] and "private" in first["error"]
    assert "resolves to 127.0.0.1" in second["error"] and "loopback" in second["error"]
    assert connections == []


def test_redirects_are_checked_hop_by_hop(site: Any, connections: list[Any]) -> None:
    site.page("/fine", "<html><body><p>fine</p></body></html>")
    to_metadata = site.redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
    to_other_loopback = site.redirect("/to-loopback", f"http://127.0.0.2:{site.port}/fine")
    to_file = site.redirect("/to-file", "file:///etc/passwd")
    to_fine = site.redirect("/to-fine", "/fine")
    results = extract([to_metadata, to_other_loopback, to_file, to_fine], allow=["127.0.0.1"])
    assert "metadata" in results[0]["error"]
    assert "127.0.0.2" in results[1]["error"] and "loopback" in results[1]["error"]
    assert "only http and https" in results[2]["error"]
    assert results[3]["final_url"] == site.url + "/fine" and "fine" in results[3]["content"]
    # every connection went to the one allowed address
    assert {address for address, _ in connections} == {"127.0.0.1"}


def test_a_redirect_loop_ends(site: Any) -> None:
    site.redirect("/a", "/b")
    site.redirect("/b", "/a")
    [result] = extract([site.url + "/a"], allow=["127.0.0.1"])
    assert "more than 5 redirects" in result["error"]


def test_allow_private_by_host_name_and_by_network(site: Any) -> None:
    site.page("/", "<html><body><p>the intranet page</p></body></html>")
    [by_name] = extract([f"http://localhost:{site.port}/"], allow=["localhost"])
    [by_net] = extract([f"http://127.0.0.1:{site.port}/"], allow=["127.0.0.0/8"])
    assert "the intranet page" in by_name["content"]
    assert "the intranet page" in by_net["content"]


def test_credentials_are_used_but_never_shown(site: Any) -> None:
    site.page("/private", "<html><body><p>members only</p></body></html>")
    site.redirect("/elsewhere", f"http://localhost:{site.port}/private")
    url = f"http://alice:hunter2-pass@127.0.0.1:{site.port}/private?api_key=sk-LEAKME123&page=2"
    [result] = extract([url], allow=["127.0.0.1", "localhost"])
    assert "members only" in result["content"]
    shown = repr(result)
    assert "hunter2-pass" not in shown and "sk-LEAKME123" not in shown and "alice" not in shown
    assert result["url"].startswith("http://***@127.0.0.1") and "page=2" in result["url"]
    assert site.seen[-1].headers["Authorization"].startswith("Basic ")
    # a redirect to another origin does not carry the credentials along
    [moved] = extract(
        [f"http://alice:hunter2-pass@127.0.0.1:{site.port}/elsewhere"],
        allow=["127.0.0.1", "localhost"],
    )
    assert "members only" in moved["content"]
    assert "Authorization" not in site.seen[-1].headers


def test_refusals_are_one_readable_line(connections: list[Any]) -> None:
    with pytest.raises(ToolError) as refused:
        check_url("ftp://user:pw@example.invalid/file")
    message = str(refused.value)
    assert "\n" not in message and "pw@" not in message and message.startswith("only http")


def test_redact_url() -> None:
    assert (
        redact_url("https://u:p@h.test/x?token=abc&q=1#f") == "https://***@h.test/x?token=***&q=1#f"
    )
    assert redact_url("https://h.test/?q=cats") == "https://h.test/?q=cats"


def test_public_addresses_pass_and_the_allow_list_reads_every_form() -> None:
    import ipaddress

    assert address_problem(ipaddress.ip_address("93.184.215.14")) is None
    assert address_problem(ipaddress.ip_address("2606:4700::1111")) is None
    assert address_problem(ipaddress.ip_address("64:ff9b::a00:1")) == "a private address"
    allow = AllowList.parse(["10.0.0.0/8", "Intranet.Example.", "[::1]"])
    assert allow.allows("x", ipaddress.ip_address("10.9.9.9"))
    assert allow.allows("intranet.example", ipaddress.ip_address("192.168.0.1"))
    assert allow.allows("y", ipaddress.ip_address("::1"))
    assert not allow.allows("y", ipaddress.ip_address("192.168.0.1"))
    with pytest.raises(ToolError):
        AllowList.parse([42])
