"""Every read route's own cost on a seeded data dir, through the API, on both event stores, and the server's memory:

    python -m bench.scale --data-dir <dir seeded by `python -m bench --keep-data` or `sitelens seed`> [--runs 3]

Starts ``sitelens serve`` on the dir (its configuration, DuckDB memory limit included), creates the benchmark goals
if the site has none, then asks each read route ``--runs`` times, each time for a window no request asked for
before (its start moved one more day before the seeded data, as the dashboard block does: same numbers, but the
result cache has no answer), and once more for the last window (answered from the result cache). So each uncached
figure is the route's own queries plus the HTTP round trip, the cost a site owner waits for on a live window.
Then the same on a copy of the events in a ClickHouse store (chdb, ``sitelens migrate-events``; its sessions
table then merged into one part by ``sitelens clickhouse-merge-sessions``, as its operator would, the site's goals
recorded as the goal bits its seals write, as a server's first goals list does, and its sessions sealed by
``sitelens clickhouse-seal-sessions``, as a server does soon after it starts) unless
``--duckdb-only``. With ``--events-url`` only the server on ``--data-dir`` with that event store is timed (a
ClickHouse store copied before, such as ``chdb://<dir>/chdb``, so a change is measured without copying again).
Prints one JSON object (per store and route: median and best ms of the answered requests, the
cached answer's ms, and the status and time of any that failed; each server's peak RSS). ``python -m bench`` runs
this as its scale block (``--scale-sizes``) and renders it in ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import httpx

from api_backend.query.goals import GoalSpec
from api_backend.settings import load_settings
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.metadata import MetadataStore
from api_backend.store.open import open_event_store
from bench.accounts import BenchAccount
from bench.dashboard import _window
from bench.profile import _api_key
from bench.queries import BENCH_GOALS, FUNNEL_STEPS
from bench.reads import _create_goals, prepare_clickhouse_store, settle_merges
from bench.report import TODAY_ROUTE
from bench.server import RSSSampler, ServerProcess, sitelens_command

__all__ = ["main"]

Request = Callable[[httpx.Client, dict[str, str]], httpx.Response]
PROPERTY_FILTER = json.dumps([{"parameter": "prop:plan", "type": "equals", "value": ["pro"]}])


def _routes(site: int, goals: dict[str, int], org: str, error: str, user: str) -> dict[str, Request]:
    def get(path: str, **params: Any) -> Request:
        return lambda c, window: c.get(path, params={**window, **params})

    return {
        "goals list": get(f"/sites/{site}/goals", limit=100),
        "goal sessions": get(f"/sites/{site}/goals/{goals['Visited pricing']}/sessions", limit=25),
        # An event goal's sessions and an event-property filter find their events among the goals' rows, which the
        # ClickHouse store keeps apart (``goal_events``).
        "goal sessions, event goal": get(f"/sites/{site}/goals/{goals['Signed up']}/sessions", limit=25),
        "goal breakdown by channel": get(f"/sites/{site}/goals/{goals['Signed up']}/breakdown", parameter="channel"),
        "goal breakdown by pathname": get(f"/sites/{site}/goals/{goals['Signed up']}/breakdown", parameter="pathname"),
        "metric by channel": get(f"/sites/{site}/metric", parameter="channel", limit=20),
        "metric by pathname": get(f"/sites/{site}/metric", parameter="pathname", limit=100),
        "overview": get(f"/sites/{site}/overview"),
        "overview, event-property filter": get(f"/sites/{site}/overview", filters=PROPERTY_FILTER),
        # The dashboard's ranges end today, read to the end of the current minute: each minute asks them anew, where
        # the other windows end at midnight (``read/results.py``).
        TODAY_ROUTE: lambda c, window: c.get(
            f"/sites/{site}/overview", params={**window, "end_date": datetime.now(UTC).date().isoformat()}
        ),
        "overview time series": get(f"/sites/{site}/overview/time-series", bucket="day"),
        # Local days five and a half hours from UTC: every time shifted before it is bucketed.
        "overview time series, Asia/Kolkata": get(
            f"/sites/{site}/overview/time-series", bucket="day", time_zone="Asia/Kolkata"
        ),
        "sessions list": get(f"/sites/{site}/sessions", limit=25),
        # An identified user's totals and newest sessions (the dashboard's user page), within the window.
        "a user's page": get(f"/sites/{site}/users/{user}", limit=25),
        "error names": get(f"/sites/{site}/error-names"),
        "error time series": get(f"/sites/{site}/errors/time-series", errorMessage=error, bucket="hour"),
        "org usage": get(f"/org-event-count/{org}"),
        "funnel (3 steps)": lambda c, window: c.post(
            f"/sites/{site}/funnels/analyze", params=window, json={"steps": FUNNEL_STEPS}
        ),
    }


def _fresh_windows() -> Iterator[dict[str, str]]:
    for days in range(1, 10_000):
        start, end = _window(days)
        yield {"start_date": start, "end_date": end, "time_zone": "UTC"}


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def measure(
    data_dir: Path, runs: int, log: Callable[[str], None] = _log, *, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Time every route ``runs`` times on fresh windows and once cached against a server on ``data_dir``."""
    key, site = _api_key(data_dir)
    result: dict[str, Any] = {"runs": runs, "routes": {}}
    duckdb_store = not (env or {}).get("SITELENS_EVENTS_URL")
    server = ServerProcess(data_dir, env=env).start(timeout=900)  # a large file may be upgraded at its first open
    try:
        account = BenchAccount(data_dir, "", key, "", site, "")
        client = httpx.Client(base_url=server.api_url, headers=account.headers, timeout=1800)
        if duckdb_store:
            # The goal bits the store keeps for the goals list (``store/goal_bits.py``) are stored once after a goal
            # changes, in the background; the routes are timed once they are, as a site owner reads them daily.
            # So the server is stopped, they are stored on the file directly (timed), and it starts again.
            # (A goals list would have the server start storing them: the goals are looked up in the metadata.)
            if not _site_goals(data_dir, site):
                _create_goals(client, site)
            client.close()
            server.stop()
            result["goal_bits_s"] = round(_keep_goal_bits(data_dir, site), 2)
            log(f"  goal bits stored in {result['goal_bits_s']:.1f} s")
            server = ServerProcess(data_dir, env=env).start(timeout=900)
            client = httpx.Client(base_url=server.api_url, headers=account.headers, timeout=1800)
        listed = client.get(f"/sites/{site}/goals", params={"limit": 100}).json()["data"]
        if not listed:
            _create_goals(client, site)
            listed = client.get(f"/sites/{site}/goals", params={"limit": 100}).json()["data"]
        goals = {g["name"]: g["goalId"] for g in listed if g["name"] in {name for name, _, _ in BENCH_GOALS}}
        org = client.get(f"/sites/{site}").json()["organizationId"]
        windows = _fresh_windows()
        names = client.get(f"/sites/{site}/error-names", params=next(windows)).json()["data"]
        error = max(names, key=lambda n: n["count"])["value"] if names else ""
        newest = client.get(f"/sites/{site}/sessions", params={**next(windows), "limit": 100}).json()["data"]
        user = next((s["user_id"] for s in newest if s["identified"]), "nobody")
        assert server.sampler is not None
        server.sampler.reset()
        for name, request in _routes(site, goals, org, error, user).items():
            times: list[float] = []
            failures: list[str] = []
            for _ in range(runs):
                window = next(windows)
                elapsed, failure = _timed(request, client, window)
                if failure is None:
                    times.append(elapsed)
                else:  # an answer the route could not give (a 503 at the memory limit): recorded, not timed
                    failures.append(failure)
            entry: dict[str, Any] = {"failures": failures} if failures else {}
            if times:
                entry |= {"median_ms": round(statistics.median(times) * 1000, 1), "min_ms": round(min(times) * 1000, 1)}
                cached, failure = _timed(request, client, window)  # the same question again
                if failure is None:
                    entry["cached_ms"] = round(cached * 1000, 1)
            result["routes"][name] = entry
            log(
                f"  {name}: "
                + (f"{entry['median_ms']:,.0f} ms, cached {entry.get('cached_ms', 0):,.0f} ms" if times else "")
                + (f" {failures}" if failures else "")
            )
        result["peak_rss_bytes"] = server.sampler.peak
        client.close()
    finally:
        server.stop()
    return result


def _site_goals(data_dir: Path, site: int) -> list[GoalSpec]:
    """The goals of ``site`` in the metadata of ``data_dir``."""
    # Read beside a running server, whose start migrated the metadata already.
    metadata = MetadataStore(load_settings({}, data_dir=str(data_dir)).database_url, migrate=False)
    try:
        return [GoalSpec(g.goal_id, g.goal_type, g.config or {}) for g in metadata.all_goals(site)]
    finally:
        metadata.close()


def _keep_goal_bits(data_dir: Path, site: int) -> float:
    """Seconds the DuckDB store of ``data_dir`` takes to store the bits of the site's goals, from none registered
    (the site's ``goal_bits`` rows are deleted first, so every run times the same work: bits a server registered
    when the goals were created, or an earlier run, are cleared and filled again)."""
    settings = load_settings({}, data_dir=str(data_dir))
    goals = _site_goals(data_dir, site)
    with duckdb.connect(settings.events_path) as con:
        if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'goal_bits'").fetchone() != (0,):
            con.execute("DELETE FROM goal_bits WHERE site_id = ?", [site])
    store = DuckDBEventStore(settings.events_path, memory_limit=settings.duckdb_memory_limit)
    try:
        started = time.perf_counter()
        store.store_goal_bits(site, goals)
        return time.perf_counter() - started
    finally:
        store.close()


def _timed(request: Request, client: httpx.Client, window: dict[str, str]) -> tuple[float, str | None]:
    started = time.perf_counter()
    response = request(client, window)
    elapsed = time.perf_counter() - started
    if response.status_code == 200:
        return elapsed, None
    return elapsed, f"{response.status_code} after {elapsed:.1f} s: {response.text[:200]}"


def _clickhouse_command(ch_dir: Path, url: str, command: str) -> dict[str, Any]:
    """The JSON of ``sitelens COMMAND`` run on the copy, with the command's peak RSS (``peak_rss_bytes``, sampled as
    the seeder's): the embedded engine works inside the command's process, as it would inside a server's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITELENS_")} | {"SITELENS_EVENTS_URL": url}
    args = [*sitelens_command(), command, "--data-dir", str(ch_dir)]
    with subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        sampler = RSSSampler(process.pid, interval=0.1)
        out, err = process.communicate()
        sampler.stop()
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, args, out, err)
    return dict(json.loads(out)) | {"peak_rss_bytes": sampler.peak}


def merge_sessions(ch_dir: Path, url: str) -> dict[str, Any]:
    """Merge the copy's ``sessions`` table into one part, as its operator would (``sitelens
    clickhouse-merge-sessions``): the reads that take whole sessions from it merge its parts with ``FINAL``, which a
    bulk copy leaves in several overlapping ones (``bench/analysis.md``). Returns the command's JSON."""
    return _clickhouse_command(ch_dir, url, "clickhouse-merge-sessions")


def ask_goal_bits(ch_dir: Path, url: str, site: int) -> None:
    """Record the site's goals on the copy as the goal bits its seals write (``ClickHouseEventStore.store_goal_bits``):
    a server does it at the site's first goals list and then seals again in the background, which the timed routes
    would meet; before the copy's first seal it only records them, and the seal writes them."""
    settings = load_settings(
        {}, data_dir=str(ch_dir), events_url=url, clickhouse_seal_seconds="off", clickhouse_merge_hour="off"
    )
    store, _ = open_event_store(settings)
    try:
        store.store_goal_bits(site, _site_goals(ch_dir, site))
    finally:
        store.close()


def seal_sessions(ch_dir: Path, url: str) -> dict[str, Any]:
    """Seal the copy's sessions (``sitelens clickhouse-seal-sessions``): a server seals them soon after it starts,
    and the reads take whole sessions from the seal once it is written. Returns the command's JSON."""
    return _clickhouse_command(ch_dir, url, "clickhouse-seal-sessions")


def run_scale(
    data_dir: Path, work_dir: Path, runs: int, log: Callable[[str], None] = _log, *, clickhouse: bool = True
) -> dict[str, Any]:
    """Both stores on the events of ``data_dir``: its own DuckDB store, then a ClickHouse store copied from it."""
    events_file = Path(load_settings({}, data_dir=str(data_dir)).events_path)
    with duckdb.connect(str(events_file), read_only=True) as con:
        (events,) = con.execute("SELECT count(*) FROM events").fetchone() or (0,)
    result: dict[str, Any] = {"events": int(events), "duckdb_file_bytes": events_file.stat().st_size}
    log(f"  DuckDB store, {int(events):,} events")
    result["duckdb"] = measure(data_dir, runs, log)
    if clickhouse:
        log("  copying the events into a ClickHouse store (`sitelens migrate-events`)")
        ch_dir, url, seconds = prepare_clickhouse_store(data_dir, events_file, work_dir / f"{data_dir.name}-clickhouse")
        result["clickhouse_store_load"] = {"seconds": seconds}
        log(f"    {seconds:.0f} s; merging its sessions table (`sitelens clickhouse-merge-sessions`)")
        result["clickhouse_sessions_merge"] = merge_sessions(ch_dir, url)
        log(f"    {result['clickhouse_sessions_merge']['seconds']:.0f} s; sealing its sessions with the goals' bits")
        ask_goal_bits(ch_dir, url, _api_key(data_dir)[1])
        result["clickhouse_sessions_seal"] = seal_sessions(ch_dir, url)
        log(f"    {result['clickhouse_sessions_seal']['seconds']:.0f} s; letting its background merges finish")
        result["clickhouse_settled"] = settle_merges(url)
        log(f"    {result['clickhouse_settled']['seconds']:.0f} s; ClickHouse store")
        try:
            result["clickhouse"] = measure(ch_dir, runs, log, env={"SITELENS_EVENTS_URL": url})
        finally:
            shutil.rmtree(ch_dir, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a seeded data dir")
    parser.add_argument("--runs", type=int, default=3, help="fresh-window requests per route (default 3)")
    parser.add_argument("--duckdb-only", action="store_true", help="skip the ClickHouse store")
    parser.add_argument("--work-dir", type=Path, default=Path("bench/data"), help="where the ClickHouse copy goes")
    parser.add_argument(
        "--events-url", help="time only the server on --data-dir with this event store (an existing copy), no copy"
    )
    args = parser.parse_args(argv)
    if args.events_url:
        result = {"store": measure(args.data_dir.resolve(), args.runs, env={"SITELENS_EVENTS_URL": args.events_url})}
    else:
        result = run_scale(args.data_dir.resolve(), args.work_dir.resolve(), args.runs, clickhouse=not args.duckdb_only)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
