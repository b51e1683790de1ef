"""Jobs and the contacts they group."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, Credits, UTCDateTime


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_user_created", "user_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    job_type: Mapped[str] = mapped_column(String(32))
    scoring_type: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16))
    total_count: Mapped[int] = mapped_column(Integer)
    accepted_count: Mapped[int] = mapped_column(Integer)
    processed_count: Mapped[int] = mapped_column(Integer, default=0)
    enrichment_rejected_count: Mapped[int] = mapped_column(Integer, default=0)
    # The credits given back when the job finished, for the contacts enrichment found no new
    # number for (P202); its ledger row says the same.
    credits_refunded: Mapped[Decimal] = mapped_column(
        Credits, default=Decimal(0), server_default="0"
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finalized_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # A worker holds the job until this time; a second worker leaves it alone until then.
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # A job started from an uploaded file: the file's header, so that results can be
    # downloaded with the columns as they were.
    upload_columns: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    # ... and the choice made for each of its columns (a contact field, a phone choice, extra
    # or ignore), so that a row of it can be read again: its person, its numbers.
    upload_mapping: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


class Contact(Base):
    __tablename__ = "contacts"
    __table_args__ = (
        Index("ix_contacts_job_ordinal", "job_id", "ordinal", unique=True),
        Index("ix_contacts_client_email", "client_id", "email_key"),
        Index("ix_contacts_client_linkedin", "client_id", "linkedin_key"),
        Index(
            "ix_contacts_client_company",
            "client_id",
            "company_key",
            "first_initial",
            "last_name_key",
        ),
        # A user's scored contacts in time order: the score report (accuracy/).
        Index("ix_contacts_user_scored", "user_id", "scored_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    client_id: Mapped[str] = mapped_column(String(36), index=True)
    user_id: Mapped[str] = mapped_column(String(36))
    ordinal: Mapped[int] = mapped_column(Integer)
    # pending → scored, or pending → rejected (during enrichment)
    state: Mapped[str] = mapped_column(String(16))
    first_name: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    last_name: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    email: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    company_account: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    linkedin_url: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    # Keys for finding the same person among the client's contacts
    # (identity.keys.record_keys).
    last_name_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    email_key: Mapped[str | None] = mapped_column(String(320), nullable=True)
    linkedin_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    company_key: Mapped[str | None] = mapped_column(String(8), nullable=True)
    first_initial: Mapped[str | None] = mapped_column(String(4), nullable=True)
    # Every known input field as submitted (strings), keyed by its API name.
    fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    unmapped_fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    phones: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    lead_status: Mapped[str] = mapped_column(String(32))
    best_phone: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The types (mobile, direct, hq, other or null) the enrichment sources gave the numbers
    # they found, in the order of the "Service Enriched Phone N" entries of ``phones``.
    enriched_types: Mapped[list[str | None] | None] = mapped_column(JSON, nullable=True)
    rejected_reason: Mapped[str | None] = mapped_column(String(200), nullable=True)
    enrichment_contact_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The source named for what enrichment found (history, directory, pdl, …; P205), and
    # whether every new number came through the client's own key for a provider (P204).
    enrichment_source: Mapped[str | None] = mapped_column(String(32), nullable=True)
    enrichment_own_key: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Version 1: where the scored contact is posted (D27).
    callback_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    scored_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The contact's row of the uploaded file, cell by cell (jobs with upload_columns only).
    source_row: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


class RejectedRow(Base):
    """A row of an uploaded file that its job left out, as it was in the file, with why: it
    stays with the job, on its page and in its results."""

    __tablename__ = "job_rejected_rows"
    __table_args__ = (Index("ix_job_rejected_rows_job_row", "job_id", "row_index", unique=True),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    # Its place among the file's rows of data (0 for the first row after the header).
    row_index: Mapped[int] = mapped_column(Integer)
    cells: Mapped[list[str]] = mapped_column(JSON)
    reason: Mapped[str] = mapped_column(Text)


class ContactIntake(Base):
    """Up to 250 contacts of a job as they were accepted, not yet written as contact rows
    (P218): a submission writes one such row instead of a row for each contact, and the
    worker (or a read of the job's contacts, if it comes first) writes their rows."""

    __tablename__ = "contact_intake"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    # The ordinal of the first of ``contacts``; the others follow it in order.
    first_ordinal: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # Each contact as ``jobs.intake.intake_record`` keeps it.
    contacts: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
