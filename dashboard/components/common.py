"""Building blocks every page uses: headers, cards, alerts, empty and loading states, tables, CSV, number formats.

All functions are pure: they take plain data and return Dash components (or strings), so they are tested without a
browser by inspecting ``component.to_plotly_json()``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, NamedTuple, TypeGuard
from zoneinfo import ZoneInfo

import dash
import pandas as pd
from dash import dcc, html
from dash.dash_table.DataTable import DataTable

__all__ = [
    "alert",
    "as_instant",
    "value_of",
    "app_href",
    "attrs",
    "bucket_ticks",
    "card",
    "channel_label",
    "chart",
    "comparison_gap",
    "csv_button",
    "csv_download",
    "data_table",
    "empty_state",
    "Failure",
    "describe_failure",
    "error_view",
    "failure_figure",
    "failure_mark",
    "failure_message",
    "failure_note",
    "format_change",
    "format_duration",
    "format_number",
    "format_percent",
    "in_zone",
    "neutralise_formulas",
    "invalid_link",
    "sign_in_again",
    "site_not_found",
    "loading",
    "page_header",
    "redirect",
    "RangeEnds",
    "zone_or_utc",
]

ALERT_KINDS = ("error", "warning", "info", "success")


def attrs(values: Mapping[str, Any]) -> dict[str, Any]:
    """HTML attributes whose names are not Python names (``aria-label``, ``data-index``) for ``**`` into a component;
    Dash's typed signatures then accept them as the extra keyword arguments they are."""
    return dict(values)


def value_of(item: Any, key: str, default: Any = None) -> Any:
    """``item[key]`` for a mapping, else ``item.key``: pages get API models, tests and caches plain dicts."""
    if isinstance(item, Mapping):
        return item.get(key, default)
    return getattr(item, key, default)


def app_href(path: str) -> str:
    """``path`` under the dashboard's URL prefix (unchanged when no dashboard is configured, e.g. in unit tests)."""
    import dash

    try:
        return dash.get_relative_path(path)
    except Exception:  # noqa: BLE001 - no app configured yet: the path is already right for a "/" prefix
        return path


# --- formats ------------------------------------------------------------------------------------------------------
def _is_number(value: Any) -> TypeGuard[float | int]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def format_number(value: float | int | None, digits: int = 0) -> str:
    """A count with thousands separators (``1234567`` -> ``"1,234,567"``); ``None`` or NaN -> ``"–"``."""
    if not _is_number(value):
        return "–"
    return f"{value:,.{digits}f}"


def format_percent(value: float | int | None, digits: int = 1) -> str:
    """A percentage given in percent (``12.345`` -> ``"12.3%"``). Pass fractions multiplied by 100."""
    if not _is_number(value):
        return "–"
    return f"{value:.{digits}f}%"


def format_duration(seconds: float | int | None) -> str:
    """A duration in seconds as ``"45s"``, ``"3m 05s"`` or ``"2h 03m"``."""
    if not _is_number(seconds):
        return "–"
    total = max(int(round(seconds)), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def zone_or_utc(time_zone: str | None) -> ZoneInfo:
    """The zone named ``time_zone``, or UTC when it is empty or unknown."""
    try:
        return ZoneInfo(time_zone or "UTC")
    except (KeyError, ValueError):
        return ZoneInfo("UTC")


def as_instant(value: datetime | str) -> datetime:
    """An instant from the API (aware datetime, naive UTC, or ISO text) as an aware datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def in_zone(value: datetime | str, time_zone: str | None) -> datetime:
    """An instant from the API as wall-clock time in ``time_zone`` (aware)."""
    return as_instant(value).astimezone(zone_or_utc(time_zone))


def _bucket_end(start: datetime, bucket: str) -> datetime:
    """The wall-clock end of the bucket starting at ``start`` (a bucket under an hour: within the hour after it)."""
    if bucket == "month":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start + {"week": timedelta(days=7), "day": timedelta(days=1)}.get(bucket, timedelta(hours=1))


def _short_date(day: date) -> str:
    return f"{day:%b} {day.day}"


@dataclass(frozen=True)
class RangeEnds:
    """Where a view's range begins and ends, which tells the chart buckets it holds only part of.

    ``first_day`` and ``last_day`` are the range's first and last dates (None when it has none); ``ends_now``
    says the range runs up to now (see ``ViewState.ends_now``); ``ends_at_this_time`` that it ends on its last day at
    the time of day it is now (the period before a range ending now, see ``before``).
    """

    first_day: date | None = None
    last_day: date | None = None
    ends_now: bool = False
    ends_at_this_time: bool = False

    def before(self) -> RangeEnds:
        """The ends of the period of the same length just before the range, the one the API compares it with.

        A range ending now is compared with one ending as many days earlier at the same time of day, so that
        period's last bucket is cut too. A range without dates has no period before it.
        """
        if self.first_day is None or self.last_day is None:
            return RangeEnds()
        days = self.last_day - self.first_day + timedelta(days=1)
        return RangeEnds(self.first_day - days, self.last_day - days, ends_at_this_time=self.ends_now)

    def notes(self, starts: Sequence[datetime], bucket: str) -> list[str]:
        """What each bucket's value is read with when the range holds only part of it, "" for a whole bucket.

        ``starts`` are the buckets' wall-clock starts in the range's zone, in order. A week or month can begin
        before the range's first day or end after its last, and then counts only the days inside ("from Nov 3",
        "to Nov 27"); the last bucket of a range ending now is still filling ("so far"). Drawn like the others,
        such a bucket reads as a fall.
        """
        notes = [""] * len(starts)
        if not starts:
            return notes
        if self.first_day is not None and starts[0].date() < self.first_day:
            notes[0] = f"from {_short_date(self.first_day)}"
        if self.ends_now:
            last = "so far"
        elif self.ends_at_this_time and self.last_day is not None:
            at = "" if bucket not in ("week", "month") else f"{_short_date(self.last_day)}, "  # a day says its date
            last = f"to {at}this time of day"
        elif self.last_day is not None and _bucket_end(starts[-1], bucket).date() > self.last_day + timedelta(days=1):
            last = f"to {_short_date(self.last_day)}"
        else:
            return notes
        notes[-1] = f"{notes[-1]}, {last}" if notes[-1] else last
        return notes


_MAX_TICKS = 7  # labels as wide as "Sep 28" still fit side by side on a phone


def bucket_ticks(starts: Sequence[datetime], bucket: str) -> dict[str, Any]:
    """Axis ticks on the buckets' own starts for weeks (Mondays) and months (their first days), seven at most.

    Left to itself the axis ticks weeks on Sundays and months every other week, between the points it draws.
    """
    if bucket not in ("week", "month") or not starts:
        return {}
    step = -(-len(starts) // _MAX_TICKS)  # buckets per tick, rounded up
    shown = list(starts[::-1][::step])[::-1]  # counted back from the last bucket, which always has its label
    text = [f"{s:%b} {s.day}" if bucket == "week" else f"{s:%b %Y}" for s in shown]
    return {"tickmode": "array", "tickvals": shown, "ticktext": text}


def chart(figure: Any = None, *, height: int | None = None, **props: Any) -> dcc.Graph:
    """A Plotly chart that follows the window's width at a fixed height: its figure's ``layout.height``, or
    ``height`` for a chart whose figure a callback fills in.

    A responsive graph without a height of its own fills its box's height, which is nothing: the box collapses to
    0 px, and once the window changes size the chart is drawn over whatever follows it.
    """
    size = height or (figure.layout.height if figure is not None else None)
    config: Any = {"displayModeBar": False, "responsive": True, **props.pop("config", {})}
    style = ({"height": f"{size}px"} if size else {}) | props.pop("style", {})
    return dcc.Graph(config=config, style=style, **({"figure": figure} if figure is not None else {}), **props)


MIN_PREVIOUS_SESSIONS = 30
MIN_PREVIOUS_SHARE = 0.1


def comparison_gap(sessions: Any, previous_sessions: Any) -> str | None:
    """Why the range cannot fairly be compared with the previous period of the same length, or ``None`` if it can.

    The previous period needs sessions at all, at least ``MIN_PREVIOUS_SESSIONS`` of them, and at least a tenth of
    this range's: below that a change reads as +11,860% when tracking merely started inside the previous period.
    """
    before = int(previous_sessions or 0)
    if before == 0:
        return "no earlier data"
    if before < MIN_PREVIOUS_SESSIONS or before < MIN_PREVIOUS_SHARE * int(sessions or 0):
        return f"too little earlier data ({before:,} session{'' if before == 1 else 's'})"
    return None


def format_change(
    current: float | int | None, previous: float | int | None, *, points: bool = False
) -> tuple[str, str]:
    """The change from ``previous`` to ``current`` as (text, direction): relative, or in percentage points.

    Use ``points`` for figures that are percentages themselves (bounce rate): 40% -> 50% is "+10.0 pts", not
    "+25.0%". Direction is ``"up"``, ``"down"``, ``"flat"`` or ``"none"`` (no previous value to compare with).
    """
    if not _is_number(current) or not _is_number(previous):
        return "–", "none"
    if points:
        delta = current - previous
        if abs(delta) < 0.05:
            return "0 pts", "flat"
        return f"{delta:+.1f} pts", "up" if delta > 0 else "down"
    if previous == 0:
        return ("new", "up") if current > 0 else ("0%", "flat")
    change = (current - previous) / abs(previous) * 100
    if abs(change) < 0.05:
        return "0%", "flat"
    return f"{change:+.1f}%", "up" if change > 0 else "down"


def channel_label(value: str | None) -> str:
    """How a channel is shown: the API's ``""`` (direct traffic) is ``"Direct"``."""
    return value if value else "Direct"


# --- layout pieces ------------------------------------------------------------------------------------------------
def page_header(title: str, subtitle: str | None = None, actions: Any = None) -> html.Div:
    """The title row of a page, with an optional subtitle and actions (buttons) on the right."""
    text: list[Any] = [html.H1(title, className="page-title")]
    if subtitle:
        text.append(html.P(subtitle, className="page-subtitle"))
    children: list[Any] = [html.Div(text, className="page-header-text")]
    if actions is not None:
        children.append(html.Div(actions, className="page-header-actions"))
    return html.Div(children, className="page-header")


def card(
    children: Any,
    title: str | None = None,
    *,
    id: str | dict | None = None,  # noqa: A002 - Dash's name for it
    actions: Any = None,
    class_name: str = "",
    title_id: str | None = None,
) -> html.Section:
    """A white panel with an optional title row (title on the left, actions on the right).

    ``title_id`` gives the title an id so a callback can change it.
    """
    body: list[Any] = []
    if title or actions is not None or title_id:
        title_kwargs: dict[str, Any] = {"id": title_id} if title_id else {}
        head: list[Any] = [html.H2(title or "", className="card-title", **title_kwargs)]
        if actions is not None:
            head.append(html.Div(actions, className="card-actions"))
        body.append(html.Div(head, className="card-head"))
    body.append(html.Div(children, className="card-body"))
    kwargs: dict[str, Any] = {"className": f"card {class_name}".strip()}
    if id is not None:
        kwargs["id"] = id
    return html.Section(body, **kwargs)


def alert(message: Any, kind: str = "error", title: str | None = None) -> html.Div:
    """A visible message box; ``kind`` is ``error``, ``warning``, ``info`` or ``success``."""
    if kind not in ALERT_KINDS:
        kind = "error"
    children: list[Any] = []
    if title:
        children.append(html.Strong(title, className="alert-title"))
    children.append(html.Span(message, className="alert-message"))
    return html.Div(children, className=f"alert alert-{kind}", role="alert" if kind == "error" else "status")


def empty_state(title: str, hint: str | None = None, action: Any = None) -> html.Div:
    """What a page shows when there is nothing to list: what is missing and what to do about it."""
    children: list[Any] = [html.Div("∅", className="empty-icon", **attrs({"aria-hidden": "true"})), html.H3(title)]
    if hint:
        children.append(html.P(hint, className="empty-hint"))
    if action is not None:
        children.append(html.Div(action, className="empty-action"))
    return html.Div(children, className="empty-state")


def loading(children: Any, id: str | dict) -> dcc.Loading:  # noqa: A002 - Dash's name for it
    """Wrap the part of a page that a callback fills, so a spinner shows while the call runs."""
    return dcc.Loading(
        html.Div(children, id=id),
        type="dot",
        color="var(--accent)",
        delay_show=150,
        # Keep the previous content in place (dimmed) while a call runs, so the page does not jump.
        overlay_style={"visibility": "visible", "opacity": 0.45, "filter": "grayscale(0.3)"},
        parent_className="loading-parent",
    )


def redirect(
    href: str, message: str = "Redirecting…", *, clear_auth: bool = False, come_back: bool = False
) -> html.Div:
    """A marker that sends the browser to ``href`` as soon as it is shown (``assets/sitelens.js`` acts on it).

    With ``clear_auth`` the tab's sign-in token is forgotten first (an expired or revoked credential). With
    ``come_back`` the browser adds ``next=<the page it is on, with its query>`` to ``href``: a callback does not know
    which page asked for it, the browser does.
    """
    attributes: dict[str, Any] = {"data-href": href}
    if clear_auth:
        attributes["data-clear-auth"] = "1"
    if come_back:
        attributes["data-come-back"] = "1"
    return html.Div(
        html.A(message, href=href),
        className="redirect",
        **attributes,
    )


class Failure(NamedTuple):
    """How a failed API call is told: a title, a sentence, the alert kind, and whether the sentence names the problem
    on its own (else a short place shows ``title. sentence``)."""

    title: str
    message: str
    kind: str = "error"
    self_explaining: bool = False


def describe_failure(exc: Exception) -> Failure:
    """The one wording of every API failure, used by the full view (``error_view``) and the short forms."""
    from api_client import (
        APIConnectionError,
        APIError,
        AuthenticationError,
        ForbiddenError,
        NotFoundError,
        ServerError,
        ValidationError,
    )

    if isinstance(exc, AuthenticationError):
        return Failure("Signed out", EXPIRED_MESSAGE, "warning", self_explaining=True)
    if isinstance(exc, APIConnectionError) and exc.code == "TIMEOUT":
        # The API is there but still counting: a long range on a large store. Telling the viewer it cannot be
        # reached would send them to check a server that is running.
        message = (
            "The server did not answer in time: counting a long range on a large site takes a while. "
            "Try again in a moment, or choose a shorter range."
        )
        return Failure("The answer is late", message, "warning", self_explaining=True)
    if isinstance(exc, APIConnectionError):
        message = "The dashboard cannot reach the API right now. Check that the sitelens server is running, then retry."
        return Failure("Cannot reach the API", message, self_explaining=True)
    if isinstance(exc, ForbiddenError):
        return Failure("Not allowed", "Your role on this site does not allow this.", self_explaining=True)
    if isinstance(exc, NotFoundError):
        return Failure("Not found", "It may have been deleted, or you have no access to it.", "warning")
    if isinstance(exc, ValidationError):
        details = "; ".join(f"{d.get('field')}: {d.get('message')}" for d in exc.details if d.get("field"))
        return Failure("The API refused this request", details or exc.message)
    if isinstance(exc, ServerError):
        ref = f" (reference {exc.request_id})" if exc.request_id else ""
        return Failure(
            "Server error", f"The server failed to answer{ref}. Try again in a moment.", self_explaining=True
        )
    if isinstance(exc, APIError):
        return Failure("The request failed", exc.message)
    return Failure(
        "Unexpected error", "Something went wrong while loading this part of the page.", self_explaining=True
    )


def error_view(exc: Exception, sign_in_href: str | None = None, *, shared: bool = False) -> html.Div:
    """How a page reports a failed API call: an alert, never a traceback.

    An expired or revoked credential sends the person to sign-in (with a message there); in a private-link view
    (``shared``) it means the link is no longer valid. A connection failure says the API cannot be reached.
    """
    from api_client import AuthenticationError, ForbiddenError, NotFoundError

    if shared and isinstance(exc, (AuthenticationError, ForbiddenError, NotFoundError)):
        return invalid_link()
    failure = describe_failure(exc)
    if isinstance(exc, AuthenticationError):
        return html.Div([alert(failure.message, failure.kind), sign_in_again(sign_in_href)])
    return alert(failure.message, failure.kind, title=failure.title)


EXPIRED_MESSAGE = "Your session has ended. Please sign in again."


def sign_in_again(href: str | None = None) -> html.Div:
    """The marker that forgets an expired credential and opens sign-in, which comes back to this page afterwards."""
    if href:
        return redirect(href, "Sign in again", clear_auth=True)
    return redirect(app_href("/login?reason=expired"), "Sign in again", clear_auth=True, come_back=True)


def failure_message(exc: Exception) -> str:
    """One short sentence for a failed API call, for small places (beside a button, inside a chart)."""
    failure = describe_failure(exc)
    return failure.message if failure.self_explaining else f"{failure.title}. {failure.message}"


def failure_note(exc: Exception) -> html.P:
    """A one-line failure beside the control that asked (a CSV button); an ended sign-in also opens sign-in."""
    from api_client import AuthenticationError

    children: list[Any] = [failure_message(exc)]
    if isinstance(exc, AuthenticationError):
        children.append(sign_in_again())
    return html.P(children, className="field-error failure-note", role="alert")


def failure_mark(exc: Exception, text: str = "unavailable") -> html.Span:
    """For a slot too small for a sentence (a sparkline, a live count): a muted word, the reason on hover."""
    return html.Span(text, title=failure_message(exc), className="muted failure-mark")


def failure_figure(exc: Exception) -> dict[str, Any]:
    """An empty chart that says why it is empty (a chart callback's answer when its call failed)."""
    return {
        "data": [],
        "layout": {
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "annotations": [
                {
                    "text": failure_message(exc),
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "showarrow": False,
                    "font": {"size": 14, "color": "#8f231d"},
                }
            ],
            "margin": {"l": 8, "r": 8, "t": 8, "b": 8},
        },
    }


def site_not_found() -> html.Div:
    """A page for a site that does not exist or is not the person's: one message and the way back, no controls."""
    return html.Div(
        html.Div(
            [
                alert("It may have been deleted, or you have no access to it.", "warning", title="Site not found"),
                dcc.Link("‹ Choose one of your sites", href=dash.get_relative_path("/sites"), className="button"),
            ],
            id="site-not-found",
            className="stack",
        ),
        className="page page-narrow",
    )


def invalid_link(*, missing_key: bool = False) -> html.Div:
    """What a revoked, replaced or mistyped private link shows; a link without its key says that instead."""
    if missing_key:
        title = "This link is missing its key"
        hint = (
            "A private link ends with # and a key, and this address has none (it may have been cut off when it was "
            "copied). Copy the whole link again, or ask the site's owner for it."
        )
    else:
        title = "This link is no longer valid"
        hint = "The site's owner may have revoked it or replaced it with a new one. Ask them for a current link."
    return html.Div(
        [
            html.Div("⚠", className="empty-icon", **attrs({"aria-hidden": "true"})),
            html.H3(title),
            html.P(hint, className="empty-hint"),
        ],
        className="empty-state invalid-link",
        id="share-invalid",
    )


# --- tables and CSV -----------------------------------------------------------------------------------------------
ColumnSpec = str | tuple[str, str] | Mapping[str, Any]


def _column(spec: ColumnSpec, df: pd.DataFrame) -> dict[str, Any]:
    if isinstance(spec, str):
        col: dict[str, Any] = {"id": spec, "name": spec.replace("_", " ").capitalize()}
    elif isinstance(spec, tuple):
        col = {"id": spec[0], "name": spec[1]}
    else:
        col = dict(spec)
    if "type" not in col and col["id"] in df.columns and pd.api.types.is_numeric_dtype(df[col["id"]]):
        col["type"] = "numeric"
    return col


def data_table(
    df: pd.DataFrame,
    id: str | dict,  # noqa: A002 - Dash's name for it
    columns: Sequence[ColumnSpec] | None = None,
    *,
    page_size: int | None = None,
    sort_action: Literal["custom", "native", "none"] = "none",
    markdown: Iterable[str] = (),
    style_data_conditional: list[dict[str, Any]] | None = None,
    nowrap: Iterable[str] = (),
) -> DataTable:
    """A plain, readable table of ``df``: numeric columns right-aligned with tabular digits, text left.

    ``columns`` are ids, ``(id, title)`` pairs or full DataTable column dicts; ``markdown`` names columns that hold
    markdown links (rendered as links, never as HTML); ``nowrap`` names columns kept on one line (times, codes).
    """
    specs: list[Any] = [_column(c, df) for c in (columns or list(df.columns))]
    link_columns = set(markdown)
    for col in specs:
        if col["id"] in link_columns:
            col["presentation"] = "markdown"
    numeric = [c["id"] for c in specs if c.get("type") == "numeric"]
    records = df.to_dict("records") if len(df) else []
    kwargs: dict[str, Any] = {}
    if page_size:
        kwargs.update(page_size=page_size, page_action="native")
    else:
        kwargs.update(page_action="none")
    return DataTable(
        id=id,
        data=records,
        columns=specs,
        sort_action=sort_action,
        markdown_options={"html": False, "link_target": "_self"},
        cell_selectable=False,
        style_as_list_view=True,
        style_table={"overflowX": "auto"},
        style_header={
            "fontWeight": "600",
            "backgroundColor": "var(--surface-2)",
            "color": "var(--text-muted)",
            "borderBottom": "1px solid var(--border)",
            "textTransform": "none",
        },
        style_cell={
            "fontFamily": "var(--font-sans)",
            "fontSize": "14px",
            "padding": "10px 12px",
            "textAlign": "left",
            "border": "none",
            "borderBottom": "1px solid var(--border-soft)",
            "whiteSpace": "normal",
            "height": "auto",
            "maxWidth": "360px",
            "overflow": "hidden",
            "textOverflow": "ellipsis",
        },
        style_cell_conditional=[
            {"if": {"column_id": c}, "textAlign": "right", "fontVariantNumeric": "tabular-nums"} for c in numeric
        ]
        + [{"if": {"column_id": c}, "whiteSpace": "nowrap"} for c in nowrap],
        style_data_conditional=style_data_conditional or [],
        **kwargs,
    )


def csv_button(
    id: str,  # noqa: A002 - Dash's name for it
    download_id: str | None = None,
    label: str = "Download CSV",
    status_id: str | None = None,
) -> html.Div:
    """A download button (and its ``dcc.Download`` when ``download_id`` is given) for a page's table; a failed
    download says why in the ``status_id`` element beside it."""
    children: list[Any] = [html.Button(["⤓ ", label], id=id, className="button button-secondary", n_clicks=0)]
    if download_id:
        children.append(dcc.Download(id=download_id))
    if status_id:
        children.append(html.Div(id=status_id, className="status", role="status"))
    return html.Div(children, className="csv-button")


# A spreadsheet reads a cell starting with one of these as a formula (OWASP "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formulas(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell that a spreadsheet would run as a formula prefixed by ``'`` (OWASP).

    Text cells hold tracked data (paths, titles, error messages) that anyone may have sent. Numeric
    columns are numbers sitelens computed: a negative change stays a number.
    """
    clean = df.copy()
    for column in clean.columns:
        if pd.api.types.is_numeric_dtype(clean[column]) or pd.api.types.is_bool_dtype(clean[column]):
            continue
        clean[column] = clean[column].map(
            lambda v: "'" + v if isinstance(v, str) and v.startswith(_FORMULA_STARTS) else v
        )
    return clean


def csv_download(df: pd.DataFrame, filename: str) -> dict[str, Any]:
    """The ``dcc.Download`` payload for ``df`` as a UTF-8 CSV file (what a CSV callback returns), formulas defused."""
    if not filename.endswith(".csv"):
        filename += ".csv"
    return dcc.send_data_frame(neutralise_formulas(df).to_csv, filename, index=False)


# Clientside callback body for a list of pattern-matching buttons (Input(..., ALL), "n_clicks")): the id of the
# button really clicked, with the time, or no update. Rows drawn by a callback report their n_clicks when they
# appear; checking that in the browser keeps those reports from costing a round trip each.
CLICKED_ID_JS = """
function(clicks) {
    var context = window.dash_clientside.callback_context;
    var pressed = (context.triggered || []).filter(function (t) { return t.value; });
    if (!pressed.length) { return window.dash_clientside.no_update; }
    var propId = pressed[0].prop_id;
    var id = JSON.parse(propId.slice(0, propId.lastIndexOf(".")));
    id.at = Date.now();
    return id;
}
"""
