"""directory company pages: each directory person's company page, the company name and
domain each page stands for, and directory_company_domains kept for shared names only;
contacts keep the types of the numbers enrichment found

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 14:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from dialscore.migrations.frozen_identity import Person, record_keys

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 5000
# The directory import's company tables as it made them when this migration was written (a
# copy: the import's own SQL may change): the company names shown with several domains, each
# with the domain most of its people work at, and the company name key and domain most of the
# records with each company page show.
COMPANY_TABLES_SQL = (
    "DELETE FROM directory_company_domains",
    "INSERT INTO directory_company_domains (name_key, domain, people) "
    "SELECT name_key, domain, people FROM (SELECT company_name_key AS name_key, "
    "company_domain AS domain, count(*) AS people, row_number() OVER (PARTITION BY "
    "company_name_key ORDER BY count(*) DESC, company_domain) AS rank, count(*) OVER "
    "(PARTITION BY company_name_key) AS domains FROM directory_people "
    "WHERE company_name_key IS NOT NULL AND company_domain IS NOT NULL "
    "GROUP BY company_name_key, company_domain) AS counted WHERE rank = 1 AND domains > 1",
    "DELETE FROM directory_company_pages",
    "INSERT INTO directory_company_pages (page, name_key, domain, people) "
    "SELECT page, name_key, domain, people FROM (SELECT company_page AS page, "
    "company_name_key AS name_key, company_domain AS domain, count(*) AS people, "
    "row_number() OVER (PARTITION BY company_page ORDER BY count(*) DESC, "
    "company_name_key NULLS LAST, company_domain NULLS LAST) AS rank FROM directory_people "
    "WHERE company_page IS NOT NULL AND "
    "(company_name_key IS NOT NULL OR company_domain IS NOT NULL) "
    "GROUP BY company_page, company_name_key, company_domain) AS counted WHERE rank = 1",
)
_ALL_COUNTS = (
    "DELETE FROM directory_company_domains",
    "INSERT INTO directory_company_domains (name_key, domain, people) "
    "SELECT company_name_key, company_domain, count(*) FROM directory_people "
    "WHERE company_name_key IS NOT NULL AND company_domain IS NOT NULL "
    "GROUP BY company_name_key, company_domain",
)


def upgrade() -> None:
    with op.batch_alter_table("directory_people", schema=None) as batch_op:
        batch_op.add_column(sa.Column("company_page", sa.String(length=220), nullable=True))
    op.create_table(
        "directory_company_pages",
        sa.Column("page", sa.String(length=220), nullable=False),
        sa.Column("name_key", sa.String(length=200), nullable=True),
        sa.Column("domain", sa.String(length=253), nullable=True),
        sa.Column("people", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("page"),
    )
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("enriched_types", sa.JSON(), nullable=True))
    _backfill()


def _backfill() -> None:
    """Existing rows get their company page; the company tables are made again."""
    bind = op.get_bind()
    people = sa.table(
        "directory_people",
        *(sa.column(name) for name in ("id", "website", "company_linkedin_url", "company_page")),
    )
    update = (
        people.update()
        .where(people.c.id == sa.bindparam("row_id"))
        .values(company_page=sa.bindparam("page"))
    )
    batch: list[dict[str, object]] = []
    with_page = sa.or_(people.c.company_linkedin_url.is_not(None), people.c.website.is_not(None))
    selected = sa.select(people.c.id, people.c.website, people.c.company_linkedin_url)
    for row_id, website, page_url in bind.execute(selected.where(with_page)).all():
        page = record_keys(Person(website=website, company_linkedin_url=page_url)).company_page
        if page is not None:
            batch.append({"row_id": row_id, "page": page})
        if len(batch) >= CHUNK:
            bind.execute(update, batch)
            batch = []
    if batch:
        bind.execute(update, batch)
    for statement in COMPANY_TABLES_SQL:
        bind.execute(sa.text(statement))


def downgrade() -> None:
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_column("enriched_types")
    op.drop_table("directory_company_pages")
    with op.batch_alter_table("directory_people", schema=None) as batch_op:
        batch_op.drop_column("company_page")
    bind = op.get_bind()
    for statement in _ALL_COUNTS:
        bind.execute(sa.text(statement))
