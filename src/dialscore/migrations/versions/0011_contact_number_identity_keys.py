"""contact-number keys from identity: contact_numbers.company_key and person_key recomputed
from each contact's fields with the identity functions enrichment uses (company name keys,
company domains and pages; name words)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 12:00:00.000000
"""

import hashlib
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from dialscore.migrations.frozen_identity import contact_number_keys

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Contacts rekeyed per statement: each batch reads these contacts' fields and updates their
# numbers, so memory stays flat whatever the table's size.
BATCH = 1000

Keys = Callable[[Mapping[str, Any]], tuple[str | None, str]]


def upgrade() -> None:
    _rekey(contact_number_keys)


def downgrade() -> None:
    _rekey(_keys_before_0011)


def _rekey(keys_of: Keys) -> None:
    """Sets the keys of every contact's numbers from the contact's fields, in batches of
    contacts in id order. Numbers of a contact no longer stored keep theirs."""
    bind = op.get_bind()
    contacts = sa.table("contacts", sa.column("id"), sa.column("fields", sa.JSON))
    numbers = sa.table(
        "contact_numbers",
        sa.column("contact_id"),
        sa.column("company_key"),
        sa.column("person_key"),
    )
    update = (
        numbers.update()
        .where(numbers.c.contact_id == sa.bindparam("row_id"))
        .values(company_key=sa.bindparam("company"), person_key=sa.bindparam("person"))
    )
    indexed = sa.select(numbers.c.contact_id).distinct().order_by(numbers.c.contact_id)
    after: str | None = None
    while True:
        page = indexed if after is None else indexed.where(numbers.c.contact_id > after)
        ids = list(bind.execute(page.limit(BATCH)).scalars())
        if not ids:
            return
        rows = bind.execute(
            sa.select(contacts.c.id, contacts.c.fields).where(contacts.c.id.in_(ids))
        )
        batch = []
        for contact_id, fields in rows:
            company, person = keys_of(fields if isinstance(fields, dict) else {})
            batch.append({"row_id": contact_id, "company": company, "person": person})
        if batch:
            bind.execute(update, batch)
        after = ids[-1]


# -- the keys before this migration, frozen -----------------------------------------------------

_LEGAL_SUFFIXES = {
    "inc", "incorporated", "llc", "ltd", "limited", "corp", "corporation", "co", "company",
    "plc", "gmbh", "ag", "sa", "sas", "sarl", "bv", "nv", "srl", "spa", "pty", "oy", "ab", "as",
    "kk", "kg", "lp", "llp", "group", "holdings",
}  # fmt: skip
_FREE_MAIL = {
    "gmail.com", "googlemail.com", "yahoo.com", "hotmail.com", "outlook.com", "live.com",
    "aol.com", "icloud.com", "me.com", "proton.me", "protonmail.com", "gmx.de", "gmx.net",
    "web.de", "mail.com", "yandex.ru", "qq.com", "163.com",
}  # fmt: skip
_NON_WORD = re.compile(r"[^a-z0-9]+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _domain(value: str) -> str | None:
    text = value.strip().lower()
    if "@" in text:
        text = text.rsplit("@", 1)[1]
    text = re.sub(r"^[a-z]+://", "", text).split("/", 1)[0].split(":", 1)[0]
    text = text.removeprefix("www.")
    return text if "." in text else None


def _bounded(key: str, limit: int) -> str:
    if len(key) <= limit:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def _keys_before_0011(fields: Mapping[str, Any]) -> tuple[str | None, str]:
    """The company and person keys scoring wrote before this migration."""
    company: str | None = None
    account = fields.get("companyAccount")
    if isinstance(account, str) and account.strip():
        words = [w for w in _NON_WORD.split(_fold(account).replace(".", "")) if w]
        while len(words) > 1 and words[-1] in _LEGAL_SUFFIXES:
            words.pop()
        if words:
            company = _bounded("name:" + " ".join(words), 200)
    if company is None:
        for name in ("website", "email"):
            value = fields.get(name)
            if isinstance(value, str) and value.strip():
                domain = _domain(value)
                if domain and domain not in _FREE_MAIL:
                    company = _bounded("domain:" + domain, 200)
                    break
    names = []
    for name in ("firstName", "lastName"):
        value = fields.get(name)
        if isinstance(value, str):
            folded = " ".join(w for w in _NON_WORD.split(_fold(value)) if w)
            if folded:
                names.append(folded)
    return company, _bounded(" ".join(names), 400)
