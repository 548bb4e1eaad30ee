"""Channel classification at ingest (peer-read section 4.1 rules, with domains matched on label boundaries).

``classify_channel(referrer, utm, hostname)`` returns one of ``CHANNELS``. Two deliberate departures from the
peer, both because its substring matching misfiles real traffic:

- Domains match whole labels: ``t.co`` matches ``t.co`` and ``www.t.co`` but not ``microsoft.com``; an entry
  ending in a dot (``google.``) matches that label anywhere before the last one (``www.google.co.uk``).
  App ids (``com.facebook``) match themselves and their dotted children (``com.facebook.katana``).
- Paid-medium words match whole words of ``utm_medium`` (split on ``-``, ``_``, spaces, dots...), so
  ``broadcast`` is not paid because it contains ``ad``, while ``paid-social`` and ``ads`` are.

Direct traffic is returned as ``""`` (the empty string), the value the API reports for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import urlsplit

from api_backend.ingest.channel_lists import (
    APP_IDS,
    DOMAINS,
    MEDIUMS,
    PAID_MEDIUM_TOKENS,
    PAID_SOURCES,
    SOURCES,
)

__all__ = ["CHANNELS", "DIRECT", "classify_channel", "referring_domain", "source_type", "strip_www"]

DIRECT = ""

CHANNELS: tuple[str, ...] = (
    "Direct",
    "Internal",
    "Cross-Network",
    "Paid AI",
    "Paid Search",
    "Paid Social",
    "Paid Video",
    "Paid Shopping",
    "Display",
    "Paid Influencer",
    "Paid Audio",
    "Paid Unknown",
    "AI",
    "Organic Search",
    "Organic Social",
    "Organic Video",
    "Organic Shopping",
    "Email",
    "SMS",
    "News",
    "Productivity",
    "Affiliate",
    "Referral",
    "Audio",
    "Push",
    "Influencer",
    "Content",
    "Event",
    "Unknown",
)

_APP_ID = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
_WORDS = re.compile(r"[^a-z0-9]+")
_NO_REFERRER = "$direct"

_APP_CATEGORY_CHANNEL = {
    "social": "Organic Social",
    "video": "Organic Video",
    "ai": "AI",
    "search": "Organic Search",
    "email": "Email",
    "shopping": "Organic Shopping",
    "news": "News",
    "productivity": "Productivity",
}
_PAID_BY_SOURCE = {
    "ai": "Paid AI",
    "search": "Paid Search",
    "social": "Paid Social",
    "video": "Paid Video",
    "shopping": "Paid Shopping",
}
_PAID_BY_MEDIUM = {
    "ai": "Paid AI",
    "social": "Paid Social",
    "video": "Paid Video",
    "display": "Display",
    "cpm": "Display",
    "cpc": "Paid Search",
    "influencer": "Paid Influencer",
    "audio": "Paid Audio",
}
_ORGANIC_BY_SOURCE = {
    "ai": "AI",
    "search": "Organic Search",
    "social": "Organic Social",
    "video": "Organic Video",
    "shopping": "Organic Shopping",
    "email": "Email",
    "sms": "SMS",
    "news": "News",
    "productivity": "Productivity",
}
_ORGANIC_BY_MEDIUM = {
    "ai": "AI",
    "social": "Organic Social",
    "video": "Organic Video",
    "affiliate": "Affiliate",
    "referral": "Referral",
    "display": "Display",
    "audio": "Audio",
    "push": "Push",
    "influencer": "Influencer",
    "content": "Content",
    "event": "Event",
    "email": "Email",
}
_CAMPAIGN_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bai\b|chatgpt|claude|gemini|copilot|llm"), "AI"),
    (re.compile(r"video"), "Organic Video"),
    (re.compile(r"shop|shopping"), "Organic Shopping"),
    (re.compile(r"influencer|creator|sponsored"), "Influencer"),
    (re.compile(r"event|conference|webinar"), "Event"),
    (re.compile(r"social|facebook|twitter|instagram|linkedin"), "Organic Social"),
)


def _split_entries(entries: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """Split a domain list into whole-domain entries and label-prefix entries (``google.`` -> ``google``)."""
    suffixes = frozenset(e for e in entries if not e.endswith("."))
    prefixes = frozenset(e[:-1] for e in entries if e.endswith("."))
    return suffixes, prefixes


_DOMAIN_INDEX = {kind: _split_entries(entries) for kind, entries in DOMAINS.items()}
_SOURCE_SETS = {kind: frozenset(names) for kind, names in SOURCES.items()}
_MEDIUM_SETS = {kind: frozenset(names) for kind, names in MEDIUMS.items()}
_APP_SETS = {kind: frozenset(ids) for kind, ids in APP_IDS.items()}
_PAID_MEDIUMS = _MEDIUM_SETS["cpc"] | _MEDIUM_SETS["cpm"] | _MEDIUM_SETS["display"]


def strip_www(host: str) -> str:
    """``www.example.com`` -> ``example.com`` (lower-cased)."""
    host = host.lower()
    return host[4:] if host.startswith("www.") else host


def _domain_in(value: str, suffixes: frozenset[str], prefixes: frozenset[str]) -> bool:
    """Does ``value`` (a host, possibly with a path) match any entry on label boundaries?"""
    host, slash, path = value.partition("/")
    labels = host.split(".")
    count = len(labels)
    for start in range(count):
        tail = ".".join(labels[start:])
        if tail in suffixes or (slash and f"{tail}/{path}" in suffixes):
            return True
        # Entries with a path ("linkedin.com/learning") also match deeper paths below it.
        if slash and any(f"{tail}/{path}".startswith(s + "/") for s in suffixes if "/" in s):
            return True
        # A prefix entry is one or more labels that must be followed by at least one more label.
        for end in range(start + 1, count):
            if ".".join(labels[start:end]) in prefixes:
                return True
    return False


def _app_id_in(value: str, ids: frozenset[str]) -> bool:
    parts = value.split(".")
    return any(".".join(parts[:n]) in ids for n in range(2, len(parts) + 1))


@lru_cache(maxsize=8192)
def source_type(value: str) -> str:
    """Classify a lower-cased ``utm_source`` or referring domain: ai, search, social, ... or ``direct``."""
    if not value or value == _NO_REFERRER:
        return "direct"
    if "." in value and " " not in value:
        for kind, (suffixes, prefixes) in _DOMAIN_INDEX.items():
            if _domain_in(value, suffixes, prefixes):
                return kind
    for kind, names in _SOURCE_SETS.items():
        if value in names:
            return kind
    if _APP_ID.match(value) and any(value in ids for ids in _APP_SETS.values()):
        return "mobile-app"
    return "direct"


def _medium_type(medium: str) -> str:
    for kind, names in _MEDIUM_SETS.items():
        if medium in names:
            return kind
    return "organic"


def _is_paid(medium: str, source: str, utm: Mapping[str, str]) -> bool:
    if medium and (medium in _PAID_MEDIUMS or any(word in PAID_MEDIUM_TOKENS for word in _WORDS.split(medium))):
        return True
    if source and any(phrase in source for phrase in PAID_SOURCES):
        return True
    return bool(utm.get("gclid") or utm.get("gad_source"))


def referring_domain(referrer: str) -> str:
    """The lower-cased host of a referrer URL, or ``$direct`` when there is none or it does not parse."""
    if not referrer:
        return _NO_REFERRER
    try:
        host = urlsplit(referrer).hostname
    except ValueError:
        return _NO_REFERRER
    return host.lower() if host else _NO_REFERRER


def classify_channel(referrer: str, utm: Mapping[str, str], hostname: str) -> str:
    """The channel of one event.

    ``referrer`` is the referrer after self-referral clearing; ``utm`` maps lower-cased keys (``utm_source``,
    ``utm_medium``, ``utm_campaign``, ``gclid``, ``gad_source``...) to values; ``hostname`` is the page's host.
    Direct comes back as ``""``.
    """
    source = (utm.get("utm_source") or "").strip().lower()
    medium = (utm.get("utm_medium") or "").strip().lower()
    campaign = (utm.get("utm_campaign") or "").strip().lower()
    domain = referring_domain(referrer)
    site = strip_www(hostname or "")
    ref = strip_www(domain)
    self_referral = domain != _NO_REFERRER and bool(site) and (ref == site or ref.endswith("." + site))

    # 1. Traffic from a mobile app that put its id in utm_source.
    if source and _APP_ID.match(source):
        for kind, ids in _APP_SETS.items():
            if _app_id_in(source, ids):
                return _APP_CATEGORY_CHANNEL[kind]
    # 2. Nothing to go on.
    if domain == _NO_REFERRER and not (source or medium or campaign or utm.get("gclid") or utm.get("gad_source")):
        return "Internal" if self_referral else DIRECT
    # 3.
    if campaign == "cross-network":
        return "Cross-Network"
    # 4. A tagged "direct" source without a referrer.
    if domain == _NO_REFERRER and not medium and not campaign and source in ("", "direct", "(direct)"):
        return DIRECT
    kind = source_type(source or domain)
    medium_kind = _medium_type(medium)
    # 5. Paid.
    if _is_paid(medium, source, utm):
        if kind in _PAID_BY_SOURCE:
            return _PAID_BY_SOURCE[kind]
        return _PAID_BY_MEDIUM.get(medium_kind, "Paid Unknown")
    # 6, 7. Organic by source, then by medium.
    if kind in _ORGANIC_BY_SOURCE:
        return _ORGANIC_BY_SOURCE[kind]
    if medium_kind in _ORGANIC_BY_MEDIUM:
        return _ORGANIC_BY_MEDIUM[medium_kind]
    # 8. Campaign names.
    if campaign:
        for pattern, channel in _CAMPAIGN_RULES:
            if pattern.search(campaign):
                return channel
    # 9. A real referrer (or tags) from elsewhere.
    if not self_referral and (source or medium or campaign or domain != _NO_REFERRER):
        return "Referral"
    return "Unknown"
