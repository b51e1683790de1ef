"""Writing the directory to PostgreSQL: each batch COPYed into a temporary table and upserted
from there in one statement; the company tables counted in the database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

from dialscore.enrichment.directory.columns import COLUMNS, TABLE, VALUE_COLUMNS
from dialscore.enrichment.directory.companies import COMPANY_TABLES_SQL
from dialscore.enrichment.directory.rows import Row


class PostgresWriter:
    """Upserts batches of rows with distinct ids, counting new, changed and unchanged ones;
    the records it adds or changes take ``now`` as their ``updated_at``."""

    def __init__(self, pg: psycopg.Connection[Any], now: datetime) -> None:
        self.pg = pg
        self.now = now
        self.imported = self.updated = self.unchanged = 0
        columns = ", ".join(f"{c} {'json' if c == 'phones' else 'text'}" for c in COLUMNS)
        pg.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS directory_import ({columns}) "
            "ON COMMIT DELETE ROWS"
        )
        updates = ", ".join(f"{c} = excluded.{c}" for c in (*VALUE_COLUMNS, "updated_at"))
        # json has no equality: compare the text, which is what was written.
        mine = ", ".join(
            f"{TABLE}.{c}" + ("::text" if c == "phones" else "") for c in VALUE_COLUMNS
        )
        theirs = ", ".join(
            f"excluded.{c}" + ("::text" if c == "phones" else "") for c in VALUE_COLUMNS
        )
        self.upsert = (
            f"WITH written AS (INSERT INTO {TABLE} ({', '.join(COLUMNS)}, updated_at) "
            f"SELECT {', '.join(COLUMNS)}, %s FROM directory_import ORDER BY id "
            f"ON CONFLICT (id) DO UPDATE SET {updates} "
            f"WHERE ({mine}) IS DISTINCT FROM ({theirs}) RETURNING (xmax = 0) AS added) "
            "SELECT count(*) FILTER (WHERE added), count(*) FILTER (WHERE NOT added) "
            "FROM written"
        )

    def write(self, rows: list[Row]) -> None:
        with self.pg.transaction(), self.pg.cursor() as cursor:
            copy_sql = f"COPY directory_import ({', '.join(COLUMNS)}) FROM STDIN"
            with cursor.copy(copy_sql) as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(self.upsert, (self.now,))
            found = cursor.fetchone()
            assert found is not None
            added, updated = int(found[0]), int(found[1])
        self.imported += added
        self.updated += updated
        self.unchanged += len(rows) - added - updated


def write_company_tables(pg: psycopg.Connection[Any]) -> None:
    """Makes the company tables by counting the directory."""
    with pg.transaction():
        for statement in COMPANY_TABLES_SQL:
            pg.execute(statement)
