"""Webhook subscriptions, event emission and signed delivery with retries.

Receivers can check a delivery with :func:`verify`::

    from dialscore.webhooks import verify

    if not verify(secret, raw_body, request.headers["X-Service-Signature"]):
        return 401
"""

from __future__ import annotations

import hmac

from dialscore.kit.security import sign_body

__all__ = ["sign", "verify"]


def sign(secret: str, body: bytes) -> str:
    """The X-Service-Signature value of ``body``: Base64 of its HMAC-SHA256 under ``secret``."""
    return sign_body(secret, body)


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """True when ``header`` is the signature of exactly these body bytes under ``secret``."""
    if not header:
        return False
    return hmac.compare_digest(sign_body(secret, body).encode(), header.strip().encode())
