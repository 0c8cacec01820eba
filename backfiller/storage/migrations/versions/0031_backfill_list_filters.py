"""backfill list filters: the assets of asset backfills, and indexes for creator, creation
time, title text (a trigram index on PostgreSQL) and tags in list order

Revision ID: 0031
Revises: 0045
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0045"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    op.create_table(
        "backfill_assets",
        sa.Column("asset", sa.String(length=200), nullable=False),
        sa.Column(
            "backfill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_backfill_assets_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("asset", "backfill_id", name=op.f("pk_backfill_assets")),
    )
    _fill_backfill_assets(bind)
    # A tag's backfills newest first, without a sort: a list page stops after 100 of them.
    with op.batch_alter_table("backfill_tags") as batch:
        batch.drop_index("ix_backfill_tags_key_value")
        batch.create_index(
            "ix_backfill_tags_key_value_backfill_id", ["key", "value", "backfill_id"]
        )
    with op.batch_alter_table("backfills") as batch:
        batch.create_index("ix_backfills_creator_id", ["creator", "id"])
        batch.create_index("ix_backfills_created_at", ["created_at"])
    if postgres:
        # A trusted extension (PostgreSQL 13 and later): the database's owner may create it.
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.create_index(
            "ix_backfills_title_trgm",
            "backfills",
            ["title"],
            postgresql_using="gin",
            postgresql_ops={"title": "gin_trgm_ops"},
        )
    else:
        op.create_index("ix_backfills_title_trgm", "backfills", ["title"])


def _fill_backfill_assets(bind: sa.engine.Connection) -> None:
    """The assets of the asset backfills launched before this migration."""
    backfills = sa.table(
        "backfills", sa.column("id", sa.BigInteger), sa.column("asset_target", sa.JSON)
    )
    assets = sa.table(
        "backfill_assets", sa.column("asset", sa.String), sa.column("backfill_id", sa.BigInteger)
    )
    rows = bind.execute(
        sa.select(backfills.c.id, backfills.c.asset_target).where(
            backfills.c.asset_target.is_not(None)
        )
    ).all()
    batch: list[dict[str, object]] = []
    for pk, target in rows:
        names = {str(part["name"]) for part in (target or {}).get("parts", ())}
        batch.extend({"asset": name, "backfill_id": pk} for name in sorted(names))
        if len(batch) >= 1000:
            bind.execute(sa.insert(assets), batch)
            batch = []
    if batch:
        bind.execute(sa.insert(assets), batch)


def downgrade() -> None:
    op.drop_index("ix_backfills_title_trgm", table_name="backfills")
    with op.batch_alter_table("backfills") as batch:
        batch.drop_index("ix_backfills_created_at")
        batch.drop_index("ix_backfills_creator_id")
    with op.batch_alter_table("backfill_tags") as batch:
        batch.drop_index("ix_backfill_tags_key_value_backfill_id")
        batch.create_index("ix_backfill_tags_key_value", ["key", "value"])
    op.drop_table("backfill_assets")
