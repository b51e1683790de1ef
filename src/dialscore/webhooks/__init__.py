"""Webhook subscriptions, event emission and signed delivery with retries.

Every delivery carries two signatures. ``X-Service-Signature`` is the spec's; receivers can
check it with :func:`verify`::

    from dialscore.webhooks import verify

    if not verify(secret, raw_body, request.headers["X-Service-Signature"]):
        return 401

``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` are Standard Webhooks'
(P120), checked by the ``standardwebhooks`` and ``svix`` libraries unchanged::

    from standardwebhooks import Webhook

    Webhook(secret).verify(raw_body, request.headers)  # a secret of another form: secret.encode()
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import secrets

from dialscore.kit.security import sign_body

__all__ = ["SECRET_PREFIX", "new_secret", "sign", "signing_key", "standard_signature", "verify"]

SECRET_PREFIX = "whsec_"
# Random bytes of a new secret: more than the 24 Standard Webhooks asks for, as many as the
# secrets made before it had.
_SECRET_BYTES = 32


def sign(secret: str, body: bytes) -> str:
    """The X-Service-Signature value of ``body``: Base64 of its HMAC-SHA256 under ``secret``."""
    return sign_body(secret, body)


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """True when ``header`` is the signature of exactly these body bytes under ``secret``."""
    if not header:
        return False
    return hmac.compare_digest(sign_body(secret, body).encode(), header.strip().encode())


def new_secret() -> str:
    """A new signing secret: ``whsec_`` and the Base64 of 32 random bytes, the form the
    Standard Webhooks libraries take as it is (P120)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


@functools.lru_cache(maxsize=4096)
def signing_key(secret: str) -> bytes:
    """The HMAC key of ``webhook-signature`` under ``secret`` (P120): the bytes of the Base64
    after ``whsec_`` when the rest of the secret is that (padded, standard alphabet), else the
    secret's own UTF-8 bytes, whole: the secrets of subscriptions made before P120
    (``whsec_`` and 43 URL-safe characters, never padded Base64) and the version 1 callback
    secrets (``cbsec_…``)."""
    if secret.startswith(SECRET_PREFIX):
        try:
            key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
        except binascii.Error:
            key = b""
        if key:
            return key
    return secret.encode()


def standard_signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """One ``webhook-signature`` entry: ``v1,`` and the Base64 HMAC-SHA256 under ``key`` of
    ``{message_id}.{timestamp}.{body}``, the body as the exact bytes sent."""
    mac = hmac.new(key, f"{message_id}.{timestamp}.".encode(), hashlib.sha256)
    mac.update(body)
    return "v1," + base64.b64encode(mac.digest()).decode()
