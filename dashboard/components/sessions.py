"""Pure layout factories of the sessions screens: the list, one session's timeline, and a user's profile.

Times are shown in the view's zone; every count and duration is the API's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import pandas as pd
from dash import html

from dashboard import ids
from dashboard.components.common import (
    app_href,
    channel_label,
    data_table,
    empty_state,
    format_duration,
    format_number,
    in_zone,
    value_of,
)
from dashboard.components.pager import SMALL_LINKS, link_pager, total_pages
from dashboard.countries import country_label

__all__ = [
    "local_time",
    "session_href",
    "session_list",
    "session_summary",
    "time_span",
    "timeline",
    "user_href",
    "user_profile",
]

LIST_COLUMNS = (
    ("started", "Active"),
    ("user", "User"),
    ("entry_page", "Entry page"),
    ("pageviews", "Pages"),
    ("events", "Events"),
    ("errors", "Errors"),
    ("duration", "Duration"),
    ("channel", "Channel"),
    ("country", "Country"),
    ("platform", "Browser · OS · device"),
)


def local_time(moment: datetime | None, zone: str, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """``moment`` in ``zone`` (UTC when the zone is unknown), or ``""``."""
    return "" if moment is None else in_zone(moment, zone).strftime(fmt)


def time_span(start: datetime | None, end: datetime | None, zone: str) -> str:
    """``2026-11-27 10:02 – 10:15`` in ``zone``: a session's first and last events' minutes (the last one's date
    only when it differs; one minute alone when both fall in it)."""
    first = local_time(start, zone)
    if start is None or end is None:
        return first
    begun, ended = in_zone(start, zone), in_zone(end, zone)
    if ended.strftime("%Y-%m-%d %H:%M") == first:
        return first
    return f"{first} – {ended:%H:%M}" if ended.date() == begun.date() else f"{first} – {ended:%Y-%m-%d %H:%M}"


def session_href(site_id: int, session_id: str, search: str = "") -> str:
    """The timeline of one session (``search`` keeps the view's query string)."""
    return app_href(f"/sessions/{quote(session_id, safe='')}") + (search or f"?site={site_id}")


def user_href(site_id: int, user_id: str, search: str = "") -> str:
    """The profile of one identified user."""
    return app_href(f"/users/{quote(user_id, safe='')}") + (search or f"?site={site_id}")


def _md(text: str, href: str) -> str:
    # DataTable markdown: brackets in the text would end the link early.
    safe = text.replace("[", "(").replace("]", ")")
    return f"[{safe}]({href})"


def sessions_frame(sessions: Sequence[Any], view: Any, search: str, *, links: bool = True) -> pd.DataFrame:
    """Sessions as table rows whose time (first to last event) links to the timeline and whose user links to the
    profile (plain text without ``links``, for the read-only shared view)."""
    records = []
    for s in sessions:
        session_id, user_id = value_of(s, "session_id"), value_of(s, "user_id") or ""
        started = time_span(value_of(s, "session_start"), value_of(s, "session_end"), view.time_zone)
        records.append(
            {
                "started": _md(started or session_id, session_href(view.site_id, session_id, search))
                if links
                else started,
                # Only an identified user has a profile to open; a visitor id is shown as it is.
                "user": _md(user_id, user_href(view.site_id, user_id, search))
                if user_id and links and value_of(s, "identified")
                else user_id,
                "entry_page": value_of(s, "entry_page") or "",
                "pageviews": value_of(s, "pageviews") or 0,
                "events": value_of(s, "events") or 0,
                "errors": value_of(s, "errors") or 0,
                "duration": format_duration(value_of(s, "session_duration") or 0),
                "channel": channel_label(value_of(s, "channel")),
                "country": country_label(value_of(s, "country")),
                "platform": " · ".join(
                    p for p in (value_of(s, k) or "" for k in ("browser", "operating_system", "device_type")) if p
                ),
            }
        )
    return pd.DataFrame.from_records(records, columns=[key for key, _ in LIST_COLUMNS])


def session_list(
    sessions: Sequence[Any],
    total: int,
    view: Any,
    search: str,
    href: Callable[[int], str],
    page_size: int,
    table_id: str = ids.SESSIONS_TABLE,
    *,
    links: bool = True,
) -> Any:
    """One page of sessions with a pager, or an empty state (``links``: rows open timelines and profiles)."""
    if not sessions:
        if view.page > 1:
            return empty_state("No more sessions", "This is past the last page.")
        return empty_state("No sessions in this range", "Try a longer date range, or remove filters.")
    # The list is ordered by each session's last event (the API's order), as the arrow on the time says.
    columns = [(key, f"Active ({view.time_zone}) ↓" if key == "started" else label) for key, label in LIST_COLUMNS]
    table = data_table(
        sessions_frame(sessions, view, search, links=links),
        table_id,
        columns=columns,
        markdown=("started", "user") if links else (),
        nowrap=("started", "duration", "pageviews", "events", "errors", "country"),
    )
    pages = link_pager(view.page, total_pages(total, page_size), href, link_class=SMALL_LINKS)
    label = f"{format_number(total)} sessions, most recently active first"
    return [
        table,
        html.Div(
            [html.Span(label, className="muted table-count"), pages],
            className="table-foot",
        ),
    ]


def session_summary(s: Any, zone: str) -> html.Dl:
    """The facts of one session above its timeline."""
    facts = [
        ("Started", local_time(value_of(s, "session_start"), zone, "%Y-%m-%d %H:%M:%S")),
        ("Duration", format_duration(value_of(s, "session_duration") or 0)),
        ("Pages", format_number(value_of(s, "pageviews") or 0)),
        ("Events", format_number(value_of(s, "events") or 0)),
        ("Channel", channel_label(value_of(s, "channel"))),
        ("Referrer", value_of(s, "referrer") or "–"),
        ("Country", country_label(value_of(s, "country"), with_code=True) or "–"),
        (
            "Browser",
            " · ".join(p for p in (value_of(s, k) for k in ("browser", "operating_system", "device_type")) if p),
        ),
    ]
    return html.Dl(
        [html.Div([html.Dt(k), html.Dd(v or "–")], className="fact") for k, v in facts], className="session-facts"
    )


def _item_body(item: Any) -> list[Any]:
    kind = value_of(item, "type")
    if kind == "pageview":
        spent = value_of(item, "time_on_page")
        return [
            html.Span(value_of(item, "pathname") or "/", className="timeline-main"),
            html.Span(value_of(item, "page_title") or "", className="timeline-sub"),
            html.Span(f"time on page {format_duration(spent)}" if spent is not None else "", className="timeline-sub"),
        ]
    if kind == "error":
        return [
            html.Span(
                f"{value_of(item, 'error_name') or 'Error'}: {value_of(item, 'message') or ''}",
                className="timeline-main",
            ),
            html.Span(value_of(item, "pathname") or "", className="timeline-sub"),
            html.Pre(value_of(item, "stack") or "(no stack trace)", className="timeline-stack"),
        ]
    name = value_of(item, "event_name") or value_of(item, "url") or kind
    props = value_of(item, "properties") or {}
    return [
        html.Span(name, className="timeline-main"),
        html.Span(value_of(item, "pathname") or "", className="timeline-sub"),
        html.Code(json.dumps(props, ensure_ascii=False, sort_keys=True), className="timeline-props") if props else "",
    ]


def timeline(detail: Any, zone: str) -> html.Div:
    """Every event of the session in order: pages with time on page, events with properties, errors with stacks."""
    items = [
        html.Li(
            [
                html.Span(local_time(value_of(item, "timestamp"), zone, "%H:%M:%S"), className="timeline-time"),
                html.Span(str(value_of(item, "type")).replace("_", " "), className="badge timeline-type"),
                html.Div(_item_body(item), className="timeline-body"),
            ],
            className=f"timeline-item timeline-{value_of(item, 'type')}",
        )
        for item in value_of(detail, "timeline") or []
    ]
    children: list[Any] = [html.Ol(items, className="timeline", id=ids.SESSION_TIMELINE)]
    if value_of(detail, "truncated"):
        children.append(html.P("The timeline is cut here: the session has more events.", className="muted"))
    return html.Div(children)


def user_profile(profile: Any, zone: str) -> html.Dl:
    """First and last seen and totals of an identified user."""
    totals = value_of(profile, "totals")
    facts = [
        ("First seen", local_time(value_of(profile, "first_seen"), zone) or "–"),
        ("Last seen", local_time(value_of(profile, "last_seen"), zone) or "–"),
        ("Sessions", format_number(value_of(totals, "sessions"))),
        ("Pageviews", format_number(value_of(totals, "pageviews"))),
        ("Events", format_number(value_of(totals, "events"))),
    ]
    return html.Dl(
        [html.Div([html.Dt(k), html.Dd(v)], className="fact") for k, v in facts],
        className="session-facts",
        id=ids.USER_FACTS,
    )
