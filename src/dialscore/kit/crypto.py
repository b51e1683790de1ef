"""Encryption of stored secrets with a key derived from the server secret."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken


class SecretBox:
    def __init__(self, server_secret: str, *, purpose: str) -> None:
        digest = hashlib.sha256(f"dialscore:{purpose}:{server_secret}".encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(digest))

    def seal(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, ciphertext: str) -> str:
        try:
            return self._fernet.decrypt(ciphertext.encode()).decode()
        except InvalidToken:
            raise ValueError("cannot decrypt: the server secret has changed") from None
