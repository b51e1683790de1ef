"""Contact lists uploaded in the web app, kept between the steps that make one a job."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class Upload(Base):
    """One uploaded file, its owner's choices so far, and once its job started, what the
    page that says so shows."""

    __tablename__ = "uploads"
    __table_args__ = (
        CheckConstraint("state IN ('waiting', 'starting', 'started')", name="ck_uploads_state"),
        Index("ix_uploads_updated_at", "updated_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"))
    filename: Mapped[str] = mapped_column(String(200))
    # "waiting" through the steps; "starting" once a press of "Start job" claimed it, so that
    # no other press (on any instance) starts it too; "started" with its job's transaction.
    state: Mapped[str] = mapped_column(String(16))
    # The file as it was sent. Dropped once its job exists, which keeps each contact's row.
    # Deferred, as is the rejected rows' CSV: most reads of an upload need neither.
    file: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    # The chosen mapping; once started, the job's id and the counts the started page shows.
    meta: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The rows starting left out, as a CSV in the file's own delimiter and byte order mark.
    rejected_csv: Mapped[str | None] = mapped_column(Text, nullable=True, deferred=True)
    # What the action page worked out, by a key of everything it depends on: a large file
    # takes seconds to price, and the page is shown again at every change of choice.
    summaries: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
