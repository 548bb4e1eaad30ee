"""Initial metadata schema: users, organizations, memberships, keys, tokens, sites, goals.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_users_email", "users", ["email"], unique=True)
    op.create_table(
        "organizations",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "memberships",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "organization_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("organization_id", "user_id", name="uq_membership"),
    )
    op.create_index("ix_memberships_organization_id", "memberships", ["organization_id"])
    op.create_index("ix_memberships_user_id", "memberships", ["user_id"])
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("start", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("last_used_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_api_keys_user_id", "api_keys", ["user_id"])
    op.create_index("ix_api_keys_key_hash", "api_keys", ["key_hash"], unique=True)
    op.create_table(
        "login_tokens",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_login_tokens_user_id", "login_tokens", ["user_id"])
    op.create_index("ix_login_tokens_token_hash", "login_tokens", ["token_hash"], unique=True)
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_login_failures_email", "login_failures", ["email"])
    op.create_table(
        "sites",
        sa.Column("site_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("domain", sa.String(253), nullable=False),
        sa.Column(
            "organization_id", sa.String(32), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("created_by", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.Column("public", sa.Boolean, nullable=False),
        sa.Column("salt_user_ids", sa.Boolean, nullable=False),
        sa.Column("block_bots", sa.Boolean, nullable=False),
        sa.Column("session_replay", sa.Boolean, nullable=False),
        sa.Column("web_vitals", sa.Boolean, nullable=False),
        sa.Column("track_errors", sa.Boolean, nullable=False),
        sa.Column("track_outbound", sa.Boolean, nullable=False),
        sa.Column("track_url_params", sa.Boolean, nullable=False),
        sa.Column("excluded_ips", sa.JSON, nullable=False),
        sa.Column("excluded_countries", sa.JSON, nullable=False),
        sa.Column("private_link_key", sa.String(64), nullable=True),
        sa.UniqueConstraint("organization_id", "domain", name="uq_site_domain"),
        sa.UniqueConstraint("private_link_key", name="uq_site_private_link_key"),
    )
    op.create_index("ix_sites_id", "sites", ["id"], unique=True)
    op.create_index("ix_sites_organization_id", "sites", ["organization_id"])
    op.create_table(
        "goals",
        sa.Column("goal_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("site_id", sa.Integer, sa.ForeignKey("sites.site_id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("goal_type", sa.String(32), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_goals_site_id", "goals", ["site_id"])


def downgrade() -> None:
    for table in (
        "goals",
        "sites",
        "login_failures",
        "login_tokens",
        "api_keys",
        "memberships",
        "organizations",
        "users",
    ):
        op.drop_table(table)
