"""From ``SITELENS_EVENTS_URL`` to an open event store and the place of its event log.

    duckdb:///abs/path/events.duckdb                     embedded DuckDB (the default)
    clickhouse://user:password@host:8123/database        a ClickHouse server over HTTP (clickhouses:// for HTTPS)
    chdb:///abs/path[?database=NAME]                     the embedded ClickHouse engine (database ``sitelens``)

``parse_events_url`` (from ``store/urls.py``) checks a URL without opening it; ``open_event_store`` opens it.
The ClickHouse client libraries are imported only when a ClickHouse URL is opened, so DuckDB-only installs work.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api_backend.settings import memory_bytes
from api_backend.store.urls import DEFAULT_DATABASE, EVENTS_URL_SCHEMES, EventsTarget, parse_events_url

if TYPE_CHECKING:
    from api_backend.settings import Settings
    from api_backend.store.events import EventStore

__all__ = [
    "DEFAULT_DATABASE",
    "EMBEDDED_MEMORY_LIMIT",
    "EVENTS_URL_SCHEMES",
    "EventsTarget",
    "open_event_store",
    "parse_events_url",
]

# What one read of the embedded ClickHouse engine may use when ``clickhouse_memory_limit`` is empty: the engine runs
# inside the server's process, which nothing else bounds (at 100M events it grew to 9 GB). With 4GB every read route
# answers at 100M events and the server peaks at 3.1-3.2 GB; with 1536MB five of twelve routes answered 503 (their
# joins and materialized CTEs do not spill), with 1GB seven.
EMBEDDED_MEMORY_LIMIT = "4GB"

# Seconds the client merging a server's ``sessions`` table waits for its answer
# (``ClickHouseEventStore.merge_sessions``), which comes only when the merge is done: 3 to 7 minutes at 100M events,
# past the client's usual 300 s.
MERGE_TIMEOUT = 6 * 3600


def open_event_store(settings: Settings) -> tuple[EventStore, Path | None]:
    """Open the event store of ``settings.events_url``; return it and the directory of its event log (or None)."""
    target = parse_events_url(settings.events_url)
    if target.scheme == "duckdb":
        from api_backend.store.duckdb import DuckDBEventStore

        store = DuckDBEventStore(target.path, memory_limit=settings.duckdb_memory_limit)
        return store, None if target.path == ":memory:" else Path(target.path).with_suffix(".eventlog")
    limit = settings.clickhouse_memory_limit or (EMBEDDED_MEMORY_LIMIT if target.scheme == "chdb" else "")
    memory = memory_bytes(limit) if limit else None
    if target.scheme == "chdb":
        return _open_chdb(target, memory), Path(f"{target.path}.{target.database}.eventlog")
    return _open_server(
        target, memory
    ), settings.data_dir / f"clickhouse-{target.host}-{target.port}-{target.database}.eventlog"


def _import_client():
    try:
        import clickhouse_connect
        import clickhouse_connect.driver.exceptions
    except ImportError:
        raise ValueError(
            "a ClickHouse events URL needs the clickhouse extra: pip install 'sitelens[clickhouse]'"
        ) from None
    return clickhouse_connect


def _open_server(target: EventsTarget, memory_limit: int | None) -> EventStore:
    from api_backend.store.clickhouse import ClickHouseEventStore

    clickhouse_connect = _import_client()
    common = {
        "host": target.host,
        "port": target.port,
        "username": target.username,
        "password": target.password,
        "secure": target.secure,
        # No session: a session serializes queries, and the store is read from many threads at once.
        "autogenerate_session_id": False,
    }
    try:
        bootstrap = clickhouse_connect.get_client(**common)
    except clickhouse_connect.driver.exceptions.Error as exc:
        where = f"{target.scheme}://{target.host}:{target.port}"
        raise ValueError(f"cannot reach the ClickHouse server at {where}: {_first_line(exc)}") from None
    try:
        bootstrap.command(f"CREATE DATABASE IF NOT EXISTS `{target.database}`")
    finally:
        bootstrap.close()
    client = clickhouse_connect.get_client(database=target.database, **common)

    def merge_client() -> Any:
        return clickhouse_connect.get_client(database=target.database, send_receive_timeout=MERGE_TIMEOUT, **common)

    try:
        return ClickHouseEventStore(client, target.database, memory_limit=memory_limit, merge_client=merge_client)
    except BaseException:  # a schema it will not migrate, a server gone: nothing keeps the client
        client.close()
        raise


# chdb hosts one engine per process, on one data directory: every store in the process must use the same one.
_chdb_lock = threading.Lock()
_chdb_path: str | None = None
_chdb_open = 0


def _open_chdb(target: EventsTarget, memory_limit: int | None) -> EventStore:
    global _chdb_path, _chdb_open
    from api_backend.store.clickhouse import ClickHouseEventStore

    clickhouse_connect = _import_client()
    path = str(Path(target.path).resolve())
    with _chdb_lock:
        if _chdb_open and path != _chdb_path:
            raise ValueError(
                f"the embedded ClickHouse engine of this process already runs on {_chdb_path}; "
                f"chdb allows one data directory per process, so {path} cannot be opened beside it"
            )
        Path(path).mkdir(parents=True, exist_ok=True)
        # Each store has its own handle on the one engine; a handle keeps its own default database.
        try:
            client = clickhouse_connect.get_client(dsn=f"chdb://{path}")
        except clickhouse_connect.driver.exceptions.Error as exc:
            if "EmbeddedServer" in str(exc):  # chdb's only word for "another process holds this directory"
                raise ValueError(
                    f"cannot open the chdb data directory {path}: another process (a running sitelens server?) "
                    "holds it, and chdb allows one process per directory"
                ) from None
            raise ValueError(f"cannot open the embedded ClickHouse engine at {path}: {_first_line(exc)}") from None
        try:
            client.command(f"CREATE DATABASE IF NOT EXISTS `{target.database}`")
            client.database = target.database
        except BaseException:
            client.close()
            raise
        _chdb_path = path
        _chdb_open += 1

    def merge_client() -> Any:
        # A handle of its own: the calls on one handle wait for each other, so a merge on the store's would hold
        # every read and insert for minutes.
        handle = clickhouse_connect.get_client(dsn=f"chdb://{path}")
        handle.database = target.database
        return handle

    try:
        return ClickHouseEventStore(
            client, target.database, on_close=_release_chdb, memory_limit=memory_limit, merge_client=merge_client
        )
    except BaseException:
        client.close()
        _release_chdb()
        raise


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _release_chdb() -> None:
    global _chdb_open
    with _chdb_lock:
        _chdb_open -= 1
