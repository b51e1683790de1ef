"""Clients (company accounts), their plans, users, API keys and the credits ledger."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, true
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, Credits, UTCDateTime


class Plan(Base):
    __tablename__ = "plans"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    api_access: Mapped[bool] = mapped_column(Boolean)
    lightning_scoring: Mapped[bool] = mapped_column(Boolean)
    core_scoring: Mapped[bool] = mapped_column(Boolean)
    enrichment_with_lightning: Mapped[bool] = mapped_column(Boolean)
    enrichment_with_core: Mapped[bool] = mapped_column(Boolean)
    per_second: Mapped[int] = mapped_column(Integer)
    per_minute: Mapped[int] = mapped_column(Integer)
    per_day: Mapped[int] = mapped_column(Integer)
    webhook_rate: Mapped[int] = mapped_column(Integer)
    cost_per_phone: Mapped[Decimal] = mapped_column(Credits)
    cost_per_contact: Mapped[Decimal] = mapped_column(Credits)
    # Whether an enrichment job gives back, when it finishes, the charge of each contact it
    # found no new number for (P202).
    refund_unfound: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class Client(Base):
    __tablename__ = "clients"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    plan_name: Mapped[str] = mapped_column(ForeignKey("plans.name"))
    # Per-client values that replace the plan's, keyed by Plan column name.
    overrides: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    credits: Mapped[Decimal] = mapped_column(Credits, default=Decimal(0))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The enrichment sources in the order the client wants them tried (P205); None: the
    # operator's order.
    enrichment_order: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"), index=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Signs the user's version 1 contact callbacks; sealed like webhook secrets, made when
    # first needed.
    callback_secret_ciphertext: Mapped[str | None] = mapped_column(Text, nullable=True)
    # An argon2 hash; None until a password is set (the web app only).
    password_hash: Mapped[str | None] = mapped_column(Text, nullable=True)
    # A deactivated user can neither sign in nor use their keys.
    deactivated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # Updated at most once a minute, so that authenticating rarely writes.
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # The credits this key's submissions may spend in a UTC calendar month; None: no limit
    # (P201). What it spent is counted beside it, for the month ``spent_month`` names
    # ("2026-11"): a charge in another month starts the count again.
    monthly_credit_limit: Mapped[Decimal | None] = mapped_column(Credits, nullable=True)
    spent_month: Mapped[str | None] = mapped_column(String(7), nullable=True)
    spent_this_month: Mapped[Decimal] = mapped_column(
        Credits, default=Decimal(0), server_default="0"
    )


class CreditLedgerEntry(Base):
    __tablename__ = "credit_ledger"
    __table_args__ = (Index("ix_credit_ledger_client", "client_id", "id"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"))
    user_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    job_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # The API key whose request made the change (P201); None for the web app and the operator.
    key_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    delta: Mapped[Decimal] = mapped_column(Credits)
    balance_after: Mapped[Decimal] = mapped_column(Credits)
    reason: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
