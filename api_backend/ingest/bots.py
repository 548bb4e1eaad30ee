"""Bot detection with ``crawlerdetect`` (cached: the same user agents arrive over and over)."""

from __future__ import annotations

from functools import lru_cache

from crawlerdetect import CrawlerDetect

__all__ = ["is_bot"]

# One detector for the process: its answer depends only on the user agent (the ``matches`` attribute it
# keeps is never read here), so sharing it between threads is safe.
_DETECTOR = CrawlerDetect()


@lru_cache(maxsize=16384)
def is_bot(user_agent: str) -> bool:
    """True when ``user_agent`` belongs to a crawler, monitor, HTTP library or headless browser.

    An empty user agent is not called a bot (as the peer does): nothing is known about it.
    """
    user_agent = user_agent.strip()
    if not user_agent:
        return False
    return _DETECTOR.is_crawler(user_agent)
