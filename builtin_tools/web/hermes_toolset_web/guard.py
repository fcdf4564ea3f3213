"""What the web tools may connect to, checked where the connection is made.

The web tools run inside hermes, not in the command sandbox, so they guard themselves: only
``http`` and ``https`` URLs; no loopback, private, link-local, shared, multicast, reserved or
cloud-metadata address, whether it is written in the URL, returned by DNS or reached through a
redirect, unless ``web.allow_private`` lists it. The check sits in the network backend that
opens every TCP connection (``hermes_toolset_web.network.GuardedNetwork``): a host name is
resolved once, every address it resolves to is checked, and the connection goes to the address
that was checked, so a DNS answer that changes between the check and the connection (rebinding)
cannot slip through.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, parse_qsl, quote, urlencode, urlsplit, urlunsplit

from hermes_hookspecs import ToolError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_SCHEMES = ("http", "https")

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS DNS resolver
        "100.100.100.200",  # Alibaba Cloud
        "fd00:ec2::254",  # AWS over IPv6
    )
)
"""Addresses of cloud metadata services, where a machine's credentials are served."""

METADATA_HOSTS: frozenset[str] = frozenset(
    {"metadata.google.internal", "metadata", "metadata.azure.com", "instance-data"}
)
"""Host names of cloud metadata services, refused before they are even resolved."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")

Resolver = Callable[[str, int], Sequence[str]]


class WebRefused(ToolError):
    """A URL or an address the web tools will not fetch; the message says why, in one line."""


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6), in the resolver's order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve host {host!r}: {exc.strerror or exc}") from None
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address, else ``ip`` itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:
            return ip.sixtofour
    return ip


def address_problem(ip: IPAddress) -> str | None:
    """Why the web tools refuse ``ip`` (``"a loopback address"``...), or ``None`` for a public
    address."""
    inner = _embedded_ipv4(ip)
    for candidate in dict.fromkeys((inner, ip)):
        if candidate in METADATA_ADDRESSES:
            return "a cloud metadata address"
        if candidate.is_loopback:
            return "a loopback address"
        if candidate.is_link_local:
            return "a link-local address"
        if candidate.is_unspecified:
            return "an unspecified address"
        if candidate.is_multicast:
            return "a multicast address"
        if candidate in _SHARED:
            return "a shared (carrier-grade NAT) address"
        if candidate.is_private:
            return "a private address"
        if candidate.is_reserved or not candidate.is_global:
            return "a reserved address"
    return None


@dataclass(frozen=True)
class AllowList:
    """The exceptions of ``web.allow_private``: addresses, networks (CIDR) and host names.

    A host name entry allows whatever that name resolves to; an address or network entry allows
    those addresses whatever name led to them.
    """

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, entries: Iterable[Any] | None) -> AllowList:
        """Read ``web.allow_private``; an entry that is not a string is an error."""
        networks: list[IPNetwork] = []
        hosts: set[str] = set()
        for entry in entries or ():
            if not isinstance(entry, str) or not entry.strip():
                raise ToolError(f"web.allow_private: {entry!r} is not an address or host name")
            text = entry.strip().lower().strip("[]")
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                hosts.add(text.rstrip("."))
        return cls(tuple(networks), frozenset(hosts))

    def allows(self, host: str, ip: IPAddress) -> bool:
        """Whether the person listed ``host`` or an address range holding ``ip``."""
        if host.lower().rstrip(".") in self.hosts:
            return True
        return any(ip.version == net.version and ip in net for net in self.networks)


def check_url(url: str) -> SplitResult:
    """Parse ``url`` and refuse what is not an ``http(s)`` URL with a host.

    :raises WebRefused: the scheme is not http(s), there is no host, or the host is a cloud
        metadata name.
    """
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise WebRefused(f"not a valid URL: {redact_url(url)} ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        shown = f"{scheme}:" if scheme else "no scheme"
        raise WebRefused(f"only http and https URLs can be fetched, not {shown}: {redact_url(url)}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise WebRefused(f"the URL has no host: {redact_url(url)}")
    if host in METADATA_HOSTS:
        raise WebRefused(f"refused {host}: a cloud metadata service")
    return parts


def checked_addresses(
    host: str, port: int, allow: AllowList, resolver: Resolver = resolve
) -> list[str]:
    """The addresses of ``host`` the web tools may connect to.

    Every address the name resolves to must be public or allowed: one refused address refuses
    the host (a name that answers with a private address among public ones is not trusted).

    :raises WebRefused: the host is, or resolves to, a refused address.
    """
    host = host.strip("[]")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is None and host.lower().rstrip(".") in METADATA_HOSTS:
        raise WebRefused(f"refused {host}: a cloud metadata service")
    addresses = [host] if literal is not None else list(resolver(host, port))
    if not addresses:
        raise ToolError(f"cannot resolve host {host!r}: no address")
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%")[0])
        problem = address_problem(ip)
        if problem and not allow.allows(host, ip):
            via = "" if literal is not None else f" (it resolves to {ip})"
            raise WebRefused(
                f"refused {host}{via}: {problem}; list it in web.allow_private to allow it"
            )
    return addresses


_SECRET_PARAM = re.compile(
    r"(key|token|secret|passw|pwd|sig|signature|auth|credential|session|jwt|code)", re.I
)


def redact_url(url: str) -> str:
    """``url`` fit for the model and the logs: user name and password removed, the values of
    query parameters that look like credentials (``api_key``, ``token``, ``sig``...) masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an invalid URL)"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(name) for name, _ in pairs):
            query = urlencode(
                [(n, "***" if _SECRET_PARAM.search(n) else v) for n, v in pairs],
                quote_via=quote,
                safe="*",
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
