"""What the store raises: `StoreError` and its kinds, each with a message that says what to do."""

from __future__ import annotations

LEASE_LOST_STATE = "GF409"  # SQLSTATE of the replicas' fence refusing a write (store.leases)


class StoreError(RuntimeError):
    """Anything the store refuses or cannot do."""


class StoreUnavailable(StoreError):
    """The database cannot be reached or created (server down, folder not writable...)."""


class BadDatabase(StoreError):
    """The database exists but cannot be used as is; the message says what to do."""


class CorruptDatabase(BadDatabase):
    """The file is not a database, or its integrity check fails."""


class ForeignDatabase(BadDatabase):
    """The database holds tables but no Griffon schema (another application's)."""


class SchemaTooNew(BadDatabase):
    """The database was migrated by a newer Griffon than this one."""


class BadRecord(StoreError, ValueError):
    """A record that is too large, malformed, or not allowed (e.g. a drawing without consent)."""


class MoveRejected(StoreError):
    """A move for an unknown or finished game, or out of sequence (another writer?)."""


class UnknownKey(StoreError, LookupError):
    """No bot key has this name or id."""
