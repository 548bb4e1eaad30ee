"""Opening the stores at start-up, with one clear sentence instead of a traceback when a file is damaged or missing.

Each failure names the file and what to do, as a ``StoreStartupError`` the ``sitelens`` command prints as one
line. Two cases are refused on purpose rather than worked around:

- a metadata database or DuckDB event file that does not open or fails its integrity check (damaged, truncated, not a
  database at all): restore it from a backup;
- a missing ``events.duckdb`` whose event log folder (created beside it when the store was first opened) still
  exists: the store held events, and starting empty would silently lose them. Restore the file, or set
  ``SITELENS_ALLOW_NEW_EVENT_STORE=true`` for one start to begin a new store on purpose.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from api_backend.settings import Settings
from api_backend.store.eventlog import EventLog
from api_backend.store.events import EventStore
from api_backend.store.metadata import MetadataStore
from api_backend.store.open import open_event_store, parse_events_url

__all__ = ["StoreStartupError", "open_events", "open_metadata_store"]


class StoreStartupError(RuntimeError):
    """A store cannot be opened; the message names the file and what to do, in one line."""


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _metadata_name(database_url: str) -> str:
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        return str(Path(url.database).resolve())
    return url.render_as_string(hide_password=True)


def open_metadata_store(settings: Settings) -> MetadataStore:
    """The metadata store (migrated to the current schema); ``StoreStartupError`` when it cannot be used."""
    name = _metadata_name(settings.database_url)
    try:
        store = MetadataStore(settings.database_url)
    except SQLAlchemyError as exc:
        raise StoreStartupError(
            f"cannot open the metadata database {name}: {_first_line(exc)}; "
            "restore it from a backup (or check that the database server is reachable)"
        ) from None
    if store.engine.dialect.name == "sqlite":
        # A truncated file can pass the migrations (they read only the schema), so check every page once.
        try:
            with store.engine.connect() as conn:
                verdict = conn.exec_driver_sql("PRAGMA quick_check").scalar()
        except SQLAlchemyError as exc:
            verdict = _first_line(exc)
        if verdict != "ok":
            store.close()
            raise StoreStartupError(
                f"the metadata database {name} is damaged ({verdict}); restore it from a backup"
            ) from None
    return store


def open_events(settings: Settings) -> tuple[EventStore, EventLog | None]:
    """The event store of ``settings.events_url`` and its event log (none for DuckDB's ``:memory:``).

    Raises ``StoreStartupError`` when a DuckDB file is damaged, or missing although it held events, and
    ``LogCorruptError`` when the log holds damage that is not a torn final write.
    """
    target = parse_events_url(settings.events_url)
    if target.scheme == "duckdb" and target.path != ":memory:" and not Path(target.path).exists():
        folder = Path(target.path).with_suffix(".eventlog")
        if folder.is_dir() and not settings.allow_new_event_store:
            raise StoreStartupError(
                f"the event store {target.path} is missing, but its event log {folder} shows it held events; "
                "restore the file from a backup, or set SITELENS_ALLOW_NEW_EVENT_STORE=true for one start "
                "to begin with a new, empty event store"
            )
    try:
        store, log_dir = open_event_store(settings)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise  # another process holds it: the caller says which
        raise StoreStartupError(_damaged(target.path, exc)) from None
    except duckdb.Error as exc:
        raise StoreStartupError(_damaged(target.path, exc)) from None
    if log_dir is None:
        return store, None
    try:
        return store, EventLog(log_dir)
    except BaseException:
        store.close()
        raise


def _damaged(path: str, exc: BaseException) -> str:
    return f"cannot open the event store {path}: {_first_line(exc)}; restore it from a backup"
