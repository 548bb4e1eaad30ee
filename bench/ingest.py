"""Ingestion over real HTTP: single events with 32 keep-alive clients, 1000-event batches, and the no-op ceiling.

The server runs as ``sitelens serve`` (its production configuration: one process, a 200 only once the event is
durable in the synced event log, copied into DuckDB in bulk behind it) on a fresh data dir. Single events are sent
the way a browser tracker sends them (no API key; the visitor comes from the connection and a varied user agent);
batches the way a server-side import sends them (API key, ``ip_address`` and ``user_agent`` per event). The ceiling
is the no-op route ``GET /api/live`` with the same client load (routed like any API route, touching no store); the
CORS preflight of ``/api/track``, answered by the outermost middleware, is the stricter HTTP-layer reference.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.accounts import create_account
from bench.loadgen import LoadResult, build_request, run_load
from bench.server import ServerProcess
from bench.stats import summarize

__all__ = ["UNLIMITED_TRACKING", "run_ingestion"]

# The load generator plays thousands of browser visitors through one loopback address, which the per-address
# tracking budget would rightly refuse. Budgets far above the load keep their cost on the measured path without
# letting them refuse it.
UNLIMITED_TRACKING = {
    "SITELENS_TRACK_IP_EVENTS_PER_MINUTE": str(10**12),
    "SITELENS_TRACK_SITE_EVENTS_PER_MINUTE": str(10**12),
}

USER_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} "
    "Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 "
    "Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel {v}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile "
    "Safari/537.36",
]
PATHS = ["/", "/pricing", "/features", "/blog", "/docs", "/signup", "/login", "/about", "/checkout", "/account"]
REFERRERS = ["", "", "https://www.google.com/", "https://news.ycombinator.com/", "https://twitter.com/", ""]


def _user_agent(rng: random.Random) -> str:
    return rng.choice(USER_AGENTS).format(v=rng.randint(5, 130))


def _event(rng: random.Random, site_id: int, domain: str, server_side: bool) -> dict[str, Any]:
    event: dict[str, Any] = {
        "site_id": site_id,
        "type": "pageview",
        "hostname": domain,
        "pathname": rng.choice(PATHS) + ("" if rng.random() < 0.7 else f"/{rng.randint(1, 500)}"),
        "referrer": rng.choice(REFERRERS),
        "screenWidth": rng.choice([1920, 1440, 390, 412, 1280]),
        "screenHeight": rng.choice([1080, 900, 844, 915, 800]),
        "language": rng.choice(["en-US", "de-DE", "fr-FR", "en-GB"]),
        "page_title": "Bench page",
    }
    if rng.random() < 0.1:
        event.update(type="custom_event", event_name="signup", properties=json.dumps({"plan": "free"}))
    if server_side:
        event["user_agent"] = _user_agent(rng)
        event["ip_address"] = f"198.51.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return event


def _single_requests(host: str, site_id: int, domain: str, n: int = 2000) -> list[bytes]:
    rng = random.Random(7)
    out = []
    for _ in range(n):
        body = json.dumps(_event(rng, site_id, domain, server_side=False)).encode()
        headers = {"Content-Type": "application/json", "User-Agent": _user_agent(rng)}
        out.append(build_request("POST", "/api/track", host, body, headers))
    return out


def _batch_requests(host: str, site_id: int, domain: str, api_key: str, size: int, n: int = 20) -> list[bytes]:
    rng = random.Random(11)
    out = []
    for _ in range(n):
        events = [_event(rng, site_id, domain, server_side=True) for _ in range(size)]
        body = json.dumps({"events": events}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
        out.append(build_request("POST", "/api/track/batch", host, body, headers))
    return out


def _thread_seconds(server: psutil.Process) -> dict[int, float]:
    return {t.id: t.user_time + t.system_time for t in server.threads()}


@contextmanager
def cpu_split(server_pid: int) -> Iterator[dict[str, Any]]:
    """Yield a dict that gets ``cpu_cores``: the cores used while the body runs (warm-up included), by whom.

    ``server_event_loop`` is the server's main thread (the event loop and the requests' Python code);
    ``server_other_threads`` are its other threads (the writer's intake and apply, DuckDB's workers);
    ``load_generator`` is this process, which runs the load. Two cores in all: what one side takes, the other lacks.
    """
    server = psutil.Process(server_pid)
    into: dict[str, Any] = {}
    before, own, start = _thread_seconds(server), time.process_time(), time.monotonic()
    try:
        yield into
    finally:
        wall = time.monotonic() - start
        used = {tid: seconds - before.get(tid, 0.0) for tid, seconds in _thread_seconds(server).items()}
        main = used.pop(server_pid, 0.0)
        into["cpu_cores"] = {
            "server_event_loop": main / wall,
            "server_other_threads": sum(used.values()) / wall,
            "load_generator": (time.process_time() - own) / wall,
        }


def _accepted(body: bytes) -> int:
    return int(json.loads(body).get("accepted", 0))


def _tracked(body: bytes) -> int:
    # A 200 with tracked:false (a dropped bot or excluded visitor) stored nothing: it is not an ingested event.
    return 0 if b'"tracked":false' in body.replace(b" ", b"") else 1


def _summary(result: LoadResult, *, per_request_units: bool = False) -> dict[str, Any]:
    lat = summarize(result.latencies)
    return {
        "duration_s": result.duration,
        "requests": result.requests,
        "ok_responses": result.ok,
        "statuses": {str(k): v for k, v in sorted(result.statuses.items())},
        "connection_errors": result.errors,
        "units": result.units,
        "requests_per_s": result.ok / result.duration,
        "events_per_s": result.units / result.duration,
        "latency_p50_ms": lat["median"] * 1000,
        "latency_p99_ms": lat["p99"] * 1000,
        "latency_max_ms": lat["max"] * 1000,
    }


def run_ingestion(
    work_dir: Path,
    *,
    connections: int = 32,
    batch_connections: int = 4,
    batch_size: int = 1000,
    warmup: float = 3.0,
    duration: float = 15.0,
    log=print,
) -> dict[str, Any]:
    """Run the three ingestion scenarios against one fresh server; return their figures and the server's peak RSS."""
    data_dir = work_dir / "ingest"
    account = create_account(data_dir)
    server = ServerProcess(data_dir, env=UNLIMITED_TRACKING).start()
    rss: dict[str, int] = {}
    out: dict[str, Any] = {
        "server": "sitelens serve (uvicorn, 1 process; 200 only once the event is in the synced event log)",
        "ceiling_route": "GET /api/live",
        "connections": connections,
        "batch_connections": batch_connections,
        "batch_size": batch_size,
        "warmup_s": warmup,
        "duration_s": duration,
    }
    try:
        host = f"127.0.0.1:{server.port}"
        assert server.sampler is not None
        noop = [build_request("GET", "/api/live", host)]
        log(f"  ingestion: no-op ceiling GET /api/live, {connections} connections, {duration:.0f} s")
        with server.sampler.block(rss, "ceiling"), cpu_split(server.pid) as cpu:
            ceiling = run_load(
                "127.0.0.1", server.port, noop, connections=connections, warmup=warmup, duration=duration
            )
        out["ceiling"] = _summary(ceiling) | cpu
        log(f"    {out['ceiling']['requests_per_s']:,.0f} req/s")

        # A second, stricter reference: the CORS preflight of /api/track, answered 204 by the outermost middleware
        # (HTTP parsing and the ASGI stack only, no routing, no store): what the HTTP layer alone can do.
        preflight = [build_request("OPTIONS", "/api/track", host, headers={"Origin": "https://" + account.domain})]
        log(f"  ingestion: HTTP-layer ceiling OPTIONS /api/track, {connections} connections, {duration:.0f} s")
        with server.sampler.block(rss, "http_ceiling"), cpu_split(server.pid) as cpu:
            http_ceiling = run_load(
                "127.0.0.1", server.port, preflight, connections=connections, warmup=warmup, duration=duration,
                ok_status=(204,),
            )  # fmt: skip
        out["http_ceiling"] = _summary(http_ceiling) | cpu
        log(f"    {out['http_ceiling']['requests_per_s']:,.0f} req/s")

        log(f"  ingestion: POST /api/track single events, {connections} connections, {duration:.0f} s")
        single = _single_requests(host, account.site_id, account.domain)
        with server.sampler.block(rss, "single"), cpu_split(server.pid) as cpu:
            result = run_load(
                "127.0.0.1",
                server.port,
                single,
                connections=connections,
                warmup=warmup,
                duration=duration,
                count=_tracked,
            )
        out["single"] = _summary(result) | cpu
        log(f"    {out['single']['events_per_s']:,.0f} events/s, p99 {out['single']['latency_p99_ms']:.1f} ms")

        log(f"  ingestion: POST /api/track/batch x{batch_size}, {batch_connections} connections, {duration:.0f} s")
        batches = _batch_requests(host, account.site_id, account.domain, account.api_key, batch_size)
        with server.sampler.block(rss, "batch"), cpu_split(server.pid) as cpu:
            result = run_load(
                "127.0.0.1",
                server.port,
                batches,
                connections=batch_connections,
                warmup=warmup,
                duration=duration,
                count=_accepted,
            )
        out["batch"] = _summary(result) | cpu
        log(f"    {out['batch']['events_per_s']:,.0f} events/s")

        # Everything acknowledged must be stored: count the rows through the API's own store afterwards.
        out["ratio_single_to_ceiling"] = out["single"]["requests_per_s"] / out["ceiling"]["requests_per_s"]
        out["ratio_single_to_http_ceiling"] = out["single"]["requests_per_s"] / out["http_ceiling"]["requests_per_s"]
        response = httpx.get(
            f"{server.api_url}/org-event-count/{account.organization_id}", headers=account.headers, timeout=60
        )
        response.raise_for_status()
        out["stored_events_today_and_before"] = sum(r["event_count"] for r in response.json()["data"])
    finally:
        server.stop()
    out["peak_rss_bytes"] = rss
    return out
