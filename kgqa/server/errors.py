"""Errors as the API returns them: every :class:`~kgqa.errors.KGQAError` becomes one JSON body
with the one-line message ``kgqa`` prints (without its ``kgqa: error:`` prefix) and a status
that fits; anything else is a 500 that says it is a bug, never a traceback.

The body: ``{"error": {"type": "EntityNotFound", "message": "...", "exit_code": 5}}``, plus
``suggestions`` for an unknown entity and ``fields`` for a request that fails validation.
"""

from __future__ import annotations

from typing import Any

from kgqa import errors
from kgqa.errors import KGQAError


class RequestTimedOut(KGQAError):
    """A request ran past ``server.request_timeout`` (stopped at its next stage)."""


class QueueFull(KGQAError):
    """Every place in the queue is taken."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class NotFound(KGQAError):
    """What the request names does not exist (a saved run)."""


# Most specific first: the first class an error is an instance of gives its status.
STATUS: tuple[tuple[type[KGQAError], int], ...] = (
    (errors.EntityNotFound, 404),
    (NotFound, 404),
    (errors.AmbiguousEntity, 409),
    (errors.GraphUnavailable, 503),
    (errors.Neo4jServerError, 503),
    (errors.LLMUnavailable, 503),
    (errors.IndexMismatch, 503),
    (errors.ModelNotFound, 503),
    (QueueFull, 503),
    (RequestTimedOut, 504),
    (errors.BadQuestion, 422),
    (errors.PromptTooLong, 422),
    # A setting of the server (never of the request: requests are validated first).
    (errors.ConfigError, 500),
    (errors.PromptError, 500),
    (errors.KBFormatError, 500),
)
# A plain KGQAError is a question that cannot be answered as asked ("no topic entity").
DEFAULT_STATUS = 422


def status_of(error: KGQAError) -> int:
    for cls, status in STATUS:
        if isinstance(error, cls):
            return status
    return DEFAULT_STATUS


def error_body(error: KGQAError) -> dict[str, Any]:
    """The JSON body for ``error``: its class, its message (the CLI's line), its exit code."""
    body: dict[str, Any] = {
        "type": type(error).__name__,
        # Exactly what `kgqa` prints after "kgqa: error: ".
        "message": str(error),
        "exit_code": error.exit_code,
    }
    if isinstance(error, errors.EntityNotFound):
        body["suggestions"] = list(error.suggestions)
    return {"error": body}


def bug_body(error: BaseException) -> dict[str, Any]:
    """A 500's body for an exception kgqa did not raise on purpose: the class name only (the
    traceback goes to the server's log, never to a client)."""
    from kgqa import __version__

    return {
        "error": {
            "type": "InternalError",
            "message": (
                f"internal error (this is a bug in kgqa {__version__}): {type(error).__name__}; "
                "the server's log has the traceback"
            ),
            "exit_code": 70,
        }
    }
