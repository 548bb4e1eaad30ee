"""Black-box tests of the ``sitelens`` command: admin commands, their failures, and serving.

Every test runs the installed console script in a subprocess against a temporary data folder, then looks at
the metadata database directly to check what was (or was not) written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api_backend.security import hash_token
from api_backend.settings import load_settings
from api_backend.store.metadata import MetadataStore
from tests.support import free_port, patient

SCRIPT = Path(sys.executable).with_name("sitelens")


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITELENS_")}
    env["SITELENS_DATA_DIR"] = str(data_dir)
    env.update(extra)
    return env


def run_cli(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``sitelens ARGS`` with ``SITELENS_DATA_DIR=data_dir``."""
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "sitelens.cli"]
    return subprocess.run(
        [*command, *args], env=cli_env(data_dir, **env), capture_output=True, text=True, timeout=120, check=False
    )


def ok_json(result: subprocess.CompletedProcess[str]) -> dict:
    """The one JSON object a successful command prints."""
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


def assert_fails(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """A failed command: non-zero exit, nothing on stdout, one line on stderr containing ``fragments``."""
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(data_dir: Path) -> Iterator[MetadataStore]:
    """A view of the metadata database the commands write (opened after the folder exists)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    metadata = MetadataStore(load_settings({}, data_dir=str(data_dir)).database_url)
    yield metadata
    metadata.close()


def _count(store: MetadataStore, table: str) -> int:
    from sqlalchemy import text

    with store.session() as s:
        return int(s.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


@pytest.fixture
def org(data_dir: Path, store: MetadataStore) -> dict[str, str]:
    """A user and an organization it owns, made through the command line."""
    user = ok_json(
        run_cli(data_dir, "admin", "create-user", "--email", "Owner@Example.com", "--password", "pw-12345678")
    )
    created = ok_json(run_cli(data_dir, "admin", "create-org", "--name", "Acme", "--owner-email", "owner@example.com"))
    return {"userId": user["userId"], "organizationId": created["organizationId"]}


def test_cli001_create_user(data_dir: Path, store: MetadataStore) -> None:
    result = ok_json(
        run_cli(data_dir, "admin", "create-user", "--email", "Ada@Example.com", "--password", "secret-pw-1")
    )
    assert set(result) == {"userId"}
    user = store.user_by_email("ada@example.com")
    assert user is not None and user.id == result["userId"]
    assert store.check_password("ada@example.com", "secret-pw-1") is not None


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--email", "no-at-sign", "--password", "secret-pw-1"], "email"),
        (["--email", "a@example.com", "--password", "short"], "password"),
        (["--email", "a@example.com"], "--password"),
    ],
)
def test_cli002_create_user_bad_input(data_dir: Path, store: MetadataStore, args: list[str], fragment: str) -> None:
    assert_fails(run_cli(data_dir, "admin", "create-user", *args), fragment)
    assert _count(store, "users") == 0


def test_cli003_create_user_duplicate(data_dir: Path, store: MetadataStore) -> None:
    ok_json(run_cli(data_dir, "admin", "create-user", "--email", "a@example.com", "--password", "secret-pw-1"))
    assert_fails(
        run_cli(data_dir, "admin", "create-user", "--email", "A@example.com", "--password", "other-pw-2"),
        "already exists",
    )
    assert _count(store, "users") == 1
    assert store.check_password("a@example.com", "secret-pw-1") is not None


def test_cli004_create_org(data_dir: Path, store: MetadataStore, org: dict[str, str]) -> None:
    organization = store.organization(org["organizationId"])
    assert organization is not None and organization.name == "Acme"
    assert store.role_in(org["userId"], org["organizationId"]) == "owner"


def test_cli005_create_org_unknown_owner(data_dir: Path, store: MetadataStore) -> None:
    assert_fails(
        run_cli(data_dir, "admin", "create-org", "--name", "Acme", "--owner-email", "ghost@example.com"),
        "ghost@example.com",
    )
    assert _count(store, "organizations") == 0


def test_cli006_add_member(data_dir: Path, store: MetadataStore, org: dict[str, str]) -> None:
    member = ok_json(run_cli(data_dir, "admin", "create-user", "--email", "m@example.com", "--password", "pw-12345678"))
    args = ["admin", "add-member", "--org", org["organizationId"], "--email", "m@example.com"]
    assert ok_json(run_cli(data_dir, *args, "--role", "member")) == {"success": True}
    assert store.role_in(member["userId"], org["organizationId"]) == "member"
    assert ok_json(run_cli(data_dir, *args, "--role", "admin")) == {"success": True}
    assert store.role_in(member["userId"], org["organizationId"]) == "admin"


def test_cli007_add_member_failures(data_dir: Path, store: MetadataStore, org: dict[str, str]) -> None:
    org_id = org["organizationId"]
    memberships = _count(store, "memberships")
    assert_fails(
        run_cli(data_dir, "admin", "add-member", "--org", org_id, "--email", "nobody@example.com", "--role", "member"),
        "nobody@example.com",
    )
    assert_fails(
        run_cli(data_dir, "admin", "add-member", "--org", "missing", "--email", "owner@example.com", "--role", "admin"),
        "missing",
    )
    assert_fails(
        run_cli(data_dir, "admin", "add-member", "--org", org_id, "--email", "owner@example.com", "--role", "boss"),
        "--role",
    )
    assert _count(store, "memberships") == memberships
    assert store.role_in(org["userId"], org_id) == "owner"


def test_cli008_create_site(data_dir: Path, store: MetadataStore, org: dict[str, str]) -> None:
    site = ok_json(
        run_cli(
            data_dir, "admin", "create-site", "--org", org["organizationId"], "--domain", "https://Shop.Example.com/"
        )
    )
    assert site["domain"] == "shop.example.com"
    assert site["name"] == "shop.example.com"
    assert site["organizationId"] == org["organizationId"]
    assert site["createdBy"] == org["userId"]
    assert isinstance(site["siteId"], int) and isinstance(site["id"], str)
    assert site["public"] is False and site["blockBots"] is True
    assert site["trackOutbound"] is True and site["trackUrlParams"] is True
    assert site["createdAt"].endswith("Z")
    stored = store.site(site["siteId"])
    assert stored is not None and stored.id == site["id"]

    public = ok_json(
        run_cli(
            data_dir,
            "admin",
            "create-site",
            "--org",
            org["organizationId"],
            "--domain",
            "blog.example.com",
            "--name",
            "The blog",
            "--public",
        )
    )
    assert public["name"] == "The blog" and public["public"] is True
    assert store.site(public["siteId"]).public is True


@pytest.mark.parametrize(
    ("domain", "fragment"),
    [("not a domain", "domain"), ("example.com:8080", "domain"), ("http://example.com/path", "domain")],
)
def test_cli009_create_site_bad_domain(
    data_dir: Path, store: MetadataStore, org: dict[str, str], domain: str, fragment: str
) -> None:
    assert_fails(
        run_cli(data_dir, "admin", "create-site", "--org", org["organizationId"], "--domain", domain), fragment
    )
    assert _count(store, "sites") == 0


def test_cli010_create_site_duplicate_and_unknown_org(
    data_dir: Path, store: MetadataStore, org: dict[str, str]
) -> None:
    ok_json(run_cli(data_dir, "admin", "create-site", "--org", org["organizationId"], "--domain", "example.com"))
    assert_fails(
        run_cli(data_dir, "admin", "create-site", "--org", org["organizationId"], "--domain", "EXAMPLE.com"),
        "already",
    )
    assert_fails(run_cli(data_dir, "admin", "create-site", "--org", "nope", "--domain", "other.com"), "nope")
    assert _count(store, "sites") == 1


def test_cli011_create_api_key(data_dir: Path, store: MetadataStore, org: dict[str, str]) -> None:
    result = ok_json(run_cli(data_dir, "admin", "create-api-key", "--email", "owner@example.com", "--name", "ci"))
    assert set(result) == {"id", "apiKey"}
    assert result["apiKey"].startswith("sl_")
    keys = store.list_api_keys(org["userId"])
    assert [(k.id, k.name) for k in keys] == [(result["id"], "ci")]
    assert keys[0].key_hash == hash_token(result["apiKey"])  # only the hash is stored
    assert store.user_for_api_key(result["apiKey"]).id == org["userId"]


def test_cli012_create_api_key_failures(data_dir: Path, store: MetadataStore, org: dict[str, str]) -> None:
    assert_fails(run_cli(data_dir, "admin", "create-api-key", "--email", "ghost@example.com"), "ghost@example.com")
    assert_fails(run_cli(data_dir, "admin", "create-api-key", "--email", "owner@example.com", "--name", " "), "--name")
    assert _count(store, "api_keys") == 0


def test_cli013_data_dir_flag_and_settings_errors(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    result = run_cli(
        tmp_path / "unused",
        "admin",
        "create-user",
        "--email",
        "flag@example.com",
        "--password",
        "pw-12345678",
        "--data-dir",
        str(other),
    )
    ok_json(result)
    assert (other / "sitelens.sqlite3").exists()
    assert not (tmp_path / "unused").exists()
    assert_fails(
        run_cli(
            tmp_path / "d",
            "admin",
            "create-user",
            "--email",
            "x@example.com",
            "--password",
            "pw-12345678",
            SITELENS_NOT_A_SETTING="1",
        ),
        "SITELENS_NOT_A_SETTING",
    )
    assert_fails(
        run_cli(
            tmp_path / "d",
            "admin",
            "create-user",
            "--email",
            "x@example.com",
            "--password",
            "pw-12345678",
            SITELENS_SECRET_KEY="short",
        ),
        "SITELENS_SECRET_KEY",
    )


def test_cli014_usage_errors_are_one_line(data_dir: Path) -> None:
    assert_fails(run_cli(data_dir, "admin"), "ACTION")
    assert_fails(run_cli(data_dir, "admin", "delete-everything"), "delete-everything")
    assert_fails(run_cli(data_dir, "nonsense"), "nonsense")
    assert_fails(run_cli(data_dir, "seed", "--site", "1", "--events", "many"), "--events")
    assert_fails(run_cli(data_dir, "serve", "--port", "70000"), "--port")
    assert_fails(run_cli(data_dir), "COMMAND")


def test_cli015_admin_works_while_the_event_store_is_locked(data_dir: Path, store: MetadataStore) -> None:
    """A running server holds DuckDB's file lock; admin commands only touch the metadata database."""
    events_path = data_dir / "events.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from api_backend.store.duckdb import DuckDBEventStore
                store = DuckDBEventStore({str(events_path)!r})
                print("locked", flush=True)
                sys.stdin.read()
                store.close()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        ok_json(run_cli(data_dir, "admin", "create-user", "--email", "o@example.com", "--password", "pw-12345678"))
        org_id = ok_json(run_cli(data_dir, "admin", "create-org", "--name", "Org", "--owner-email", "o@example.com"))[
            "organizationId"
        ]
        ok_json(run_cli(data_dir, "admin", "create-user", "--email", "m@example.com", "--password", "pw-12345678"))
        ok_json(
            run_cli(data_dir, "admin", "add-member", "--org", org_id, "--email", "m@example.com", "--role", "member")
        )
        site = ok_json(run_cli(data_dir, "admin", "create-site", "--org", org_id, "--domain", "locked.example.com"))
        ok_json(run_cli(data_dir, "admin", "create-api-key", "--email", "m@example.com"))
        assert store.site(site["siteId"]) is not None
        # Seeding needs the event store, so it refuses with a message saying why.
        message = assert_fails(run_cli(data_dir, "seed", "--site", str(site["siteId"]), "--events", "10"), "locked")
        assert "server" in message
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.mark.parametrize("access_log", [False, True])
def test_cli016_serve_answers_api_and_dashboard(tmp_path: Path, access_log: bool) -> None:
    port = free_port()
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "sitelens.cli"]
    env = cli_env(tmp_path / "ignored")
    if access_log:
        env["SITELENS_ACCESS_LOG"] = "true"
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--data-dir", str(tmp_path / "served")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first_line = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in first_line
        deadline = time.monotonic() + patient(60)
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "server did not start"
                assert server.poll() is None, server.stdout.read()
                time.sleep(0.2)
        assert health.status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/api/organizations", timeout=5).status_code == 401
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert (tmp_path / "served" / "events.duckdb").exists()
    finally:
        server.terminate()
        server.wait(timeout=30)
    # One line per request only when asked for.
    assert ("GET /api/organizations" in server.stdout.read()) is access_log


def test_cli020_serve_on_a_clickhouse_store_seals_its_sessions(tmp_path: Path) -> None:
    # The server seals a ClickHouse store's stopped sessions (``store/sealing.py``) from its start: a seal writes its
    # record even with no session to seal, so the command's seals before and after the server's tell it ran.
    pytest.importorskip("chdb")
    data_dir = tmp_path / "data"
    events = {"SITELENS_EVENTS_URL": f"chdb://{tmp_path / 'chdb'}"}
    first = ok_json(run_cli(data_dir, "clickhouse-seal-sessions", **events))
    assert (first["seal"], first["full"], first["sessions"]) == (1, True, 0)

    port = free_port()
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "sitelens.cli"]
    server = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        env=cli_env(data_dir, **events),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + patient(60)
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "server did not start"
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=patient(60))
    # The server's seal came between the command's two: the second is the third seal.
    last = ok_json(run_cli(data_dir, "clickhouse-seal-sessions", **events))
    assert (last["seal"], last["full"]) == (3, False)


def test_cli017_dashboard_needs_an_api_url_and_a_positive_timeout(data_dir: Path) -> None:
    assert_fails(run_cli(data_dir, "dashboard", "--port", "8999"), "SITELENS_API_URL")
    assert_fails(run_cli(data_dir, "dashboard", SITELENS_API_URL="ftp://example.com/api"), "SITELENS_API_URL")
    slow = {"SITELENS_API_URL": "http://127.0.0.1:9/api", "SITELENS_DASHBOARD_API_TIMEOUT": "0"}
    assert_fails(run_cli(data_dir, "dashboard", **slow), "SITELENS_DASHBOARD_API_TIMEOUT")


def test_cli018_dashboard_serves_pages_against_an_api_url(tmp_path: Path) -> None:
    port = free_port()
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "sitelens.cli"]
    server = subprocess.Popen(
        [*command, "dashboard", "--port", str(port)],
        env=cli_env(tmp_path / "data", SITELENS_API_URL="http://127.0.0.1:9/api"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert "http://127.0.0.1:9/api" in server.stdout.readline()
        deadline = time.monotonic() + patient(60)
        while True:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "dashboard did not start"
                assert server.poll() is None
                time.sleep(0.2)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        # Only the dashboard: no API in this process (Dash answers every path with its page).
        health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=5)
        assert "application/json" not in health.headers.get("content-type", "")
        assert not (tmp_path / "data").exists()  # the dashboard alone keeps no data
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("host", "shown"),
    [("0.0.0.0", "127.0.0.1"), ("::", "[::1]"), ("::1", "[::1]"), ("example.org", "example.org"), ("", "127.0.0.1")],
)
def test_cli019_urls_printed_for_bind_addresses(host: str, shown: str) -> None:
    from api_backend.cli import display_host

    assert display_host(host) == shown
