"""``create_dashboard(settings)``: the sitelens Dash app (pages, frame, callbacks); ``serve_dashboard`` runs it alone.

The dashboard talks to the API only through ``api_client``; nothing connects at import time. Pages live in
``dashboard/pages/`` (one module each, ``dash.register_page``); the frame (navbar, date range, zone, filters, overview
strip) is built by ``dashboard.components.frame`` and made interactive by the callbacks registered here.

Every page layout receives, besides the URL query values, ``auth`` and ``share`` (the credential stores) and
``browser_zone`` (the browser's IANA zone, ``None`` until the browser has reported it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import dash
import flask
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import frame
from dashboard.loads import shown
from dashboard.settings import DashboardSettings
from dashboard.state import ViewState, parse_view, preset_range, shift_range, today_in

if TYPE_CHECKING:
    import httpx

    from api_client import AnalyticsAPI

__all__ = ["ASSETS_FOLDER", "PAGES_FOLDER", "WSGI_THREADS", "asgi_app", "create_dashboard", "serve_dashboard"]

PAGES_FOLDER = Path(__file__).resolve().parent / "pages"
ASSETS_FOLDER = Path(__file__).resolve().parent / "assets"
# Threads serving the dashboard's requests. Most of a callback's time is a wait for the API, which can last tens of
# seconds for a long range on a large store (``DashboardSettings.api_timeout``); a browser keeps up to six requests
# open per viewer, so the adapter's default of 10 let two viewers of slow pages hold every thread, and the next
# viewer's page, sign-in included, waited behind them.
WSGI_THREADS = 64
_COMPARISON_TYPES = {"greater_than", "less_than", "greater_than_or_equal", "less_than_or_equal"}


def _shell() -> html.Div:
    """The layout around every page: stores, the navigation Location, navbar and the page container."""
    return html.Div(
        [
            dcc.Store(id=ids.AUTH, storage_type="session"),
            dcc.Store(id=ids.SHARE, storage_type="session"),
            dcc.Store(id=ids.BROWSER_ZONE, storage_type="local"),
            dcc.Store(id=ids.SITE_CHOICE),
            dcc.Store(id=ids.ZONE_NAMES, data={"common": list(frame.COMMON_ZONES), "all": list(frame.zone_names())}),
            dcc.Location(id=ids.NAVIGATE, refresh="callback-nav"),
            frame.navbar(),
            html.Main(dash.page_container, id=ids.MAIN, className="main"),
        ],
        className="app",
    )


def _path(pathname: str | None) -> str:
    """``pathname`` without the app's URL prefix, always starting with ``/``."""
    return "/" + (dash.strip_relative_path(pathname or "/") or "")


def _filter_values(raw: str | None, kind: str) -> list[Any]:
    """Comma-separated values as the API wants them (numbers for numeric comparisons)."""
    values = [part.strip() for part in (raw or "").split(",") if part.strip()]
    if kind in _COMPARISON_TYPES:
        numbers: list[Any] = []
        for part in values:
            try:
                numbers.append(int(part) if part.lstrip("-").isdigit() else float(part))
            except ValueError:
                numbers.append(part)
        return numbers
    return values


def _register_frame_callbacks(app: dash.Dash) -> None:
    """The frame's callbacks, registered on ``app`` itself so each dashboard in a process gets its own."""

    # The browser's zone becomes the default time zone; a store write only when it changed avoids a second render.
    app.clientside_callback(
        """
        function(_, current) {
            var zone = null;
            try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { zone = null; }
            zone = zone || "UTC";
            return zone === current ? window.dash_clientside.no_update : zone;
        }
        """,
        Output(ids.BROWSER_ZONE, "data"),
        Input(ids.NAVBAR, "id"),
        State(ids.BROWSER_ZONE, "data"),
    )

    # A share URL (/share/<siteId>#<key>) carries the key in the fragment, which never reaches a server: copy it into
    # the session store so every call of this tab sends it as X-Private-Key.
    # Every move inside the shared view (tabs, links, dates, filters) goes through the Location, whose ``href``
    # changes each time; a move that dropped the fragment gets the key put back, so the address stays shareable.
    app.clientside_callback(
        """
        function(_href, current) {
            var match = /\\/share\\/([^\\/?#]+)/.exec(window.location.pathname || "");
            if (!match) { return window.dash_clientside.no_update; }
            var hash = window.location.hash;
            if (!hash || hash.length < 2) {
                if (current && current.privateKey && String(current.siteId) === match[1]) {
                    var here = window.location.pathname + window.location.search;
                    window.history.replaceState(window.history.state, "", here + "#" + current.privateKey);
                }
                return window.dash_clientside.no_update;
            }
            var key = decodeURIComponent(hash.slice(1));
            if (current && current.privateKey === key && String(current.siteId) === match[1]) {
                return window.dash_clientside.no_update;
            }
            return {privateKey: key, siteId: match[1]};
        }
        """,
        Output(ids.SHARE, "data"),
        Input(ids.NAVIGATE, "href"),
        State(ids.SHARE, "data"),
    )

    @app.callback(
        Output(ids.NAV_LINKS, "children"),
        Output(ids.USER_EMAIL, "children"),
        Output(ids.SIGN_OUT, "hidden"),
        Output(ids.NAVBAR, "className"),
        Output(ids.SITE_PICKER, "options"),
        Output(ids.SITE_PICKER, "value"),
        Input(ids.NAVIGATE, "pathname"),
        Input(ids.NAVIGATE, "search"),
        Input(ids.AUTH, "data"),
        State(ids.SITE_PICKER, "options"),
    )
    def update_navbar(pathname: str | None, search: str | None, auth: dict | None, options: list | None) -> tuple:
        """Page links keep the current site, dates, zone and filters; the right side shows who is signed in and
        offers every site the person can open (labelled with its organization), the URL's site selected.

        One callback for the whole bar: the page load then costs one round trip for it, not two.
        """
        path = _path(pathname)
        signed_in = session.is_signed_in(auth)
        shared = path.startswith("/share/")
        mode = "navbar navbar-share" if shared else ("navbar" if signed_in else "navbar navbar-anonymous")
        if shared:
            badge = html.Span("Shared view · read-only", className="badge badge-muted share-badge")
            return [badge], "", True, mode, no_update, no_update
        if not signed_in:
            return [], "", True, mode, [], None
        view = parse_view(search)
        links = frame.nav_links(dash.page_registry.values(), view, path)
        email = (auth or {}).get("email") or ""
        if f"{ids.AUTH}.data" not in ctx.triggered_prop_ids and options:
            # Moving between pages: the person's sites are already listed.
            return links, email, False, mode, no_update, view.site_id
        return links, email, False, mode, _site_options(auth), view.site_id

    # The picker also follows the URL; only a site the person picked (not the one the URL already shows) moves.
    # Checked in the browser, so a page load does not pay a round trip for the picker echoing the URL.
    app.clientside_callback(
        """
        function(siteId, search) {
            if (siteId === null || siteId === undefined) { return window.dash_clientside.no_update; }
            var current = new URLSearchParams(search || "").get("site");
            if (current !== null && String(siteId) === current) { return window.dash_clientside.no_update; }
            return {site: siteId, at: Date.now()};
        }
        """,
        Output(ids.SITE_CHOICE, "data"),
        Input(ids.SITE_PICKER, "value"),
        State(ids.NAVIGATE, "search"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output(ids.NAVIGATE, "href", allow_duplicate=True),
        Input(ids.SITE_CHOICE, "data"),
        State(ids.NAVIGATE, "pathname"),
        State(ids.NAVIGATE, "search"),
        prevent_initial_call=True,
    )
    def pick_site(choice: dict | None, pathname: str | None, search: str | None) -> str:
        """Choosing a site opens the same page for it (its overview when the current page is not about one site)."""
        view = parse_view(search)
        site_id = (choice or {}).get("site")
        if site_id is None or site_id == view.site_id:
            raise PreventUpdate
        path = _path(pathname)
        site_pages = {p["relative_path"] for p in dash.page_registry.values() if p.get("nav_scope") == "site"}
        target = path if dash.get_relative_path(path) in site_pages else "/overview"
        new_search = view.replace(site_id=site_id, goal=None, error=None, page=1, sort=None, order=None).to_search()
        return dash.get_relative_path(target) + new_search

    # The time zone selector starts with the common zones; typing searches every zone, in the browser.
    app.clientside_callback(
        frame.ZONE_SEARCH_JS,
        Output(ids.TIME_ZONE, "options"),
        Input(ids.TIME_ZONE, "search_value"),
        State(ids.TIME_ZONE, "value"),
        State(ids.ZONE_NAMES, "data"),
        prevent_initial_call=True,
    )

    # Frame and page controls write the next URL into the page's own store (so they do not fire when the page is
    # drawn); this moves the browser there without a round trip.
    app.clientside_callback(
        """
        function(href) { return href ? href : window.dash_clientside.no_update; }
        """,
        Output(ids.NAVIGATE, "href", allow_duplicate=True),
        Input(ids.FRAME_HREF, "data"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output(ids.FRAME_HREF, "data"),
        Input(ids.DATE_PRESET, "value"),
        Input(ids.DATE_BACK, "n_clicks"),
        Input(ids.DATE_FORWARD, "n_clicks"),
        Input(ids.DATE_RANGE, "start_date"),
        Input(ids.DATE_RANGE, "end_date"),
        Input(ids.TIME_ZONE, "value"),
        Input(ids.FILTER_ADD, "n_clicks"),
        Input(ids.FILTER_VALUE, "n_submit"),
        Input({"type": ids.FILTER_CHIP_REMOVE_TYPE, "index": ALL}, "n_clicks"),
        State(ids.VIEW, "data"),
        State(ids.FILTER_PARAMETER, "value"),
        State(ids.FILTER_TYPE, "value"),
        State(ids.FILTER_VALUE, "value"),
        State(ids.NAVIGATE, "pathname"),
        prevent_initial_call=True,
    )
    def change_view(
        preset: str | None,
        _back: int,
        _forward: int,
        start: str | None,
        end: str | None,
        zone: str | None,
        _add: int,
        _submit: int,
        _removes: list,
        view_data: dict | None,
        parameter: str | None,
        kind: str | None,
        raw_value: str | None,
        pathname: str | None,
    ) -> str:
        """Every frame control writes the new view into the URL; the page re-renders from it."""
        if not view_data or ctx.triggered_id is None:
            raise PreventUpdate
        view = ViewState.from_dict(view_data)
        trigger = ctx.triggered_id
        # Controls re-rendered with the page report their initial values; only real changes move.
        if not any(t.get("value") for t in ctx.triggered if "n_clicks" in t["prop_id"]) and trigger in (
            ids.DATE_BACK,
            ids.DATE_FORWARD,
            ids.FILTER_ADD,
        ):
            raise PreventUpdate
        changes: dict[str, Any] = {"page": 1}
        if trigger == ids.DATE_PRESET:
            if not preset:
                raise PreventUpdate
            changes["start_date"], changes["end_date"] = preset_range(preset, today_in(view.time_zone))
        elif trigger in (ids.DATE_BACK, ids.DATE_FORWARD):
            steps = -1 if trigger == ids.DATE_BACK else 1
            if view.start_date is None or view.end_date is None:
                raise PreventUpdate
            changes["start_date"], changes["end_date"] = shift_range(view.start_date, view.end_date, steps)
        elif trigger == ids.DATE_RANGE:
            from datetime import date

            if not start or not end:
                raise PreventUpdate
            first, last = date.fromisoformat(start[:10]), date.fromisoformat(end[:10])
            if last < first:
                first, last = last, first
            if (first, last) == (view.start_date, view.end_date):
                raise PreventUpdate
            changes["start_date"], changes["end_date"] = first, last
        elif trigger == ids.TIME_ZONE:
            if not zone or zone == view.time_zone:
                raise PreventUpdate
            changes["time_zone"] = zone
        elif trigger in (ids.FILTER_ADD, ids.FILTER_VALUE):
            if not parameter or not kind:
                raise PreventUpdate
            values = _filter_values(raw_value, kind)
            codes, problem = frame.typed_countries(parameter, kind, raw_value)
            if problem:
                raise PreventUpdate  # show_filter_problem says why beside the filter
            values = values if codes is None else codes
            if not values and kind not in ("is_null", "is_not_null"):
                raise PreventUpdate
            changes["filters"] = [*view.filters, {"parameter": parameter, "type": kind, "value": values}]
        elif isinstance(trigger, dict) and trigger.get("type") == ids.FILTER_CHIP_REMOVE_TYPE:
            if not ctx.triggered[0].get("value"):
                raise PreventUpdate
            position = trigger["index"]
            changes["filters"] = [f for i, f in enumerate(view.filters) if i != position]
        else:
            raise PreventUpdate
        return dash.get_relative_path(_path(pathname)) + view.to_search(**changes)

    @app.callback(
        Output(ids.FILTER_MESSAGE, "children"),
        Input(ids.FILTER_ADD, "n_clicks"),
        Input(ids.FILTER_VALUE, "n_submit"),
        Input(ids.FILTER_PARAMETER, "value"),
        Input(ids.FILTER_TYPE, "value"),
        State(ids.FILTER_VALUE, "value"),
        prevent_initial_call=True,
    )
    def show_filter_problem(_add: int, _submit: int, parameter: str | None, kind: str | None, raw: str | None) -> str:
        """Beside the filter: why a typed value was not added (a country that does not exist); cleared on change."""
        if ctx.triggered_id in (ids.FILTER_PARAMETER, ids.FILTER_TYPE):
            return ""
        return frame.typed_countries(parameter, kind, raw)[1] or ""

    @app.callback(
        Output(ids.OVERVIEW_BODY, "children"),
        Input(ids.OVERVIEW_LOAD, "data"),
        State(ids.AUTH, "data"),
    )
    def load_overview(view_data: dict | None, auth: dict | None) -> Any:
        """The overview strip: this range and the previous range of the same length (two cached calls).

        Runs only when the page layout could not draw the strip from cached answers (``ids.OVERVIEW_LOAD``). Its
        one Input is that store: Dash also runs a callback whose output appears on a page, and a page drawn without
        the store then has none of its inputs, so it stays quiet. (The shared view draws its strip with its content.)
        """
        return _overview(ViewState.from_dict(view_data), auth)

    @app.callback(
        Output(ids.OVERVIEW_BODY, "children", allow_duplicate=True),
        Input({"type": ids.OVERVIEW_AFTER_TYPE, "index": ALL}, "data"),
        State(ids.AUTH, "data"),
        prevent_initial_call=True,
    )
    def load_overview_after(views: list, auth: dict | None) -> Any:
        """The overview strip of a page that loads its own body first: the body's callback hands over the view."""
        if not views or not views[0]:
            raise PreventUpdate
        return _overview(ViewState.from_dict(views[0]), auth)

    @app.callback(
        Output(ids.FILTER_SUGGESTIONS, "children"),
        Input(ids.FILTER_PARAMETER, "value"),
        State(ids.VIEW, "data"),
        State(ids.AUTH, "data"),
        State(ids.SHARE, "data"),
        State(ids.NAVIGATE, "pathname"),
        prevent_initial_call=True,
    )
    def suggest_filter_values(
        parameter: str | None, view_data: dict | None, auth: dict | None, share: dict | None, pathname: str | None
    ) -> list:
        """The most common values of the chosen parameter in the view, offered while typing a filter value."""
        view = ViewState.from_dict(view_data)
        if not parameter or view.site_id is None:
            return []
        from api_client import APIError

        shared = _path(pathname).startswith("/share/")
        api = session.shared_api(share, view.site_id) if shared else session.api_for(auth)
        try:
            page = session.cached_call(api, "metric", view.site_id, parameter, view.query(), page=1, limit=50)
        except APIError:
            return []  # suggestions are a convenience; typing a value still works
        return frame.suggestion_options(page.rows, parameter)

    @app.callback(
        Output(ids.AUTH, "data", allow_duplicate=True),
        Output(ids.NAVIGATE, "href", allow_duplicate=True),
        Input(ids.SIGN_OUT, "n_clicks"),
        State(ids.AUTH, "data"),
        prevent_initial_call=True,
    )
    def sign_out(n_clicks: int, auth: dict | None) -> tuple:
        """Sign-out ends a sign-in session on the server too (best effort), then forgets the credential."""
        if not n_clicks:
            raise PreventUpdate
        if session.is_signed_in(auth) and (auth or {}).get("kind") != "key":
            from api_client import APIError

            try:
                session.api_for(auth).logout()
            except APIError:
                pass  # the token may already be gone; forgetting it locally is what matters
        return None, dash.get_relative_path("/login?reason=signed_out")


def _overview(view: ViewState, auth: dict | None) -> Any:
    """The overview strip of ``view`` for the signed-in person, against the API's previous period.

    One ``compare=previous`` answer, the one the overview page's tiles are drawn from, so every page shows the same
    change for the same range: a range ending today ends now, and the API ends its previous period at the same time
    of day, not at the end of that day.
    """
    if view.site_id is None:
        raise PreventUpdate
    api = session.api_for(auth)
    return shown(
        lambda: session.cached_call(api, "overview_compared", view.site_id, view.query()),
        lambda both: frame.overview_strip(both.current, both.previous),
    )


def _site_options(auth: dict | None) -> list[dict[str, Any]]:
    """The site picker's options: every site the person can open, labelled with its organization."""
    from api_client import APIError

    api = session.api_for(auth)
    entries = []
    try:
        for org in session.cached_call(api, "organizations"):
            for site in session.cached_call(api, "org_sites", org.id):
                entries.append({"label": f"{site.name or site.domain} · {org.name}", "value": site.site_id})
    except APIError:
        # The page itself reports the failure (and handles an expired credential); the picker just stays empty.
        return []
    return entries


def create_dashboard(
    settings: DashboardSettings,
    *,
    api: AnalyticsAPI | None = None,
    transport: httpx.BaseTransport | None = None,
    server: flask.Flask | None = None,
    requests_pathname_prefix: str = "/",
) -> dash.Dash:
    """Build the dashboard for the API at ``settings.api_url``; nothing is contacted until a request.

    ``api`` (a credential-less ``AnalyticsAPI``) or ``transport`` (for the client built from ``settings``) decide how
    the API is reached: tests pass the API app in-process (``fastapi.testclient.TestClient``), no port needed. The
    dashboard's state (answer cache, base client) lives on its Flask ``server``.
    """
    # Dash types ``server`` as a bool or a callable and ``update_title`` as str, but documents a Flask app and None
    # (keep the title while callbacks run) for them.
    extra: dict[str, Any] = {"server": server if server is not None else True, "update_title": None}
    app = dash.Dash(
        "dashboard",
        use_pages=True,
        pages_folder=str(PAGES_FOLDER),
        assets_folder=str(ASSETS_FOLDER),
        requests_pathname_prefix=requests_pathname_prefix,
        routing_callback_inputs={
            "auth": State(ids.AUTH, "data"),
            "share": State(ids.SHARE, "data"),
            "browser_zone": Input(ids.BROWSER_ZONE, "data"),
        },
        suppress_callback_exceptions=True,
        title="sitelens",
        serve_locally=True,
        meta_tags=[{"name": "viewport", "content": "width=device-width, initial-scale=1"}],
        **extra,
    )
    app.layout = _shell
    session.bind_server(app.server, settings, api=api, transport=transport)
    _register_frame_callbacks(app)
    _add_security_headers(app)
    _cache_fingerprinted_assets(app)
    return app


# How long a browser keeps an asset whose URL carries its modification time: a changed file gets a new URL.
_FINGERPRINTED_MAX_AGE = 365 * 24 * 3600


def _cache_fingerprinted_assets(app: dash.Dash) -> None:
    """Let browsers keep the ``assets/`` files a page links with ``?m=<mtime>``, without asking again.

    Flask answers static files with ``no-cache``, so every page load revalidated each stylesheet and script (ten
    304 round trips), and the page's scripts waited for the stylesheets before them. Dash's own bundles are already
    served this way. A URL without the fingerprint (the map geometry plotly fetches) keeps ``no-cache``.
    """
    prefix = app.config.routes_pathname_prefix + app.config.assets_url_path.strip("/") + "/"

    @app.server.after_request
    def cache_assets(response: flask.Response) -> flask.Response:
        request = flask.request
        if response.status_code in (200, 304) and "m" in request.args and request.path.startswith(prefix):
            response.cache_control.no_cache = None
            response.cache_control.public = True
            response.cache_control.max_age = _FINGERPRINTED_MAX_AGE
            response.cache_control.immutable = True
        return response


def _add_security_headers(app: dash.Dash) -> None:
    """A CSP the dashboard runs under, and the headers that keep it out of frames and its URLs to itself.

    Dash's inline scripts (the renderer start-up and clientside callbacks) are allowed by their hashes, which
    are known once Dash has set itself up on the first request. No 'unsafe-eval': the production bundles of
    Dash and plotly.js draw every page without it. plotly and Dash components add inline styles, hence
    style-src 'unsafe-inline'.
    """
    policy: list[str] = []

    @app.server.after_request
    def security_headers(response: flask.Response) -> flask.Response:
        if not policy:
            scripts = " ".join(["'self'", *app.csp_hashes()])
            policy.append(
                f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
                "frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
            )
        response.headers.setdefault("Content-Security-Policy", policy[0])
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


def asgi_app(app: dash.Dash) -> Any:
    """The dashboard ``app`` as an ASGI app: its Flask server on ``WSGI_THREADS`` threads."""
    from a2wsgi import WSGIMiddleware

    return WSGIMiddleware(app.server, workers=WSGI_THREADS)


def serve_dashboard(settings: DashboardSettings, host: str, port: int) -> None:
    """Serve only the dashboard (one process) against the API at ``settings.api_url``, e.g. a remote sitelens."""
    import uvicorn

    uvicorn.run(asgi_app(create_dashboard(settings)), host=host, port=port, log_level="info")
