"""The directory's company tables: the company names it shows with several domains, and what
each company page stands for; made by SQL from the table, or from the companies an import
counted as it parsed the rows."""

from __future__ import annotations

from collections.abc import Sequence

from dialscore.enrichment.directory.rows import Row
from dialscore.identity.companies import dominant_domains

# Every import finds again the company names the directory shows with several domains (borne
# by several companies), each with the domain most of its people work at (of equals, the
# first in order): what identity.companies.dominant_domains makes of the counts.
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
# And the company name key and domain most of the records with each company page show.
COMPANY_PAGES_SQL = (
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
COMPANY_TABLES_SQL = COMPANY_DOMAINS_SQL + COMPANY_PAGES_SQL

# How many rows show each (company name key, company domain, company page): the rows' last
# three columns, counted as they are parsed.
CompanyCounts = dict[tuple[str | None, ...], int]
# An import counts at most this many of them (about 350 bytes each; a million rows of the
# directory bench show 174 000); past it, the company tables are counted in the database.
MAX_COMPANY_COUNTS = 1 << 20


def tally_companies(rows: Sequence[Row], counts: CompanyCounts) -> None:
    """Counts the companies the rows show into ``counts``."""
    for row in rows:
        key = row[-3:]
        counts[key] = counts.get(key, 0) + 1


def _page_rank(entry: tuple[str | None, str | None, int]) -> tuple[object, ...]:
    """A page's (name key, domain, people) in COMPANY_PAGES_SQL's order: most people first,
    then by name key and domain, the unknown last."""
    name, domain, people = entry
    return -people, name is None, name or "", domain is None, domain or ""


# The rows of directory_company_domains and of directory_company_pages.
CompanyTableRows = tuple[list[tuple[str, str, int]], list[tuple[str, str | None, str | None, int]]]


def company_table_rows(counts: CompanyCounts) -> CompanyTableRows:
    """The rows COMPANY_TABLES_SQL writes into ``directory_company_domains`` and
    ``directory_company_pages`` for a directory whose rows show these counts."""
    pairs: dict[tuple[str, str], int] = {}
    by_page: dict[str, list[tuple[str | None, str | None, int]]] = {}
    for (name, domain, page), people in counts.items():
        if not people:
            continue
        if name is not None and domain is not None:
            pairs[name, domain] = pairs.get((name, domain), 0) + people
        if page is not None and (name is not None or domain is not None):
            by_page.setdefault(page, []).append((name, domain, people))
    domains = [
        (name, domain, pairs[name, domain])
        for name, domain in dominant_domains((n, d, c) for (n, d), c in pairs.items()).items()
    ]
    pages = [(page, *min(entries, key=_page_rank)) for page, entries in by_page.items()]
    return domains, pages
