"""Secrets as the store keeps them: only their SHA-256 (a game's or a room's token, a bot key's
secret), compared in constant time; a bot key's new secret."""

from __future__ import annotations

import hashlib
import secrets


def hash_token(token: str) -> str:
    """The SHA-256 of a game token or a bot key's secret: the only form stored (a stolen database
    gives neither)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_matches(token: str, token_hash: str) -> bool:
    """Whether `token` hashes to `token_hash` (constant-time comparison)."""
    return secrets.compare_digest(hash_token(token), token_hash)


KEY_PREFIX = "gk_"  # a bot key's secret starts with it: recognisable in a config file or a leak scan


def new_key_secret() -> str:
    """A bot key's secret: the prefix and 32 URL-safe random characters (192 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(24)
