"""Validation of the names that end up in paths: container ids, interface names, networks.

Same rules and messages as the reference (containernetworking/cni pkg/utils);
they are also what keeps a name from traversing out of a state directory.
"""

from __future__ import annotations

from cni_spec.errors import (
    ERR_INVALID_ENVIRONMENT_VARIABLES,
    ERR_INVALID_NETWORK_CONFIG,
    ERR_UNKNOWN_CONTAINER,
    CNIError,
)

MAX_IFNAME_LENGTH = 15
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ID_REST = _ALNUM | frozenset("_.-")


def is_valid_id(text: str) -> bool:
    """^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$, the reference's rule for container ids and networks
    (checked by hand: importing re costs a plugin more start-up time than its work)."""
    return bool(text) and text[0] in _ALNUM and all(c in _ID_REST for c in text)


def _require_id(value: str, missing: tuple[int, str], invalid: tuple[int, str]) -> None:
    """CNIError ``missing`` (code, message) when empty, ``invalid`` when not a valid id."""
    if value == "":
        raise CNIError(*missing)
    if not is_valid_id(value):
        raise CNIError(*invalid, value)


def validate_container_id(container_id: str) -> None:
    _require_id(container_id, (ERR_UNKNOWN_CONTAINER, "missing containerID"),
                (ERR_INVALID_ENVIRONMENT_VARIABLES, "invalid characters in containerID"))


def validate_network_name(name: str) -> None:
    _require_id(name, (ERR_INVALID_NETWORK_CONFIG, "missing network name:"),
                (ERR_INVALID_NETWORK_CONFIG, "invalid characters found in network name"))


def validate_interface_name(ifname: str) -> None:
    if ifname == "":
        raise CNIError(ERR_INVALID_ENVIRONMENT_VARIABLES, "interface name is empty")
    if len(ifname.encode()) > MAX_IFNAME_LENGTH:
        raise CNIError(ERR_INVALID_ENVIRONMENT_VARIABLES, "interface name is too long",
                       f"interface name should be less than {MAX_IFNAME_LENGTH + 1} characters")
    if ifname in (".", ".."):
        raise CNIError(ERR_INVALID_ENVIRONMENT_VARIABLES, "interface name is . or ..")
    if any(c in "/:" or c.isspace() for c in ifname):
        raise CNIError(ERR_INVALID_ENVIRONMENT_VARIABLES,
                       "interface name contains / or : or whitespace characters")
