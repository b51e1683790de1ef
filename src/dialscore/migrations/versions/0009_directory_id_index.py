"""directory record ids unique by an index instead of the primary key, so that an import
into an empty directory can drop it and build it at its end

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOOKUP_INDEXES = (
    ("ix_directory_people_company", ("company_key", "first_initial", "last_name_key")),
    ("ix_directory_people_email", ("email_key",)),
    ("ix_directory_people_linkedin", ("linkedin_key",)),
)


def _columns() -> list[sa.Column[object]]:
    """directory_people's columns as revision 0008 left them, in their order."""
    text = sa.String
    return [
        sa.Column("id", text(length=64), nullable=False),
        sa.Column("first_name", text(length=200), nullable=True),
        sa.Column("last_name", text(length=200), nullable=True),
        sa.Column("email", text(length=320), nullable=True),
        sa.Column("linkedin_url", text(length=500), nullable=True),
        sa.Column("company", text(length=300), nullable=True),
        sa.Column("website", text(length=300), nullable=True),
        sa.Column("company_linkedin_url", text(length=500), nullable=True),
        sa.Column("title", text(length=300), nullable=True),
        sa.Column("phones", sa.JSON(), nullable=False),
        sa.Column("email_key", text(length=320), nullable=True),
        sa.Column("linkedin_key", text(length=200), nullable=True),
        sa.Column("last_name_key", text(length=200), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("company_key", text(length=8), nullable=True),
        sa.Column("first_initial", text(length=4), nullable=True),
        sa.Column("company_name_key", text(length=200), nullable=True),
        sa.Column("company_domain", text(length=253), nullable=True),
        sa.Column("company_page", text(length=220), nullable=True),
    ]


def _rebuild_sqlite(*, primary_key: bool) -> None:
    """SQLite cannot drop or add a primary key: the table is made again, rows in order."""
    columns = _columns()
    names = ", ".join(column.name for column in columns)
    extra = [sa.PrimaryKeyConstraint("id")] if primary_key else []
    op.create_table("directory_people_rebuilt", *columns, *extra)
    op.execute(
        f"INSERT INTO directory_people_rebuilt ({names}) SELECT {names} FROM directory_people "
        "ORDER BY rowid"
    )
    op.drop_table("directory_people")
    op.rename_table("directory_people_rebuilt", "directory_people")
    for name, indexed in LOOKUP_INDEXES:
        op.create_index(name, "directory_people", list(indexed))


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite(primary_key=False)
    else:
        op.drop_constraint("directory_people_pkey", "directory_people", type_="primary")
    op.create_index("ux_directory_people_id", "directory_people", ["id"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_directory_people_id", "directory_people")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite(primary_key=True)
    else:
        op.create_primary_key("directory_people_pkey", "directory_people", ["id"])
