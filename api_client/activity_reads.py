"""The activity reads of ``AnalyticsAPI``: sessions, a session's timeline, a user, live visitors, comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import pydantic

from api_client.activity import (
    LiveVisitors,
    OverviewComparison,
    SeriesComparison,
    SessionDetail,
    SessionPage,
    UserProfile,
)
from api_client.query import Query

M = TypeVar("M", bound=pydantic.BaseModel)


class _Requests(Protocol):
    """The request and parsing helpers of ``AnalyticsAPI`` that these methods use (the mixin's self type)."""

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any: ...
    def _parse(self, model: type[M], data: Any, what: str) -> M: ...
    def _field(self, body: Any, *keys: str) -> Any: ...
    def _rows(self, body: Any) -> list[Any]: ...
    def _params(self, query: Query | None, **extra: Any) -> dict[str, Any]: ...
    def _site(self, site_id: int | str) -> str: ...


__all__ = ["ActivityReads"]


def _segment(value: int | str) -> str:
    """One path segment, escaped (ids come from users and URLs)."""
    return quote(str(value), safe="")


class ActivityReads:
    """Methods mixed into ``AnalyticsAPI`` (they use its request and parsing helpers)."""

    def sessions(
        self: _Requests, site_id: int | str, query: Query | None = None, *, page: int = 1, limit: int = 25
    ) -> SessionPage:
        """Every session of the window (filters apply), newest session end first, with the total count."""
        body = self._get(f"{self._site(site_id)}/sessions", self._params(query, page=page, limit=limit))
        return self._parse(SessionPage, {"rows": self._rows(body), "total_count": body.get("totalCount")}, "sessions")

    def session(self: _Requests, site_id: int | str, session_id: str) -> SessionDetail:
        """One whole session with its events in order (``NotFoundError`` for an unknown session)."""
        body = self._get(f"{self._site(site_id)}/sessions/{_segment(session_id)}")
        return self._parse(SessionDetail, self._field(body, "data"), "session")

    def user(
        self: _Requests,
        site_id: int | str,
        user_id: str,
        query: Query | None = None,
        *,
        page: int = 1,
        limit: int = 25,
    ) -> UserProfile:
        """An identified user's first and last seen, totals and one page of sessions (all time without dates)."""
        params = self._params(query, page=page, limit=limit)
        params.pop("filters", None)  # the route takes a window only
        body = self._get(f"{self._site(site_id)}/users/{_segment(user_id)}", params)
        data: dict[str, Any] = dict(self._field(body, "data"))
        data["total_count"] = body.get("totalCount", 0)
        return self._parse(UserProfile, data, "user")

    def live(self: _Requests, site_id: int | str, minutes: int = 5, *, limit: int = 10) -> LiveVisitors:
        """Visitors, sessions and pageviews of the last ``minutes`` (1..60) and their top pages."""
        body = self._get(f"{self._site(site_id)}/live", {"minutes": minutes, "limit": limit})
        return self._parse(LiveVisitors, self._field(body, "data"), "live visitors")

    def overview_compared(self: _Requests, site_id: int | str, query: Query) -> OverviewComparison:
        """The overview of ``query``'s window and of the same-length period just before it."""
        body = self._get(f"{self._site(site_id)}/overview", self._params(query, compare="previous"))
        data = {"current": self._field(body, "data"), "previous": self._field(body, "previous")}
        return self._parse(OverviewComparison, data, "overview comparison")

    def overview_time_series_compared(
        self: _Requests, site_id: int | str, query: Query, *, bucket: str = "day"
    ) -> SeriesComparison:
        """The overview time series of ``query``'s window and of the period before it, bucketed alike."""
        params = self._params(query, bucket=bucket, compare="previous")
        body = self._get(f"{self._site(site_id)}/overview/time-series", params)
        data = {"current": self._rows(body), "previous": self._field(body, "previous")}
        return self._parse(SeriesComparison, data, "overview series comparison")
