"""Records a client may need to show a regulator: each Reassigned Numbers Database query."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, Date, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class RndQuery(Base):
    """One question put to the FCC Reassigned Numbers Database for a client's contact: was
    the number reassigned since the consent date, and what came back (P195). Kept as the
    record the safe harbor of 47 CFR 64.1200(m) rests on, so it outlives the job and the
    contact it was asked for (no foreign keys: an erased job leaves its queries)."""

    __tablename__ = "rnd_queries"
    __table_args__ = (
        # A client's queries since a time (the record as it is read back).
        Index("ix_rnd_queries_client_asked", "client_id", "asked_at"),
        # A client's queries about one number, newest first.
        Index("ix_rnd_queries_client_number", "client_id", "number", "asked_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(36))
    job_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    contact_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    number: Mapped[str] = mapped_column(String(20))  # E.164
    consent_date: Mapped[date] = mapped_column(Date)
    asked_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # yes | no | no_data, or none when no answer was read (unavailable, given up, skipped).
    answer: Mapped[str] = mapped_column(String(16))
