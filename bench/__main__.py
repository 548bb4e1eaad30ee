"""``python -m bench``: run the benchmarks and write ``BENCHMARKS.md`` and ``bench/results.json``.

    python -m bench                                  # everything: ingestion, 1M and 10M reads, dashboard
    python -m bench --sizes 1000000 --runs 10        # reads at one size (plus ingestion and dashboard)
    python -m bench --skip-ingest --skip-dashboard   # reads only
    python -m bench --quick                          # a fast smoke run: 100k events, 3 runs, short ingestion
    python -m bench --skip-ingest --skip-reads --skip-dashboard --scale-data-dir DIR   # scale block on a kept dir

The scale block (every read route through the API on fresh windows, on the DuckDB store and on a ClickHouse store
copied from it, at 10M and 100M events by default) seeds its own data dirs: about 9 minutes of seeding for 100M
events, 17 for the ClickHouse copy and more for the reads, so ``make bench`` takes over an hour.

Blocks this run does not measure are kept from the previous ``bench/results.json`` (``--fresh`` drops them), so
parts can be re-run one at a time; every block records the date and command that measured it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.report import machine_info, render_markdown, stamp

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results.json"
MARKDOWN = ROOT / "BENCHMARKS.md"


def _sizes(raw: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in raw.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a comma-separated list of event counts") from None
    if not sizes or any(s < 1000 for s in sizes):
        raise argparse.ArgumentTypeError("sizes must be at least 1000 events")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    """Options of ``python -m bench``."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_sizes, default=[1_000_000, 10_000_000], help="event counts to seed and query")
    parser.add_argument("--runs", type=int, default=10, help="timed warm runs per query and engine (default 10)")
    parser.add_argument("--warmups", type=int, default=2, help="untimed runs before timing (default 2)")
    parser.add_argument(
        "--budget", type=float, default=300.0, help="seconds per query (3 engines); slower queries get fewer runs"
    )
    parser.add_argument("--queries", help="comma-separated query names to run (default: all)")
    parser.add_argument("--ingest-seconds", type=float, default=20.0, help="measured seconds per ingestion scenario")
    parser.add_argument("--dashboard-runs", type=int, default=5, help="page loads per dashboard page and mode")
    parser.add_argument("--skip-ingest", action="store_true", help="do not run the ingestion block")
    parser.add_argument("--skip-reads", action="store_true", help="do not seed or time read routes")
    parser.add_argument("--skip-dashboard", action="store_true", help="do not time dashboard pages")
    parser.add_argument(
        "--scale-sizes",
        type=_sizes,
        default=[10_000_000, 100_000_000],
        help="event counts for the scale block (default 10M and 100M)",
    )
    parser.add_argument(
        "--scale-data-dir",
        type=Path,
        action="append",
        metavar="DATA_DIR",
        help="run the scale block on this seeded data dir instead of seeding (repeatable)",
    )
    parser.add_argument("--scale-runs", type=int, default=3, help="fresh-window requests per route in the scale block")
    parser.add_argument("--skip-scale", action="store_true", help="do not run the scale block")
    parser.add_argument("--quick", action="store_true", help="smoke run: 100k events, 3 runs, 5 s ingestion")
    parser.add_argument("--fresh", action="store_true", help="drop blocks of previous runs from results.json")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "bench" / "data", help="scratch data (git-ignored)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--markdown", type=Path, default=MARKDOWN, help="where to write BENCHMARKS.md")
    parser.add_argument("--keep-data", action="store_true", help="keep the seeded data dirs after the run")
    parser.add_argument(
        "--dashboard-only",
        type=Path,
        metavar="DATA_DIR",
        help="only time the dashboard, on a data dir kept by --keep-data (replaces that size's dashboard figures)",
    )
    parser.add_argument("--render-only", action="store_true", help="only re-render BENCHMARKS.md from results.json")
    return parser


def _log(message: str) -> None:
    print(message, flush=True)


def _load(path: Path, fresh: bool) -> dict[str, Any]:
    if fresh or not path.exists():
        return {}
    return json.loads(path.read_text())


def _save(results: dict[str, Any], args: argparse.Namespace) -> None:
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=1, sort_keys=False, default=str) + "\n")
    args.markdown.write_text(render_markdown(results))


def _run_record(command: str) -> dict[str, Any]:
    # The CPU too: blocks kept from earlier runs may come from another machine than the latest run's.
    return {
        "date": stamp(),
        "command": command,
        "commit": _commit(),
        "cpu": machine_info()["cpu_model"],
        "load_before": _loadavg(),
    }


def _commit() -> str:
    """The checked-out commit (with ``+changes`` when the working tree differs), so figures name their code."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        # The run's own output (written after each block) does not count as a change to the measured code.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":!BENCHMARKS.md", ":!bench/results.json"], cwd=ROOT, capture_output=True,
                               text=True)  # fmt: skip
    except OSError:
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _dashboard_only(args: argparse.Namespace, results: dict[str, Any], command: str) -> int:
    """Re-time the dashboard against a kept data dir (its server restarted) and store it under that size."""
    from bench.accounts import BenchAccount
    from bench.dashboard import run_dashboard
    from bench.profile import _api_key
    from bench.server import ServerProcess

    data_dir = args.dashboard_only.resolve()
    key, site_id = _api_key(data_dir)
    size = next((k for k, v in results.get("reads", {}).items() if f"reads-{k}" == data_dir.name), None)
    if size is None:
        raise SystemExit(f"{data_dir} is not the data dir of a size in {args.results}")
    record = _run_record(command)
    with ServerProcess(data_dir) as server:
        account = BenchAccount(data_dir, "", key, "", site_id, "")
        rss: dict[str, int] = {}
        assert server.sampler is not None
        with server.sampler.block(rss, "dashboard"):
            results["reads"][size]["dashboard"] = run_dashboard(server, account, runs=args.dashboard_runs, log=_log)
        results["reads"][size].setdefault("peak_rss_bytes", {})["dashboard"] = rss["dashboard"]
    record["load_after"] = _loadavg()
    results["runs"]["dashboard"] = record
    results["machine"] = machine_info()
    _save(results, args)
    return 0


def _scale_reuses(args: argparse.Namespace, size: int) -> bool:
    """Whether the scale block will use the reads block's data dir of ``size`` (so it must not be deleted yet)."""
    return not args.skip_scale and not args.scale_data_dir and size in args.scale_sizes


# Written into a data dir the scale block seeds: its seeding figures and commit, for later blocks on the same dir.
SEEDING_RECORD = "seeding.json"


def _earlier_seeding(results: dict[str, Any], entry: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """The seeding figures of the block that seeded this data dir, if one did.

    A block re-measuring a kept data dir does not seed it; the seeding it keeps names the commit it was made at. The
    dir's own record says so; a dir seeded before the record existed is matched by its events and its file's size,
    which every server that opens the file may change.
    """
    record = data_dir / SEEDING_RECORD
    if record.exists():
        seeding = json.loads(record.read_text())
        return {"seeding": seeding["seeding"], "seeded_at": seeding["commit"]}
    events = entry["events"]
    earlier = results.get("scale", {}).get(str(events), {})
    if "seeding" not in earlier or earlier.get("duckdb_file_bytes") != entry["duckdb_file_bytes"]:
        return {}
    seeded_at = earlier.get("seeded_at") or results.get("runs", {}).get(f"scale {events:,}", {}).get("commit")
    return {"seeding": earlier["seeding"], "seeded_at": seeded_at}


def _scale(args: argparse.Namespace, results: dict[str, Any], command: str, work: Path, reads_kept: set[int]) -> None:
    """The scale block: each size's data dir (given, kept from the reads block, or seeded here) on both stores."""
    from bench.accounts import create_account
    from bench.reads import seed_events
    from bench.scale import run_scale

    runs: list[tuple[Path, bool, int | None]] = []  # data dir, whether this block seeds it, events to seed
    if args.scale_data_dir:
        runs = [(path.resolve(), False, None) for path in args.scale_data_dir]
    else:
        for size in args.scale_sizes:
            kept = work / f"reads-{size}"
            if size in reads_kept and kept.exists():
                runs.append((kept, False, None))
            else:
                runs.append((work / f"scale-{size}", True, size))
    for data_dir, seeds, size in runs:
        record = _run_record(command)
        seeding = None
        if seeds:
            assert size is not None
            _log(f"scale: seeding {size:,} events")
            shutil.rmtree(data_dir, ignore_errors=True)
            account = create_account(data_dir)
            now = datetime.now(UTC).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
            seeding = seed_events(account, size, now)
            seeding["file_bytes"] = (data_dir / "events.duckdb").stat().st_size  # before any server opens it
            record_text = json.dumps({"seeding": seeding, "commit": _commit()}, indent=1)
            (data_dir / SEEDING_RECORD).write_text(record_text + "\n")
            _log(f"  {seeding['seconds']:.0f} s ({seeding['events_per_s']:,.0f} events/s)")
        _log(f"scale: {data_dir}")
        entry = run_scale(data_dir, work, args.scale_runs, _log)
        if seeding is not None:
            entry["seeding"] = seeding
        else:
            entry |= _earlier_seeding(results, entry, data_dir)
        record["load_after"] = _loadavg()
        results.setdefault("scale", {})[str(entry["events"])] = entry
        results["runs"][f"scale {entry['events']:,}"] = record
        _save(results, args)
        if not args.keep_data and not args.scale_data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run the selected blocks; write results after each block so a long run keeps what it measured."""
    args = build_parser().parse_args(argv)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    command = command.strip()
    results = _load(args.results, args.fresh)
    if args.render_only:
        args.markdown.write_text(render_markdown(results))
        return 0
    if args.dashboard_only:
        return _dashboard_only(args, results, command)
    if args.quick:
        args.sizes, args.runs, args.warmups = [100_000], 3, 1
        args.ingest_seconds, args.dashboard_runs = 5.0, 2
        args.scale_sizes, args.scale_runs = [100_000], 2
    results["machine"] = machine_info()
    results.setdefault("runs", {})
    results.setdefault("reads", {})
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    if not args.skip_ingest:
        from bench.ingest import run_ingestion

        _log("ingestion")
        record = _run_record(command)
        shutil.rmtree(work / "ingest", ignore_errors=True)
        results["ingestion"] = run_ingestion(
            work, duration=args.ingest_seconds, warmup=min(3.0, args.ingest_seconds / 2), log=_log
        )
        record["load_after"] = _loadavg()
        results["runs"]["ingestion"] = record
        _save(results, args)

    if not args.skip_reads:
        from bench.clickhouse import ClickHouseEngine
        from bench.reads import run_reads

        only = {q.strip() for q in args.queries.split(",")} if args.queries else None
        shutil.rmtree(work / "chdb", ignore_errors=True)
        ch = ClickHouseEngine(work / "chdb")  # chdb allows one data path per process: one engine for all sizes
        results["clickhouse_version"] = ch.version
        largest = max(args.sizes)
        for size in args.sizes:
            _log(f"reads at {size:,} events")
            record = _run_record(command)
            with_server = None
            if size == largest and not args.skip_dashboard:
                from bench.dashboard import run_dashboard

                def with_server(server, account, _runs=args.dashboard_runs):  # noqa: ANN001, ANN202
                    return run_dashboard(server, account, runs=_runs, log=_log)

            previous = results["reads"].get(str(size), {})
            block = run_reads(
                work,
                size,
                ch,
                runs=args.runs,
                warmups=args.warmups,
                only=only,
                budget=args.budget,
                with_server=with_server,
                log=_log,
            )
            if with_server is None and "dashboard" in previous:
                # Not timed this run: the dashboard figures of the earlier run stay, with their own run record.
                block["dashboard"] = previous["dashboard"]
                if "dashboard" in previous.get("peak_rss_bytes", {}):
                    block.setdefault("peak_rss_bytes", {})["dashboard"] = previous["peak_rss_bytes"]["dashboard"]
            results["reads"][str(size)] = block
            record["load_after"] = _loadavg()
            results["runs"][f"reads {size:,}"] = record
            if with_server is not None:
                results["runs"].pop("dashboard", None)  # the dashboard figures now come from this block
            _save(results, args)
            if not args.keep_data and not _scale_reuses(args, size):
                shutil.rmtree(work / f"reads-{size}", ignore_errors=True)
        ch.close()

    if not args.skip_scale:
        _scale(args, results, command, work, reads_kept={s for s in args.sizes if not args.skip_reads})

    _save(results, args)
    _log(f"done in {time.perf_counter() - started:.0f} s: wrote {args.markdown} and {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
