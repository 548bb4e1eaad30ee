"""Alembic environment: runs migrations on the URL the caller put in the config."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from api_backend.store.models import Base

config = context.config
url = config.get_main_option("sqlalchemy.url")
if url is None:
    raise RuntimeError("alembic needs sqlalchemy.url (set by MetadataStore before it migrates)")
engine = create_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
