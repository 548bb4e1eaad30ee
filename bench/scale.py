"""Every read route's own cost on a kept data dir, through the API, and the server's peak memory:

    python -m bench.scale --data-dir <dir seeded by `python -m bench --keep-data` or `sitelens seed`> [--runs 3]

Starts ``sitelens serve`` on the dir (its configuration, DuckDB memory limit included), creates the benchmark goals
if the site has none, then asks each read route ``--runs`` times, each time for a window no request asked for
before (its start moved one more day before the seeded data, as the dashboard block does: same numbers, but the
result cache has no answer). So each figure is the route's own queries plus the HTTP round trip, the cost a site
owner waits for on a live window. Prints one JSON object (per route: median and best ms of the answered requests
and the status and time of any that failed; the server's peak RSS);
the figures are copied by hand into ``bench/analysis.md``. The 10M and 100M rows of that analysis come from here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.accounts import BenchAccount
from bench.dashboard import _window
from bench.profile import _api_key
from bench.queries import BENCH_GOALS, FUNNEL_STEPS
from bench.reads import _create_goals
from bench.server import ServerProcess

__all__ = ["main"]

Request = Callable[[httpx.Client, dict[str, str]], httpx.Response]


def _routes(site: int, goals: dict[str, int], org: str, error: str) -> dict[str, Request]:
    def get(path: str, **params: Any) -> Request:
        return lambda c, window: c.get(path, params={**window, **params})

    return {
        "goals list": get(f"/sites/{site}/goals", limit=100),
        "goal sessions": get(f"/sites/{site}/goals/{goals['Visited pricing']}/sessions", limit=25),
        "goal breakdown by channel": get(f"/sites/{site}/goals/{goals['Signed up']}/breakdown", parameter="channel"),
        "metric by channel": get(f"/sites/{site}/metric", parameter="channel", limit=20),
        "metric by pathname": get(f"/sites/{site}/metric", parameter="pathname", limit=100),
        "overview": get(f"/sites/{site}/overview"),
        "overview time series": get(f"/sites/{site}/overview/time-series", bucket="day"),
        "sessions list": get(f"/sites/{site}/sessions", limit=25),
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


def measure(data_dir: Path, runs: int, log: Callable[[str], None] = _log) -> dict[str, Any]:
    """Time every route ``runs`` times on fresh windows against a server on ``data_dir``."""
    key, site = _api_key(data_dir)
    result: dict[str, Any] = {"runs": runs, "routes": {}}
    with ServerProcess(data_dir) as server:
        account = BenchAccount(data_dir, "", key, "", site, "")
        client = httpx.Client(base_url=server.api_url, headers=account.headers, timeout=900)
        listed = client.get(f"/sites/{site}/goals", params={"limit": 100}).json()["data"]
        if not listed:
            _create_goals(client, site)
            listed = client.get(f"/sites/{site}/goals", params={"limit": 100}).json()["data"]
        goals = {g["name"]: g["goalId"] for g in listed if g["name"] in {name for name, _, _ in BENCH_GOALS}}
        org = client.get(f"/sites/{site}").json()["organizationId"]
        windows = _fresh_windows()
        names = client.get(f"/sites/{site}/error-names", params=next(windows)).json()["data"]
        error = max(names, key=lambda n: n["count"])["value"] if names else ""
        assert server.sampler is not None
        server.sampler.reset()
        for name, request in _routes(site, goals, org, error).items():
            times = []
            failures: list[str] = []
            for _ in range(runs):
                window = next(windows)
                started = time.perf_counter()
                response = request(client, window)
                elapsed = time.perf_counter() - started
                if response.status_code == 200:
                    times.append(elapsed)
                else:  # an answer the route could not give (a 503 at the memory limit): recorded, not timed
                    failures.append(f"{response.status_code} after {elapsed:.1f} s: {response.text[:200]}")
            entry: dict[str, Any] = {"failures": failures} if failures else {}
            if times:
                entry |= {"median_ms": round(statistics.median(times) * 1000, 1), "min_ms": round(min(times) * 1000, 1)}
            result["routes"][name] = entry
            log(
                f"  {name}: "
                + (f"{entry['median_ms']:,.0f} ms" if times else "")
                + (f" {failures}" if failures else "")
            )
        result["peak_rss_bytes"] = server.sampler.peak
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a seeded data dir")
    parser.add_argument("--runs", type=int, default=3, help="fresh-window requests per route (default 3)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.data_dir.resolve(), args.runs), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
