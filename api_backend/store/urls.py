"""Events URLs: which engine holds the events and where, checked without opening anything.

    duckdb:///abs/path/events.duckdb                     embedded DuckDB (the default)
    clickhouse://user:password@host:8123/database        a ClickHouse server over HTTP (clickhouses:// for HTTPS)
    chdb:///abs/path[?database=NAME]                     the embedded ClickHouse engine (database ``sitelens``)

``parse_events_url`` is pure, so settings validation checks a URL at start-up; ``store/open.py`` opens it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["DEFAULT_DATABASE", "EVENTS_URL_SCHEMES", "EventsTarget", "parse_events_url"]

EVENTS_URL_SCHEMES = ("duckdb", "clickhouse", "clickhouses", "chdb")
DEFAULT_DATABASE = "sitelens"
_DATABASE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


@dataclass(frozen=True)
class EventsTarget:
    """A parsed events URL: the engine and where it lives."""

    scheme: str
    path: str = ""  # DuckDB file or chdb data directory
    host: str = ""
    port: int = 8123
    username: str = "default"
    password: str = ""
    database: str = DEFAULT_DATABASE

    @property
    def secure(self) -> bool:
        """HTTPS to the ClickHouse server."""
        return self.scheme == "clickhouses"


def parse_events_url(url: str) -> EventsTarget:
    """Check an events URL and split it into its parts; ``ValueError`` says what is wrong."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in EVENTS_URL_SCHEMES:
        raise ValueError(f"must be a URL starting with one of: {', '.join(s + '://' for s in EVENTS_URL_SCHEMES)}")
    if scheme == "duckdb":
        return EventsTarget(scheme, path=url.removeprefix("duckdb:///").removeprefix("duckdb://"))
    parts = urlsplit(url)
    if scheme == "chdb":
        if parts.netloc or not parts.path.startswith("/") or parts.path == "/":
            raise ValueError("must name an absolute data directory, as chdb:///abs/path[?database=NAME]")
        names = parse_qs(parts.query).get("database", [DEFAULT_DATABASE])
        return EventsTarget(scheme, path=parts.path, database=_database(names[-1]))
    if not parts.hostname:
        raise ValueError(f"must name a server, as {scheme}://user:password@host:8123/database")
    try:
        port = parts.port or (8443 if scheme == "clickhouses" else 8123)
    except ValueError:
        raise ValueError("has a port that is not a number between 1 and 65535") from None
    return EventsTarget(
        scheme,
        host=parts.hostname,
        port=port,
        username=unquote(parts.username or "default"),
        password=unquote(parts.password or ""),
        database=_database(parts.path.strip("/") or DEFAULT_DATABASE),
    )


def _database(name: str) -> str:
    if not _DATABASE_NAME.fullmatch(name):
        raise ValueError(f"has a database name {name!r} that is not letters, digits and underscores")
    return name
