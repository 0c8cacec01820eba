"""web sessions: people signed in with OpenID Connect, and the sign-ins under way

Revision ID: 0032
Revises: 0031
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ROLE = sa.Enum("viewer", "operator", "admin", name="role", native_enum=False, length=32)


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", ROLE, nullable=False),
        sa.Column("team", sa.String(length=200), nullable=True),
        sa.Column("jobs", sa.JSON(), nullable=True),
        sa.Column("id_token", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_web_sessions_secret_hash")),
    )
    op.create_index("ix_web_sessions_expires_at", "web_sessions", ["expires_at"])
    op.create_table(
        "oidc_logins",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("browser_hash", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=100), nullable=False),
        sa.Column("code_verifier", sa.String(length=128), nullable=False),
        sa.Column("next_url", sa.String(length=2000), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_oidc_logins")),
    )
    op.create_index("ix_oidc_logins_created_at", "oidc_logins", ["created_at"])


def downgrade() -> None:
    op.drop_table("oidc_logins")
    op.drop_table("web_sessions")
