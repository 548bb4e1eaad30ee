"""What ingestion needs to know about a site, cached in memory (a SQLite lookup per event is too slow).

Entries live for a few seconds (``ttl``) because admin commands may change the database from another
process; changes made through this process's API invalidate them at once through ``invalidate``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from api_backend.ipranges import IPMatcher
from api_backend.store.models import Site

__all__ = ["SiteRules", "SiteRulesCache"]

DEFAULT_TTL = 5.0
# An unknown id is remembered only briefly, so a site created elsewhere starts tracking almost at once.
NEGATIVE_TTL = 1.0


@dataclass(frozen=True)
class SiteRules:
    """A site's ingestion settings, ready for per-event checks."""

    site_id: int
    id: str
    organization_id: str
    block_bots: bool
    salt_user_ids: bool
    track_url_params: bool
    excluded_ips: IPMatcher
    excluded_countries: frozenset[str]
    tracking_config: dict[str, bool]

    @classmethod
    def from_site(cls, site: Site) -> SiteRules:
        """Build the rules from a metadata ``Site`` row."""
        return cls(
            site_id=site.site_id,
            id=site.id,
            organization_id=site.organization_id,
            block_bots=bool(site.block_bots),
            salt_user_ids=bool(site.salt_user_ids),
            track_url_params=bool(site.track_url_params),
            excluded_ips=IPMatcher(site.excluded_ips or []),
            excluded_countries=frozenset(str(c).strip().upper() for c in site.excluded_countries or []),
            tracking_config={
                "sessionReplay": bool(site.session_replay),
                "webVitals": bool(site.web_vitals),
                "trackErrors": bool(site.track_errors),
                "trackOutbound": bool(site.track_outbound),
                "trackUrlParams": bool(site.track_url_params),
                "trackInitialPageView": True,
                "trackSpaNavigation": True,
                "trackButtonClicks": False,
                "trackCopy": False,
                "trackFormInteractions": False,
            },
        )


class SiteRulesCache:
    """``site key -> SiteRules`` (by integer siteId or string id) with a short time to live."""

    def __init__(
        self,
        load: Callable[[str], Site | None],
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[str, tuple[SiteRules | None, float]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> SiteRules | None:
        """The rules of the site named by ``key``, or ``None`` when there is no such site."""
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and entry[1] > now:
            return entry[0]
        site = self._load(key)
        rules = SiteRules.from_site(site) if site is not None else None
        with self._lock:
            expires = now + (self._ttl if rules is not None else NEGATIVE_TTL)
            self._entries[key] = (rules, expires)
            if len(self._entries) > 100_000:  # bound memory against floods of made-up site ids
                self._entries = {k: v for k, v in self._entries.items() if v[1] > now}
        return rules

    def invalidate(self, site_id: int | None = None) -> None:
        """Forget one site (both of its keys), or everything."""
        with self._lock:
            if site_id is None:
                self._entries.clear()
                return
            stale = [k for k, (rules, _) in self._entries.items() if rules is None or rules.site_id == site_id]
            for key in stale:
                del self._entries[key]
