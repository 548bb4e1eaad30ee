"""Profile the server under one benchmark load with py-spy: where does a route spend its time?

    python -m bench.profile ingest --mode single          # POST /api/track with 32 connections
    python -m bench.profile ingest --mode health          # the no-op ceiling
    python -m bench.profile route --data-dir bench/data/reads-1000000 --path '/sites/1/goals?start_date=...'

The server runs as in the benchmark (``sitelens serve``); ``py-spy record`` samples it while the load runs and
writes the collapsed stacks next to the data (``profile-*.txt``, loadable in speedscope). The summary printed is
the functions with the most samples on top of the stack (own time) and anywhere on it (total time).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from bench.accounts import BENCH_EMAIL, create_account
from bench.ingest import UNLIMITED_TRACKING, _batch_requests, _single_requests
from bench.loadgen import build_request, run_load
from bench.server import ServerProcess

__all__ = ["main", "summarize_stacks"]


def summarize_stacks(path: Path, top: int = 25) -> str:
    """Own and total sample shares per function from py-spy's collapsed (``raw``) output."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [f for f in stack.split(";") if f and not f.startswith("process ") and not f.startswith("thread ")]
        if not frames:
            continue
        samples += count
        own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    lines = [f"{samples} samples", "", "own time:"]
    lines += [f"  {n * 100 / samples:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines += ["", "total time:"]
    lines += [f"  {n * 100 / samples:5.1f}%  {f}" for f, n in total.most_common(top)]
    return "\n".join(lines)


def _record(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        raise SystemExit("py-spy is not installed in this environment: pip install py-spy")
    command = [str(spy), "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "200"]
    command += ["--format", "raw", "--output", str(out), "--nonblocking", "--threads"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _api_key(data_dir: Path) -> tuple[str, int]:
    from api_backend.settings import load_settings
    from api_backend.store.metadata import MetadataStore

    metadata = MetadataStore(load_settings({}, data_dir=str(data_dir)).database_url)
    try:
        user = metadata.user_by_email(BENCH_EMAIL)
        if user is None:
            raise SystemExit(f"no benchmark account in {data_dir}")
        _, raw = metadata.create_api_key(user.id, "profile")
        org, _role = metadata.organizations_of(user.id)[0]
        return raw, metadata.sites_of(org.id)[0].site_id
    finally:
        metadata.close()


def profile_ingest(work: Path, mode: str, seconds: float) -> Path:
    """Profile one ingestion scenario on a fresh server."""
    data_dir = work / f"profile-ingest-{mode}"
    shutil.rmtree(data_dir, ignore_errors=True)
    account = create_account(data_dir)
    out = work / f"profile-ingest-{mode}.txt"
    with ServerProcess(data_dir, env=UNLIMITED_TRACKING) as server:
        host = f"127.0.0.1:{server.port}"
        if mode == "health":
            requests, connections = [build_request("GET", "/api/health", host)], 32
        elif mode == "single":
            requests, connections = _single_requests(host, account.site_id, account.domain), 32
        else:
            requests, connections = _batch_requests(host, account.site_id, account.domain, account.api_key, 1000), 4
        # Warm up first (lazy route tables, the user-agent parser, DuckDB caches) so the profile is steady state.
        run_load("127.0.0.1", server.port, requests, connections=connections, warmup=0, duration=3)
        spy = _record(server.pid, seconds, out)
        result = run_load("127.0.0.1", server.port, requests, connections=connections, warmup=0.5, duration=seconds)
        spy.wait(timeout=120)
    print(f"{result.ok / result.duration:,.0f} requests/s during the profile")
    return out


def profile_route(data_dir: Path, path: str, seconds: float, clients: int) -> Path:
    """Profile one read route, called back to back by ``clients`` threads, on a kept benchmark data dir."""
    key, site_id = _api_key(data_dir)
    path = path.replace("{site}", str(site_id))
    out = data_dir.parent / ("profile-route-" + path.strip("/").split("?")[0].replace("/", "-") + ".txt")
    with ServerProcess(data_dir) as server:
        client = httpx.Client(base_url=server.api_url, headers={"Authorization": f"Bearer {key}"}, timeout=600)
        client.get(path).raise_for_status()
        stop = time.monotonic() + seconds
        counts = [0] * clients

        def loop(i: int) -> None:
            while time.monotonic() < stop:
                client.get(path).raise_for_status()
                counts[i] += 1

        spy = _record(server.pid, seconds, out)
        threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        spy.wait(timeout=120)
        client.close()
    print(f"{sum(counts)} calls in {seconds:.0f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line of ``python -m bench.profile``."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    ingest = sub.add_parser("ingest")
    ingest.add_argument("--mode", choices=("single", "batch", "health"), default="single")
    ingest.add_argument("--seconds", type=float, default=15)
    route = sub.add_parser("route")
    route.add_argument("--data-dir", type=Path, required=True)
    route.add_argument("--path", required=True, help="API path after /api; {site} becomes the site id")
    route.add_argument("--seconds", type=float, default=15)
    route.add_argument("--clients", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    args = parser.parse_args(argv)
    if args.what == "ingest":
        out = profile_ingest(args.work_dir.resolve(), args.mode, args.seconds)
    else:
        out = profile_route(args.data_dir.resolve(), args.path, args.seconds, args.clients)
    print(f"collapsed stacks: {out}\n")
    print(summarize_stacks(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
