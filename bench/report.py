"""``BENCHMARKS.md`` from ``bench/results.json``: the machine, the command, every table, and the targets.

Each figure sits beside its reference measured in the same run (API beside DuckDB and ClickHouse, single-event
ingestion beside the no-op ceiling), because ratios are what survive a change of machine. The hand-written
analysis (profiles, causes, proposed fixes) lives in ``bench/analysis.md`` and is copied in verbatim.
"""

from __future__ import annotations

import math
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

__all__ = ["TODAY_ROUTE", "machine_info", "render_markdown", "targets"]

ANALYSIS = Path(__file__).with_name("analysis.md")
# The scale block's one route asked over a range ending today (``bench/scale.py``), described where it is rendered.
TODAY_ROUTE = "overview, a range ending today"


def machine_info() -> dict[str, Any]:
    """CPU model, core count, memory, OS and library versions of this machine."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    import chdb
    import duckdb
    import fastapi
    import uvicorn

    return {
        "cpu_model": model,
        "nproc": os.cpu_count(),
        "memory_bytes": psutil.virtual_memory().total,
        "os": platform.platform(),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "chdb": chdb.__version__,
        "fastapi": fastapi.__version__,
        "uvicorn": uvicorn.__version__,
    }


def _ms(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    ms = seconds * 1000
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:,.1f}"


def _seeded_at(block: dict[str, Any]) -> str:
    """`` (seeded at <commit>)`` when the block re-measured a file an earlier block seeded."""
    return f" (seeded at {block['seeded_at']})" if block.get("seeded_at") else ""


def _with_bits(seal: dict[str, Any]) -> str:
    """`` with the goals' bits`` where the seal wrote some (a run from before they were kept has no count)."""
    return " with the goals' bits" if seal.get("goal_sites") else ""


def _mb(n: float | None) -> str:
    return "-" if not n else f"{n / 2**20:,.0f} MB"


def _x(ratio: float | None) -> str:
    return "-" if ratio is None or math.isnan(ratio) else f"{ratio:.2f}"


def _ok(flag: bool | None) -> str:
    return "-" if flag is None else ("met" if flag else "**missed**")


def _largest(results: dict[str, Any]) -> dict[str, Any] | None:
    reads = results.get("reads") or {}
    if not reads:
        return None
    return reads[max(reads, key=int)]


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for every target of issue 6, on the largest measured size."""
    out: list[tuple[str, str, bool | None]] = []
    ing = results.get("ingestion")
    if ing:
        single, batch = ing["single"], ing["batch"]
        out.append(
            (
                "single-event ingestion >= 3,000 events/s",
                f"{single['events_per_s']:,.0f} events/s",
                single["events_per_s"] >= 3000,
            )
        )
        out.append(("single-event p99 < 50 ms", f"{single['latency_p99_ms']:.1f} ms", single["latency_p99_ms"] < 50))
        out.append(
            (
                "batched ingestion >= 100,000 events/s",
                f"{batch['events_per_s']:,.0f} events/s",
                batch["events_per_s"] >= 100_000,
            )
        )
        ratio = ing["ratio_single_to_ceiling"]
        out.append(
            (
                f"single-event throughput >= 0.5 x no-op ceiling (`{ing['ceiling_route']}`)",
                f"{ratio:.2f} x",
                ratio >= 0.5,
            )
        )
        if "ratio_single_to_http_ceiling" in ing:
            ratio = ing["ratio_single_to_http_ceiling"]
            out.append(
                (
                    "single-event throughput >= 0.5 x HTTP-layer ceiling (`OPTIONS /api/track`, stricter)",
                    f"{ratio:.2f} x",
                    ratio >= 0.5,
                )
            )
    size = _largest(results)
    if size:
        label = f"{size['events']:,} events"
        queries = size["queries"]
        routes = {k: q for k, q in queries.items() if k != "channel recipe"}
        if routes:
            worst = max(routes, key=lambda k: routes[k]["api"]["median"])
            p50 = routes[worst]["api"]["median"]
            out.append((f"every read route p50 < 500 ms ({label})", f"slowest: {worst} {_ms(p50)} ms", p50 < 0.5))
            # Warm API runs may be answered by the result cache; the uncached cost is the route's SQL on DuckDB.
            worst_u = max(routes, key=lambda k: routes[k]["duckdb"]["median"])
            p50 = routes[worst_u]["duckdb"]["median"]
            over = [f"{k} {_ms(q['duckdb']['median'])} ms" for k, q in routes.items() if q["duckdb"]["median"] >= 0.3]
            out.append(
                (
                    f"every read route p50 < 300 ms uncached: the route's SQL on DuckDB ({label})",
                    f"slowest: {worst_u} {_ms(p50)} ms" + (f"; over: {', '.join(over)}" if over else ""),
                    p50 < 0.3,
                )
            )
            worst_d = max(routes, key=lambda k: routes[k]["ratio_api_duckdb"])
            r = routes[worst_d]["ratio_api_duckdb"]
            out.append((f"API/DuckDB <= 1.3 on every route ({label})", f"worst: {worst_d} {r:.2f}", r <= 1.3))
            worst_c = max(routes, key=lambda k: routes[k]["ratio_api_clickhouse"])
            r = routes[worst_c]["ratio_api_clickhouse"]
            out.append((f"API/ClickHouse <= 1.0 on every route ({label})", f"worst: {worst_c} {r:.2f}", r <= 1.0))
        if "channel recipe" in queries:
            p50 = queries["channel recipe"]["api"]["median"]
            out.append((f"full channel recipe < 2 s ({label})", f"{_ms(p50)} ms", p50 < 2))
        if "goal breakdown by channel" in queries:
            p50 = queries["goal breakdown by channel"]["api"]["median"]
            out.append((f"breakdown route < 500 ms ({label})", f"{_ms(p50)} ms", p50 < 0.5))
        seeding = size["seeding"]
        if size["events"] >= 10_000_000:
            out.append(("seeding 10M events < 90 s", f"{seeding['seconds']:.1f} s", seeding["seconds"] < 90))
    dash = (size or {}).get("dashboard") or results.get("dashboard")
    pages = (dash or {}).get("pages") or {}
    first_views = {
        "overview": "dashboard overview page first view < 1.5 s (headline numbers on screen)",
        "goals": "dashboard goals page first view < 1.5 s",
        "errors": "dashboard errors page first view < 1.5 s",
    }
    for name, target in first_views.items():
        if name in pages:
            median = pages[name]["first"]["median"]
            out.append((target, f"{_ms(median)} ms", median < 1.5))
    if "goals" in pages:
        median = pages["goals"]["cached"]["median"]
        out.append(("dashboard goals page cached < 300 ms", f"{_ms(median)} ms", median < 0.3))
    opened = pages.get("errors", {}).get("open_group")
    if opened:
        out.append(
            (
                "dashboard opening an error group < 1 s (click to its first occurrence, cold API cache)",
                f"{_ms(opened['median'])} ms (max {_ms(opened['max'])} ms, {opened['n']} clicks)",
                opened["median"] < 1.0,
            )
        )
    out += _scale_targets(results.get("scale") or {})
    peaks = []
    if ing:
        peaks += list(ing["peak_rss_bytes"].values())
    for block in (results.get("reads") or {}).values():
        peaks += list(block.get("peak_rss_bytes", {}).values())
    if peaks:
        out.append(("server peak RSS < 1.5 GB (every block)", _mb(max(peaks)), max(peaks) < 1.5 * 2**30))
    return out


_STORES = {"duckdb": "DuckDB store", "clickhouse": "ClickHouse store"}


def _size(events: int) -> str:
    """100M, 10M, 100k: an event count as a column heading."""
    return f"{events / 1e6:,.0f}M" if events >= 1_000_000 else f"{events / 1e3:,.0f}k"


def _uncached(block: dict[str, Any], store: str) -> dict[str, float | None]:
    """Per route, the uncached median in seconds (``None`` when no request of the route was answered)."""
    routes = (block.get(store) or {}).get("routes") or {}
    return {name: (r["median_ms"] / 1000 if "median_ms" in r else None) for name, r in routes.items()}


def _growth(scale: dict[str, Any], store: str) -> tuple[int, int, dict[str, float]] | None:
    """(smaller, larger, route -> uncached time ratio) between the two largest sizes measured on ``store``."""
    sizes = sorted((int(k) for k, b in scale.items() if b.get(store)), reverse=True)
    if len(sizes) < 2:
        return None
    big, small = _uncached(scale[str(sizes[0])], store), _uncached(scale[str(sizes[1])], store)
    ratios = {name: t / s for name, t in big.items() if t and (s := small.get(name))}
    return sizes[1], sizes[0], ratios


def _scale_targets(scale: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """Issue 13's targets on the scale block: uncached routes at 10M and 100M, growth, memory and seeding."""
    out: list[tuple[str, str, bool | None]] = []
    for key in sorted(scale, key=int):
        block = scale[key]
        events = block["events"]
        limit = 0.3 if events <= 10_000_000 else 2.0
        for store, label in _STORES.items():
            times = _uncached(block, store)
            if not times:
                continue
            failed = sorted(name for name, t in times.items() if t is None)
            over = [f"{name} {_ms(t)} ms" for name, t in times.items() if t is not None and t >= limit]
            slowest = max((name for name in times if times[name] is not None), key=lambda n: times[n] or 0, default="")
            measured = f"slowest: {slowest} {_ms(times[slowest])} ms" if slowest else "no route answered"
            if over:
                measured += f"; over: {', '.join(over)}"
            if failed:
                measured += f"; not answered: {', '.join(failed)}"
            out.append(
                (
                    f"every read route uncached p50 < {_ms(limit)} ms through the API, {label} ({events:,} events)",
                    measured,
                    not over and not failed,
                )
            )
    for store, label in _STORES.items():
        growth = _growth(scale, store)
        if growth:
            small, big, ratios = growth
            worst = max(ratios, key=lambda n: ratios[n])
            out.append(
                (
                    f"uncached growth {_size(small)} -> {_size(big)} events no worse than "
                    f"{big / small:.0f} x on every route, {label}",
                    f"worst: {worst} {ratios[worst]:.1f} x; best: {min(ratios.values()):.1f} x",
                    ratios[worst] <= big / small,
                )
            )
    if scale:
        largest = scale[max(scale, key=int)]
        if largest["events"] >= 100_000_000:
            peaks = {s: b["peak_rss_bytes"] for s in _STORES if (b := largest.get(s)) and b.get("peak_rss_bytes")}
            if peaks:
                # A store that refused routes (at its memory limit) held its memory by not answering: not met.
                refused = {s: sum(t is None for t in _uncached(largest, s).values()) for s in peaks}
                out.append(
                    (
                        f"server peak RSS < 2 GB ({largest['events']:,} events, each store, every route answered)",
                        ", ".join(
                            f"{_STORES[s]} {_mb(v)}" + (f" ({refused[s]} routes not answered)" if refused[s] else "")
                            for s, v in peaks.items()
                        ),
                        max(peaks.values()) < 2 * 2**30 and not any(refused.values()),
                    )
                )
            seeding = largest.get("seeding")
            if seeding:
                out.append(
                    (
                        f"seeding {largest['events']:,} events < 10 minutes",
                        f"{seeding['seconds'] / 60:.1f} min{_seeded_at(largest)}, "
                        f"DuckDB file {_mb(seeding.get('file_bytes', largest['duckdb_file_bytes']))}",
                        seeding["seconds"] < 600,
                    )
                )
    return out


def _failure(text: str) -> str:
    """``503 after 7.1 s``: a failed request's status and time, without its body (``bench.scale`` records both)."""
    return text.split(":", 1)[0].replace("|", "/")


def _scale(scale: dict[str, Any]) -> list[str]:
    """The scale block: one row per route, each size and store uncached and cached, and the growth."""
    sizes = sorted(scale, key=int)
    stores = [s for s in _STORES if any(scale[k].get(s) for k in sizes)]
    head = [f"{_STORES[s]} {_size(int(k))}: uncached, cached" for k in sizes for s in stores]
    growths = {s: g for s in stores if (g := _growth(scale, s))}
    head += [f"growth {_size(small)} -> {_size(big)}, {_STORES[s]}" for s, (small, big, _) in growths.items()]
    lines = ["| route | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    names: list[str] = []
    for k in sizes:
        for s in stores:
            names += [n for n in ((scale[k].get(s) or {}).get("routes") or {}) if n not in names]
    for name in names:
        cells = []
        for k in sizes:
            for s in stores:
                r = ((scale[k].get(s) or {}).get("routes") or {}).get(name)
                if not r:
                    cells.append("-")
                elif "median_ms" not in r:
                    cells.append("not answered: " + ", ".join(_failure(f) for f in r.get("failures", [])))
                else:
                    cached = f"{_ms(r['cached_ms'] / 1000)}" if "cached_ms" in r else "-"
                    failed = f" ({len(r['failures'])} not answered)" if r.get("failures") else ""
                    cells.append(f"{_ms(r['median_ms'] / 1000)}, {cached}{failed}")
        for _, _, ratios in growths.values():
            cells.append(f"{ratios[name]:.1f} x" if name in ratios else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    for k in sizes:
        b = scale[k]
        facts = [f"DuckDB file {_mb(b['duckdb_file_bytes'])}"]
        if b.get("seeding"):
            sd = b["seeding"]
            if sd.get("file_bytes", b["duckdb_file_bytes"]) != b["duckdb_file_bytes"]:
                # Every server on the file since changed it: an upgrade at its first open, goal bits, checkpoints.
                facts[0] += f" ({_mb(sd['file_bytes'])} as seeded; the servers on it since changed its size)"
            at = f" at {b['seeded_at']}" if b.get("seeded_at") else ""
            facts.append(f"seeded{at} in {sd['seconds']:,.0f} s ({sd['events_per_s']:,.0f} events/s)")
        if (b.get("duckdb") or {}).get("goal_bits_s") is not None:
            facts.append(f"the goals' bits stored in the DuckDB file in {b['duckdb']['goal_bits_s']:,.1f} s")
        if b.get("clickhouse_store_load"):
            facts.append(f"copied into the ClickHouse store in {b['clickhouse_store_load']['seconds']:,.0f} s")
        if b.get("clickhouse_sessions_merge"):
            merge = b["clickhouse_sessions_merge"]
            facts.append(
                f"its sessions table merged from {merge['parts_before']} parts into {merge['parts_after']} "
                f"(`sitelens clickhouse-merge-sessions`) in {merge['seconds']:,.0f} s"
            )
        if b.get("clickhouse_sessions_seal"):
            seal = b["clickhouse_sessions_seal"]
            facts.append(
                f"its {seal['sessions']:,} sessions sealed{_with_bits(seal)} (`sitelens clickhouse-seal-sessions`) in "
                f"{seal['seconds']:,.0f} s"
                + (f", peak RSS {_mb(seal['peak_rss_bytes'])}" if seal.get("peak_rss_bytes") else "")
            )
        if b.get("clickhouse_settled"):
            settled = b["clickhouse_settled"]
            parts = (
                f" (the database's active parts {settled['parts_before']} -> {settled['parts_after']})"
                if "parts_before" in settled
                else ""
            )
            facts.append(f"its background merges run to their end in {settled['seconds']:,.0f} s{parts}")
        for s in stores:
            if (b.get(s) or {}).get("peak_rss_bytes"):
                facts.append(f"{_STORES[s]} server peak RSS {_mb(b[s]['peak_rss_bytes'])}")
        lines.append(f"- {b['events']:,} events: " + ", ".join(facts) + ".")
    return lines


def _ingestion(ing: dict[str, Any]) -> list[str]:
    ceiling = ing["ceiling"]["requests_per_s"]
    rows = [
        "| scenario | connections | events/s | requests/s | p50 latency | p99 latency | vs ceiling | non-200 "
        "| peak RSS | CPU cores: event loop, other server threads, load generator |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = {
        "http_ceiling": "HTTP-layer ceiling: `OPTIONS /api/track` (204 from the CORS middleware; reference)",
        "ceiling": f"ceiling: `{ing['ceiling_route']}` (reference)",
        "single": "`POST /api/track`, one event per request",
        "batch": f"`POST /api/track/batch`, {ing['batch_size']} events per request",
    }
    for key in ("http_ceiling", "ceiling", "single", "batch"):
        if key not in ing:
            continue
        s = ing[key]
        conns = ing["batch_connections"] if key == "batch" else ing["connections"]
        non_ok = s["requests"] - s["ok_responses"] + s.get("connection_errors", 0)
        events = "-" if key in ("ceiling", "http_ceiling") else f"{s['events_per_s']:,.0f}"
        vs = f"{s['requests_per_s'] / ceiling:.2f}" if key in ("single", "http_ceiling", "ceiling") else "-"
        rows.append(
            f"| {names[key]} | {conns} | {events} | {s['requests_per_s']:,.0f} | {s['latency_p50_ms']:.1f} ms "
            f"| {s['latency_p99_ms']:.1f} ms | {vs} | {non_ok} | {_mb(ing['peak_rss_bytes'].get(key))} "
            f"| {_cores(s.get('cpu_cores'))} |"
        )
    return rows


def _cores(cpu: dict[str, float] | None) -> str:
    if not cpu:
        return "-"
    return ", ".join(f"{cpu[k]:.2f}" for k in ("server_event_loop", "server_other_threads", "load_generator"))


def _queries(size: dict[str, Any]) -> list[str]:
    rows = [
        "| query | API first call | API p50 | API p95 | API on ClickHouse store: first, p50 "
        "| ClickHouse store/DuckDB store | DuckDB p50 | DuckDB p95 | ClickHouse SQL p50 | API/DuckDB "
        "| API/DuckDB, best runs | API/ClickHouse SQL | same numbers | runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, q in size["queries"].items():
        checks = {
            "DuckDB": "match_duckdb",
            "ClickHouse SQL": "match_clickhouse",
            "ClickHouse store": "match_api_clickhouse",
        }
        present = {label: q[key] for label, key in checks.items() if key in q}
        same = "yes" if all(present.values()) else ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in present.items())
        if "api_clickhouse" in q:
            store = f"{_ms(q['api_clickhouse_first_s'])}, {_ms(q['api_clickhouse']['median'])}"
            ratio = _x(q["ratio_api_stores"])
        else:
            store = ratio = "-"
        rows.append(
            f"| {name} | {_ms(q['api_first_s']) if 'api_first_s' in q else '-'} | {_ms(q['api']['median'])} "
            f"| {_ms(q['api']['p95'])} | {store} | {ratio} | {_ms(q['duckdb']['median'])} "
            f"| {_ms(q['duckdb']['p95'])} | {_ms(q['clickhouse']['median'])} "
            f"| {_x(q['ratio_api_duckdb'])} | {_x(q['api']['min'] / q['duckdb']['min'])} "
            f"| {_x(q['ratio_api_clickhouse'])} | {same} "
            f"| {q.get('timed_runs', q['api']['n'])} |"
        )
    return rows


def render_markdown(results: dict[str, Any]) -> str:
    """The whole ``BENCHMARKS.md``."""
    m = results["machine"]
    lines = [
        "# sitelens benchmarks",
        "",
        "Generated by `python -m bench` (`make bench`) from `bench/results.json`; do not edit by hand "
        "(the analysis section comes from `bench/analysis.md`). Absolute times depend on the machine and on "
        "whatever else runs on it; the ratios measured in the same run (API beside DuckDB and ClickHouse, "
        "single-event ingestion beside the no-op ceiling) are what to steer by.",
        "",
        "## Machine and run",
        "",
        f"- CPU of the latest run: {m['cpu_model']}, `nproc` = {m['nproc']}; "
        f"memory {m['memory_bytes'] / 2**30:.1f} GiB; {m['os']}",
        f"- Python {m['python']}, DuckDB {m['duckdb']}, chdb {m['chdb']} "
        f"(ClickHouse {results.get('clickhouse_version', '?')}), FastAPI {m['fastapi']}, uvicorn {m['uvicorn']}",
    ]
    for block, info in results.get("runs", {}).items():
        cpu = f" on {info['cpu']}" if "cpu" in info else ""
        lines.append(
            f"- {block}: measured {info['date']}{cpu} at commit "
            f"{info.get('commit', '?')} with `{info['command']}` "
            f"(load average before: {info.get('load_before', '?')}, after: {info.get('load_after', '?')})"
        )
    lines += [
        "- The machine is shared: other jobs ran during some measurements, so spreads (p95) are wide; the three "
        "engines of a query were run interleaved, run by run, so such noise hits them alike.",
        "",
        "## Targets",
        "",
        "| target | measured | |",
        "|---|---|---|",
    ]
    lines += [f"| {t} | {v} | {_ok(ok)} |" for t, v, ok in targets(results)]

    ing = results.get("ingestion")
    if ing:
        lines += [
            "",
            "## Ingestion over HTTP (loopback)",
            "",
            f"Server: {ing['server']}, fresh data dir. Client: a closed-loop keep-alive HTTP/1.1 load generator "
            f"(`bench/loadgen.py`, asyncio, in a separate process from the server), {ing['warmup_s']:.0f} s "
            f"warm-up then {ing['duration_s']:.0f} s measured; only 200 responses count (single events answered "
            "`tracked: false` would not count as ingested; batches count `accepted`). Single events look like the "
            "browser tracker (no key, varied user agents); batches like a server-side import (API key, "
            "`ip_address`, `user_agent`). "
            f"The ceiling is the no-op route `{ing['ceiling_route']}` on the same server with the same 32 connections "
            "(routed like every API route, touching no store); the stricter HTTP-layer ceiling is the CORS "
            "preflight `OPTIONS /api/track`, answered 204 by the outermost middleware without routing or stores. "
            f'"vs ceiling" divides requests/s by the `{ing["ceiling_route"]}` figure. The CPU columns are '
            "the cores each side used over the scenario (warm-up included), from the threads' CPU times: the "
            "server's event loop (its main thread), its other threads (the writer, DuckDB's workers) and the load "
            "generator; the machine has two in all.",
            "",
        ]
        lines += _ingestion(ing)

    reads = results.get("reads") or {}
    if reads:
        lines += [
            "",
            "## Seeding and loading",
            "",
            "| events | `sitelens seed` wall time | events/s | seeder peak RSS "
            "| DuckDB file | chdb load (rows, time) |",
            "|---|---|---|---|---|---|",
        ]
        for key in sorted(reads, key=int):
            r = reads[key]
            s = r["seeding"]
            lines.append(
                f"| {r['events']:,} | {s['seconds']:.1f} s | {s['events_per_s']:,.0f} | {_mb(s['peak_rss_bytes'])} "
                f"| {_mb(r['duckdb_file_bytes'])} "
                f"| {r['clickhouse_load']['rows']:,} in {r['clickhouse_load']['seconds']:.1f} s |"
            )
        for key in sorted(reads, key=int):
            r = reads[key]
            w = r["window"]
            lines += [
                "",
                f"## Read routes at {r['events']:,} events",
                "",
                f"One site, {w['start_date']} to {w['end_date']} ({w['time_zone']}), 10 goals, 20 error messages, "
                f"all channels. Times in ms over {r['runs']} warm runs (after {r['warmups']} warm-up runs) per engine; "
                "a query whose round of three engines exceeds the time budget gets fewer runs (column runs). API = "
                "the route over HTTP with an API key: its first call computes the answer, the warm runs may be "
                "answered from the server's result cache (exact: keyed on the number of events in the window, so any "
                "event acknowledged into the window makes the next read compute afresh); DuckDB = the SQL that route "
                "runs (same query builders, same store class) on a copy of the server's file"
                + (
                    f" (the goal routes from the goals' bits, stored in the copy in {r['goal_bits_seconds']:.1f} s "
                    "after the goals were created, as the server stores them)"
                    if "goal_bits_seconds" in r
                    else ""
                )
                + "; ClickHouse = equivalent "
                "ClickHouse SQL on chdb with the same rows; API on ClickHouse store = the same routes served by a "
                "second server whose events live in ClickHouse (embedded chdb, copied by `sitelens migrate-events`), "
                'first call and warm p50. "same numbers" compares every result with the API on DuckDB.',
                "",
            ]
            lines += _queries(r)
            kinds = {"DuckDB": "mismatch_duckdb", "ClickHouse SQL": "mismatch_clickhouse"}
            kinds["ClickHouse store"] = "mismatch_api_clickhouse"
            mismatches = [
                (name, [f"{label}: {q[key]}" for label, key in kinds.items() if q.get(key)])
                for name, q in r["queries"].items()
            ]
            if any(found for _, found in mismatches):
                lines += ["", "Result differences (against the API on DuckDB):", ""]
                lines += [f"- {name}: " + "; ".join(found) for name, found in mismatches if found]
            peaks = r.get("peak_rss_bytes", {})
            lines += ["", "Server peak RSS: " + ", ".join(f"{k} {_mb(v)}" for k, v in peaks.items())]

    dash = None
    for r in reads.values():
        if r.get("dashboard"):
            dash = (r["events"], r["dashboard"])
    if dash:
        events, d = dash
        lines += [
            "",
            f"## Dashboard (headless Chromium, {events:,} events)",
            "",
            d.get("method", ""),
            "",
            "| page | first view p50 | first view max | cached p50 | cached max | runs |",
            "|---|---|---|---|---|---|",
        ]
        for name, page in d.get("pages", {}).items():
            lines.append(
                f"| {name} (`{page['path']}`) | {_ms(page['first']['median'])} | {_ms(page['first']['max'])} "
                f"| {_ms(page['cached']['median'])} | {_ms(page['cached']['max'])} | {page['first']['n']} |"
            )
        for name, page in d.get("pages", {}).items():
            if "first_complete" in page:
                cached = page.get("cached_complete")
                lines += [
                    "",
                    f"- {name}, whole page on screen (everything it loads on opening): first view p50 "
                    f"{_ms(page['first_complete']['median'])} ms (max {_ms(page['first_complete']['max'])})"
                    + (f", cached p50 {_ms(cached['median'])} ms" if cached else "")
                    + ".",
                ]
        for name, page in d.get("pages", {}).items():
            cb = page.get("cached_callbacks")
            if cb and cb["requests"]:
                n = sorted(cb["requests"])[len(cb["requests"]) // 2]
                total = sorted(cb["server_ms_total"])[len(cb["server_ms_total"]) // 2]
                lines += [
                    "",
                    f"- {name}, cached view: {n} Dash callback round trips (`_dash-update-component`), "
                    f"{total:,.0f} ms summed request time (median of the runs).",
                ]
        for note in d.get("notes", []):
            lines += ["", f"- {note}"]

    scale = results.get("scale") or {}
    if scale:
        runs = {int(b["duckdb"]["runs"]) for b in scale.values() if b.get("duckdb")}
        lines += [
            "",
            "## Every read route uncached, at scale, on both stores",
            "",
            "Each route through the API (HTTP, API key) of a `sitelens serve` on the seeded data dir, asked "
            f"{'/'.join(str(r) for r in sorted(runs))} times, each time for a window no request asked for before "
            "(its start one more day before the seeded data: the same numbers, but the result cache has no answer), "
            "so the figure is the route's own queries, what a site owner waits for on a live window; median ms. "
            "Cached = the last window asked once more (answered from the result cache after one count). The "
            "ClickHouse store is a second server whose events were copied from the same file by "
            "`sitelens migrate-events` into embedded chdb, its sessions then merged and sealed, and its background "
            "merges let run to their end before it is timed, as on a store that has served a while. Growth divides "
            "the larger size's uncached time by the smaller's. Before the DuckDB server is timed, the bits of the "
            "site's goals are stored in its sessions (what the server does in the background after a goal changes, "
            "timed below), so its goals list is the daily read from them. The windows end at midnight"
            + (
                ", but for the overview over a range ending today, as the dashboard's ranges do (read to the end of "
                "the current minute: each minute asks it anew)."
                if any(TODAY_ROUTE in (b.get(s) or {}).get("routes", {}) for b in scale.values() for s in _STORES)
                else "."
            ),
            "",
        ]
        lines += _scale(scale)

    rw = results.get("rewrites")
    if rw and rw.get("cases"):
        lines += [
            "",
            f"## History: query fixes measured before they were built ({rw['events']:,} events, DuckDB)",
            "",
            f"Measured {rw.get('date', '?')} with `{rw.get('command', 'python -m bench.rewrites')}`, a module since "
            "removed: the query of that day's builder against the proposed one, "
            f"{rw['runs']} interleaved runs each on a copy of the seeded file, after checking that both return the "
            "same result. What became of each fix is in the first runs' section at the end of the analysis; today's "
            "figures are the tables above.",
            "",
            "| route | proposed fix | before p50 | after p50 | speedup | same result |",
            "|---|---|---|---|---|---|",
        ]
        for name, c in rw["cases"].items():
            lines.append(
                f"| {name} (`{c['route']}`) | {c['fix']} | {_ms(c['before']['median'])} ms "
                f"| {_ms(c['after']['median'])} ms | {c['speedup']:.2f} x | {'yes' if c['same_result'] else 'NO'} |"
            )

    if ANALYSIS.exists():
        lines += ["", ANALYSIS.read_text().strip()]
    lines.append("")
    return "\n".join(lines)


def stamp() -> str:
    """Now, in UTC, for the run records."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
