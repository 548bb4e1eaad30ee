"""``DashboardSettings``: what a dashboard needs to know to serve (the API address, its answer cache).

Every setting is declared once here with its default; ``create_dashboard(settings)`` takes them. The ``sitelens``
command fills them from ``SITELENS_*`` (``sitelens.mount``, ``sitelens.cli``); tests build them directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_CACHE_CONFIG", "DashboardSettings"]

# Flask-Caching settings of the answer cache: in memory, a minute per answer, at most 5000 answers.
DEFAULT_CACHE_CONFIG: Mapping[str, Any] = {
    "CACHE_TYPE": "SimpleCache",
    "CACHE_DEFAULT_TIMEOUT": 60,
    "CACHE_THRESHOLD": 5000,
}


@dataclass(frozen=True)
class DashboardSettings:
    """How one dashboard reaches the API and caches its answers.

    ``api_url`` is the API root (``http(s)://host/api``). ``cache_config`` is merged over ``DEFAULT_CACHE_CONFIG``
    (``{"CACHE_TYPE": "NullCache"}`` turns caching off). A credential that answered is trusted for
    ``verify_seconds`` before a cached answer is served again without asking the API (0: check on every cached answer).
    ``api_timeout`` is how long one API request may take before the page says its answer is late: a read of a long
    range on a large store can take tens of seconds (``BENCHMARKS.md``: up to 27 s at 100M events on ClickHouse).
    """

    api_url: str
    cache_config: Mapping[str, Any] = field(default_factory=dict)
    verify_seconds: float = 15
    api_timeout: float = 120

    def __post_init__(self) -> None:
        if not isinstance(self.api_url, str) or not self.api_url.startswith(("http://", "https://")):
            raise ValueError(f"api_url must be an http(s) URL ending in /api, got {self.api_url!r}")
        if self.verify_seconds < 0:
            raise ValueError(f"verify_seconds must not be negative, got {self.verify_seconds!r}")
        if not self.api_timeout > 0:
            raise ValueError(f"api_timeout must be a positive number of seconds, got {self.api_timeout!r}")
        object.__setattr__(self, "api_url", self.api_url.rstrip("/"))

    def cache(self) -> dict[str, Any]:
        """The Flask-Caching configuration: the defaults with ``cache_config`` over them."""
        return {**DEFAULT_CACHE_CONFIG, **self.cache_config}
