"""Alembic migrations of the metadata database, applied automatically at start-up."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ["upgrade_to_head"]

_HERE = Path(__file__).parent


def upgrade_to_head(database_url: str) -> None:
    """Bring the database at ``database_url`` to the newest schema."""
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    command.upgrade(config, "head")
