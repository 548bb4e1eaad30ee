"""Black-box tests of ``sitelens seed``: rows in the event store, reproducibility, failures that write nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from api_backend.commands import bulk_memory_limit, usable_memory
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import EVENT_TYPES
from tests.cli.test_cli import assert_fails, cli_env, ok_json, run_cli

NOW = "2026-03-01T12:00:00Z"
NOW_NAIVE = datetime(2026, 3, 1, 12, 0)


def make_site(data_dir: Path, domain: str = "seeded.example.com") -> dict:
    """A user, organization and site made through the command line."""
    ok_json(run_cli(data_dir, "admin", "create-user", "--email", "s@example.com", "--password", "pw-12345678"))
    org = ok_json(run_cli(data_dir, "admin", "create-org", "--name", "Seeds", "--owner-email", "s@example.com"))
    return ok_json(run_cli(data_dir, "admin", "create-site", "--org", org["organizationId"], "--domain", domain))


def all_rows(data_dir: Path) -> list[tuple]:
    store = DuckDBEventStore(data_dir / "events.duckdb")
    try:
        return store.query("SELECT * FROM events ORDER BY timestamp, session_id, type, pathname, props")
    finally:
        store.close()


def seed(data_dir: Path, site: int | str, *args: str):
    return run_cli(data_dir, "seed", "--site", str(site), *args)


def run_script(script: str, data_dir: Path, *args: str, **env: str) -> tuple[list[str], str]:
    """Run ``script`` (which calls the command's entry point with ``args``) on ``data_dir``: its stdout lines and
    stderr, once it exited 0."""
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=cli_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines(), result.stderr


def test_cliseed001_inserts_exactly_n_realistic_events(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    site = make_site(data_dir)
    result = seed(data_dir, site["siteId"], "--events", "20000", "--seed", "5", "--now", NOW)
    assert ok_json(result) == {"inserted": 20000}
    assert "100.0%" in result.stderr  # the progress bar went to stderr, stdout holds only the JSON
    store = DuckDBEventStore(data_dir / "events.duckdb")
    try:
        assert store.count(site["siteId"]) == 20000
        assert store.count() == 20000
        types = dict(store.query("SELECT type, count(*) FROM events GROUP BY type"))
        assert set(types) == set(EVENT_TYPES)
        assert types["pageview"] > 10000
        (low, high, hosts, sessions, users, channels) = store.query(
            "SELECT min(timestamp), max(timestamp), list(DISTINCT hostname ORDER BY hostname), "
            "count(DISTINCT session_id), count(DISTINCT user_id), count(DISTINCT channel) FROM events"
        )[0]
        assert high <= NOW_NAIVE and low >= NOW_NAIVE - timedelta(days=30)
        assert hosts == ["seeded.example.com", "www.seeded.example.com"]
        assert 3000 < sessions < 10000 and users < sessions
        assert channels >= 8
        errors = store.query("SELECT count(*) FROM events WHERE type = 'error' AND props LIKE '%\\n    at %'")[0][0]
        assert errors == types["error"]
    finally:
        store.close()


def test_cliseed002_same_seed_same_rows(tmp_path: Path) -> None:
    rows = []
    for name in ("one", "two"):
        data_dir = tmp_path / name
        site = make_site(data_dir)
        ok_json(seed(data_dir, site["siteId"], "--events", "3000", "--seed", "42", "--now", NOW))
        rows.append(all_rows(data_dir))
    assert len(rows[0]) == 3000
    assert rows[0] == rows[1]
    other = tmp_path / "three"
    site = make_site(other)
    ok_json(seed(other, site["siteId"], "--events", "3000", "--seed", "43", "--now", NOW))
    assert all_rows(other) != rows[0]


def test_cliseed003_string_site_id_days_and_appending(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    site = make_site(data_dir)
    assert ok_json(seed(data_dir, site["id"], "--events", "500", "--days", "3", "--now", NOW)) == {"inserted": 500}
    assert ok_json(seed(data_dir, site["siteId"], "--events", "250", "--days", "3")) == {"inserted": 250}
    rows = all_rows(data_dir)
    assert len(rows) == 750
    first_run = [r for r in rows if r[1] <= NOW_NAIVE]
    assert len(first_run) >= 500
    assert min(r[1] for r in rows) >= NOW_NAIVE - timedelta(days=3)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--events", "0"], "--events"),
        (["--events", "ten"], "--events"),
        (["--events", "10", "--days", "0"], "--days"),
        (["--events", "10", "--seed", "-1"], "--seed"),
        (["--events", "10", "--now", "yesterday"], "--now"),
    ],
)
def test_cliseed004_bad_arguments(tmp_path: Path, args: list[str], fragment: str) -> None:
    data_dir = tmp_path / "data"
    assert_fails(seed(data_dir, 1, *args), fragment)
    assert not data_dir.exists()  # refused before anything was opened


def test_cliseed005_unknown_site_writes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    make_site(data_dir)
    assert_fails(seed(data_dir, 999, "--events", "10"), "999")
    assert_fails(seed(data_dir, "no-such-id", "--events", "10"), "no-such-id")
    assert not (data_dir / "events.duckdb").exists()


def _may_use_huge_pages() -> bool:
    """Whether the kernel reports this process's ``THP_enabled`` as 1 (a child inherits it until it changes it)."""
    status = Path("/proc/self/status")
    return status.exists() and "THP_enabled:\t1" in status.read_text()


# Runs the command's entry point, then prints the process's own THP_enabled line (1, or 0 once disabled).
_SEED_THEN_REPORT = """
import sys
from sitelens.cli import main
assert main(sys.argv[1:]) == 0
print(next(line for line in open("/proc/self/status") if line.startswith("THP_enabled:")).split()[1])
"""


@pytest.mark.skipif(not _may_use_huge_pages(), reason="no THP_enabled of 1 to see turned off in a child")
def test_cliseed006_seeding_runs_without_transparent_huge_pages(tmp_path: Path) -> None:
    """The seeding process asks the kernel for no transparent huge pages (faulting them in cost it about 15%);
    a process that does not seed keeps them."""
    data_dir = tmp_path / "data"
    site = make_site(data_dir)

    def run(*args: str) -> list[str]:
        return run_script(_SEED_THEN_REPORT, data_dir, *args)[0]

    seeded = run("seed", "--site", str(site["siteId"]), "--events", "2000", "--seed", "3", "--now", NOW)
    assert seeded == ['{"inserted": 2000}', "0"]
    listed = run("admin", "create-api-key", "--email", "s@example.com", "--name", "k")
    assert listed[-1] == "1"


# Runs the command's entry point, recording the memory limit each DuckDB store is opened with, then prints them.
_SEED_THEN_LIMITS = """
import sys
from api_backend.store.duckdb import DuckDBEventStore
from sitelens.cli import main
limits = []
opened = DuckDBEventStore.__init__
def recording(self, path, **kwargs):
    limits.append(kwargs.get("memory_limit"))
    opened(self, path, **kwargs)
DuckDBEventStore.__init__ = recording
assert main(sys.argv[1:]) == 0
print(limits)
"""


def test_cliseed007_seeding_takes_a_share_of_the_machines_memory(tmp_path: Path) -> None:
    """Without ``SITELENS_DUCKDB_MEMORY_LIMIT`` the seeder's store may use a quarter of the memory the process may
    use, between 1GB and 4GB, and says so on stderr; the setting, when given, wins."""
    data_dir = tmp_path / "data"
    site = make_site(data_dir)

    def run(**env: str) -> tuple[list[str], str]:
        return run_script(_SEED_THEN_LIMITS, data_dir, "seed", "--site", str(site["siteId"]), "--events", "2000", **env)

    expected = bulk_memory_limit({}, usable_memory())
    assert expected is not None and 1000 <= int(expected.removesuffix("MB")) <= 4000
    lines, stderr = run()
    assert lines == ['{"inserted": 2000}', repr([expected])]
    assert f"seeding with a DuckDB memory limit of {expected}" in stderr
    lines, stderr = run(SITELENS_DUCKDB_MEMORY_LIMIT="512MB")
    assert lines == ['{"inserted": 2000}', repr(["512MB"])]
    assert "memory limit" not in stderr
    store = DuckDBEventStore(data_dir / "events.duckdb")
    try:
        assert store.count() == 4000
    finally:
        store.close()


@pytest.mark.parametrize(
    ("env", "memory", "limit"),
    [
        ({}, 24 * 2**30, "4000MB"),  # a quarter is 6.4GB: capped
        ({}, 8 * 1000**3, "2000MB"),
        ({}, 2 * 1000**3, "1000MB"),  # a quarter is 500MB: the server's 1GB
        ({}, None, None),  # memory unknown: the setting as it is
        ({"SITELENS_DUCKDB_MEMORY_LIMIT": "1GB"}, 24 * 2**30, None),  # set: it wins
    ],
)
def test_cliseed008_bulk_memory_limit(env: dict[str, str], memory: int | None, limit: str | None) -> None:
    assert bulk_memory_limit(env, memory) == limit


def test_cliseed009_usable_memory_is_the_lower_of_machine_and_control_group(tmp_path: Path) -> None:
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    missing, unlimited, limited = tmp_path / "none", tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    unlimited.write_text("max\n")
    limited.write_text(f"{2 * 1000**3}\n")
    assert usable_memory([missing, unlimited]) == machine
    assert usable_memory([missing, limited]) == min(machine, 2 * 1000**3)
    assert bulk_memory_limit({}, usable_memory([limited])) == "1000MB"  # a 2GB container keeps the server's limit
    assert usable_memory() is not None


_SEED_THEN_LOOKUPS = """
import sys
from api_backend import seed
from api_backend.store import duckdb as duckdb_module
from sitelens.cli import main
seed.generate_events.__kwdefaults__["chunk_rows"] = 20_000  # several commits, each folding its chunk
duckdb_module.CHAIN_ROWS = 1_000  # each of which would look the chains up
lookups = []
look_up = duckdb_module.DuckDBEventStore._look_up_chains
def counting(self):
    lookups.append(self._unchained_rows)
    look_up(self)
duckdb_module.DuckDBEventStore._look_up_chains = counting
assert main(sys.argv[1:]) == 0
print(lookups)
"""


def test_cliseed010_seeding_looks_the_chains_up_once_at_its_end(tmp_path: Path) -> None:
    """A seed whose commits each fold more than ``CHAIN_ROWS`` events looks its sessions' chains up once, when it
    ends (``bulk_load``), not after each commit: the stored table has every chain, as a store given the same events
    at once has."""
    data_dir = tmp_path / "data"
    site = make_site(data_dir)
    events = 60_000  # the last chunk, 19,998 events, is acknowledged from the event log: the load waits for it too
    lines, _ = run_script(
        _SEED_THEN_LOOKUPS, data_dir, "seed", "--site", str(site["siteId"]), "--events", str(events), "--seed", "10"
    )
    assert lines[0] == f'{{"inserted": {events}}}'
    assert lines[1] == repr([events])  # one lookup, of every event the seed folded
    store = DuckDBEventStore(data_dir / "events.duckdb")
    try:
        assert store.query("SELECT count(*) FROM sessions_pending") == [(0,)]
        assert store.query("SELECT count(*) FROM sessions WHERE prev_first_seen IS NULL") == [(0,)]
        stored = store.query("SELECT session_id, prev_first_seen FROM sessions ORDER BY session_id")
        fresh = DuckDBEventStore(":memory:")
        fresh.append(store._con.sql("SELECT * FROM events").to_arrow_table())
        fresh.chain_sessions()
        assert stored == fresh.query("SELECT session_id, prev_first_seen FROM sessions ORDER BY session_id")
        fresh.close()
    finally:
        store.close()
