"""Evidence the scoring engine uses: number blocks, do-not-call lists, company lines, call
outcomes reported by clients, and the numbers each client's contacts carry."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, Date, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class NumberBlock(Base):
    """A NANP block (NPA-NXX, 6 digits, or NPA-NXX-X, 7 digits) and its carrier category."""

    __tablename__ = "number_blocks"
    __table_args__ = ({"sqlite_with_rowid": False},)

    prefix: Mapped[str] = mapped_column(String(7), primary_key=True)
    category: Mapped[str] = mapped_column(String(16))  # wireless | landline | voip
    carrier: Mapped[str | None] = mapped_column(String(200), nullable=True)


class DncNumber(Base):
    """A number on a named do-not-call list, as its E.164 digits (no '+')."""

    __tablename__ = "dnc_numbers"
    __table_args__ = ({"sqlite_with_rowid": False},)

    number: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    list_name: Mapped[str] = mapped_column(String(64), primary_key=True)


class DncImport(Base):
    """One import of a do-not-call file into a list: what kind of file, the file's date (and
    where that date came from), when it was applied and what it changed (P180-P187)."""

    __tablename__ = "dnc_imports"
    __table_args__ = (Index("ix_dnc_imports_list_applied", "list_name", "applied_at"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    list_name: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # full | changes
    file_name: Mapped[str] = mapped_column(String(500))
    file_date: Mapped[date] = mapped_column(Date)
    file_date_source: Mapped[str] = mapped_column(String(16))  # file | option | archive | modified
    applied_at: Mapped[datetime] = mapped_column(UTCDateTime)
    numbers: Mapped[int] = mapped_column(BigInteger)
    added: Mapped[int] = mapped_column(BigInteger)
    removed: Mapped[int] = mapped_column(BigInteger)


class CompanyLine(Base):
    """A company's main line; with ``ivr_path`` when its dial tree is known."""

    __tablename__ = "company_lines"

    number: Mapped[str] = mapped_column(String(20), primary_key=True)  # E.164
    company: Mapped[str | None] = mapped_column(String(200), nullable=True)
    ivr_path: Mapped[str | None] = mapped_column(String(200), nullable=True)


class CallOutcome(Base):
    """One call a client reported; evidence for that client's numbers only."""

    __tablename__ = "call_outcomes"
    __table_args__ = (
        Index("ix_call_outcomes_client_number", "client_id", "number", "called_at"),
        # A client's calls since a time: the score report (accuracy/).
        Index("ix_call_outcomes_client_called", "client_id", "called_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(36))
    user_id: Mapped[str] = mapped_column(String(36))
    number: Mapped[str] = mapped_column(String(20))  # E.164
    contact_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    outcome: Mapped[str] = mapped_column(String(32))
    ivr_path: Mapped[str | None] = mapped_column(String(200), nullable=True)
    called_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class CallHourTally(Base):
    """A client's reported calls counted by the called line's type, its time zone and the
    local day and hour of the call: what the best hours are learnt from across all the
    client's calls (P194), without reading each call again."""

    __tablename__ = "call_hour_tallies"

    client_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # The phone entry's type of the contact the number was given for; "" when none is known.
    line_type: Mapped[str] = mapped_column(String(32), primary_key=True)
    time_zone: Mapped[str] = mapped_column(String(64), primary_key=True)
    # The local date of the calls: a tally older than the learning period is not read.
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    hour: Mapped[int] = mapped_column(Integer, primary_key=True)
    # 0 is Monday (the day's, kept so the counts can be summed by weekday in SQL).
    weekday: Mapped[int] = mapped_column(Integer)
    calls: Mapped[int] = mapped_column(Integer)
    connects: Mapped[int] = mapped_column(Integer)


class ContactNumber(Base):
    """A number a client's contact carries, with who and which company it was given for: the
    evidence for switchboards (one number, several people of one company)."""

    __tablename__ = "contact_numbers"
    __table_args__ = (Index("ix_contact_numbers_client_number", "client_id", "number"),)

    contact_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    number: Mapped[str] = mapped_column(String(20), primary_key=True)  # E.164
    client_id: Mapped[str] = mapped_column(String(36))
    company_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    person_key: Mapped[str] = mapped_column(String(400))
