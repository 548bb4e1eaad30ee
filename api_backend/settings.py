"""Every sitelens setting, declared once.

Each setting has a name, a type, a default and a help line. Values come from ``SITELENS_*``
environment variables (or explicit overrides, e.g. from command-line flags) and are checked
when the settings are built: a wrong value stops start-up with a message naming the variable.
The README's settings table is checked against ``SETTINGS`` by the test suite.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SETTINGS", "Setting", "Settings", "SettingsError", "load_settings"]

ENV_PREFIX = "SITELENS_"


class SettingsError(ValueError):
    """A setting has a value that sitelens cannot use."""


def _parse_port(raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        raise SettingsError("must be a whole number") from None
    if not 1 <= port <= 65535:
        raise SettingsError("must be between 1 and 65535")
    return port


def _parse_positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError("must be a whole number") from None
    if value < 1:
        raise SettingsError("must be at least 1")
    return value


def _parse_non_negative_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError("must be a whole number") from None
    if value < 0:
        raise SettingsError("must not be negative")
    return value


def _parse_budget(raw: str) -> int:
    value = _parse_non_negative_int(raw)
    if 0 < value < 1000:
        # A budget below one full batch (1000 events) would refuse such a batch for ever, not slow it down.
        raise SettingsError("must be 0 (no limit) or at least 1000")
    return value


def _parse_url(*schemes: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if not raw:
            return raw
        scheme = raw.split(":", 1)[0].split("+", 1)[0]
        if "://" not in raw or scheme not in schemes:
            raise SettingsError(f"must be a URL starting with one of: {', '.join(s + '://' for s in schemes)}")
        return raw

    return parse


def _parse_events_url(raw: str) -> str:
    from api_backend.store.urls import parse_events_url

    if raw:
        try:
            parse_events_url(raw)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
    return raw


def _parse_optional_path(raw: str) -> str:
    if raw and not Path(raw).is_file():
        raise SettingsError(f"no file at {raw}")
    return raw


def _parse_secret(raw: str) -> str:
    if raw and len(raw) < 16:
        raise SettingsError("must be at least 16 characters long")
    return raw


def _parse_memory(raw: str) -> str:
    memory_bytes(raw)  # refuses anything else
    return raw.strip()


def _parse_optional_memory(raw: str) -> str:
    return _parse_memory(raw) if raw.strip() else ""


_UNITS = {
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def memory_bytes(size: str) -> int:
    """The bytes of a size such as ``512MB`` (powers of 1000) or ``1GiB`` (powers of 1024), as DuckDB reads them."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]+)", size.strip().lower())
    if not match or match.group(2) not in _UNITS:
        raise SettingsError("must be a size such as 512MB or 1GB")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _parse_hour(raw: str) -> int | None:
    if raw.strip().lower() == "off":
        return None
    try:
        hour = int(raw)
    except ValueError:
        raise SettingsError("must be an hour from 0 to 23, or off") from None
    if not 0 <= hour <= 23:
        raise SettingsError("must be an hour from 0 to 23, or off")
    return hour


def _parse_seconds_or_off(raw: str) -> int | None:
    if raw.strip().lower() == "off":
        return None
    try:
        seconds = int(raw)
    except ValueError:
        raise SettingsError("must be a whole number of seconds from 1 to 86400, or off") from None
    if not 1 <= seconds <= 86_400:
        raise SettingsError("must be a whole number of seconds from 1 to 86400, or off")
    return seconds


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise SettingsError("must be true or false")


@dataclass(frozen=True)
class Setting:
    """One setting: the field name on ``Settings``, its parser, its default and a help line."""

    name: str
    parse: Callable[[str], Any]
    default: str
    help: str

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.name.upper()


SETTINGS: tuple[Setting, ...] = (
    Setting("data_dir", str, "./data", "Folder for the metadata database, the event store and the generated secret."),
    Setting(
        "database_url",
        _parse_url("sqlite", "postgresql", "postgres"),
        "",
        "SQLAlchemy URL of the metadata database. Empty: SQLite file `sitelens.sqlite3` in the data dir.",
    ),
    Setting(
        "events_url",
        _parse_events_url,
        "",
        "Event store URL: `duckdb:///path`, `clickhouse://user:password@host:8123/database` (`clickhouses://` for "
        "HTTPS) or `chdb:///abs/path[?database=NAME]`. Empty: `duckdb:///<data dir>/events.duckdb`.",
    ),
    Setting(
        "secret_key",
        _parse_secret,
        "",
        "Secret for visitor ids (16+ chars). Empty: generated once and kept in `<data dir>/secret.key`.",
    ),
    Setting("host", str, "127.0.0.1", "Address `sitelens serve` listens on."),
    Setting("port", _parse_port, "8000", "Port `sitelens serve` listens on."),
    Setting(
        "api_url",
        _parse_url("http", "https"),
        "",
        "API root (ending in `/api`) the dashboard talks to. Empty: the API served by the same process.",
    ),
    Setting(
        "dashboard_api_timeout",
        _parse_positive_int,
        "120",
        "Seconds the dashboard waits for one API answer before it tells the viewer the answer is late (a long range "
        "on a large store can take tens of seconds to count).",
    ),
    Setting(
        "geoip_mmdb",
        _parse_optional_path,
        "",
        "Path to a MaxMind `.mmdb` country or city database. Empty: the bundled offline country database.",
    ),
    Setting(
        "commit_interval_ms",
        _parse_positive_int,
        "100",
        "Longest time (ms) acknowledged events wait in the event log before they are copied into the event store.",
    ),
    Setting(
        "duckdb_memory_limit",
        _parse_memory,
        "1GB",
        "Memory DuckDB may use for queries before it spills to disk (keeps the server's footprint bounded). "
        "`sitelens seed`, which runs with the server stopped, uses it when set; otherwise a quarter of the memory "
        "it may use (the machine's or its container's), between 1GB and 4GB: seeding 100M events took 5-8% less time "
        "with 4GB.",
    ),
    Setting(
        "clickhouse_memory_limit",
        _parse_optional_memory,
        "",
        "Memory one read of a ClickHouse store may use: past half of it groupings and sorts spill to disk, past all "
        "of it the read answers 503. Empty: 4GB for the embedded engine (`chdb://`), a server's own limits otherwise.",
    ),
    Setting(
        "clickhouse_merge_hour",
        _parse_hour,
        "3",
        "Hour of the day (UTC, 0-23) in which a server on a ClickHouse store merges its `sessions` table into one "
        "part when its largest part holds less than 95% of its rows, so reads keep taking whole sessions from it "
        "(`off`: never; then run `sitelens clickhouse-merge-sessions` yourself).",
    ),
    Setting(
        "clickhouse_seal_seconds",
        _parse_seconds_or_off,
        "60",
        "Seconds between a server's seals of a ClickHouse store's sessions: those idle for over the session timeout "
        "are written finished into `sealed_sessions`, which reads take them from without merging the `sessions` "
        "table (`off`: never; reads then merge it, and `sitelens clickhouse-seal-sessions` seals at once).",
    ),
    Setting("login_token_days", _parse_positive_int, "30", "Days a dashboard sign-in token stays valid."),
    Setting(
        "trust_proxy",
        _parse_bool,
        "false",
        "Take the visitor IP from `X-Forwarded-For` (only behind a reverse proxy you control).",
    ),
    Setting(
        "track_ip_events_per_minute",
        _parse_budget,
        "12000",
        "Events a single IP address may send per minute to `/api/track`, `/api/track/batch` and `/api/identify` "
        "without an API key, with bursts up to the same number (0: no limit; otherwise at least 1000). "
        "Over it: 429 with `Retry-After`.",
    ),
    Setting(
        "track_site_events_per_minute",
        _parse_budget,
        "300000",
        "Events one site may receive per minute without an API key, with bursts up to the same number "
        "(0: no limit; otherwise at least 1000). Requests with a valid API key of the site's organization "
        "count against neither budget.",
    ),
    Setting(
        "storage_alarm_free_mb",
        _parse_non_negative_int,
        "256",
        "`/api/health` answers 503 when the data folder (or the event store's folder) has less free space "
        "than this many MB (0: no alarm).",
    ),
    Setting(
        "allow_new_event_store",
        _parse_bool,
        "false",
        "Start with a new, empty event store although `events.duckdb` is missing and its event log shows it "
        "held events (set it for one start after a deliberate reset; otherwise start-up refuses).",
    ),
    Setting(
        "access_log",
        _parse_bool,
        "false",
        "Log one line per HTTP request from `sitelens serve` (costs about a third of single-event throughput).",
    ),
    Setting(
        "request_timeout",
        _parse_positive_int,
        "30",
        "Seconds a client has to send a whole request (headers and body) before `sitelens serve` closes it.",
    ),
    Setting(
        "keep_alive_timeout",
        _parse_positive_int,
        "5",
        "Seconds `sitelens serve` keeps an idle keep-alive connection open between requests.",
    ),
    Setting(
        "login_attempts_per_ip",
        _parse_positive_int,
        "30",
        "Failed sign-ins one address may make in 15 minutes, over all emails, before it gets 429.",
    ),
)


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one sitelens process."""

    data_dir: Path
    database_url: str
    events_url: str
    secret_key: str
    host: str = "127.0.0.1"
    port: int = 8000
    api_url: str = ""
    dashboard_api_timeout: int = 120
    geoip_mmdb: str = ""
    commit_interval_ms: int = 100
    duckdb_memory_limit: str = "1GB"
    clickhouse_memory_limit: str = ""
    clickhouse_merge_hour: int | None = 3
    clickhouse_seal_seconds: int | None = 60
    login_token_days: int = 30
    trust_proxy: bool = False
    track_ip_events_per_minute: int = 12000
    track_site_events_per_minute: int = 300000
    storage_alarm_free_mb: int = 256
    allow_new_event_store: bool = False
    access_log: bool = False
    request_timeout: int = 30
    keep_alive_timeout: int = 5
    login_attempts_per_ip: int = 30
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def events_path(self) -> str:
        """Filesystem path of the DuckDB event file (``:memory:`` allowed)."""
        return self.events_url.removeprefix("duckdb:///").removeprefix("duckdb://")


def _read_or_create_secret(data_dir: Path) -> str:
    path = data_dir / "secret.key"
    if path.exists():
        return path.read_text().strip()
    secret = secrets.token_urlsafe(48)
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return secret


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Build ``Settings`` from the environment plus explicit overrides; raise ``SettingsError`` when wrong.

    Overrides (from command-line flags or tests) win over environment variables; ``None`` overrides are ignored.
    """
    env = os.environ if env is None else env
    known = {s.env_var for s in SETTINGS}
    unknown = sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in known)
    if unknown:
        raise SettingsError(f"unknown setting {unknown[0]}; known settings: {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw = overrides.get(setting.name)
        if raw is None:
            raw = env.get(setting.env_var, setting.default)
        if not isinstance(raw, str):
            values[setting.name] = raw
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except SettingsError as exc:
            raise SettingsError(f"{setting.env_var}={raw!r} {exc}") from None
    data_dir = Path(values["data_dir"]).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    values["data_dir"] = data_dir
    if not values["database_url"]:
        values["database_url"] = f"sqlite:///{data_dir / 'sitelens.sqlite3'}"
    if not values["events_url"]:
        values["events_url"] = f"duckdb:///{data_dir / 'events.duckdb'}"
    if not values["secret_key"]:
        values["secret_key"] = _read_or_create_secret(data_dir)
    return Settings(**values)
