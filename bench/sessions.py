"""The sessions table, measured on a seeded file: reads from it against the event grouping, and what it costs to keep.

    python -m bench.sessions --data-dir bench/data/reads-10000000 [--runs 5] [--apply-events 100000]
    python -m bench.sessions --data-dir bench/data/scale-100000000 --apply-only --batch 10000

1. **Reads**: the overview, its daily time series and the metric by channel and by pathname over the seeded window,
   built by the route's builder (whole sessions from ``sessions``, edge sessions from events) and by the event
   grouping it replaces, run interleaved on a copy of the file opened with the server's memory limit; both answers
   are checked equal before any time counts. ``--reads-only`` stops here.
2. **Upgrade**: the time to fill the table from every event once (a file from before the table, opened).
3. **Apply**: new events appended in batches of ``--batch`` into a copy of the file, with the sessions table kept
   and without it, interleaved; the difference per event is what keeping the table costs the writer. The new
   sessions get ids as ingestion gives them (``new_session_id``). ``--apply-only`` skips the reads and the upgrade.

Prints one JSON object; the figures are copied by hand into ``bench/analysis.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from api_backend.ingest.sessions import new_session_id
from api_backend.query.dialect import DUCKDB
from api_backend.query.metric import build_metric_events_query, build_metric_query
from api_backend.query.overview import (
    build_overview_events_query,
    build_overview_query,
    build_overview_series_events_query,
    build_overview_series_query,
)
from api_backend.query.sql import Query
from api_backend.routes.read_params import ReadParams
from api_backend.settings import load_settings
from api_backend.store import duckdb as duckdb_store
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table

__all__ = ["main"]


def _reads(store: DuckDBEventStore, runs: int) -> dict[str, Any]:
    (first, last) = store.query("SELECT min(timestamp), max(timestamp) FROM events")[0]
    scope = ReadParams(first.date().isoformat(), (last - timedelta(days=1)).date().isoformat(), "UTC").scope(1)
    pairs = {
        "overview": (build_overview_query(scope, DUCKDB), build_overview_events_query(scope, DUCKDB)),
        "overview time series": (
            build_overview_series_query(scope, "day", DUCKDB),
            build_overview_series_events_query(scope, "day", DUCKDB),
        ),
        "metric by channel": (
            build_metric_query(scope, "channel", 20, 0, DUCKDB),
            build_metric_events_query(scope, "channel", 20, 0, DUCKDB),
        ),
        "metric by pathname": (
            build_metric_query(scope, "pathname", 100, 0, DUCKDB),
            build_metric_events_query(scope, "pathname", 100, 0, DUCKDB),
        ),
    }
    result: dict[str, Any] = {}
    for name, (facts, events) in pairs.items():
        if not _same(store.query_dicts(facts.sql, facts.params), store.query_dicts(events.sql, events.params)):
            raise SystemExit(f"{name}: the sessions route and the event grouping disagree")
        times: dict[str, list[float]] = {"sessions": [], "events": []}
        for _ in range(runs):
            for label, query in (("sessions", facts), ("events", events)):
                started = time.perf_counter()
                store.query_dicts(query.sql, query.params)
                times[label].append(time.perf_counter() - started)
        result[name] = {label: _ms(values) for label, values in times.items()}
    return result


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Equal rows; floats (averages) equal up to the order their terms were added in."""

    def close(x: Any, y: Any) -> bool:
        return math.isclose(x, y, rel_tol=1e-12) if isinstance(x, float) and isinstance(y, float) else x == y

    return len(a) == len(b) and all(
        r.keys() == q.keys() and all(close(r[k], q[k]) for k in r) for r, q in zip(a, b, strict=True)
    )


def _ms(values: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(values) * 1000, 1), "min_ms": round(min(values) * 1000, 1)}


def _new_events(n: int, start: datetime, *, opened_ids: bool = True) -> list[pa.Table]:
    """``n`` pageviews of new sessions (1-7 events, 20 s apart) after ``start``, in time order.

    Their ids hold the time they opened, as ingestion gives them; without ``opened_ids``, ids of a form without a
    time (an earlier version's), for which a fold searches every stored session.
    """
    rng = random.Random(20261126)
    rows: list[dict[str, Any]] = []
    while len(rows) < n:
        at = start + timedelta(milliseconds=50 * len(rows))
        bits = rng.getrandbits(64)  # drawn either way, so both kinds of id get the same sessions
        sid = new_session_id(at) if opened_ids else f"{bits:016x}"
        for i in range(rng.randrange(1, 8)):
            rows.append(
                {
                    "site_id": 1,
                    "timestamp": at + timedelta(seconds=20 * i),
                    "session_id": sid,
                    "user_id": sid[-8:],
                    "type": "pageview",
                    "pathname": f"/p{i}",
                    "referrer": "https://www.example.org/",
                    "channel": "Referral",
                    "country": "DE",
                    "browser": "Chrome",
                }
            )
    rows = sorted(rows[:n], key=lambda r: r["timestamp"])
    return [rows_to_table(rows[i : i + 10_000]) for i in range(0, n, 10_000)]


def _apply(source: Path, work: Path, last: datetime, n: int, batch: int, rounds: int) -> dict[str, Any]:
    def batches(tables: list[pa.Table]) -> list[pa.RecordBatch]:
        return [b for t in tables for b in t.to_batches(max_chunksize=batch)]

    opened = batches(_new_events(n, last))
    inputs = {
        "with sessions": opened,
        "with sessions, ids without a time": batches(_new_events(n, last, opened_ids=False)),
        "events only": opened,
    }
    times: dict[str, list[float]] = {label: [] for label in inputs}
    for _ in range(rounds):
        for label, appended in inputs.items():
            shutil.copy(source, work)
            store = DuckDBEventStore(work)
            fold_rows = duckdb_store.FOLD_ROWS
            if label == "events only":  # every batch folds at once, into nothing: the same transaction, no sessions
                duckdb_store.FOLD_ROWS = 1
                store._fold_incoming = [Query("SET VARIABLE sitelens_bench_noop = 1")]
            try:
                started = time.perf_counter()
                for b in appended:
                    store.append(pa.Table.from_batches([b]))
                store.query("SELECT count(*) FROM sessions")  # what is still pending folds here
                times[label].append(time.perf_counter() - started)
            finally:
                duckdb_store.FOLD_ROWS = fold_rows
            store.close()
    per_event = {label: round(min(values) / n * 1e6, 1) for label, values in times.items()}
    return {"events": n, "batch": batch, "us_per_event_best": per_event}


def _upgrade(source: Path, work: Path) -> dict[str, Any]:
    shutil.copy(source, work)
    store = DuckDBEventStore(work)
    store._con.execute("DROP TABLE sessions")
    store._con.execute("DROP TABLE sessions_pending")
    store.close()
    started = time.perf_counter()
    store = DuckDBEventStore(work)
    seconds = time.perf_counter() - started
    sessions = store.query("SELECT count(*) FROM sessions")[0][0]
    store.close()
    return {"fill_s": round(seconds, 1), "sessions": sessions}


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements on a copy of ``--data-dir``'s event file and print them as JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.sessions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a seeded data dir (bench --keep-data)")
    parser.add_argument("--runs", type=int, default=5, help="interleaved runs per read (default 5)")
    parser.add_argument("--apply-events", type=int, default=100_000, help="events appended per apply round")
    parser.add_argument("--batch", type=int, default=5_000, help="events per append (one writer transaction)")
    parser.add_argument("--reads-only", action="store_true", help="only the reads (no upgrade or apply rounds)")
    parser.add_argument("--apply-only", action="store_true", help="only the apply rounds (no reads or upgrade)")
    args = parser.parse_args(argv)
    memory_limit = load_settings({}, data_dir=str(args.data_dir)).duckdb_memory_limit or None
    source: Path = args.data_dir / "events.duckdb"
    work = args.data_dir / "sessions-bench.duckdb"
    try:
        shutil.copy(source, work)
        store = DuckDBEventStore(work, memory_limit=memory_limit)  # fills the table if the file predates it
        reads = {} if args.apply_only else _reads(store, args.runs)
        events = store.count()
        if args.reads_only:
            store.close()
            print(json.dumps({"events": events, "memory_limit": memory_limit, "reads": reads}, indent=2))
            return 0
        (last,) = store.query("SELECT max(timestamp) FROM events")[0]
        store.close()
        shutil.copy(work, source.with_name("sessions-source.duckdb"))  # the source with its table, for the rounds
        source = source.with_name("sessions-source.duckdb")
        result = {"events": events, "batch": args.batch}
        if not args.apply_only:
            result |= {"reads": reads, "upgrade": _upgrade(source, work)}
        result["apply"] = _apply(source, work, last, args.apply_events, args.batch, rounds=2)
    finally:
        work.unlink(missing_ok=True)
        args.data_dir.joinpath("sessions-source.duckdb").unlink(missing_ok=True)
        Path(f"{work}.wal").unlink(missing_ok=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
