"""The read block at one size: seed N events, then time every logical query through the API, on DuckDB and on
ClickHouse, interleaved run by run so that noise from the shared machine hits the three alike.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from api_backend.query.goals import GoalSpec
from api_backend.settings import load_settings
from api_backend.store.duckdb import DuckDBEventStore
from bench.accounts import BenchAccount, create_account
from bench.clickhouse import ClickHouseEngine
from bench.queries import BENCH_GOALS, QUERIES, ReadContext, find_top_error
from bench.server import RSSSampler, ServerProcess, sitelens_command
from bench.stats import summarize

__all__ = ["ERROR_MESSAGES", "SEED", "run_reads", "seed_events"]

SEED = 20261121
DAYS = 30
ERROR_MESSAGES = 20


def seed_events(account: BenchAccount, n: int, now: datetime) -> dict[str, Any]:
    """Run ``sitelens seed`` for ``n`` events (30 days, 20 error messages); return wall time and peak RSS."""
    command = [
        *sitelens_command(),
        "seed",
        "--site",
        str(account.site_id),
        "--events",
        str(n),
        "--days",
        str(DAYS),
        "--seed",
        str(SEED),
        "--now",
        now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "--error-messages",
        str(ERROR_MESSAGES),
        "--data-dir",
        str(account.data_dir),
    ]
    started = time.perf_counter()
    with open(account.data_dir / "seed.log", "wb") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log)
        sampler = RSSSampler(proc.pid, interval=0.1)
        out, _ = proc.communicate()
        peak = sampler.peak
        sampler.stop()
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"sitelens seed failed ({proc.returncode}); see {account.data_dir / 'seed.log'}")
    return {
        "events": n,
        "seconds": seconds,
        "events_per_s": n / seconds,
        "peak_rss_bytes": peak,
        "output": out.decode().strip(),
    }


def _create_goals(client: httpx.Client, site_id: int) -> list[tuple[int, str, str, dict[str, Any]]]:
    created = []
    for name, goal_type, config in BENCH_GOALS:
        response = client.post(f"/sites/{site_id}/goals", json={"name": name, "goalType": goal_type, "config": config})
        response.raise_for_status()
        created.append((response.json()["goalId"], name, goal_type, config))
    # The goals page lists the newest first; keep that order so the direct query is the route's query.
    return list(reversed(created))


def _same(a: Any, b: Any) -> bool:
    return _normal(a) == _normal(b)


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    if isinstance(value, float):
        return round(value, 3)
    return value


def _diff(reference: Any, other: Any) -> str:
    a, b = _normal(reference), _normal(other)
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        parts = [f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]
        return "; ".join(parts)[:600]
    return f"{a!r} vs {b!r}"[:600]


def _timed(fn: Callable[[ReadContext], Any], ctx: ReadContext) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn(ctx)
    return time.perf_counter() - started, value


def run_reads(
    work_dir: Path,
    size: int,
    ch: ClickHouseEngine,
    *,
    runs: int = 10,
    warmups: int = 2,
    only: set[str] | None = None,
    budget: float = 300.0,
    with_server: Callable[[ServerProcess, BenchAccount], dict[str, Any]] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Seed ``size`` events into a fresh data dir and measure every query; ``with_server`` runs while the API is up."""
    data_dir = work_dir / f"reads-{size}"
    shutil.rmtree(data_dir, ignore_errors=True)
    account = create_account(data_dir)
    now = datetime.now(UTC).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    start_date, end_date = (now - timedelta(days=DAYS)).date(), (now - timedelta(days=1)).date()

    log(f"  seeding {size:,} events with `sitelens seed`")
    seeding = seed_events(account, size, now)
    log(f"    {seeding['seconds']:.1f} s ({seeding['events_per_s']:,.0f} events/s)")

    # The server will hold the event file's lock: direct DuckDB runs use a byte copy of the seeded file.
    events_path = Path(load_settings({}, data_dir=str(data_dir)).events_path)
    direct_dir = work_dir / f"direct-{size}"
    shutil.rmtree(direct_dir, ignore_errors=True)
    direct_dir.mkdir(parents=True)
    direct_path = direct_dir / "events.duckdb"
    shutil.copyfile(events_path, direct_path)
    db_bytes = events_path.stat().st_size

    log("  loading the same rows into ClickHouse (chdb)")
    ch_rows, ch_seconds = ch.load_from_duckdb(direct_path)
    log(f"    {ch_rows:,} rows in {ch_seconds:.1f} s")

    # Same engine configuration as the server (its DuckDB memory limit), so API/DuckDB measures only the API.
    settings = load_settings({}, data_dir=str(data_dir))
    duck = DuckDBEventStore(direct_path, memory_limit=getattr(settings, "duckdb_memory_limit", None) or None)
    duck_rows = duck.count()
    server = ServerProcess(data_dir).start()
    ch_server: ServerProcess | None = None
    result: dict[str, Any] = {
        "events": size,
        "seeding": seeding,
        "duckdb_file_bytes": db_bytes,
        "clickhouse_load": {"rows": ch_rows, "seconds": ch_seconds},
        "duckdb_rows": duck_rows,
        "duckdb_memory_limit": getattr(settings, "duckdb_memory_limit", None),
        "window": {"start_date": start_date.isoformat(), "end_date": end_date.isoformat(), "time_zone": "UTC"},
        "runs": runs,
        "warmups": warmups,
        "queries": {},
    }
    rss: dict[str, int] = {}
    try:
        client = httpx.Client(base_url=server.api_url, headers=account.headers, timeout=600)
        goals = _create_goals(client, account.site_id)
        account.goals = {name: goal_id for goal_id, name, _, _ in goals}
        # The server stores the goals' bits in the background once they are created; the copy gets them too, so
        # its goal queries are the ones the routes run on a site whose goals are settled.
        started = time.perf_counter()
        duck.store_goal_bits(account.site_id, [GoalSpec(g[0], g[2], g[3]) for g in goals])
        result["goal_bits_seconds"] = time.perf_counter() - started
        log(f"  the goals' bits stored in the copy in {result['goal_bits_seconds']:.1f} s")
        log("  copying the events into a ClickHouse store (`sitelens migrate-events`) and serving it")
        ch_server, result["clickhouse_store_load"] = start_clickhouse_store(data_dir, direct_path, work_dir, size)
        log(f"    {result['clickhouse_store_load']['seconds']:.1f} s")
        ch_client = httpx.Client(base_url=ch_server.api_url, headers=account.headers, timeout=600)
        ctx = ReadContext(
            site_id=account.site_id,
            organization_id=account.organization_id,
            start_date=start_date.isoformat(),
            end_date=end_date.isoformat(),
            goals=goals,
            http=client,
            duck=duck,
            ch=ch,
            http_clickhouse_store=ch_client,
        )
        ctx.top_error = find_top_error(ctx)
        assert server.sampler is not None
        with server.sampler.block(rss, "reads"):
            for query in QUERIES:
                if only and query.name not in only:
                    continue
                log(f"  {query.name}")
                result["queries"][query.name] = _measure(query, ctx, runs, warmups, budget)
                q = result["queries"][query.name]
                log(
                    f"    API {q['api']['median'] * 1000:.0f} ms, DuckDB {q['duckdb']['median'] * 1000:.0f} ms, "
                    f"ClickHouse {q['clickhouse']['median'] * 1000:.0f} ms, "
                    f"API on the ClickHouse store {q['api_clickhouse']['median'] * 1000:.0f} ms"
                    + (
                        ""
                        if q["match_duckdb"] and q["match_clickhouse"] and q["match_api_clickhouse"]
                        else "  (MISMATCH)"
                    )
                )
        if with_server is not None:
            with server.sampler.block(rss, "dashboard"):
                result["dashboard"] = with_server(server, account)
        client.close()
        ch_client.close()
    finally:
        server.stop()
        if ch_server is not None:
            ch_server.stop()
        duck.close()
    result["peak_rss_bytes"] = rss
    shutil.rmtree(direct_dir, ignore_errors=True)
    return result


def start_clickhouse_store(
    data_dir: Path, events_file: Path, work_dir: Path, size: int
) -> tuple[ServerProcess, dict[str, Any]]:
    """A second ``sitelens serve`` on the same metadata and events, its events in a ClickHouse store (chdb)."""
    ch_dir, url, seconds = prepare_clickhouse_store(data_dir, events_file, work_dir / f"reads-{size}-clickhouse")
    server = ServerProcess(ch_dir, env={"SITELENS_EVENTS_URL": url}).start(timeout=300)
    return server, {"seconds": seconds, "url": "chdb://<data dir>/chdb"}


def prepare_clickhouse_store(data_dir: Path, events_file: Path, ch_dir: Path) -> tuple[Path, str, float]:
    """A data dir ``ch_dir`` with ``data_dir``'s metadata whose events live in a ClickHouse store (chdb).

    The metadata database and secret are copied (so ids, keys and goals are the same), the events come from a copy
    of ``events_file`` (a DuckDB file no process holds) through ``sitelens migrate-events``. Returns the dir, the
    ``SITELENS_EVENTS_URL`` to serve it with, and the seconds the copy took.
    """
    shutil.rmtree(ch_dir, ignore_errors=True)
    ch_dir.mkdir(parents=True)
    shutil.copyfile(data_dir / "secret.key", ch_dir / "secret.key")
    # SQLite's backup API, since the running server's recent writes may still be in the write-ahead log.
    with sqlite3.connect(data_dir / "sitelens.sqlite3") as source, sqlite3.connect(ch_dir / "sitelens.sqlite3") as copy:
        source.backup(copy)
    shutil.copyfile(events_file, ch_dir / "events.duckdb")
    url = f"chdb://{(ch_dir / 'chdb').resolve()}"
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITELENS_")}
    subprocess.run(
        [*sitelens_command(), "migrate-events", "--to", url, "--data-dir", str(ch_dir)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - started
    (ch_dir / "events.duckdb").unlink()
    settle_merges(url)
    return ch_dir, url, seconds


# Polls the engine until no merge or mutation runs and the count of active parts stayed the same over three polls
# (or the time given runs out), then prints what it waited. In a process of its own: chdb opens one data directory
# per process.
_SETTLE = """
import json, sys, time
import clickhouse_connect
client = clickhouse_connect.get_client(dsn=sys.argv[1])
started = time.monotonic()
deadline = started + float(sys.argv[2])
busy = "SELECT (SELECT count() FROM system.merges) + (SELECT count() FROM system.mutations WHERE NOT is_done)"
steady, first, last = 0, None, None
while steady < 3 and time.monotonic() < deadline:
    running = client.query(busy).result_rows[0][0]
    parts = client.query("SELECT count() FROM system.parts WHERE active").result_rows[0][0]
    first = parts if first is None else first
    steady = steady + 1 if running == 0 and parts == last else 0
    last = parts
    time.sleep(2)
client.close()
print(json.dumps({"seconds": round(time.monotonic() - started, 1), "parts_before": first, "parts_after": last}))
"""


def settle_merges(url: str, timeout: float = 1800.0) -> dict[str, Any]:
    """Let the engine run the merges and mutations a bulk copy, a merge or a seal left before anything is timed.

    A server opening a fresh copy runs them in its own process while it answers: the first routes timed on a 100M
    copy took about twice their time on a copy kept from an earlier block, and after the seal the daily series 9.3 s
    against 5.4 s. Returns the seconds waited and the active parts at the first and last poll.
    """
    done = subprocess.run(
        [sys.executable, "-c", _SETTLE, url, str(timeout)], check=True, capture_output=True, text=True
    )
    return dict(json.loads(done.stdout))


def _measure(query: Any, ctx: ReadContext, runs: int, warmups: int, budget: float) -> dict[str, Any]:
    """Interleaved runs of the three engines; a query whose one round takes longer than ``budget / runs`` gets
    fewer timed rounds (at least 3) so that one very slow query cannot stretch the whole run for an hour."""
    samples: dict[str, list[float]] = {"api": [], "duckdb": [], "clickhouse": [], "api_clickhouse": []}
    engines = (
        ("api", query.http),
        ("duckdb", query.duck),
        ("clickhouse", query.ch),
        ("api_clickhouse", lambda c: query.http(c.on_clickhouse_store())),
    )
    first: dict[str, Any] = {}
    first_seconds: dict[str, float] = {}
    round_seconds = 0.0
    for name, fn in engines:  # the first round warms up and gives each engine's result for the check
        first_seconds[name], first[name] = _timed(fn, ctx)
        round_seconds += first_seconds[name]
    planned = runs if round_seconds * runs <= budget else max(3, int(budget / round_seconds))
    for i in range(max(warmups - 1, 0) + planned):
        if i < warmups - 1 and planned < runs:
            continue  # a slow query: its first round was warm-up enough
        for name, fn in engines:
            seconds, _ = _timed(fn, ctx)
            if i >= warmups - 1:
                samples[name].append(seconds)
    # The API's first answer to a question is computed; repeats may come from its result cache (exact: keyed on the
    # events in the window), so the first call is kept apart from the warm runs.
    out: dict[str, Any] = {"route": query.route, "timed_runs": len(samples["api"]), "api_first_s": first_seconds["api"]}
    for name, values in samples.items():
        out[name] = summarize(values)
        out[name]["samples"] = values
    out["ratio_api_duckdb"] = out["api"]["median"] / out["duckdb"]["median"]
    out["ratio_api_clickhouse"] = out["api"]["median"] / out["clickhouse"]["median"]
    out["ratio_api_stores"] = out["api_clickhouse"]["median"] / out["api"]["median"]
    out["api_clickhouse_first_s"] = first_seconds["api_clickhouse"]
    out["match_duckdb"] = _same(first["api"], first["duckdb"])
    out["match_clickhouse"] = _same(first["api"], first["clickhouse"])
    out["match_api_clickhouse"] = _same(first["api"], first["api_clickhouse"])
    if not out["match_api_clickhouse"]:
        out["mismatch_api_clickhouse"] = _diff(first["api"], first["api_clickhouse"])
    if not out["match_duckdb"]:
        out["mismatch_duckdb"] = _diff(first["api"], first["duckdb"])
    if not out["match_clickhouse"]:
        out["mismatch_clickhouse"] = _diff(first["api"], first["clickhouse"])
    return out
