"""Typed results of ``AnalyticsAPI``: pydantic models of the API's JSON, with snake_case attributes.

Every model reads the API's own key (camelCase such as ``goalId`` or snake_case such as ``total_sessions``,
exactly as ``api-spec.md`` shows it) and also its snake_case attribute name. Unknown keys are kept (a newer
server may send more), timestamps become aware UTC datetimes (``...Z`` text, or a peer's naive UTC text), and
numbers sent as strings are converted.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "ApiKeyInfo",
    "Breakdown",
    "BreakdownRow",
    "CreatedApiKey",
    "ErrorBucket",
    "ErrorEvent",
    "ErrorName",
    "ErrorNamePage",
    "FunnelStep",
    "Goal",
    "GoalConfig",
    "GoalPage",
    "GoalSession",
    "LoginResult",
    "Me",
    "MetricPage",
    "MetricRow",
    "Organization",
    "Overview",
    "OverviewBucket",
    "PageMeta",
    "Site",
    "SiteConfig",
    "UsageRow",
]


def _to_utc(value: datetime) -> datetime:
    # The API's timestamps are UTC; a peer that omits the offset still means UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _date_part(value: Any) -> Any:
    # Peers write days as "YYYY-MM-DD 00:00:00"; the day is the first ten characters.
    if isinstance(value, str) and len(value) > 10 and value[4] == "-" and value[7] == "-":
        return value[:10]
    return value


def _as_text(value: Any) -> Any:
    # Dimension values such as a campaign "2024" can arrive as JSON numbers from peers; they are still labels.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


UTCDateTime = Annotated[datetime, AfterValidator(_to_utc)]
"""An aware UTC datetime."""
Day = Annotated[date, BeforeValidator(_date_part)]
"""A calendar day (``YYYY-MM-DD``)."""
Label = Annotated[str, BeforeValidator(_as_text)]
"""A text value that a peer may have sent as a number or null."""


class APIModel(BaseModel):
    """Base of every result: reads camelCase or snake_case keys, keeps unknown keys, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=False,
        extra="allow",
        frozen=True,
    )


class LoginResult(APIModel):
    """A sign-in: the bearer ``token`` and when it expires."""

    token: str
    expires_at: UTCDateTime | None = None
    user_id: str | None = None
    email: str | None = None


class Me(APIModel):
    """The user a credential belongs to."""

    user_id: str
    email: str


class ApiKeyInfo(APIModel):
    """One of the caller's API keys, without the secret (``start`` is its first characters)."""

    id: str
    name: str
    start: str | None = None
    created_at: UTCDateTime | None = None
    last_used_at: UTCDateTime | None = None


class CreatedApiKey(APIModel):
    """A new API key; ``api_key`` is the raw secret, shown only in this answer."""

    id: str
    name: str
    api_key: str
    created_at: UTCDateTime | None = None


class Organization(APIModel):
    """An organization of the caller, with the caller's ``role`` in it (owner, admin or member)."""

    id: str
    name: str
    role: str
    created_at: UTCDateTime | None = None


class Site(APIModel):
    """A tracked website (``site_id`` is the integer id, ``id`` the random string id)."""

    id: str
    site_id: int
    name: str
    domain: str
    created_at: UTCDateTime | None = None
    updated_at: UTCDateTime | None = None
    created_by: str | None = None
    organization_id: str | None = None
    public: bool = False
    salt_user_ids: bool = False
    block_bots: bool = True
    is_owner: bool = False
    session_replay: bool = False
    web_vitals: bool = False
    track_errors: bool = False
    track_outbound: bool = True
    track_url_params: bool = True


class SiteConfig(APIModel):
    """The full configuration of a site, as Update Site Config returns it."""

    public: bool
    salt_user_ids: bool
    block_bots: bool
    excluded_ips: list[str] = Field(default_factory=list, validation_alias=AliasChoices("excludedIPs", "excluded_ips"))
    excluded_countries: list[str] = Field(default_factory=list)
    session_replay: bool = False
    web_vitals: bool = False
    track_errors: bool = False
    track_outbound: bool = True
    track_url_params: bool = True


class GoalConfig(APIModel):
    """What a goal matches: a path pattern, an event (with an optional property), or an autocapture value pattern."""

    path_pattern: str | None = None
    event_name: str | None = None
    event_property_key: str | None = None
    event_property_value: str | int | float | bool | None = None
    value_pattern: str | None = None

    def to_api(self) -> dict[str, Any]:
        """The config as the API's camelCase JSON, without unset fields."""
        data = self.model_dump(by_alias=True, exclude_none=True)
        return data


class Goal(APIModel):
    """A conversion goal with its numbers for the requested window (``conversion_rate`` is 0..1)."""

    goal_id: int
    name: str | None = None
    goal_type: str
    config: GoalConfig = Field(default_factory=GoalConfig)
    created_at: UTCDateTime | None = None
    total_conversions: int = 0
    total_sessions: int = 0
    conversion_rate: float = 0.0


class PageMeta(APIModel):
    """Pagination of a list: ``total`` items over ``total_pages`` pages of ``page_size``."""

    total: int
    page: int
    page_size: int
    total_pages: int


class GoalPage(APIModel):
    """One page of goals."""

    data: list[Goal]
    meta: PageMeta


class GoalSession(APIModel):
    """A session that completed a goal (times are aware UTC; ``channel`` is ``""`` for direct traffic)."""

    session_id: str
    user_id: Label = ""
    country: Label = ""
    browser: Label = ""
    operating_system: Label = ""
    device_type: Label = ""
    entry_page: Label = ""
    exit_page: Label = ""
    pageviews: int = 0
    session_duration: float = 0
    session_start: UTCDateTime | None = None
    session_end: UTCDateTime | None = None
    referrer: Label = ""
    channel: Label = ""


class BreakdownRow(APIModel):
    """One value of a goal breakdown: sessions, converting sessions, rate (0..1) and its 95% Wilson interval."""

    value: Label
    sessions: int
    conversions: int
    conversion_rate: float
    ci_low: float
    ci_high: float
    small_sample: bool


class Breakdown(APIModel):
    """One page of a goal's conversions per value of one parameter, best rate first, with the window's totals."""

    rows: list[BreakdownRow]
    total_sessions: int
    total_conversions: int
    goal_id: int | None = None
    parameter: str | None = None
    total_count: int | None = None  # distinct values in all pages (None from a server that does not page)


class ErrorName(APIModel):
    """One error message: occurrences, affected sessions and its share of all errors (percent)."""

    value: Label
    error_name: Label = ""
    count: int
    session_count: int = 0
    percentage: float | None = None


class ErrorNamePage(APIModel):
    """One page of error messages by occurrences; ``meta.total`` counts the distinct messages of the whole window."""

    data: list[ErrorName]
    meta: PageMeta


class ErrorEvent(APIModel):
    """One occurrence of an error, with where it happened and its stack."""

    timestamp: UTCDateTime
    session_id: str = ""
    user_id: Label = ""
    pathname: Label = ""
    hostname: Label = ""
    browser: Label = ""
    browser_version: Label = ""
    operating_system: Label = ""
    device_type: Label = ""
    country: Label = ""
    message: Label = ""
    stack: Label = ""
    file_name: Label = ""
    line_number: int | None = None
    column_number: int | None = None


class ErrorBucket(APIModel):
    """Error occurrences in the bucket starting at ``time``."""

    time: UTCDateTime
    error_count: int


class UsageRow(APIModel):
    """An organization's events of one day, by type, and their total."""

    event_date: Day
    pageview_count: int = 0
    custom_event_count: int = 0
    performance_count: int = 0
    outbound_count: int = 0
    error_count: int = 0
    button_click_count: int = 0
    copy_count: int = 0
    form_submit_count: int = 0
    input_change_count: int = 0
    event_count: int = 0


class MetricRow(APIModel):
    """One value of a metric: sessions with it (``count``), its share in percent, and every other field in ``extra``."""

    model_config = ConfigDict(extra="ignore")

    value: Label
    count: int
    percentage: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _collect_extra(cls, data: Any) -> Any:
        # Per-parameter fields (pageviews, bounce_rate, hostname, ...) differ by parameter: keep them in one dict.
        if isinstance(data, dict) and "extra" not in data:
            known = {"value", "count", "percentage"}
            return {
                **{k: v for k, v in data.items() if k in known},
                "extra": {k: v for k, v in data.items() if k not in known},
            }
        return data


class MetricPage(APIModel):
    """One page of a metric's values and how many distinct values there are in all."""

    rows: list[MetricRow]
    total_count: int


class Overview(APIModel):
    """Headline numbers of a window (``bounce_rate`` in percent; averages are ``None`` when there are no sessions)."""

    sessions: int = 0
    pageviews: int = 0
    users: int = 0
    pages_per_session: float | None = None
    bounce_rate: float | None = None
    session_duration: float | None = None


class OverviewBucket(Overview):
    """The overview numbers of the bucket starting at ``time``."""

    time: UTCDateTime


class FunnelStep(APIModel):
    """One funnel step: sessions that reached it, and rates in percent (``None`` when the first step is empty)."""

    step_number: int
    step_name: Label = ""
    sessions: int = 0
    visitors: int = 0
    conversion_rate: float | None = None
    dropoff_rate: float | None = None
