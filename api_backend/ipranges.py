"""Excluded-IP patterns: a single address, a CIDR block or an ``a-b`` range, IPv4 or IPv6.

``parse_ip_pattern`` validates one entry (site configuration uses it to refuse junk with a reason);
``IPMatcher`` answers "is this address excluded?" for ingestion.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["IPMatcher", "IPPatternError", "IPSpan", "parse_ip_pattern"]


class IPPatternError(ValueError):
    """An excluded-IP entry that is not an address, a CIDR block or a range."""


@dataclass(frozen=True)
class IPSpan:
    """An inclusive range of addresses of one IP version."""

    version: int
    first: int
    last: int

    def __contains__(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return address.version == self.version and self.first <= int(address) <= self.last


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise IPPatternError(f"{text.strip()!r} is not an IPv4 or IPv6 address") from None


def parse_ip_pattern(pattern: str) -> IPSpan:
    """Parse one excluded-IP entry into the span of addresses it covers."""
    text = pattern.strip()
    if not text:
        raise IPPatternError("is empty")
    if "/" in text:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise IPPatternError(f"{text!r} is not valid CIDR notation") from None
        return IPSpan(network.version, int(network.network_address), int(network.broadcast_address))
    if "-" in text:
        start_text, _, end_text = text.partition("-")
        start, end = _address(start_text), _address(end_text)
        if start.version != end.version:
            raise IPPatternError(f"{text!r} mixes IPv4 and IPv6")
        if int(start) > int(end):
            raise IPPatternError(f"{text!r} starts after it ends")
        return IPSpan(start.version, int(start), int(end))
    address = _address(text)
    return IPSpan(address.version, int(address), int(address))


class IPMatcher:
    """Tests addresses against a list of patterns (entries that do not parse never match)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        spans = []
        for pattern in patterns:
            try:
                spans.append(parse_ip_pattern(pattern))
            except IPPatternError:
                continue
        self._spans = tuple(spans)

    def __bool__(self) -> bool:
        return bool(self._spans)

    def matches(self, ip: str | None) -> bool:
        """True when ``ip`` falls in any pattern; an unparsable or missing address matches nothing."""
        if not ip or not self._spans:
            return False
        try:
            address = ipaddress.ip_address(ip.strip())
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        return any(address in span for span in self._spans)
