"""The frame around every analytics page: navbar, date range, time zone, filter builder and chips, overview strip.

Pure builders (no I/O). The callbacks that make the controls move live in ``dashboard/app.py``; a page only has to put
``analytics_frame(view)`` at the top of its layout and take ``Input(ids.VIEW, "data")`` in its data callbacks.
"""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dash import dcc, html

from dashboard import ids
from dashboard.components.common import (
    app_href,
    attrs,
    comparison_gap,
    format_change,
    format_duration,
    format_number,
    format_percent,
)
from dashboard.countries import country_flag, country_label, country_name, parse_countries, region_label
from dashboard.state import PRESETS, ViewState, today_in

__all__ = [
    "COMMON_ZONES",
    "OVERVIEW_METRICS",
    "analytics_frame",
    "controls_summary",
    "controls_toggle",
    "date_controls",
    "filter_builder",
    "filter_chips",
    "filter_label",
    "login_href",
    "safe_next",
    "suggestion_options",
    "page_gate",
    "typed_countries",
    "nav_links",
    "navbar",
    "overview_block",
    "overview_strip",
    "preset_of",
    "waiting_for_zone",
    "zone_names",
    "zone_options",
]

# Filter types that compare whole values: a country filter of these takes codes, typed as names or codes.
_WHOLE_VALUE_TYPES = ("equals", "not_equals")
PRESET_LABELS = {"today": "Today", "7d": "7 days", "30d": "30 days", "90d": "90 days"}
TYPE_LABELS = {
    "equals": "is",
    "not_equals": "is not",
    "contains": "contains",
    "not_contains": "does not contain",
    "starts_with": "starts with",
    "ends_with": "ends with",
    "regex": "matches regex",
    "not_regex": "does not match regex",
    "is_null": "is empty",
    "is_not_null": "is not empty",
    "greater_than": ">",
    "less_than": "<",
    "greater_than_or_equal": "≥",
    "less_than_or_equal": "≤",
}
PARAMETER_LABELS = {
    "pathname": "Page",
    "page_title": "Page title",
    "hostname": "Hostname",
    "querystring": "Query string",
    "referrer": "Referrer",
    "channel": "Channel",
    "entry_page": "Entry page",
    "exit_page": "Exit page",
    "country": "Country",
    "region": "Region",
    "city": "City",
    "language": "Language",
    "browser": "Browser",
    "browser_version": "Browser version",
    "operating_system": "OS",
    "operating_system_version": "OS version",
    "device_type": "Device",
    "dimensions": "Screen size",
    "utm_source": "UTM source",
    "utm_medium": "UTM medium",
    "utm_campaign": "UTM campaign",
    "utm_term": "UTM term",
    "utm_content": "UTM content",
    "event_name": "Event name",
    "user_id": "User id",
}
# Offered first; every other IANA zone can be found by typing (see zone_options).
COMMON_ZONES = (
    "UTC",
    "Europe/London",
    "Europe/Paris",
    "Europe/Berlin",
    "Europe/Madrid",
    "Europe/Moscow",
    "Africa/Johannesburg",
    "Asia/Dubai",
    "Asia/Kolkata",
    "Asia/Singapore",
    "Asia/Shanghai",
    "Asia/Tokyo",
    "Australia/Sydney",
    "Pacific/Auckland",
    "America/Sao_Paulo",
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Los_Angeles",
    "Pacific/Honolulu",
)
# (key on the Overview object, label, formatter, whether a rise is good)
OVERVIEW_METRICS = (
    ("users", "Users", format_number, True),
    ("sessions", "Sessions", format_number, True),
    ("pageviews", "Pageviews", format_number, True),
    ("bounce_rate", "Bounce rate", format_percent, False),
    ("session_duration", "Session duration", format_duration, True),
)


# --- navbar ----------------------------------------------------------------------------------------------------------
def nav_links(pages: Iterable[Mapping[str, Any]], view: ViewState, active_path: str | None) -> list[Any]:
    """Links to the pages registered with a ``nav_label``, keeping the site, dates, zone and filters of ``view``.

    ``pages`` are ``dash.page_registry`` values; ``nav_scope`` "site" pages need a site, "org" pages carry ``org``.
    """
    keep = ViewState(
        site_id=view.site_id,
        start_date=view.start_date,
        end_date=view.end_date,
        time_zone=view.time_zone,
        filters=view.filters,
        org=view.org,
    )
    links = []
    for page in sorted(pages, key=lambda p: (p.get("order") is None, p.get("order") or 0, p.get("name", ""))):
        label = page.get("nav_label")
        if not label:
            continue
        if page.get("nav_scope") == "site" and view.site_id is None:
            continue
        path = page["relative_path"]
        active = active_path is not None and active_path.rstrip("/") == path.rstrip("/")
        links.append(
            dcc.Link(
                label,
                href=path + keep.to_search(),
                className="nav-link active" if active else "nav-link",
                id=f"nav-{page['path'].strip('/').replace('/', '-') or 'home'}",
            )
        )
    return links


def navbar() -> html.Header:
    """The top bar: brand, page links (filled per URL), site picker, the signed-in person and sign-out.

    Below 1280 px the links and the account side fold behind a menu button (``assets/sitelens.js`` opens it;
    CSS shows the menu while the button's ``aria-expanded`` is true). The light/dark switch stays in the bar.
    """
    return html.Header(
        html.Div(
            [
                dcc.Link([html.Span("◔", className="brand-mark"), "sitelens"], href="/", className="brand"),
                html.Button(
                    [html.Span("☾", className="theme-toggle-light"), html.Span("☀", className="theme-toggle-dark")],
                    id=ids.THEME_TOGGLE,
                    className="button button-icon theme-toggle",
                    title="Switch between light and dark",
                    **attrs({"aria-label": "Dark theme", "aria-pressed": "false", "data-theme-toggle": "1"}),
                ),
                html.Button(
                    html.Span(className="nav-toggle-bars"),
                    id=ids.NAV_TOGGLE,
                    className="button button-icon nav-toggle",
                    title="Menu",
                    **attrs({"aria-label": "Menu", "aria-expanded": "false", "aria-controls": ids.NAV_MENU}),
                ),
                html.Div(
                    [
                        html.Nav(id=ids.NAV_LINKS, className="nav-links", **attrs({"aria-label": "Pages"})),
                        html.Div(
                            [
                                dcc.Dropdown(
                                    id=ids.SITE_PICKER,
                                    options=[],
                                    placeholder="Choose a site",
                                    clearable=False,
                                    searchable=True,
                                    className="site-picker",
                                ),
                                html.Span(id=ids.USER_EMAIL, className="user-email"),
                                html.Button(
                                    "Sign out",
                                    id=ids.SIGN_OUT,
                                    n_clicks=0,
                                    className="button button-ghost",
                                    hidden=True,
                                ),
                            ],
                            className="nav-right",
                        ),
                    ],
                    id=ids.NAV_MENU,
                    className="nav-menu",
                ),
            ],
            className="navbar-inner",
        ),
        id=ids.NAVBAR,
        className="navbar",
    )


# --- controls --------------------------------------------------------------------------------------------------------
def preset_of(view: ViewState, today: Any = None) -> str | None:
    """The preset (``today``, ``7d``...) whose range is exactly the view's, or None for a custom range."""
    if view.start_date is None or view.end_date is None:
        return None
    end = today or today_in(view.time_zone)
    if view.end_date != end:
        return None
    for preset, days in PRESETS.items():
        if view.days == days:
            return preset
    return None


@functools.cache
def _all_zones() -> tuple[str, ...]:
    # Region/City names only: the legacy aliases (EST5EDT, Etc/GMT+3...) confuse more than they help.
    return tuple(
        sorted(z for z in zoneinfo.available_timezones() if "/" in z and not z.startswith(("Etc/", "SystemV/")))
    )


def zone_options(current: str | None, search: str | None = None) -> list[dict[str, str]]:
    """Time zone options: the current zone and the common zones; while typing, every IANA zone matching ``search``.

    The page starts with the short list (a selector holding all ~500 zones costs the browser tens of milliseconds to
    index on every page); ``ZONE_SEARCH_JS`` does the same as this function in the browser as a person types.
    """
    term = (search or "").strip().lower().replace(" ", "_")
    zones = [z for z in zone_names() if term in z.lower()] if term else list(COMMON_ZONES)
    if current and current not in zones:
        zones.insert(0, current)  # the chosen zone stays known to the selector
    return [{"label": z.replace("_", " "), "value": z} for z in zones]


@functools.cache
def zone_names() -> tuple[str, ...]:
    """Every zone the selector can find: the common zones first, then every other IANA Region/City zone."""
    seen = set(COMMON_ZONES)
    return COMMON_ZONES + tuple(z for z in _all_zones() if z not in seen)


# The browser side of zone_options: (search_value, value, {"common": [...], "all": zone_names()}) -> options.
ZONE_SEARCH_JS = """
function(search, current, names) {
    if (!names) { return window.dash_clientside.no_update; }
    var term = (search || "").trim().toLowerCase().replace(/ /g, "_");
    var zones = term
        ? names.all.filter(function (z) { return z.toLowerCase().indexOf(term) >= 0; })
        : names.common.slice();
    if (current && zones.indexOf(current) < 0) { zones.unshift(current); }
    return zones.map(function (z) { return {label: z.replace(/_/g, " "), value: z}; });
}
"""


def date_controls(view: ViewState, today: Any = None) -> html.Div:
    """Presets, a custom range picker, step back/forward by the range's length, and the time zone selector."""
    return html.Div(
        [
            html.Div(
                [
                    html.Button("‹", id=ids.DATE_BACK, n_clicks=0, className="button button-icon", title="Previous"),
                    dcc.RadioItems(
                        id=ids.DATE_PRESET,
                        options=[{"label": PRESET_LABELS[p], "value": p} for p in PRESETS],
                        value=preset_of(view, today),
                        className="segmented",
                        inline=True,
                    ),
                    html.Button(
                        "›",
                        id=ids.DATE_FORWARD,
                        n_clicks=0,
                        className="button button-icon",
                        title="Next",
                        # Nothing to see past today.
                        disabled=view.end_date is not None and view.end_date >= (today or today_in(view.time_zone)),
                    ),
                ],
                className="date-steps",
            ),
            dcc.DatePickerRange(
                id=ids.DATE_RANGE,
                start_date=view.start_date.isoformat() if view.start_date else None,
                end_date=view.end_date.isoformat() if view.end_date else None,
                display_format="D MMM YYYY",
                first_day_of_week=1,
                minimum_nights=0,
                updatemode="bothdates",
                max_date_allowed=(today or today_in(view.time_zone)).isoformat(),
                className="date-range",
            ),
            dcc.Dropdown(
                id=ids.TIME_ZONE,
                options=zone_options(view.time_zone),
                value=view.time_zone,
                clearable=False,
                searchable=True,
                className="zone-picker",
            ),
        ],
        className="date-controls",
    )


def filter_label(spec: Mapping[str, Any]) -> str:
    """A filter as a person reads it: ``Channel is Direct or Organic Search``."""
    parameter = spec.get("parameter", "")
    name = PARAMETER_LABELS.get(parameter) or (
        f"Property {parameter[5:]}" if parameter.startswith("prop:") else parameter
    )
    kind = spec.get("type", "equals")
    values = [_value_label(parameter, kind, v) for v in spec.get("value", [])]
    if kind in ("is_null", "is_not_null"):
        return f"{name} {TYPE_LABELS[kind]}"
    joiner = " and " if kind.startswith("not_") else " or "
    return f"{name} {TYPE_LABELS.get(kind, kind)} {joiner.join(values)}"


def _value_label(parameter: str, kind: str, value: Any) -> str:
    # Whole country and region codes read best as names; a part of one ("starts with D") stays as typed.
    if parameter == "channel" and value == "":
        return "Direct"
    if kind in _WHOLE_VALUE_TYPES and parameter == "country":
        return country_label(value) or "unknown"
    if kind in _WHOLE_VALUE_TYPES and parameter == "region":
        return region_label(value) or "unknown"
    return str(value)


def filter_chips(filters: Sequence[Mapping[str, Any]]) -> html.Div:
    """One removable chip per active filter (the × button's id carries the filter's position)."""
    chips = [
        html.Span(
            [
                html.Span(filter_label(spec), className="chip-text"),
                html.Button(
                    "×",
                    id={"type": ids.FILTER_CHIP_REMOVE_TYPE, "index": position},
                    n_clicks=0,
                    className="chip-remove",
                    title="Remove this filter",
                    **attrs({"aria-label": f"Remove filter {filter_label(spec)}"}),
                ),
            ],
            className="chip",
        )
        for position, spec in enumerate(filters)
    ]
    return html.Div(chips, id=ids.FILTER_CHIPS, className="chips")


def filter_builder() -> html.Div:
    """Parameter, comparison and values (comma-separated) of a new filter, with an Add button."""
    return html.Div(
        [
            dcc.Dropdown(
                id=ids.FILTER_PARAMETER,
                options=[{"label": label, "value": p} for p, label in PARAMETER_LABELS.items()],
                placeholder="Filter by…",
                className="filter-parameter",
            ),
            dcc.Dropdown(
                id=ids.FILTER_TYPE,
                options=[{"label": label, "value": t} for t, label in TYPE_LABELS.items()],
                value="equals",
                clearable=False,
                className="filter-type",
            ),
            dcc.Input(
                id=ids.FILTER_VALUE,
                type="text",
                placeholder="value, another value",
                debounce=True,
                list=ids.FILTER_SUGGESTIONS,
                autoComplete="off",
                className="input filter-value",
            ),
            html.Datalist(id=ids.FILTER_SUGGESTIONS),
            html.Button("Add filter", id=ids.FILTER_ADD, n_clicks=0, className="button button-secondary"),
            # Why a typed value was not added (a country name no country has); empty, and hidden, otherwise.
            html.Div(
                id=ids.FILTER_MESSAGE,
                className="field-error filter-message",
                role="alert",
                style={"flexBasis": "100%", "marginTop": 0},
            ),
        ],
        className="filter-builder",
    )


def overview_strip(current: Any, previous: Any = None) -> html.Div:
    """The overview numbers of the range, each with its change against the previous period of the same length.

    ``current`` and ``previous`` are ``api_client.Overview`` objects or mappings with the same keys.
    """

    def value(source: Any, key: str) -> Any:
        if source is None:
            return None
        return source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)

    # A percentage needs a fair base: none while the numbers load, and a plain sentence instead when the previous
    # period has no sessions or too few to compare with (a site or a demo that only just started tracking).
    unfair: str | None
    if current is None:
        unfair = ""
    else:
        unfair = comparison_gap(value(current, "sessions"), value(previous, "sessions"))
    tiles = []
    for key, label, fmt, rise_is_good in OVERVIEW_METRICS:
        now, before = value(current, key), value(previous, key)
        text, direction = (
            format_change(now, before, points=key == "bounce_rate") if unfair is None else (unfair, "none")
        )
        tone = "neutral"
        if direction in ("up", "down"):
            tone = "good" if (direction == "up") == rise_is_good else "bad"
        tiles.append(
            html.Div(
                [
                    html.Div(label, className="stat-label"),
                    html.Div(fmt(now), className="stat-value", id=f"{ids.OVERVIEW}-{key}"),
                    html.Div(
                        text,
                        className=f"stat-change stat-{direction} stat-{tone}",
                        title="Change against the previous period of the same length",
                    ),
                ],
                className="stat",
            )
        )
    # "stats-loaded" marks numbers from the API, not the placeholders (the benchmark waits for it).
    return html.Div(tiles, className="stats" if current is None else "stats stats-loaded")


def analytics_frame(
    view: ViewState,
    *,
    overview: bool = True,
    overview_body: Any = None,
    overview_after_body: bool = False,
    today: Any = None,
) -> html.Div:
    """Everything above an analytics page's own content: controls, filter chips, overview strip, and the view store.

    ``overview_body`` is the strip already drawn (from cached answers); without it the frame carries an
    ``ids.OVERVIEW_LOAD`` store, whose callback loads the strip, or with ``overview_after_body`` an
    ``ids.OVERVIEW_AFTER_TYPE`` store that the page's body callback fills once the page's own data is on screen (the
    strip's queries then do not compete with the page's main one).
    """
    children: list[Any] = [
        dcc.Store(id=ids.VIEW, data=view.to_dict()),
        dcc.Store(id=ids.FRAME_HREF),
        controls_toggle(view, today),
        html.Div([date_controls(view, today), filter_builder()], className="controls", id=ids.CONTROLS),
        filter_chips(view.filters),
    ]
    if overview:
        if overview_body is None and overview_after_body:
            children.append(dcc.Store(id={"type": ids.OVERVIEW_AFTER_TYPE, "index": 0}))
        elif overview_body is None:
            children.append(dcc.Store(id=ids.OVERVIEW_LOAD, data=view.to_dict()))
        children.append(overview_block(ids.OVERVIEW_BODY, overview_body, block_id=ids.OVERVIEW))
    return html.Div(children, className="frame")


def controls_summary(view: ViewState, today: Any = None) -> str:
    """The view's range and filters in a few words, for the folded controls: ``30 days · 2 filters``."""
    preset = preset_of(view, today)
    if preset is not None:
        when = PRESET_LABELS[preset]
    elif view.start_date is not None and view.end_date is not None:
        when = f"{view.start_date:%-d %b} – {view.end_date:%-d %b %Y}"
    else:
        when = "All dates"
    count = len(view.filters)
    return f"{when} · {count} filter{'' if count == 1 else 's'}" if count else when


def controls_toggle(view: ViewState, today: Any = None) -> html.Button:
    """The button that unfolds the date and filter controls on a phone (``assets/sitelens.js`` flips it)."""
    return html.Button(
        [
            html.Span(
                ["Dates and filters ", html.Span(controls_summary(view, today), className="controls-toggle-summary")]
            ),
            html.Span("▾", className="controls-toggle-chevron", **attrs({"aria-hidden": "true"})),
        ],
        id=ids.CONTROLS_TOGGLE,
        className="button button-secondary controls-toggle",
        **attrs({"aria-expanded": "false", "aria-controls": ids.CONTROLS}),
    )


def overview_block(body_id: str, body: Any = None, *, block_id: str | None = None) -> html.Div:
    """The overview strip's place on a page: ``body`` (an ``overview_strip``) or empty tiles until a callback
    fills ``body_id``."""
    return html.Div(
        dcc.Loading(
            html.Div(overview_strip(None) if body is None else body, id=body_id),
            type="dot",
            color="var(--accent)",
            delay_show=150,
            overlay_style={"visibility": "visible", "opacity": 0.45},
        ),
        className="overview",
        **attrs({"id": block_id} if block_id else {}),
    )


def waiting_for_zone() -> html.Div:
    """What a page shows for the moment before the browser has told us its time zone."""
    return html.Div(html.Div(className="spinner"), className="waiting")


def login_href(path: str, search: str = "", reason: str | None = None) -> str:
    """The sign-in URL (without the app's URL prefix) that comes back to ``path`` + ``search`` afterwards."""
    from urllib.parse import urlencode

    params = {"next": path + search}
    if reason:
        params["reason"] = reason
    return "/login?" + urlencode(params)


def safe_next(raw: Any) -> str:
    """Where to go after sign-in: a relative path on this site only, else the site list.

    Refused: absolute URLs (``https://evil``), scheme-relative ones (``//evil``), backslashes (``/\\evil``, which
    browsers read as ``//evil``) and control characters (browsers drop tabs and newlines, so ``/<tab>/evil`` would
    become ``//evil``).
    """
    if not isinstance(raw, str) or not raw.startswith("/") or raw.startswith("//") or "\\" in raw:
        return "/sites"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in raw):
        return "/sites"
    return raw


def page_gate(
    auth: Mapping[str, Any] | None,
    browser_zone: str | None,
    path: str,
    query: Mapping[str, Any],
    *,
    need_site: bool = True,
) -> tuple[ViewState | None, Any]:
    """Decide whether a signed-in analytics page can render: ``(view, None)``, or ``(None, what to show instead)``.

    Not signed in -> a redirect to sign-in that comes back here; the browser zone not known yet (and none in the URL)
    -> a spinner; no site in the URL -> a redirect to the site picker.
    """
    from dashboard.components.common import redirect
    from dashboard.state import parse_view

    raw = {k: v for k, v in query.items() if isinstance(v, str)}
    if not (auth and auth.get("token")):
        from urllib.parse import urlencode

        search = "?" + urlencode(raw) if raw else ""
        return None, redirect(app_href(login_href(path, search)), "Sign in to continue")
    if browser_zone is None and not raw.get("time_zone"):
        return None, waiting_for_zone()
    view = parse_view(raw, default_zone=browser_zone)
    if need_site and view.site_id is None:
        return None, redirect(app_href("/sites"), "Choose a site")
    return view, None


def suggestion_options(rows: Sequence[Any], parameter: str) -> list[html.Option]:
    """Datalist options from metric rows (most sessions first); direct traffic is offered as "Direct".

    Countries are offered by name (what people type; the filter turns it back into the code) with flag and code
    beside it, regions by code with their name beside it.
    """
    options = []
    for row in rows:
        value = row.get("value") if isinstance(row, Mapping) else getattr(row, "value", None)
        if value is None or (value == "" and parameter != "channel"):
            continue
        if parameter == "country":
            name = country_name(value)
            label = f"{country_flag(value)} {value}".strip() if name != value else None
            options.append(html.Option(value=name, label=label) if label else html.Option(value=str(value)))
        elif parameter == "region" and region_label(value) != value:
            options.append(html.Option(value=str(value), label=region_label(value)))
        else:
            options.append(html.Option(value="Direct" if parameter == "channel" and value == "" else str(value)))
    return options


def typed_countries(parameter: str | None, kind: str | None, raw: str | None) -> tuple[list[str] | None, str | None]:
    """A country filter compared whole (is / is not), as typed: ``(codes, None)``, or ``(None, why)`` when a value
    names no country. ``(None, None)`` for every other filter, whose values go to the API as typed."""
    if parameter != "country" or kind not in _WHOLE_VALUE_TYPES:
        return None, None
    codes, problems = parse_countries(raw)
    if problems:
        return None, " ".join(lookup.problem or "" for lookup in problems[:3])
    return codes, None
