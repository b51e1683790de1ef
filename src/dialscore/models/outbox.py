"""The transactional outbox: work written with the state that caused it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class OutboxMessage(Base):
    """A message for an actor. The relay publishes it once ``available_at`` has passed and
    pushes ``available_at`` out by a lease; the actor deletes the row when its work is done,
    so a message whose worker died is published again when the lease runs out."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_available", "available_at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    actor: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    available_at: Mapped[datetime] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
