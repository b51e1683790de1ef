"""directory_company_domains keeps only the company names seen with several domains, each
with its most common domain

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 14:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from dialscore.enrichment.directory import COMPANY_DOMAINS_SQL

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ALL_COUNTS = (
    "DELETE FROM directory_company_domains",
    "INSERT INTO directory_company_domains (name_key, domain, people) "
    "SELECT company_name_key, company_domain, count(*) FROM directory_people "
    "WHERE company_name_key IS NOT NULL AND company_domain IS NOT NULL "
    "GROUP BY company_name_key, company_domain",
)


def upgrade() -> None:
    bind = op.get_bind()
    for statement in COMPANY_DOMAINS_SQL:
        bind.execute(sa.text(statement))


def downgrade() -> None:
    bind = op.get_bind()
    for statement in _ALL_COUNTS:
        bind.execute(sa.text(statement))
