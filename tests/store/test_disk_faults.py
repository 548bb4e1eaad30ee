"""A full disk, for real: a tiny tmpfs holds the event store and its log, and a filler file takes the last byte.

While the log cannot be written, tracking answers 503 with ``Retry-After`` and keeps nothing of the refused
events, ``/api/health`` says why, and both recover by themselves once space returns. Mounting needs root;
elsewhere these tests are skipped with the reason.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.eventlog import EventLog, LogUnavailableError
from api_backend.store.events import rows_to_table
from tests.store.test_eventlog import rows
from tests.support import make_account, make_site

SECRET = "disk-fault-secret-0123456789"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs mounted for this test only."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "sitelens-test", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk refuses one more byte; return it (delete it to free the space)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        for chunk in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    return filler


def test_diskfault001_a_refused_append_leaves_nothing_and_numbering_continues(small_disk):
    log = EventLog(small_disk / "log")
    assert log.append(rows_to_table(rows(1, path="/kept"))) == 1
    (segment,) = (small_disk / "log").glob("*.log")
    size = segment.stat().st_size
    filler = fill(small_disk)

    with pytest.raises(LogUnavailableError, match="No space left"):
        log.append(rows_to_table(rows(1, path="/refused")))
    assert segment.stat().st_size == size  # cut back to the last whole record
    assert log.fault is not None
    assert log.probe() is not None  # still full

    filler.unlink()
    assert log.probe() is None
    assert log.append(rows_to_table(rows(1, path="/after"))) == 2
    log.close()
    replayed = list(EventLog(small_disk / "log").replay(after=0))
    assert [seq for seq, _ in replayed] == [1, 2]
    assert [t.column("pathname")[0].as_py() for _, t in replayed] == ["/kept", "/after"]


def test_diskfault002_tracking_answers_503_while_full_and_recovers_when_space_returns(small_disk, tmp_path):
    settings = load_settings(
        {},
        data_dir=str(tmp_path / "data"),
        events_url=f"duckdb:///{small_disk}/events.duckdb",
        secret_key=SECRET,
        storage_alarm_free_mb="0",  # the tmpfs is tiny by design; only the fault itself should show in health
    )
    services = open_services(settings)
    site = make_site(services, make_account(services, "disk@example.com"))
    headers = {"User-Agent": BROWSER}

    def track(path: str):
        body = {"site_id": site.site_id, "type": "pageview", "pathname": path}
        return client.post("/api/track", json=body, headers=headers)

    try:
        with TestClient(create_app(settings, services)) as client:
            assert track("/before").status_code == 200
            assert services.events.count() == 1  # applied: the store has nothing left to write
            filler = fill(small_disk)

            refused = track("/refused")
            assert refused.status_code == 503, refused.text
            assert int(refused.headers["Retry-After"]) > 0
            assert refused.json()["code"] == "SERVICE_UNAVAILABLE"
            batch = {"events": [{"site_id": site.site_id, "type": "pageview", "pathname": "/refused-batch"}] * 3}
            refused = client.post("/api/track/batch", json=batch, headers=headers)
            assert refused.status_code == 503, refused.text
            assert "Retry-After" in refused.headers
            health = client.get("/api/health")
            assert health.status_code == 503
            assert any("event log cannot be written" in reason for reason in health.json()["reasons"])

            filler.unlink()
            health = client.get("/api/health")
            assert health.status_code == 200, health.text
            assert track("/after").status_code == 200
    finally:
        services.close()

    log_folder = small_disk / "events.eventlog"
    assert [seq for seq, _ in EventLog(log_folder).replay(after=0)] == [1, 2]  # no number used twice
    services = open_services(settings)
    try:
        stored = [r[0] for r in services.events.query("SELECT pathname FROM events ORDER BY timestamp, pathname")]
    finally:
        services.close()
    assert stored == ["/before", "/after"]  # the refused events were not stored later


def test_diskfault003_health_raises_the_storage_alarm_below_the_free_space_threshold(tmp_path):
    settings = load_settings({}, data_dir=str(tmp_path / "data"), secret_key=SECRET, storage_alarm_free_mb="1000000000")
    services = open_services(settings)
    try:
        with TestClient(create_app(settings, services)) as client:
            health = client.get("/api/health")
    finally:
        services.close()
    assert health.status_code == 503
    (reason,) = health.json()["reasons"]
    assert "MB free in" in reason and str(settings.data_dir) in reason
