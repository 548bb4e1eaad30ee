"""``AnalyticsAPI``: the typed, synchronous client for every read and admin route of the sitelens API.

    api = AnalyticsAPI("http://127.0.0.1:8000/api", token="sl_...")
    overview = api.overview(site_id, Query(start_date="2026-03-01", end_date="2026-03-31", time_zone="Europe/Paris"))

Credentials: ``token`` (an API key or a sign-in token, sent as ``Authorization: Bearer``) and/or ``private_key``
(a site's private link key, sent as ``X-Private-Key``). Transport: pass an ``httpx.Client`` as ``client`` (used as
is, never closed here; e.g. FastAPI's ``TestClient``) or an ``httpx`` ``transport``; otherwise the client makes its
own ``httpx.Client`` and closes it in ``close()``. Every failure raises an ``api_client.errors.APIError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
import pydantic

from api_client.activity_reads import ActivityReads
from api_client.errors import APIConnectionError, APIError, NotFoundError, error_from_response
from api_client.models import (
    ApiKeyInfo,
    Breakdown,
    BreakdownRow,
    CreatedApiKey,
    ErrorBucket,
    ErrorEvent,
    ErrorName,
    ErrorNamePage,
    FunnelStep,
    Goal,
    GoalConfig,
    GoalPage,
    GoalSession,
    LoginResult,
    Me,
    MetricPage,
    MetricRow,
    Organization,
    Overview,
    OverviewBucket,
    PageMeta,
    Site,
    SiteConfig,
    UsageRow,
)
from api_client.query import Filter, Query

__all__ = ["DEFAULT_BASE_URL", "AnalyticsAPI", "wilson_interval"]

DEFAULT_BASE_URL = "http://127.0.0.1:8000/api"
USER_AGENT = "sitelens-api-client/0.1"
# z for a two-sided 95% interval.
Z_95 = 1.959963984540054
# Fewer sessions than this and a breakdown row is ``small_sample`` (the same threshold as the server's).
SMALL_SAMPLE = 30
GOALS_PAGE_MAX = 100
METRIC_PAGE_MAX = 1000

# Site configuration: snake_case attribute -> API field.
CONFIG_FIELDS: dict[str, str] = {
    "public": "public",
    "salt_user_ids": "saltUserIds",
    "block_bots": "blockBots",
    "excluded_ips": "excludedIPs",
    "excluded_countries": "excludedCountries",
    "session_replay": "sessionReplay",
    "web_vitals": "webVitals",
    "track_errors": "trackErrors",
    "track_outbound": "trackOutbound",
    "track_url_params": "trackUrlParams",
}
# Goal config and funnel step keys: snake_case -> API field.
CAMEL_KEYS: dict[str, str] = {
    "path_pattern": "pathPattern",
    "event_name": "eventName",
    "event_property_key": "eventPropertyKey",
    "event_property_value": "eventPropertyValue",
    "value_pattern": "valuePattern",
    "property_filters": "propertyFilters",
}

M = TypeVar("M", bound=pydantic.BaseModel)


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / trials`` (95% by default); ``(0, 1)`` for no trials.

    No trials say nothing about the proportion, so the interval is the whole range. The server's breakdown route
    computes the same interval; a test holds the two equal.
    """
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _segment(value: int | str) -> str:
    """One path segment, escaped (ids come from users and URLs)."""
    return quote(str(value), safe="")


def _camel_keys(data: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        api_key = names.get(key, key)
        if api_key in out:
            raise ValueError(f"{key!r} is given twice (as snake_case and camelCase)")
        out[api_key] = value
    return out


def _goal_config(config: Mapping[str, Any] | GoalConfig) -> dict[str, Any]:
    if isinstance(config, GoalConfig):
        return config.to_api()
    if not isinstance(config, Mapping):
        raise TypeError("config must be a dict such as {'pathPattern': '/pricing'} or a GoalConfig")
    return _camel_keys(config, CAMEL_KEYS)


def _localize_times(rows: list[Any], query: Query | None) -> list[Any]:
    """Give zone-less bucket ``time`` values the request's zone.

    sitelens sends ISO UTC instants; servers of the same API family send local wall-clock text instead
    (``2026-03-02 00:00:00`` meaning midnight in ``time_zone``), which would otherwise be read as UTC.
    """
    try:
        zone = ZoneInfo(query.time_zone if query is not None else "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return rows
    out = []
    for row in rows:
        value = row.get("time") if isinstance(row, Mapping) else None
        if isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                moment = None
            if moment is not None and moment.tzinfo is None:
                row = {**row, "time": moment.replace(tzinfo=zone)}
        out.append(row)
    return out


def _rank(rows: Iterable[BreakdownRow]) -> list[BreakdownRow]:
    """Best conversion rate first, then more sessions, then by value so the order is stable."""
    return sorted(rows, key=lambda row: (-row.conversion_rate, -row.sessions, row.value))


class AnalyticsAPI(ActivityReads):
    """Typed client for the sitelens read and admin API (contract sections 2, 4 and 5).

    Args:
        base_url: the API root, ending in ``/api``.
        token: an API key or a sign-in token, sent as ``Authorization: Bearer``.
        private_key: a site's private link key, sent as ``X-Private-Key``.
        client: an ``httpx.Client`` to send through (it keeps its own timeout and is never closed here).
        transport: an ``httpx`` transport for the client made here (tests, proxies, retries).
        timeout: seconds per request for the client made here (``None`` waits for ever).

    Thread-safe: one instance can serve many threads (``httpx.Client`` is). Use ``with_credentials`` for a
    client with other credentials on the same connection pool.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        token: str | None = None,
        private_key: str | None = None,
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float | None = 15.0,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL ending in /api, got {base_url!r}")
        if client is not None and transport is not None:
            raise ValueError("pass either client= or transport=, not both")
        self._base_url = base_url.rstrip("/")
        self._token = token or None
        self._private_key = private_key or None
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(transport=transport, timeout=timeout)
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The API root, e.g. ``http://127.0.0.1:8000/api``."""
        return self._base_url

    @property
    def token(self) -> str | None:
        """The bearer credential (API key or sign-in token), if any."""
        return self._token

    @property
    def private_key(self) -> str | None:
        """The private link key sent as ``X-Private-Key``, if any."""
        return self._private_key

    def with_credentials(self, token: str | None = None, private_key: str | None = None) -> AnalyticsAPI:
        """A client on the same base URL and connection pool with other credentials (closing it closes nothing)."""
        return AnalyticsAPI(self._base_url, token=token, private_key=private_key, client=self._client)

    def close(self) -> None:
        """Close the HTTP connection pool if this client created it."""
        if self._owns_client and not self._closed:
            self._client.close()
        self._closed = True

    def __enter__(self) -> AnalyticsAPI:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        # Never print a credential, only whether one is set.
        return (
            f"AnalyticsAPI(base_url={self._base_url!r}, token={'set' if self._token else None}, "
            f"private_key={'set' if self._private_key else None})"
        )

    # -- transport -----------------------------------------------------------------------------------------

    def _headers(self, authenticated: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if authenticated and self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if authenticated and self._private_key:
            headers["X-Private-Key"] = self._private_key
        return headers

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        authenticated: bool = True,
    ) -> Any:
        """Send one request; return the decoded JSON body (``None`` when empty) or raise an ``APIError``."""
        if self._closed:
            raise APIConnectionError(None, "CLIENT_CLOSED", "This AnalyticsAPI client is closed.")
        url = f"{self._base_url}{path}"
        query = {key: str(value) for key, value in (params or {}).items() if value is not None}
        try:
            response = self._client.request(
                method,
                url,
                params=query or None,
                json=json,
                headers=self._headers(authenticated),
            )
        except httpx.TimeoutException as exc:
            raise APIConnectionError(None, "TIMEOUT", f"{method} {url} timed out: {exc}") from exc
        except (httpx.HTTPError, httpx.StreamError) as exc:
            raise APIConnectionError(None, None, f"{method} {url} failed: {exc}") from exc
        except httpx.InvalidURL as exc:
            raise APIConnectionError(None, "INVALID_URL", f"{method} {url} is not a valid URL: {exc}") from exc
        if response.status_code >= 400:
            raise error_from_response(response)
        if not response.content.strip():
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise APIError(
                response.status_code, "INVALID_RESPONSE", f"{method} {path} did not answer with JSON."
            ) from exc

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._request("GET", path, params=params)

    @staticmethod
    def _parse(model: type[M], data: Any, what: str) -> M:
        try:
            return model.model_validate(data)
        except pydantic.ValidationError as exc:
            raise APIError(200, "INVALID_RESPONSE", f"Unexpected {what} in the answer: {exc}") from exc

    def _parse_list(self, model: type[M], data: Any, what: str) -> list[M]:
        if not isinstance(data, list):
            raise APIError(200, "INVALID_RESPONSE", f"Expected a list of {what} in the answer.")
        return [self._parse(model, item, what) for item in data]

    @staticmethod
    def _field(body: Any, *keys: str) -> Any:
        """``body[k1][k2]...``, or an ``INVALID_RESPONSE`` error naming the missing key."""
        value = body
        for key in keys:
            if not isinstance(value, Mapping) or key not in value:
                raise APIError(200, "INVALID_RESPONSE", f"The answer has no {'.'.join(keys)!r}.")
            value = value[key]
        return value

    @classmethod
    def _int_field(cls, body: Any, *keys: str) -> int:
        value = cls._field(body, *keys)
        try:
            return int(value)
        except (TypeError, ValueError):
            raise APIError(200, "INVALID_RESPONSE", f"The answer's {'.'.join(keys)!r} is not an integer.") from None

    @classmethod
    def _strings_field(cls, body: Any, *keys: str) -> list[str]:
        value = cls._field(body, *keys)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise APIError(200, "INVALID_RESPONSE", f"The answer's {'.'.join(keys)!r} is not a list of strings.")
        return list(value)

    @classmethod
    def _rows(cls, body: Any) -> list[Any]:
        """The rows of a list answer: ``{data: [...]}``, or a peer's paginated ``{data: {data: [...]}}``."""
        data = cls._field(body, "data")
        if isinstance(data, Mapping) and "data" in data:
            data = data["data"]
        if not isinstance(data, list):
            raise APIError(200, "INVALID_RESPONSE", "The answer's data is not a list.")
        return data

    @staticmethod
    def _params(query: Query | None, **extra: Any) -> dict[str, Any]:
        if query is not None and not isinstance(query, Query):
            raise TypeError(f"query must be an api_client.Query, not {type(query).__name__}")
        params: dict[str, Any] = dict(query.to_params()) if query is not None else {}
        params.update({key: value for key, value in extra.items() if value is not None})
        return params

    @staticmethod
    def _site(site_id: int | str) -> str:
        return f"/sites/{_segment(site_id)}"

    # -- health and accounts -------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """The server's health check (``{"status": "ok", ...}``)."""
        body = self._request("GET", "/health", authenticated=False)
        if not isinstance(body, dict):
            raise APIError(200, "INVALID_RESPONSE", "The health check did not answer with an object.")
        return body

    def login(self, email: str, password: str) -> LoginResult:
        """Exchange email and password for a sign-in token; this client is unchanged (use ``with_credentials``)."""
        body = self._request("POST", "/auth/login", json={"email": email, "password": password}, authenticated=False)
        return self._parse(LoginResult, body, "sign-in")

    def logout(self) -> None:
        """Revoke the sign-in token this client carries."""
        self._request("POST", "/auth/logout")

    def me(self) -> Me:
        """The user this client's credential belongs to."""
        return self._parse(Me, self._get("/auth/me"), "user")

    def api_keys(self) -> list[ApiKeyInfo]:
        """The caller's API keys (never the secrets)."""
        return self._parse_list(ApiKeyInfo, self._rows(self._get("/user/api-keys")), "API key")

    def create_api_key(self, name: str) -> CreatedApiKey:
        """Create an API key; the raw key is in the result only."""
        return self._parse(CreatedApiKey, self._request("POST", "/user/api-keys", json={"name": name}), "API key")

    def delete_api_key(self, key_id: str) -> None:
        """Revoke one of the caller's API keys."""
        self._request("DELETE", f"/user/api-keys/{_segment(key_id)}")

    # -- organizations and sites ---------------------------------------------------------------------------

    def organizations(self) -> list[Organization]:
        """The caller's organizations, with the caller's role in each."""
        return self._parse_list(Organization, self._rows(self._get("/organizations")), "organization")

    def org_sites(self, org_id: str) -> list[Site]:
        """The sites of an organization."""
        body = self._get(f"/organizations/{_segment(org_id)}/sites")
        return self._parse_list(Site, self._rows(body), "site")

    def create_site(
        self,
        org_id: str,
        domain: str,
        *,
        name: str | None = None,
        public: bool | None = None,
        salt_user_ids: bool | None = None,
        block_bots: bool | None = None,
    ) -> Site:
        """Create a site in an organization (admin or owner); unset options take the server's defaults."""
        body: dict[str, Any] = {"domain": domain}
        optional = {"name": name, "public": public, "saltUserIds": salt_user_ids, "blockBots": block_bots}
        body.update({key: value for key, value in optional.items() if value is not None})
        answer = self._request("POST", f"/organizations/{_segment(org_id)}/sites", json=body)
        return self._parse(Site, answer, "site")

    def site(self, site_id: int | str) -> Site:
        """One site (``site_id`` is the integer id or the string id)."""
        return self._parse(Site, self._get(self._site(site_id)), "site")

    def delete_site(self, site_id: int | str) -> None:
        """Delete a site with its goals, private link and every stored event (admin or owner)."""
        self._request("DELETE", self._site(site_id))

    def update_site_config(self, site_id: int | str, **changes: Any) -> SiteConfig:
        """Change some configuration fields (snake_case such as ``block_bots`` or API camelCase such as ``blockBots``).

        Returns the full configuration after the change. Unknown names are sent as given, so the server's
        ``ValidationError`` names them.
        """
        body = _camel_keys(changes, CONFIG_FIELDS)
        answer = self._request("PUT", f"{self._site(site_id)}/config", json=body)
        return self._parse(SiteConfig, self._field(answer, "config"), "site configuration")

    def excluded_ips(self, site_id: int | str) -> list[str]:
        """The site's excluded IP patterns (addresses, CIDR blocks, ``a-b`` ranges)."""
        return self._strings_field(self._get(f"{self._site(site_id)}/excluded-ips"), "excludedIPs")

    def excluded_countries(self, site_id: int | str) -> list[str]:
        """The site's excluded country codes."""
        return self._strings_field(self._get(f"{self._site(site_id)}/excluded-countries"), "excludedCountries")

    def private_link_key(self, site_id: int | str) -> str | None:
        """The private link key in force, or ``None`` (admin or owner)."""
        key = self._field(self._get(f"{self._site(site_id)}/private-link-config"), "data", "privateLinkKey")
        if key is not None and not isinstance(key, str):
            raise APIError(200, "INVALID_RESPONSE", "The private link key in the answer is not a string.")
        return key or None

    def generate_private_link(self, site_id: int | str) -> str:
        """Make a new private link key (the old one stops working at once) and return it."""
        body = {"action": "generate_private_link_key"}
        answer = self._request("POST", f"{self._site(site_id)}/private-link-config", json=body)
        key = self._field(answer, "data", "privateLinkKey")
        if not isinstance(key, str) or not key:
            raise APIError(200, "INVALID_RESPONSE", "The server did not return a private link key.")
        return key

    def revoke_private_link(self, site_id: int | str) -> None:
        """Revoke the private link key; links using it stop working at once."""
        body = {"action": "revoke_private_link_key"}
        self._request("POST", f"{self._site(site_id)}/private-link-config", json=body)

    # -- goals ---------------------------------------------------------------------------------------------

    def goals(
        self,
        site_id: int | str,
        query: Query | None = None,
        *,
        page: int = 1,
        limit: int = 10,
        sort: str = "createdAt",
        order: str = "desc",
    ) -> GoalPage:
        """One page of the site's goals with conversions, sessions and conversion rate (0..1) in the window."""
        # `limit` is the contract's name and `page_size` the peer's; both are sent so either server reads it.
        params = self._params(query, page=page, limit=limit, page_size=limit, sort=sort, order=order)
        return self._parse(GoalPage, self._get(f"{self._site(site_id)}/goals", params), "goals page")

    def create_goal(
        self, site_id: int | str, *, name: str | None, goal_type: str, config: Mapping[str, Any] | GoalConfig
    ) -> int:
        """Create a goal; ``config`` keys in API camelCase or snake_case. Returns the new goal id."""
        body = {"name": name, "goalType": goal_type, "config": _goal_config(config)}
        answer = self._request("POST", f"{self._site(site_id)}/goals", json=body)
        return self._int_field(answer, "goalId")

    def update_goal(
        self,
        site_id: int | str,
        goal_id: int,
        *,
        name: str | None,
        goal_type: str,
        config: Mapping[str, Any] | GoalConfig,
    ) -> int:
        """Replace a goal (name, type and config). Returns its id."""
        body = {"name": name, "goalType": goal_type, "config": _goal_config(config)}
        answer = self._request("PUT", f"{self._site(site_id)}/goals/{_segment(goal_id)}", json=body)
        return self._int_field(answer, "goalId")

    def delete_goal(self, site_id: int | str, goal_id: int) -> None:
        """Delete a goal permanently."""
        self._request("DELETE", f"{self._site(site_id)}/goals/{_segment(goal_id)}")

    def goal_sessions(
        self, site_id: int | str, goal_id: int, query: Query | None = None, *, page: int = 1, limit: int = 25
    ) -> list[GoalSession]:
        """The sessions that completed a goal, newest session end first."""
        params = self._params(query, page=page, limit=limit)
        body = self._get(f"{self._site(site_id)}/goals/{_segment(goal_id)}/sessions", params)
        return self._parse_list(GoalSession, self._rows(body), "goal session")

    def goal_breakdown(
        self,
        site_id: int | str,
        goal_id: int,
        parameter: str = "channel",
        query: Query | None = None,
        *,
        page: int | None = None,
        limit: int | None = None,
    ) -> Breakdown:
        """A goal's sessions, conversions, rate and 95% Wilson interval per value of ``parameter``.

        Values come in pages, best rate first: ``page`` (1-based) and ``limit`` (1 to 1000, the server's
        default); ``total_count`` of the result counts the values of all pages.
        """
        params = self._params(query, parameter=parameter, page=page, limit=limit)
        body = self._get(f"{self._site(site_id)}/goals/{_segment(goal_id)}/breakdown", params)
        meta = self._field(body, "meta")
        return self._parse(
            Breakdown,
            {
                "rows": self._field(body, "data"),
                "total_sessions": self._field(meta, "total_sessions"),
                "total_conversions": self._field(meta, "total_conversions"),
                "goal_id": meta.get("goalId", goal_id),
                "parameter": meta.get("parameter", parameter),
                "total_count": body.get("totalCount"),
            },
            "goal breakdown",
        )

    def channel_ranking(self, site_id: int | str, goal_id: int, query: Query | None = None) -> Breakdown:
        """A goal's conversion rate per acquisition channel, best first (direct traffic is ``""``).

        Uses the server's breakdown route; a server without it (404) is asked the api-spec recipe instead:
        channels from ``metric``, then the goal's numbers under one ``channel equals`` filter per channel, with
        the Wilson interval computed here.
        """
        try:
            return self.goal_breakdown(site_id, goal_id, "channel", query)
        except NotFoundError:
            # Either the route is missing (an older or foreign server) or the site/goal is unknown; the recipe
            # raises NotFoundError itself in the second case.
            return self._channel_ranking_recipe(site_id, goal_id, query)

    def _find_goal(self, site_id: int | str, goal_id: int, query: Query | None, hint: int = 1) -> tuple[Goal, int]:
        """The goal ``goal_id`` under ``query`` and the page (of goals by id ascending) it is on; ``hint`` first."""

        def look(page: int) -> tuple[Goal | None, int]:
            result = self.goals(site_id, query, page=page, limit=GOALS_PAGE_MAX, sort="goalId", order="asc")
            found = next((goal for goal in result.data if goal.goal_id == goal_id), None)
            return found, result.meta.total_pages

        goal, total_pages = look(hint)
        if goal is not None:
            return goal, hint
        for page in range(1, total_pages + 1):
            if page != hint:
                goal, _ = look(page)
                if goal is not None:
                    return goal, page
        raise NotFoundError(404, "NOT_FOUND", f"Goal {goal_id} not found on site {site_id}.")

    def _channel_ranking_recipe(self, site_id: int | str, goal_id: int, query: Query | None) -> Breakdown:
        base = query or Query()
        goal, page = self._find_goal(site_id, goal_id, base)
        channels: list[MetricRow] = []
        metric_page = 1
        while True:
            batch = self.metric(site_id, "channel", base, page=metric_page, limit=METRIC_PAGE_MAX)
            channels.extend(batch.rows)
            if not batch.rows or len(channels) >= batch.total_count:
                break
            metric_page += 1
        rows = []
        for channel in channels:
            segment = base.with_filters(Filter("channel", "equals", [channel.value]))
            per_channel, page = self._find_goal(site_id, goal_id, segment, hint=page)
            sessions, conversions = per_channel.total_sessions, per_channel.total_conversions
            low, high = wilson_interval(conversions, sessions)
            rows.append(
                BreakdownRow(
                    # Peers label direct traffic "Direct"; sitelens (and the breakdown route) use "".
                    value="" if channel.value == "Direct" else channel.value,
                    sessions=sessions,
                    conversions=conversions,
                    conversion_rate=conversions / sessions if sessions else 0.0,
                    ci_low=low,
                    ci_high=high,
                    small_sample=sessions < SMALL_SAMPLE,
                )
            )
        return Breakdown(
            rows=_rank(rows),
            total_sessions=goal.total_sessions,
            total_conversions=goal.total_conversions,
            goal_id=goal_id,
            parameter="channel",
        )

    # -- errors --------------------------------------------------------------------------------------------

    def error_names(
        self, site_id: int | str, query: Query | None = None, *, page: int = 1, limit: int = 10
    ) -> list[ErrorName]:
        """Error messages by occurrences, with affected sessions and share of all errors (percent)."""
        body = self._get(f"{self._site(site_id)}/error-names", self._params(query, page=page, limit=limit))
        return self._parse_list(ErrorName, self._rows(body), "error name")

    def error_names_page(
        self, site_id: int | str, query: Query | None = None, *, page: int = 1, limit: int = 10
    ) -> ErrorNamePage:
        """One page of error messages by occurrences, with how many messages (and pages of ``limit``) there are."""
        body = self._get(f"{self._site(site_id)}/error-names", self._params(query, page=page, limit=limit))
        # sitelens answers {data: [...], totalCount}; a peer asked with `page` nests both: {data: {data, totalCount}}.
        data = self._field(body, "data")
        holder = data if isinstance(data, Mapping) else body
        rows = self._parse_list(ErrorName, self._rows(body), "error name")
        total = self._int_field(holder, "totalCount")
        if total < 0:
            raise APIError(200, "INVALID_RESPONSE", "The answer's 'totalCount' is negative.")
        meta = PageMeta(total=total, page=page, page_size=limit, total_pages=math.ceil(total / limit) if limit else 0)
        return ErrorNamePage(data=rows, meta=meta)

    def error_events(
        self, site_id: int | str, message: str, query: Query | None = None, *, page: int = 1, limit: int = 20
    ) -> list[ErrorEvent]:
        """Occurrences of one error message, newest first."""
        params = self._params(query, errorMessage=message, page=page, limit=limit)
        body = self._get(f"{self._site(site_id)}/error-events", params)
        return self._parse_list(ErrorEvent, self._rows(body), "error event")

    def error_time_series(
        self, site_id: int | str, message: str, query: Query | None = None, *, bucket: str = "hour"
    ) -> list[ErrorBucket]:
        """Occurrences of one error message per time bucket (gap-filled with zeros over the window)."""
        params = self._params(query, errorMessage=message, bucket=bucket)
        body = self._get(f"{self._site(site_id)}/error-bucketed", params)
        return self._parse_list(ErrorBucket, _localize_times(self._rows(body), query), "error bucket")

    # -- usage, metric, overview, funnels -------------------------------------------------------------------

    def org_usage(self, org_id: str, query: Query | None = None) -> list[UsageRow]:
        """An organization's events per day of the window (last 30 days without dates), by type."""
        body = self._get(f"/org-event-count/{_segment(org_id)}", self._params(query))
        return self._parse_list(UsageRow, self._rows(body), "usage row")

    def metric(
        self, site_id: int | str, parameter: str, query: Query | None = None, *, page: int = 1, limit: int = 100
    ) -> MetricPage:
        """Sessions per value of ``parameter`` (any filter parameter), most first, with the number of values."""
        params = self._params(query, parameter=parameter, page=page, limit=limit)
        body = self._get(f"{self._site(site_id)}/metric", params)
        data = self._field(body, "data")
        if isinstance(data, list):
            rows, total = data, len(data)
        else:
            rows, total = self._field(data, "data"), self._field(data, "totalCount")
        return self._parse(MetricPage, {"rows": rows, "total_count": total}, "metric")

    def overview(self, site_id: int | str, query: Query | None = None) -> Overview:
        """Sessions, pageviews, users, pages per session, bounce rate (percent) and session duration (seconds)."""
        body = self._get(f"{self._site(site_id)}/overview", self._params(query))
        return self._parse(Overview, self._field(body, "data"), "overview")

    def overview_time_series(
        self, site_id: int | str, query: Query | None = None, *, bucket: str = "day"
    ) -> list[OverviewBucket]:
        """The overview numbers per time bucket."""
        body = self._get(f"{self._site(site_id)}/overview/time-series", self._params(query, bucket=bucket))
        return self._parse_list(OverviewBucket, _localize_times(self._rows(body), query), "overview bucket")

    def funnel(
        self, site_id: int | str, steps: Sequence[Mapping[str, Any]], query: Query | None = None
    ) -> list[FunnelStep]:
        """Sessions reaching each step in order (each strictly after the previous), with rates in percent.

        A step is ``{"type": "page" | "event" | ..., "value": ..., "name"?: ..., "eventPropertyKey"?: ...,
        "eventPropertyValue"?: ...}``; snake_case keys are accepted too.
        """
        if isinstance(steps, Mapping | str) or not all(isinstance(step, Mapping) for step in steps):
            raise TypeError("steps must be a list of dicts such as [{'type': 'page', 'value': '/'}, ...]")
        body = {"steps": [_camel_keys(step, CAMEL_KEYS) for step in steps]}
        answer = self._request("POST", f"{self._site(site_id)}/funnels/analyze", params=self._params(query), json=body)
        return self._parse_list(FunnelStep, self._rows(answer), "funnel step")
