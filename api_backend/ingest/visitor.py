"""The anonymous visitor id: a keyed hash of (site, IP, user agent); raw IPs are never stored.

``visitor_id`` is the first 16 hex characters of HMAC-SHA256 keyed with the server secret. With the site's
``saltUserIds`` the key also includes the current UTC date, so the id rotates at 00:00 UTC and a visitor
cannot be followed from one day to the next. Including the site id means one person gets unrelated ids
on different sites.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import date

__all__ = ["visitor_id"]

VISITOR_ID_LENGTH = 16


def visitor_id(secret: str, site_id: int, ip: str, user_agent: str, salt_day: date | None = None) -> str:
    """Hex id of one visitor on one site; pass ``salt_day`` (the UTC date) for daily-rotating ids."""
    key = secret if salt_day is None else f"{secret}|{salt_day.isoformat()}"
    message = f"{site_id}\x00{ip}\x00{user_agent}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()[:VISITOR_ID_LENGTH]
