"""The web app's sign-in state: sessions, failed sign-ins, and links to set a password."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime


class WebSession(Base):
    """A signed-in browser. The cookie carries a random token; only its hash is stored."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    # Every form that changes something sends it back (a synchronizer token).
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The absolute end of the session, whatever its activity.
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class SignInFailure(Base):
    """One failed sign-in, counted against an email and against a client address (``key``:
    ``email:…`` or ``address:…``)."""

    __tablename__ = "sign_in_failures"
    __table_args__ = (Index("ix_sign_in_failures_key", "key", "failed_at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    key: Mapped[str] = mapped_column(String(400))
    failed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PasswordLink(Base):
    """A one-time link an administrator passes on so that a user can set a password."""

    __tablename__ = "password_links"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
