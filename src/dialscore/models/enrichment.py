"""People imported by the operator for enrichment: the directory source."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class DirectoryPerson(Base):
    """One person of the imported directory, with the keys candidates are looked up by."""

    __tablename__ = "directory_people"
    __table_args__ = (
        Index("ix_directory_people_email", "email_key"),
        Index("ix_directory_people_linkedin", "linkedin_key"),
        Index("ix_directory_people_last_name", "last_name_key"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    first_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    last_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    linkedin_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    company: Mapped[str | None] = mapped_column(String(300), nullable=True)
    website: Mapped[str | None] = mapped_column(String(300), nullable=True)
    company_linkedin_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    title: Mapped[str | None] = mapped_column(String(300), nullable=True)
    # [{"number": E.164, "type": "mobile" | "direct" | "hq" | "other" | null}]
    phones: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # Lookup keys: normalised email, canonical LinkedIn slug, folded last name.
    email_key: Mapped[str | None] = mapped_column(String(320), nullable=True)
    linkedin_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    last_name_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
