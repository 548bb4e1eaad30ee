"""The common parameters of every analytics read route.

Routes declare ``params: ReadQuery`` (so the parameters appear in the OpenAPI document) and turn them
into a ``Scope`` here; every value is validated before any query runs (400 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Query

from api_backend.query.filters import Filter, parse_filters
from api_backend.query.scope import Scope
from api_backend.query.window import Window, parse_window

__all__ = ["ReadParams", "ReadQuery", "WindowQuery"]


@dataclass(frozen=True)
class ReadParams:
    """The raw common parameters of a read request."""

    start_date: str | None = None
    end_date: str | None = None
    time_zone: str | None = None
    start_datetime: str | None = None
    end_datetime: str | None = None
    past_minutes_start: str | None = None
    past_minutes_end: str | None = None
    filters: str | None = None

    def window(self, now: datetime | None = None) -> Window:
        """The validated time window (400 on any malformed value)."""
        return parse_window(
            {
                "start_date": self.start_date,
                "end_date": self.end_date,
                "time_zone": self.time_zone,
                "start_datetime": self.start_datetime,
                "end_datetime": self.end_datetime,
                "past_minutes_start": self.past_minutes_start,
                "past_minutes_end": self.past_minutes_end,
            },
            now,
        )

    def parsed_filters(self) -> tuple[Filter, ...]:
        """The validated filters."""
        return parse_filters(self.filters)

    def scope(self, site_id: int) -> Scope:
        """Window and filters of one site, both validated (window errors are reported first)."""
        window = self.window()
        return Scope((site_id,), window, self.parsed_filters())


def window_params(
    start_date: Annotated[str | None, Query(description="YYYY-MM-DD, with end_date, in time_zone")] = None,
    end_date: Annotated[str | None, Query(description="YYYY-MM-DD (inclusive day), with start_date")] = None,
    time_zone: Annotated[str | None, Query(description="IANA zone name; default UTC")] = None,
    start_datetime: Annotated[str | None, Query(description="ISO instant (inclusive); no offset = UTC")] = None,
    end_datetime: Annotated[str | None, Query(description="ISO instant (exclusive)")] = None,
    past_minutes_start: Annotated[str | None, Query(description="minutes ago where the window starts")] = None,
    past_minutes_end: Annotated[str | None, Query(description="minutes ago where the window ends")] = None,
) -> ReadParams:
    """The time parameters (validated later, so all problems are reported together); routes without filters."""
    return ReadParams(
        start_date, end_date, time_zone, start_datetime, end_datetime, past_minutes_start, past_minutes_end
    )


WindowQuery = Annotated[ReadParams, Depends(window_params)]


def filters_param(
    filters: Annotated[
        str | None, Query(description='JSON array of {"parameter", "type", "value": [...]} selecting sessions')
    ] = None,
) -> str | None:
    """The raw ``filters`` value."""
    return filters


def read_params(window: WindowQuery, filters: Annotated[str | None, Depends(filters_param)]) -> ReadParams:
    """The time parameters and the filters (validated later, so all problems are reported together)."""
    # Both come from sub-dependencies so the OpenAPI document lists the window first, then ``filters``.
    return replace(window, filters=filters)


ReadQuery = Annotated[ReadParams, Depends(read_params)]
