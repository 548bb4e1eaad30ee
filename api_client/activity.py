"""Typed results of the activity reads: sessions, one session's timeline, an identified user, live visitors,
and the overview beside its previous period."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api_client.models import APIModel, GoalSession, Label, Overview, OverviewBucket, UTCDateTime

__all__ = [
    "LivePage",
    "LiveVisitors",
    "OverviewComparison",
    "SeriesComparison",
    "Session",
    "SessionDetail",
    "SessionPage",
    "TimelineItem",
    "UserProfile",
    "UserTotals",
]


class Session(GoalSession):
    """A session of the window: the goal-session fields plus its event counts and whether it converted."""

    events: int = 0
    custom_events: int = 0
    errors: int = 0
    outbound: int = 0
    converted: bool = False
    # Whether ``user_id`` is an identified id (``AnalyticsAPI.user`` has its profile) rather than a visitor id.
    identified: bool = False
    hostname: Label = ""


class SessionPage(APIModel):
    """One page of sessions, newest first, and how many sessions the window holds in all."""

    rows: list[Session]
    total_count: int


class TimelineItem(APIModel):
    """One event of a session's timeline; the fields beyond the page are those of its ``type``.

    ``time_on_page`` (seconds, pageviews only) runs to the next pageview or the session's end.
    """

    timestamp: UTCDateTime
    type: str
    hostname: Label = ""
    pathname: Label = ""
    querystring: Label = ""
    page_title: Label = ""
    time_on_page: float | None = None
    event_name: Label = ""
    properties: dict[str, Any] = Field(default_factory=dict)
    error_name: Label = ""
    message: Label = ""
    stack: Label = ""
    url: Label = ""


class SessionDetail(APIModel):
    """A whole session and its events in order; ``truncated`` when the timeline was cut at its bound."""

    session: Session
    timeline: list[TimelineItem]
    truncated: bool = False


class UserTotals(APIModel):
    """What an identified user did: sessions, pageviews and events (all types)."""

    sessions: int = 0
    pageviews: int = 0
    events: int = 0


class UserProfile(APIModel):
    """An identified user: first and last seen, totals, one page of their sessions and how many there are."""

    user_id: str
    first_seen: UTCDateTime | None = None
    last_seen: UTCDateTime | None = None
    totals: UserTotals
    sessions: list[Session]
    total_count: int = 0


class LivePage(APIModel):
    """A page viewed in the last minutes: distinct visitors and pageviews."""

    pathname: Label
    visitors: int = 0
    pageviews: int = 0


class LiveVisitors(APIModel):
    """Activity of the last ``minutes``: visitors, sessions, pageviews, events, and the top pages."""

    minutes: int
    visitors: int = 0
    sessions: int = 0
    pageviews: int = 0
    events: int = 0
    pages: list[LivePage] = Field(default_factory=list)


class OverviewComparison(APIModel):
    """The overview of a window and of the same-length period just before it."""

    current: Overview
    previous: Overview


class SeriesComparison(APIModel):
    """The overview time series of a window and of the period before it (item ``i`` of each aligns)."""

    current: list[OverviewBucket]
    previous: list[OverviewBucket]
