"""The one CNI error type and the spec's reserved error codes.

A plugin raises :class:`CNIError`; only the skel turns it into the error JSON
on stdout and exit status 1.
"""

from __future__ import annotations

ERR_INCOMPATIBLE_CNI_VERSION = 1
ERR_UNSUPPORTED_FIELD = 2
ERR_UNKNOWN_CONTAINER = 3
ERR_INVALID_ENVIRONMENT_VARIABLES = 4
ERR_IO_FAILURE = 5
ERR_DECODING_FAILURE = 6
ERR_INVALID_NETWORK_CONFIG = 7
ERR_INVALID_NETNS = 8
ERR_TRY_AGAIN_LATER = 11
ERR_PLUGIN_NOT_AVAILABLE = 50
ERR_LIMITED_CONNECTIVITY = 51
ERR_INTERNAL = 999


class CNIError(Exception):
    """A CNI error as it appears on the wire: code, msg and optional details."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.details = details

    def __str__(self) -> str:
        # Same text as the reference's Error(): "msg; details".
        return f"{self.msg}; {self.details}" if self.details else self.msg

    def summary(self) -> str:
        """One line for a log or trace: ``code N: msg; details``.

        A runtime uses code 0 for a failure that did not come from a plugin's error JSON
        (a plugin it could not find, a result it could not parse), as libcni does."""
        return f"code {self.code}: {self}"

    def __repr__(self) -> str:
        return f"CNIError({self.code}, {self.msg!r}, {self.details!r})"

    def to_json(self, cni_version: str) -> dict[str, object]:
        out: dict[str, object] = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            out["details"] = self.details
        return out


def internal(msg: str, details: str = "") -> CNIError:
    """An error without a more specific spec code (999), as the reference wraps plain errors."""
    return CNIError(ERR_INTERNAL, msg, details)
