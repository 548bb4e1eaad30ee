"""Settings: declared once, read from SITELENS_* variables, refused when wrong, documented in the README."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import create_engine, inspect

from api_backend.migrations import upgrade_to_head
from api_backend.settings import SETTINGS, SettingsError, load_settings, memory_bytes
from api_backend.store.models import Base
from tests.support import REPO_ROOT

README = REPO_ROOT / "README.md"


def test_defaults_live_in_the_data_dir(tmp_path):
    settings = load_settings({}, data_dir=str(tmp_path))
    assert settings.database_url == f"sqlite:///{tmp_path / 'sitelens.sqlite3'}"
    assert settings.events_url == f"duckdb:///{tmp_path / 'events.duckdb'}"
    assert settings.port == 8000 and settings.host == "127.0.0.1"


def test_secret_is_generated_once_and_kept(tmp_path):
    first = load_settings({}, data_dir=str(tmp_path)).secret_key
    second = load_settings({}, data_dir=str(tmp_path)).secret_key
    assert first == second and len(first) >= 32
    assert (tmp_path / "secret.key").stat().st_mode & 0o077 == 0


def test_environment_variables_are_read(tmp_path):
    env = {"SITELENS_DATA_DIR": str(tmp_path), "SITELENS_PORT": "9123", "SITELENS_SECRET_KEY": "s" * 20}
    settings = load_settings(env)
    assert settings.port == 9123 and settings.secret_key == "s" * 20 and settings.data_dir == tmp_path
    assert settings.dashboard_api_timeout == 120
    assert load_settings({**env, "SITELENS_DASHBOARD_API_TIMEOUT": "45"}).dashboard_api_timeout == 45
    assert settings.clickhouse_merge_hour == 3
    assert load_settings({**env, "SITELENS_CLICKHOUSE_MERGE_HOUR": "0"}).clickhouse_merge_hour == 0
    assert load_settings({**env, "SITELENS_CLICKHOUSE_MERGE_HOUR": "Off"}).clickhouse_merge_hour is None
    assert settings.clickhouse_seal_seconds == 60
    assert load_settings({**env, "SITELENS_CLICKHOUSE_SEAL_SECONDS": "5"}).clickhouse_seal_seconds == 5
    assert load_settings({**env, "SITELENS_CLICKHOUSE_SEAL_SECONDS": "off"}).clickhouse_seal_seconds is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SITELENS_PORT", "eighty"),
        ("SITELENS_PORT", "70000"),
        ("SITELENS_DATABASE_URL", "mysql://x"),
        ("SITELENS_EVENTS_URL", "/tmp/events.duckdb"),
        ("SITELENS_SECRET_KEY", "short"),
        ("SITELENS_API_URL", "ftp://x"),
        ("SITELENS_GEOIP_MMDB", "/no/such/file.mmdb"),
        ("SITELENS_TRUST_PROXY", "maybe"),
        ("SITELENS_DUCKDB_MEMORY_LIMIT", "lots"),
        ("SITELENS_CLICKHOUSE_MEMORY_LIMIT", "1 GB or so"),
        ("SITELENS_CLICKHOUSE_MERGE_HOUR", "24"),
        ("SITELENS_CLICKHOUSE_MERGE_HOUR", "-1"),
        ("SITELENS_CLICKHOUSE_MERGE_HOUR", "3am"),
        ("SITELENS_DASHBOARD_API_TIMEOUT", "0"),
        ("SITELENS_DASHBOARD_API_TIMEOUT", "a minute"),
        ("SITELENS_CLICKHOUSE_SEAL_SECONDS", "0"),
        ("SITELENS_CLICKHOUSE_SEAL_SECONDS", "often"),
        ("SITELENS_NO_SUCH_SETTING", "1"),
    ],
)
def test_wrong_values_stop_start_up_naming_the_variable(tmp_path, name, value):
    with pytest.raises(SettingsError, match=name):
        load_settings({"SITELENS_DATA_DIR": str(tmp_path), name: value})


def test_readme_documents_every_setting():
    text = README.read_text()
    table = re.findall(r"^\| `(SITELENS_[A-Z_]+)` \|", text, flags=re.MULTILINE)
    assert sorted(table) == sorted(s.env_var for s in SETTINGS)


def test_migrations_build_the_schema_the_models_describe(tmp_path):
    url = f"sqlite:///{tmp_path / 'meta.sqlite3'}"
    upgrade_to_head(url)
    inspector = inspect(create_engine(url))
    for table in Base.metadata.sorted_tables:
        migrated = {c["name"] for c in inspector.get_columns(table.name)}
        assert migrated == {c.name for c in table.columns}, table.name


def test_memory_sizes_read_as_duckdb_reads_them(tmp_path):
    assert memory_bytes("1GB") == 10**9 and memory_bytes("512 MiB") == 512 * 2**20 and memory_bytes("1.5kb") == 1500
    settings = load_settings({"SITELENS_CLICKHOUSE_MEMORY_LIMIT": "2GB"}, data_dir=str(tmp_path))
    assert settings.clickhouse_memory_limit == "2GB"
    with pytest.raises(SettingsError):
        memory_bytes("12 parsecs")
