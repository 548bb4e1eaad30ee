"""ClickHouse administration commands of ``sitelens``.

    sitelens clickhouse-schema [--cluster NAME] [--database NAME]     print the SQL that creates the event tables
    sitelens migrate-events --to URL [--site ID] [--data-dir DIR]     copy events from DuckDB to a ClickHouse store
    sitelens clickhouse-merge-sessions [--data-dir DIR]                merge the sessions table's parts into one
    sitelens clickhouse-seal-sessions [--data-dir DIR]                 seal the sessions that stopped, at once

``migrate-events`` copies one (site, UTC day) at a time. Days whose counts already match are skipped, so a run that
was interrupted continues where it stopped; a day copied only in part is deleted and copied again. At the end the
counts of every site and day are compared, and one JSON object reports the outcome.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from api_backend.commands import CommandError, ProgressBar, command_settings, open_event_services
from api_backend.store.clickhouse_schema import MIGRATIONS, cluster_schema_sql, cluster_upgrade_sql, single_node_sql
from api_backend.store.open import DEFAULT_DATABASE, parse_events_url

if TYPE_CHECKING:
    from api_backend.store.clickhouse import ClickHouseEventStore

__all__ = [
    "add_clickhouse_commands",
    "clickhouse_schema_command",
    "merge_sessions_command",
    "migrate_events",
    "migrate_events_command",
    "seal_sessions_command",
]

DayCounts = dict[tuple[int, date], int]


def _identifier(raw: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", raw):
        raise argparse.ArgumentTypeError(f"{raw!r} must be letters, digits and underscores")
    return raw


def _schema_version(raw: str) -> int:
    """A schema version a cluster can be upgraded from: 1 up to the one before this version's."""
    newest = len(MIGRATIONS)
    if not raw.isdigit() or not 1 <= int(raw) < newest:
        raise argparse.ArgumentTypeError(f"must be a schema version from 1 to {newest - 1}")
    return int(raw)


def clickhouse_schema_command(args: argparse.Namespace) -> None:
    """Print the statements that create the event tables: one server, or a cluster with ``--cluster``.

    With ``--upgrade-from N`` (a cluster only), the statements that bring a cluster's tables from schema version N
    to this version's, which sitelens does not run on a cluster by itself.
    """
    if args.upgrade_from is not None:
        if not args.cluster:
            raise CommandError("--upgrade-from needs --cluster: a single server upgrades itself when sitelens starts")
        statements = cluster_upgrade_sql(args.cluster, args.database, args.upgrade_from)
    elif args.cluster:
        statements = cluster_schema_sql(args.cluster, args.database)
    else:
        statements = [f"CREATE DATABASE IF NOT EXISTS `{args.database}`", *single_node_sql(args.database)]
    sys.stdout.write(";\n\n".join(statements) + ";\n")
    sys.stdout.flush()


def _duckdb_day_counts(con: Any, site_id: int | None) -> DayCounts:
    where, params = ("WHERE site_id = ?", [site_id]) if site_id is not None else ("", [])
    rows = con.execute(
        f"SELECT site_id, CAST(timestamp AS DATE), count(*) FROM events {where} GROUP BY 1, 2", params
    ).fetchall()
    return {(int(site), day): int(count) for site, day, count in rows}


def _clickhouse_day_counts(store: Any, site_id: int | None) -> DayCounts:
    where = "WHERE site_id = {site:Int32}" if site_id is not None else ""
    rows = store.query(
        f"SELECT site_id, toDate(timestamp), count() FROM events {where} GROUP BY 1, 2", {"site": site_id}
    )
    return {(int(site), day): int(count) for site, day, count in rows}


def migrate_events(
    con: Any,
    target: Any,
    *,
    site_id: int | None = None,
    progress: Callable[[int], None] | None = None,
    batch_rows: int = 200_000,
) -> dict[str, Any]:
    """Copy the events of DuckDB connection ``con`` into ClickHouse store ``target`` by (site, day); verify counts."""
    source = _duckdb_day_counts(con, site_id)
    present = _clickhouse_day_counts(target, site_id)
    copied_days = skipped_days = copied_rows = 0
    for (site, day), count in sorted(source.items()):
        have = present.get((site, day), 0)
        if have == count:
            skipped_days += 1
            if progress:
                progress(count)
            continue
        start = datetime.combine(day, time())
        end = start + timedelta(days=1)
        if have:  # an interrupted run copied part of this day: start the day over
            target.delete_range(site, start, end)
        reader = con.sql(
            "SELECT * FROM events WHERE site_id = ? AND timestamp >= ? AND timestamp < ?", params=[site, start, end]
        ).to_arrow_reader(batch_rows)
        for batch in reader:
            target.append(pa.Table.from_batches([batch]))
            copied_rows += batch.num_rows
            if progress:
                progress(batch.num_rows)
        copied_days += 1
    after = _clickhouse_day_counts(target, site_id)
    mismatches = [
        f"site {site} on {day}: {source.get((site, day), 0)} in DuckDB, {after.get((site, day), 0)} in ClickHouse"
        for site, day in sorted(set(source) | set(after))
        if source.get((site, day), 0) != after.get((site, day), 0)
    ]
    return {
        "sites": len({site for site, _ in source}),
        "days": len(source),
        "copied_days": copied_days,
        "skipped_days": skipped_days,
        "copied_rows": copied_rows,
        "events": sum(source.values()),
        "verified": not mismatches,
        "mismatches": mismatches,
    }


def migrate_events_command(args: argparse.Namespace) -> dict[str, Any]:
    """``sitelens migrate-events``: copy the DuckDB events to the ClickHouse store at ``--to``."""
    import duckdb

    from api_backend.store.open import open_event_store

    try:
        target_url = parse_events_url(args.to)
    except ValueError as exc:
        raise CommandError(f"--to {args.to!r} {exc}") from None
    if target_url.scheme == "duckdb":
        raise CommandError("--to must be a ClickHouse store: clickhouse://..., clickhouses://... or chdb:///...")
    settings = command_settings(args)
    if parse_events_url(settings.events_url).scheme != "duckdb":
        raise CommandError(
            f"migrate-events copies from a DuckDB event store; SITELENS_EVENTS_URL is {settings.events_url}"
        )
    # Opening the services copies whatever the event log holds beyond the DuckDB file, so nothing is left behind.
    services = open_event_services(settings)
    try:
        site_id = None
        if args.site is not None:
            site = services.metadata.site(args.site)
            if site is None:
                raise CommandError(f"no site with id {args.site}")
            site_id = site.site_id
    finally:
        services.close()
    try:
        target, _ = open_event_store(dataclasses.replace(settings, events_url=args.to))
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    con = duckdb.connect(settings.events_path, read_only=True)
    try:
        total = _duckdb_day_counts(con, site_id)
        bar = ProgressBar(sum(total.values()), label="migrating")
        try:
            result = migrate_events(con, target, site_id=site_id, progress=bar.update)
        finally:
            bar.close()
    finally:
        con.close()
        target.close()
    if not result["verified"]:
        raise CommandError("counts differ after the copy: " + "; ".join(result["mismatches"][:5]))
    del result["mismatches"]
    return result


def _on_clickhouse_store(
    args: argparse.Namespace, refusal: str, job: Callable[[ClickHouseEventStore], dict[str, Any]]
) -> dict[str, Any]:
    """``job``'s answer on the ClickHouse store in use, with its seconds; a DuckDB store is refused, as one that
    ``refusal`` (what it keeps none of) says."""
    import time as clock

    from api_backend.store.clickhouse import ClickHouseEventStore
    from api_backend.store.open import open_event_store

    settings = command_settings(args)
    if parse_events_url(settings.events_url).scheme == "duckdb":
        raise CommandError(f"the event store is DuckDB ({settings.events_url}), which keeps no {refusal}")
    try:
        store, _ = open_event_store(settings)
    except (ImportError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    try:
        assert isinstance(store, ClickHouseEventStore)
        started = clock.monotonic()
        result = job(store)
        return {**result, "seconds": round(clock.monotonic() - started, 1)}
    finally:
        store.close()


def merge_sessions_command(args: argparse.Namespace) -> dict[str, Any]:
    """``sitelens clickhouse-merge-sessions``: merge the ``sessions`` table of the ClickHouse store in use.

    The embedded engine (``chdb://``) belongs to one process, so this runs with the server stopped; a ClickHouse
    server's table can be merged while sitelens serves.
    """
    return _on_clickhouse_store(args, "parts to merge", lambda store: store.merge_sessions())


def seal_sessions_command(args: argparse.Namespace) -> dict[str, Any]:
    """``sitelens clickhouse-seal-sessions``: seal the sessions of the ClickHouse store in use that stopped long
    enough ago (``store/sealing.py``), as the server does every ``SITELENS_CLICKHOUSE_SEAL_SECONDS``.

    After ``migrate-events`` the first seal writes every session; a server does so soon after it starts, and this
    does it before. Like the merge, it runs with the server stopped on the embedded engine (``chdb://``).
    """
    from api_backend.services import SEAL_IDLE
    from api_backend.store.models import utcnow

    cutoff = utcnow() - SEAL_IDLE
    return _on_clickhouse_store(args, "sealed sessions", lambda store: store.seal_sessions(cutoff))


def add_clickhouse_commands(commands: Any, add_data_dir: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``clickhouse-schema``, ``migrate-events``, ``clickhouse-merge-sessions`` and
    ``clickhouse-seal-sessions`` on the ``sitelens`` subcommand parser."""
    schema = commands.add_parser("clickhouse-schema", help="print the SQL that creates the ClickHouse event tables")
    schema.add_argument(
        "--cluster", type=_identifier, help="cluster name: replicated tables ON CLUSTER and a Distributed table"
    )
    schema.add_argument(
        "--database", type=_identifier, default=DEFAULT_DATABASE, help=f"database (default: {DEFAULT_DATABASE})"
    )
    schema.add_argument(
        "--upgrade-from",
        type=_schema_version,
        metavar="VERSION",
        help="with --cluster: the statements that upgrade a cluster at this schema version (sitelens names it)",
    )
    schema.set_defaults(handler=clickhouse_schema_command)

    migrate = commands.add_parser("migrate-events", help="copy events from the DuckDB file to a ClickHouse store")
    migrate.add_argument("--to", required=True, help="target events URL: clickhouse://... or chdb:///...")
    migrate.add_argument("--site", help="only this site (siteId or the site's string id)")
    add_data_dir(migrate)
    migrate.set_defaults(handler=migrate_events_command, prints_json=True)

    merge = commands.add_parser(
        "clickhouse-merge-sessions", help="merge the ClickHouse sessions table's parts, so reads of it cost less"
    )
    add_data_dir(merge)
    merge.set_defaults(handler=merge_sessions_command, prints_json=True)

    seal = commands.add_parser(
        "clickhouse-seal-sessions", help="seal the ClickHouse sessions that stopped, so reads need not merge them"
    )
    add_data_dir(seal)
    seal.set_defaults(handler=seal_sessions_command, prints_json=True)
