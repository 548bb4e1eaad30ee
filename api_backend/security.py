"""Secrets: password hashing (scrypt, memory-hard), API keys, login tokens, private link keys."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = [
    "API_KEY_PREFIX",
    "hash_password",
    "hash_token",
    "new_api_key",
    "new_login_token",
    "new_private_link_key",
    "new_public_id",
    "verify_password",
]

API_KEY_PREFIX = "sl_"
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str) -> str:
    """Hash a password with scrypt and a random salt; the result names its parameters."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, maxmem=64 * 1024 * 1024, **_SCRYPT)
    b64 = base64.b64encode
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """Check ``password`` against a ``hash_password`` result in constant time."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    expected = base64.b64decode(digest)
    actual = hashlib.scrypt(
        password.encode(),
        salt=base64.b64decode(salt),
        n=int(n),
        r=int(r),
        p=int(p),
        dklen=len(expected),
        maxmem=64 * 1024 * 1024,
    )
    return hmac.compare_digest(actual, expected)


def hash_token(token: str) -> str:
    """SHA-256 hex of a bearer secret: what the database keeps instead of the secret."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_api_key() -> str:
    """A fresh API key: the ``sl_`` prefix and 32 random bytes, URL-safe."""
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def new_login_token() -> str:
    """A fresh dashboard sign-in token (32 random bytes)."""
    return "slt_" + secrets.token_urlsafe(32)


def new_private_link_key() -> str:
    """A private link key: 24 random bytes (192 bits), URL-safe."""
    return secrets.token_urlsafe(24)


def new_public_id(nbytes: int = 6) -> str:
    """A random lowercase hex identifier that is never all digits.

    Site routes accept the integer ``siteId`` or the string ``id`` in the same place and tell them apart by
    whether the value is all digits, so a string id must contain a letter.
    """
    while True:
        candidate = secrets.token_hex(nbytes)
        if not candidate.isdigit():
            return candidate
