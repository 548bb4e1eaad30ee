"""Start-up with damaged or missing store files: one line naming the file and what to do, never a silent empty start.

The command-line cases run the real ``sitelens serve`` / ``sitelens demo`` in a subprocess, as an operator would.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.startup import StoreStartupError
from tests.cli.test_cli import assert_fails, run_cli
from tests.support import free_port, make_account, make_site

SECRET = "startup-secret-0123456789"


def _populated(data_dir: Path) -> None:
    """A data folder whose stores hold a site and some events (stopped cleanly)."""
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET)
    services = open_services(settings)
    try:
        site = make_site(services, make_account(services, "start@example.com"))
        services.writer.write([{"site_id": site.site_id, "timestamp": datetime(2026, 1, 1), "type": "pageview"}])
    finally:
        services.close()


def test_startup001_a_missing_event_store_with_its_log_refuses_unless_allowed(tmp_path):
    data_dir = tmp_path / "data"
    _populated(data_dir)
    (data_dir / "events.duckdb").unlink()

    with pytest.raises(StoreStartupError) as refused:
        open_services(load_settings({}, data_dir=str(data_dir), secret_key=SECRET))
    assert str(data_dir / "events.duckdb") in str(refused.value)
    assert "SITELENS_ALLOW_NEW_EVENT_STORE" in str(refused.value)
    assert not (data_dir / "events.duckdb").exists()

    services = open_services(load_settings({}, data_dir=str(data_dir), secret_key=SECRET, allow_new_event_store=True))
    services.close()
    assert (data_dir / "events.duckdb").exists()


def test_startup002_a_first_start_next_to_an_existing_metadata_database_is_not_refused(tmp_path):
    data_dir = tmp_path / "data"
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET)
    from api_backend.store.metadata import MetadataStore

    metadata = MetadataStore(settings.database_url)  # as `sitelens admin` does before any server ran
    metadata.close()
    open_services(settings).close()


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database " * 400)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _flip_middle_of_log(data_dir: Path) -> Path:
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET)
    services = open_services(settings)
    try:
        for i in range(3):
            services.writer.write(
                [{"site_id": 1, "timestamp": datetime(2026, 1, 1), "type": "pageview", "pathname": f"/{i}"}]
            )
    finally:
        services.close()
    (segment,) = (data_dir / "events.eventlog").glob("*.log")
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    return segment


def _damage_events(data_dir: Path, how) -> tuple[Path, str]:
    how(data_dir / "events.duckdb")
    return data_dir / "events.duckdb", "restore it from a backup"


def _damage_metadata(data_dir: Path, how) -> tuple[Path, str]:
    how(data_dir / "sitelens.sqlite3")
    return data_dir / "sitelens.sqlite3", "restore it from a backup"


def _delete_events(data_dir: Path) -> tuple[Path, str]:
    (data_dir / "events.duckdb").unlink()
    return data_dir / "events.duckdb", "SITELENS_ALLOW_NEW_EVENT_STORE=true"


def _damage_log(data_dir: Path) -> tuple[Path, str]:
    return _flip_middle_of_log(data_dir), "move"


CASES = {
    "garbage-events": lambda d: _damage_events(d, _garbage),
    "truncated-events": lambda d: _damage_events(d, _truncate),
    "garbage-metadata": lambda d: _damage_metadata(d, _garbage),
    "truncated-metadata": lambda d: _damage_metadata(d, _truncate),
    "deleted-events": _delete_events,
    "damaged-log": _damage_log,
}


@pytest.mark.parametrize(
    "command, case",
    [("serve", case) for case in CASES] + [("demo", "garbage-events"), ("demo", "truncated-metadata")],
)
def test_startup003_serve_and_demo_name_the_damaged_file_in_one_line(tmp_path, command, case):
    data_dir = tmp_path / "data"
    _populated(data_dir)
    damaged, advice = CASES[case](data_dir)
    result = run_cli(data_dir, command, "--port", str(free_port()), SITELENS_SECRET_KEY=SECRET)
    line = assert_fails(result, str(damaged), advice)
    assert "Traceback" not in line
