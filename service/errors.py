"""The service's typed domain errors: a refusal the client can act on, with a stable code.

Routes, the bot protocol and the games raise these; the HTTP layer renders them as
``{"error": code, "message": message}`` with their ``status`` (``Retry-After`` when set), the
WebSocket layers as ``error`` frames with the same code. Anything else that escapes is a bug:
HTTP 500 ``internal_error`` (logged, no detail to the client). A message never names a file, a
host or a database user: the store's errors reach the client as :data:`STORE_DOWN`, their details
go to the server log.
"""

from __future__ import annotations

STORE_DOWN = "the database is unavailable for a moment; retry shortly"


class ServiceError(Exception):
    """A request refused for a reason the client can fix or wait out."""

    status = 422
    code = "bad_request"

    def __init__(
        self, message: str, *, code: str | None = None, status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.status = status or self.status
        self.retry_after = retry_after


class UnknownCandidate(ServiceError):
    """Candidate words the model cannot guess."""

    code = "unknown_candidate"


class LimitExceeded(ServiceError):
    """A request above one of the configured sizes (points, strokes, batch, top_k...)."""

    code = "too_large"


class NotFound(ServiceError):
    """No such resource (or not readable with the key given)."""

    status, code = 404, "not_found"


class RateLimited(ServiceError):
    """A client over its budget (requests, points, CPU time, games): retry after a while."""

    status, code = 429, "rate_limited"


class Unavailable(ServiceError):
    """The server cannot take this now (full, shutting down, no deck)."""

    status, code = 503, "unavailable"
