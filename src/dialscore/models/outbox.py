"""The transactional outbox: work written with the state that caused it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime

# Messages the relay may publish: set-aside ones are left out of its index, so that however
# many pile up, a poll does not walk past them.
NOT_SET_ASIDE = text("failed_at IS NULL")


class OutboxMessage(Base):
    """A message for an actor. The relay publishes it once ``available_at`` has passed and
    pushes ``available_at`` out by a lease, which the task renews while it runs; the actor
    deletes the row when its work is done, so a message lost in the broker or whose worker
    died is published again when the lease runs out.

    ``attempts`` counts the runs of its task that did not finish (the one running included):
    a task that raised, or a worker that died before finishing. Once it reaches the
    configured maximum, the message is set aside: ``failed_at`` is set, ``last_error`` says
    why, and the relay no longer publishes it until an operator requeues it."""

    __tablename__ = "outbox"
    __table_args__ = (
        Index(
            "ix_outbox_due",
            "available_at",
            sqlite_where=NOT_SET_ASIDE,
            postgresql_where=NOT_SET_ASIDE,
        ),
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    actor: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    available_at: Mapped[datetime] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
