"""Credentials and cached API calls for the dashboard.

The signed-in person's credential lives in the browser, in ``dcc.Store(id=ids.AUTH, storage_type="session")`` as
``{"token": ..., "email": ..., "kind": "login" | "key"}``; a private-link viewer has
``{"privateKey": ..., "siteId": ...}`` in ``dcc.Store(id=ids.SHARE, storage_type="session")``. Callbacks turn those
into an ``AnalyticsAPI`` with ``api_for`` and read through ``cached_call``, whose cache key holds the API address, the
credential (hashed), the method and every argument, so two people never share an answer. ``invalidate`` after a write
makes the writer see the change at once.

Nothing here is module-global: the settings, the answer cache, the calls in flight and the base client make up a
``DashboardState`` that ``bind_server`` puts on the Dash app's Flask server, so several dashboards can live in one
process (tests, ``sitelens serve``) without sharing an answer, and nothing connects at import time.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import flask
from flask_caching import Cache

from dashboard.settings import DashboardSettings

if TYPE_CHECKING:
    import httpx

    from api_client import AnalyticsAPI

__all__ = [
    "EXTENSION",
    "SITE_METHODS",
    "DashboardState",
    "all_goal_sessions",
    "all_goals",
    "api_for",
    "api_url",
    "bind_server",
    "cached_call",
    "credential_of",
    "current_state",
    "find_goal",
    "invalidate",
    "is_signed_in",
    "peek",
    "shared_api",
    "site_gate",
]

# AnalyticsAPI methods whose first argument is a site id: their answers are dropped by invalidate(site_id).
SITE_METHODS = frozenset(
    {
        "site",
        "excluded_ips",
        "excluded_countries",
        "private_link_key",
        "goals",
        "goal_sessions",
        "goal_breakdown",
        "channel_ranking",
        "error_names",
        "error_names_page",
        "error_events",
        "error_time_series",
        "metric",
        "overview",
        "overview_time_series",
        "overview_compared",
        "overview_time_series_compared",
        "sessions",
        "session",
        "user",
        "funnel",
    }
)
# The key of a dashboard's state in its Flask server's ``extensions``.
EXTENSION = "sitelens"


class DashboardState:
    """What one dashboard keeps between requests: its settings, answer cache (with the generations that
    ``invalidate`` moves), the calls running right now, and the credential-less base client.

    ``bind_server`` puts it on the Flask server; request code finds it through ``flask.current_app``
    (``current_state``), so two dashboards in one process never share an answer.
    """

    def __init__(
        self,
        server: flask.Flask,
        settings: DashboardSettings,
        *,
        api: AnalyticsAPI | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if api is not None and transport is not None:
            raise ValueError("pass either api= or transport=, not both")
        self.settings = settings
        # The Flask server this state belongs to: work handed to other threads enters its app context.
        self.server = server
        self.cache = Cache()
        self.lock = threading.Lock()
        # Calls running right now, by cache key: a second request for the same answer waits for the first one.
        self.in_flight: dict[str, Future[Any]] = {}
        self._api = api
        self._transport = transport

    @property
    def base_api(self) -> AnalyticsAPI:
        """The credential-less client (created on first use); ``with_credentials`` copies share its pool."""
        from api_client import AnalyticsAPI

        with self.lock:
            if self._api is None:
                self._api = AnalyticsAPI(
                    base_url=self.settings.api_url, transport=self._transport, timeout=self.settings.api_timeout
                )
            return self._api

    def generation(self, name: str) -> int:
        """The current generation of a group of answers (``all``, ``lists`` or ``site:<id>``)."""
        return int(self.cache.get(f"sitelens:gen:{name}") or 0)

    def bump(self, name: str) -> None:
        """Start a new generation: every older key becomes unreachable, and the cache ages the old entries out."""
        with self.lock:
            self.cache.set(f"sitelens:gen:{name}", self.generation(name) + 1, timeout=0)


def bind_server(
    server: flask.Flask,
    settings: DashboardSettings,
    *,
    api: AnalyticsAPI | None = None,
    transport: httpx.BaseTransport | None = None,
) -> DashboardState:
    """Attach a new ``DashboardState`` (settings, answer cache, base client) to the Dash app's Flask ``server``."""
    state = DashboardState(server, settings, api=api, transport=transport)
    state.cache.init_app(server, config=settings.cache())
    server.extensions[EXTENSION] = state
    return state


def current_state() -> DashboardState:
    """The state of the dashboard serving the current request."""
    state: DashboardState = flask.current_app.extensions[EXTENSION]
    return state


def api_url() -> str:
    """The API base address (``.../api``) of the dashboard serving the current request."""
    return current_state().settings.api_url


def is_signed_in(auth: Mapping[str, Any] | None) -> bool:
    """True when the auth store holds a credential."""
    return bool(auth and auth.get("token"))


def api_for(auth: Mapping[str, Any] | None, share: Mapping[str, Any] | None = None) -> AnalyticsAPI:
    """A client carrying the person's credential: the sign-in token, else the private-link key, else none."""
    token = auth.get("token") if auth else None
    key = share.get("privateKey") if share and not token else None
    return current_state().base_api.with_credentials(token=token or None, private_key=key or None)


def shared_api(share: Mapping[str, Any] | None, site_id: int | str | None) -> AnalyticsAPI:
    """The client of a shared view of ``site_id``: the link's key when the tab holds one for that site, else no
    credential at all (enough for a public site). Never a sign-in token, and never another site's key."""
    key = share.get("privateKey") if share and str(share.get("siteId")) == str(site_id) else None
    return current_state().base_api.with_credentials(private_key=key or None)


def credential_of(api: Any) -> str:
    """A short fingerprint of the client's credential (never the credential itself) for cache keys."""
    token = getattr(api, "token", None) or ""
    key = getattr(api, "private_key", None) or ""
    return hashlib.sha256(f"{token}\x00{key}".encode()).hexdigest()[:32]


def _key(state: DashboardState, api: Any, method_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    site = str(args[0]) if method_name in SITE_METHODS and args else None
    scope = f"site:{site}" if site is not None else "lists"
    generations = [state.generation("all"), state.generation(scope)]
    material = json.dumps(
        [
            getattr(api, "base_url", None) and str(api.base_url),
            credential_of(api),
            method_name,
            [repr(a) for a in args],
            sorted((k, repr(v)) for k, v in kwargs.items()),
            generations,
        ]
    )
    return "sitelens:call:" + hashlib.sha256(material.encode()).hexdigest()


def _verify(state: DashboardState, api: Any, method_name: str, args: tuple[Any, ...]) -> None:
    """Before serving a cached answer, make sure the credential still works (at most every ``settings.verify_seconds``).

    A signed-out, expired or revoked credential then stops seeing cached data within seconds, and the page sends the
    person to sign-in (or says the link is no longer valid) instead of showing numbers it may no longer see.
    """
    token, key = getattr(api, "token", None), getattr(api, "private_key", None)
    if not token and not key:
        return
    marker = f"sitelens:verified:{credential_of(api)}"
    if state.cache.get(marker):
        return
    if token:
        api.me()
    elif method_name in SITE_METHODS and args:
        api.site(args[0])
    else:
        return
    if state.settings.verify_seconds > 0:  # 0: ask every time (a cache timeout of 0 would mean "forever")
        state.cache.set(marker, True, timeout=state.settings.verify_seconds)


def cached_call(api: AnalyticsAPI, method_name: str, *args: Any, **kwargs: Any) -> Any:
    """``getattr(api, method_name)(*args, **kwargs)``, answered from the cache when the same call ran recently.

    Cached answers are served only while the credential is known to be valid (``_verify``). Failures are never
    cached: the exception propagates to the page, which shows ``error_view(exc)``. The same call (same credential and
    arguments) already running for another request is waited for instead of being sent again: a page opened twice
    in a row, or two callbacks wanting the same answer, cost the API one query.
    """
    state = current_state()
    key = _key(state, api, method_name, args, kwargs)
    hit = state.cache.get(key)
    if hit is not None:
        _verify(state, api, method_name, args)
        return hit
    with state.lock:
        running = state.in_flight.get(key)
        if running is None:
            mine: Future[Any] = Future()
            state.in_flight[key] = mine
    if running is not None:
        return running.result()
    try:
        value = getattr(api, method_name)(*args, **kwargs)
        if value is not None:
            state.cache.set(key, value)  # before the call stops being "running", so no request falls in between
    except BaseException as exc:
        _done(state, key)
        mine.set_exception(exc)
        raise
    _done(state, key)
    mine.set_result(value)
    return value


def _done(state: DashboardState, key: str) -> None:
    with state.lock:
        state.in_flight.pop(key, None)


def peek(api: AnalyticsAPI, method_name: str, *args: Any, **kwargs: Any) -> Any | None:
    """The answer ``cached_call`` would serve from the cache right now, or None when it would have to ask the API.

    A page layout uses it to show data it already has without a callback round trip, and to fall back to its loading
    state (the callback then runs the call and reports failures) when nothing is cached. Never raises for an API
    failure: a credential that no longer verifies also means None, and the callback then says what went wrong.
    """
    from api_client import APIError

    state = current_state()
    hit = state.cache.get(_key(state, api, method_name, args, kwargs))
    if hit is None:
        return None
    try:
        _verify(state, api, method_name, args)
    except APIError:
        return None
    return hit


def invalidate(site_id: int | str | None = None) -> None:
    """Forget cached answers after a write: those of one site (and site lists), or all when ``site_id`` is None."""
    state = current_state()
    if site_id is None:
        state.bump("all")
    else:
        state.bump(f"site:{site_id}")
        # Site lists (organizations, org_sites, usage) show the site too.
        state.bump("lists")


# --- loaders shared by several pages (all through cached_call) ------------------------------------------------------
GOALS_PAGE_MAX = 100
SESSIONS_PAGE_MAX = 100


def site_gate(auth: Mapping[str, Any] | None, view: Any) -> Any | None:
    """What a site page shows instead of itself when the view's site does not exist or is not the person's (a
    single "Site not found" message), else ``None``. Other failures are left to the page, which reports them."""
    from api_client import ForbiddenError, NotFoundError
    from dashboard.components.common import site_not_found

    if view.site_id is None:
        return None
    try:
        cached_call(api_for(auth), "site", view.site_id)
    except (NotFoundError, ForbiddenError):
        return site_not_found()
    except Exception:  # noqa: BLE001 - the page itself shows any other failure where the person looks
        return None
    return None


def all_goals(api: AnalyticsAPI, view: Any) -> list[Any]:
    """Every goal of ``view``'s site with its numbers for the view's window and filters (all pages)."""
    goals: list[Any] = []
    page = 1
    while True:
        result = cached_call(
            api, "goals", view.site_id, view.query(), page=page, limit=GOALS_PAGE_MAX, sort="goalId", order="asc"
        )
        goals.extend(result.data)
        if page >= result.meta.total_pages or not result.data:
            return goals
        page += 1


def find_goal(api: AnalyticsAPI, view: Any, goal_id: int | None) -> Any | None:
    """The goal ``goal_id`` of ``view``'s site (with its numbers), or None."""
    return next((g for g in all_goals(api, view) if g.goal_id == goal_id), None)


def all_goal_sessions(api: AnalyticsAPI, view: Any, max_pages: int = 100) -> list[Any]:
    """Every converted session of ``view.goal`` in the view, up to ``max_pages`` pages of 100 (for CSV)."""
    rows: list[Any] = []
    for page in range(1, max_pages + 1):
        batch = cached_call(
            api, "goal_sessions", view.site_id, view.goal, view.query(), page=page, limit=SESSIONS_PAGE_MAX
        )
        rows.extend(batch)
        if len(batch) < SESSIONS_PAGE_MAX:
            break
    return rows
