"""People imported by the operator for enrichment (the directory source), the clients' own
provider keys, and what each source was asked and found."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class DirectoryPerson(Base):
    """One person of the imported directory, with the keys candidates are looked up by."""

    __tablename__ = "directory_people"
    __table_args__ = (
        # The record's id is unique by an index of its own, not the primary key: an import
        # into an empty directory drops it, appends the rows in file order and builds it at
        # its end (SQLite cannot drop the index of a primary key, and kept up row by row, at
        # random places, it cost a first import of a million rows a seventh of its time).
        Index("ux_directory_people_id", "id", unique=True),
        Index("ix_directory_people_email", "email_key"),
        Index("ix_directory_people_linkedin", "linkedin_key"),
        # Name+company candidates: the same company key and initial, and mostly the same
        # last name.
        Index("ix_directory_people_company", "company_key", "first_initial", "last_name_key"),
    )

    id: Mapped[str] = mapped_column(String(64))
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
    # Lookup keys (identity.keys.record_keys): normalised email, canonical LinkedIn
    # slug, folded last name, company key, first initial.
    email_key: Mapped[str | None] = mapped_column(String(320), nullable=True)
    linkedin_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    last_name_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    company_key: Mapped[str | None] = mapped_column(String(8), nullable=True)
    first_initial: Mapped[str | None] = mapped_column(String(4), nullable=True)
    # The company's name key and domain, from which directory_company_domains is made.
    company_name_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    company_domain: Mapped[str | None] = mapped_column(String(253), nullable=True)
    # The company's LinkedIn page slug, from which directory_company_pages is made.
    company_page: Mapped[str | None] = mapped_column(String(220), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        # The mapper's identity, as the table has no primary key.
        return {"primary_key": [cls.__table__.c.id]}


class DirectoryCompanyDomain(Base):
    """The company names the directory shows with several domains (borne by several
    companies), each with the domain most of its people work at and how many they are.
    Rebuilt by every import."""

    __tablename__ = "directory_company_domains"

    name_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    domain: Mapped[str] = mapped_column(String(253), primary_key=True)
    people: Mapped[int] = mapped_column(Integer)


class DirectoryCompanyPage(Base):
    """For each company LinkedIn page of the directory, the company name key and domain
    most of the records with that page show, and how many they are: what names the company
    of a contact known by its page alone. Rebuilt by every import."""

    __tablename__ = "directory_company_pages"

    page: Mapped[str] = mapped_column(String(220), primary_key=True)
    name_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    domain: Mapped[str | None] = mapped_column(String(253), nullable=True)
    people: Mapped[int] = mapped_column(Integer)


class ClientProviderKey(Base):
    """A client's own API key for an HTTP enrichment provider (P204), sealed with a key
    derived from the server's secret; only its last four characters are ever shown."""

    __tablename__ = "client_provider_keys"

    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32), primary_key=True)
    key_ciphertext: Mapped[str] = mapped_column(Text)
    last_four: Mapped[str] = mapped_column(String(4))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The user who set it; None when the operator did.
    updated_by: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # When the provider last refused the key (a job went on without it), and why; cleared
    # when the key is set again.
    refused_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    refused_reason: Mapped[str | None] = mapped_column(String(200), nullable=True)


class EnrichmentTally(Base):
    """What one source was asked and found for one job (P205), counted in the transaction
    that saves each batch: kept when the job is erased, it holds no personal data."""

    __tablename__ = "enrichment_tallies"
    __table_args__ = (Index("ix_enrichment_tallies_client_created", "client_id", "job_created_at"),)

    job_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    source: Mapped[str] = mapped_column(String(32), primary_key=True)
    # Whether the source was a provider called with the client's own key.
    own_key: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    client_id: Mapped[str] = mapped_column(String(36))
    # The job's creation: the report's period is one of jobs.
    job_created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Contacts the source was asked about.
    tried: Mapped[int] = mapped_column(Integer)
    # Contacts it found at least one new number for.
    hits: Mapped[int] = mapped_column(Integer)
    # Contacts it is named for (the first source with a new number): what their charge paid.
    named: Mapped[int] = mapped_column(Integer)
