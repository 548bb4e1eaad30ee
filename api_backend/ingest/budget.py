"""Tracking budgets: how many events one IP address and one site may send without an API key.

Each budget is a token bucket per key (IP address or site id) held in memory: it holds up to ``capacity``
events and refills at ``capacity`` per minute, so a burst of a minute's worth passes and a steady flood is
held to the rate. A request that would overdraw a bucket is refused whole (429 with ``Retry-After``: the
seconds until the bucket holds enough again) and takes nothing from it. The defaults
(``SITELENS_TRACK_IP_EVENTS_PER_MINUTE``, ``SITELENS_TRACK_SITE_EVENTS_PER_MINUTE``) are far above what
real visitors send; requests carrying a valid API key of the site's organization skip both budgets.

Memory stays bounded for floods from many addresses: past ``max_keys`` buckets, the full ones (keys idle
for a minute or more, which a new bucket would treat the same) are dropped, then the oldest if needed.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Mapping

from api_backend.errors import RateLimitedError

__all__ = ["TokenBuckets", "TrackingBudget"]

MAX_KEYS = 100_000


class TokenBuckets:
    """One token bucket per key, each holding up to ``capacity`` and refilling ``capacity`` per minute."""

    def __init__(self, capacity: int, *, max_keys: int = MAX_KEYS, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(capacity)
        self.rate = capacity / 60.0  # per second
        self._max_keys = max_keys
        self._clock = clock
        self._buckets: dict[Hashable, list[float]] = {}  # key -> [tokens, time of that count]
        self._lock = threading.Lock()

    def take(self, key: Hashable, amount: int) -> float:
        """Take ``amount`` tokens for ``key``; return 0 on success, else the seconds until there would be enough."""
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= self._max_keys:
                    self._prune(now)
                bucket = self._buckets[key] = [self.capacity, now]
            tokens = min(self.capacity, bucket[0] + (now - bucket[1]) * self.rate)
            bucket[1] = now
            need = min(amount, self.capacity)  # more than a whole bucket passes only from a full one, emptying it
            if tokens >= need:
                bucket[0] = tokens - need
                return 0.0
            bucket[0] = tokens
            return (need - tokens) / self.rate

    def __len__(self) -> int:
        return len(self._buckets)

    def _prune(self, now: float) -> None:
        full_after = self.capacity / self.rate  # seconds: a bucket untouched this long is full again
        self._buckets = {k: b for k, b in self._buckets.items() if now - b[1] < full_after}
        if len(self._buckets) >= self._max_keys:
            keep = list(self._buckets.items())[len(self._buckets) // 2 :]  # dicts keep insertion order: oldest first
            self._buckets = dict(keep)


class TrackingBudget:
    """The per-IP and per-site budgets of the tracking routes (a budget of 0 means no limit)."""

    def __init__(
        self, ip_per_minute: int, site_per_minute: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ips = TokenBuckets(ip_per_minute, clock=clock) if ip_per_minute else None
        self._sites = TokenBuckets(site_per_minute, clock=clock) if site_per_minute else None

    def charge_ip(self, ip: str, events: int) -> None:
        """Count ``events`` against the sender's address; 429 when over its budget."""
        if self._ips is not None and events:
            wait = self._ips.take(ip, events)
            if wait:
                raise _limited("this address", wait)

    def charge_site(self, site_id: int, events: int) -> None:
        """Count ``events`` against a site; 429 when over its budget."""
        if self._sites is not None and events:
            wait = self._sites.take(site_id, events)
            if wait:
                raise _limited("this site", wait)

    def charge_sites(self, counts: Mapping[int, int]) -> None:
        """Count events against several sites (one batch); 429 when any is over its budget."""
        for site_id, events in counts.items():
            self.charge_site(site_id, events)


def _limited(who: str, wait: float) -> RateLimitedError:
    seconds = max(1, math.ceil(wait))
    return RateLimitedError(f"Too many tracked events from {who}; try again in {seconds} s.", retry_after=seconds)
