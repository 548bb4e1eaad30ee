"""Fixtures for running sitelens on the embedded ClickHouse engine (chdb).

chdb hosts one engine per process, on one data directory, for as long as a handle is open. So the test process gets
one data directory (``chdb_path``) and one long-lived client on it (``chdb_client``), and every test gets a fresh
database inside it (``chdb_database``), dropped afterwards. ``chdb_settings`` points sitelens at that database, so
``open_services(chdb_settings)`` gives full ``Services`` on the ClickHouse store.

The suite registers them for every test module in ``tests/conftest.py`` (``pytest_plugins``), so a module must not
import them again (a second definition of ``chdb_path`` would start a second engine, which chdb refuses).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from api_backend.query.facts import NO_CUTOFF
from api_backend.services import Services, open_services
from api_backend.settings import Settings, load_settings
from api_backend.store.eventlog import EventLog
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store

__all__ = [
    "UNSEALED",
    "chdb_client",
    "chdb_database",
    "chdb_path",
    "chdb_services",
    "chdb_settings",
    "chdb_store",
    "chdb_url",
    "crash_before_position",
    "drop_database",
    "fresh_database",
]

SECRET = "test-secret-key-0123456789"


@pytest.fixture(scope="session")
def chdb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one chdb data directory of this test process."""
    return tmp_path_factory.mktemp("chdb").resolve()


@pytest.fixture(scope="session")
def chdb_client(chdb_path: Path) -> Iterator[Any]:
    """A clickhouse-connect client on the process's chdb engine, open for the whole session (keeps the engine up)."""
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=f"chdb://{chdb_path}")
    yield client
    client.close()


def fresh_database(client: Any) -> str:
    """Create a database with a new name on ``client``'s engine and return its name."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    client.command(f"CREATE DATABASE {name}")
    return name


def drop_database(client: Any, name: str) -> None:
    """Drop a database made by ``fresh_database`` (waits until its files are gone)."""
    client.command(f"DROP DATABASE IF EXISTS {name} SYNC")


def chdb_url(path: Path, database: str) -> str:
    """The events URL of ``database`` on the chdb engine at ``path``."""
    return f"chdb://{path}?database={database}"


@pytest.fixture
def chdb_database(chdb_client: Any) -> Iterator[str]:
    """A fresh, empty database on the process's chdb engine, dropped after the test."""
    name = fresh_database(chdb_client)
    yield name
    drop_database(chdb_client, name)


# The narrowing's columns of a store with no seal to read (``query.facts.facts_where_cheaper``), for tests that give
# a narrowing its rows by hand.
UNSEALED: dict[str, Any] = {"seal": (0, 0, NO_CUTOFF), "opened": (0, NO_CUTOFF), "users": 0}


@pytest.fixture
def chdb_settings(tmp_path: Path, chdb_path: Path, chdb_database: str) -> Settings:
    """Settings of a fresh sitelens whose events live in ``chdb_database`` (metadata in SQLite under ``tmp_path``),
    without the daily merge of its sessions table (a test's parts stay as it made them, whatever the hour) and
    without seals (a test seals when it reads sealed sessions)."""
    return load_settings(
        {},
        data_dir=str(tmp_path / "data"),
        secret_key=SECRET,
        events_url=chdb_url(chdb_path, chdb_database),
        clickhouse_merge_hour="off",
        clickhouse_seal_seconds="off",
    )


@pytest.fixture
def chdb_services(chdb_settings: Settings) -> Iterator[Services]:
    """Full ``Services`` (writer, event log, ingestor) on the chdb store."""
    services = open_services(chdb_settings)
    yield services
    services.close()


@pytest.fixture
def chdb_store(chdb_settings: Settings) -> Iterator[Any]:
    """The ClickHouse event store alone on this test's database."""
    store, _ = open_event_store(chdb_settings)
    yield store
    store.close()


def crash_before_position(settings: Settings, log_path: Path, parts: list[list[dict[str, Any]]]) -> EventLog:
    """A ClickHouse store left as by a crash between an insert and its log position; returns the event log.

    Every part is a record of the log. The first is copied with its position; the rest reach ClickHouse as one
    insert carrying the last record's position (its views ran too), and the process dies before writing it.
    """
    event_log = EventLog(log_path)
    seqs = [event_log.append(rows_to_table(part)) for part in parts]
    store, _ = open_event_store(settings)
    store.append(rows_to_table(parts[0]), log_seq=seqs[0])
    orphan = rows_to_table([row for part in parts[1:] for row in part])
    store.client.insert_arrow(
        "events", orphan.append_column("log_seq", pa.array([seqs[-1]] * orphan.num_rows, pa.uint64()))
    )
    store.close()
    return event_log
