"""The deployment's rule on where a webhook may be sent (no server-side request forgery).

A tenant admin names the URL; the deployment decides which addresses are reachable. Refused
unless ``allow_private`` (the server setting ``LETHE_WEBHOOK_ALLOW_PRIVATE``): every address
that is not globally routable (loopback, RFC 1918 and other private ranges, link-local, which
holds the cloud metadata services at 169.254.169.254 and fd00:ec2::254, unique-local, shared
CGNAT space, multicast, unspecified, reserved), IPv4 embedded in IPv6 judged as the IPv4 it
carries, and the metadata names themselves. The check runs on the addresses the name
resolves to at connect time, and the connection goes to the address that was checked (the
sender connects by IP), so a DNS answer that changes between the check and the connection
cannot move it; redirects are never followed (the sender's business).

Exceptions: ``DestinationRefused`` when the URL or every address it resolves to is refused.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from lethe.vault.errors import DestinationRefused

Resolver = Callable[[str, int], Sequence[str]]  # host, port -> IP addresses as text
METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"}
)
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class Target:
    """Where one attempt connects: the checked address, and the name for Host and SNI."""

    scheme: str
    host: str
    port: int
    address: str
    path: str  # path and query, as given


def refused(address: Address) -> bool:
    """Whether the rule refuses ``address`` when private destinations are not allowed."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            return refused(embedded)
    return not address.is_global or address.is_multicast


@dataclass(frozen=True)
class DestinationRule:
    """The deployment's rule; ``resolver`` is injectable so tests can change DNS answers."""

    allow_private: bool = False
    resolver: Resolver = system_resolver

    def check_url(self, url: str) -> tuple[str, str, int, str]:
        """The URL's scheme, host, port and path; refused if it is not http(s) with a host, or
        names a refused address or metadata name literally (said at subscription, before DNS)."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise DestinationRefused("the webhook URL is not a valid URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DestinationRefused("a webhook URL is http or https with a host")
        if parts.username or parts.password:
            raise DestinationRefused("a webhook URL carries no credentials")
        host = parts.hostname.rstrip(".").lower()
        if not self.allow_private:
            if host in METADATA_NAMES or host == "localhost" or host.endswith(".localhost"):
                raise DestinationRefused(_REFUSED)
            literal = _literal(host)
            if literal is not None and refused(literal):
                raise DestinationRefused(_REFUSED)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path

    def target(self, url: str) -> Target:
        """Resolve the URL's host now and pick the address to connect to; refused if any
        address it resolves to is refused (a name must not point partly inside)."""
        scheme, host, port, path = self.check_url(url)
        literal = _literal(host)
        try:
            answers = [host] if literal is not None else list(self.resolver(host, port))
        except OSError:
            raise DestinationRefused("the webhook host does not resolve") from None
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in answers]
        if not addresses:
            raise DestinationRefused("the webhook host does not resolve")
        if not self.allow_private and any(refused(a) for a in addresses):
            raise DestinationRefused(_REFUSED)
        return Target(scheme, host, port, str(addresses[0]), path)


_REFUSED = (
    "the webhook destination is a loopback, private, link-local or metadata address, which this "
    "deployment refuses (LETHE_WEBHOOK_ALLOW_PRIVATE)"
)


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
