"""API key tokens (HS256 JWT) and HMAC signatures."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime

import jwt


@dataclass(frozen=True)
class KeyClaims:
    user_id: str
    client_id: str
    key_id: str


class InvalidToken(Exception):
    pass


class ForeignSignature(InvalidToken):
    """A well-formed key signed with another secret key than this server's."""


def issue_api_key(
    secret: str,
    *,
    user_id: str,
    client_id: str,
    key_id: str,
    issued_at: datetime,
    expires_at: datetime | None = None,
) -> str:
    claims: dict[str, object] = {
        "sub": user_id,
        "cid": client_id,
        "jti": key_id,
        "iat": int(issued_at.timestamp()),
    }
    if expires_at is not None:
        claims["exp"] = int(expires_at.timestamp())
    return jwt.encode(claims, secret, algorithm="HS256")


def read_api_key(secret: str, token: str) -> KeyClaims:
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            options={"require": ["sub", "cid", "jti", "iat"]},
        )
    except jwt.InvalidSignatureError as exc:
        raise ForeignSignature(str(exc)) from exc
    except jwt.PyJWTError as exc:
        raise InvalidToken(str(exc)) from exc
    values = (claims.get("sub"), claims.get("cid"), claims.get("jti"))
    if not all(isinstance(v, str) and v for v in values):
        raise InvalidToken("claims sub, cid and jti must be strings")
    return KeyClaims(user_id=claims["sub"], client_id=claims["cid"], key_id=claims["jti"])


def same_secret(given: str, expected: str) -> bool:
    """Whether a token a client sent is the expected one, in constant time, whatever
    characters it holds (``hmac.compare_digest`` refuses non-ASCII strings)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def sign_body(secret: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()
