"""enrichment lookup keys: company key and initial for directory people and contacts,
email and LinkedIn keys for contacts, company domains of directory names

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 10:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from dialscore.migrations.frozen_identity import Person, person_from_fields, record_keys

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 5000
# The company names the directory shows with several domains, each with the domain most of
# its people work at (of equals, the first in order), as the directory import counted them
# when this migration was written (a copy: the import's own SQL may change).
COMPANY_DOMAINS_SQL = (
    "DELETE FROM directory_company_domains",
    "INSERT INTO directory_company_domains (name_key, domain, people) "
    "SELECT name_key, domain, people FROM (SELECT company_name_key AS name_key, "
    "company_domain AS domain, count(*) AS people, row_number() OVER (PARTITION BY "
    "company_name_key ORDER BY count(*) DESC, company_domain) AS rank, count(*) OVER "
    "(PARTITION BY company_name_key) AS domains FROM directory_people "
    "WHERE company_name_key IS NOT NULL AND company_domain IS NOT NULL "
    "GROUP BY company_name_key, company_domain) AS counted WHERE rank = 1 AND domains > 1",
)


def upgrade() -> None:
    with op.batch_alter_table("directory_people", schema=None) as batch_op:
        batch_op.add_column(sa.Column("company_key", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("first_initial", sa.String(length=4), nullable=True))
        batch_op.add_column(sa.Column("company_name_key", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("company_domain", sa.String(length=253), nullable=True))
        batch_op.drop_index("ix_directory_people_last_name")
        batch_op.create_index(
            "ix_directory_people_company",
            ["company_key", "first_initial", "last_name_key"],
            unique=False,
        )
    op.create_table(
        "directory_company_domains",
        sa.Column("name_key", sa.String(length=200), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("people", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name_key", "domain"),
    )
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email_key", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("linkedin_key", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("company_key", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("first_initial", sa.String(length=4), nullable=True))
        batch_op.drop_index("ix_contacts_client_last_name")
        batch_op.create_index("ix_contacts_client_email", ["client_id", "email_key"])
        batch_op.create_index("ix_contacts_client_linkedin", ["client_id", "linkedin_key"])
        batch_op.create_index(
            "ix_contacts_client_company",
            ["client_id", "company_key", "first_initial", "last_name_key"],
        )
    _backfill()


def _backfill() -> None:
    """Existing rows get their keys, and the directory's names their domains."""
    bind = op.get_bind()
    people = sa.table(
        "directory_people",
        *(sa.column(name) for name in (
            "id", "first_name", "last_name", "email", "linkedin_url", "company", "website",
            "company_linkedin_url", "company_key", "first_initial", "company_name_key",
            "company_domain",
        )),
    )  # fmt: skip
    update = (
        people.update()
        .where(people.c.id == sa.bindparam("row_id"))
        .values(
            company_key=sa.bindparam("company_key"),
            first_initial=sa.bindparam("first_initial"),
            company_name_key=sa.bindparam("company_name_key"),
            company_domain=sa.bindparam("company_domain"),
        )
    )
    batch: list[dict[str, object]] = []
    columns = ("id", "first_name", "last_name", "email", "linkedin_url", "company", "website")
    selected = [people.c[name] for name in (*columns, "company_linkedin_url")]
    for row in bind.execute(sa.select(*selected)).all():
        keys = record_keys(Person(*row[1:]))
        batch.append(
            {
                "row_id": row[0],
                "company_key": keys.company,
                "first_initial": keys.initial,
                "company_name_key": keys.company_name,
                "company_domain": keys.company_domain,
            }
        )
        if len(batch) >= CHUNK:
            bind.execute(update, batch)
            batch = []
    if batch:
        bind.execute(update, batch)
    for statement in COMPANY_DOMAINS_SQL:
        bind.execute(sa.text(statement))

    contacts = sa.table(
        "contacts",
        sa.column("id"),
        sa.column("fields", sa.JSON),
        *(sa.column(name) for name in ("email_key", "linkedin_key", "company_key")),
        sa.column("first_initial"),
    )
    update = (
        contacts.update()
        .where(contacts.c.id == sa.bindparam("row_id"))
        .values(
            email_key=sa.bindparam("email_key"),
            linkedin_key=sa.bindparam("linkedin_key"),
            company_key=sa.bindparam("company_key"),
            first_initial=sa.bindparam("first_initial"),
        )
    )
    batch = []
    for contact_id, fields in bind.execute(sa.select(contacts.c.id, contacts.c.fields)).all():
        keys = record_keys(person_from_fields(fields if isinstance(fields, dict) else {}))
        batch.append(
            {
                "row_id": contact_id,
                "email_key": keys.email,
                "linkedin_key": keys.linkedin,
                "company_key": keys.company,
                "first_initial": keys.initial,
            }
        )
        if len(batch) >= CHUNK:
            bind.execute(update, batch)
            batch = []
    if batch:
        bind.execute(update, batch)


def downgrade() -> None:
    with op.batch_alter_table("contacts", schema=None) as batch_op:
        batch_op.drop_index("ix_contacts_client_company")
        batch_op.drop_index("ix_contacts_client_linkedin")
        batch_op.drop_index("ix_contacts_client_email")
        batch_op.create_index("ix_contacts_client_last_name", ["client_id", "last_name_key"])
        batch_op.drop_column("first_initial")
        batch_op.drop_column("company_key")
        batch_op.drop_column("linkedin_key")
        batch_op.drop_column("email_key")
    op.drop_table("directory_company_domains")
    with op.batch_alter_table("directory_people", schema=None) as batch_op:
        batch_op.drop_index("ix_directory_people_company")
        batch_op.create_index("ix_directory_people_last_name", ["last_name_key"])
        batch_op.drop_column("company_domain")
        batch_op.drop_column("company_name_key")
        batch_op.drop_column("first_initial")
        batch_op.drop_column("company_key")
