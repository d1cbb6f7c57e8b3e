"""Domain errors, one class per gRPC status code the CSI spec names.

The domain raises these; ``interceptors`` is the single place that turns them
into wire status codes.  Nothing here imports grpc.
"""

from __future__ import annotations


class CsiError(Exception):
    """Base of every expected failure; ``code`` is the gRPC status code name."""

    code = "INTERNAL"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(CsiError):
    code = "INVALID_ARGUMENT"


class NotFound(CsiError):
    code = "NOT_FOUND"


class AlreadyExists(CsiError):
    code = "ALREADY_EXISTS"


class PermissionDenied(CsiError):
    code = "PERMISSION_DENIED"


class ResourceExhausted(CsiError):
    code = "RESOURCE_EXHAUSTED"


class FailedPrecondition(CsiError):
    code = "FAILED_PRECONDITION"


class Aborted(CsiError):
    code = "ABORTED"


class OutOfRange(CsiError):
    code = "OUT_OF_RANGE"


class Unimplemented(CsiError):
    code = "UNIMPLEMENTED"


class Internal(CsiError):
    code = "INTERNAL"


class Unavailable(CsiError):
    code = "UNAVAILABLE"


class Unauthenticated(CsiError):
    code = "UNAUTHENTICATED"
