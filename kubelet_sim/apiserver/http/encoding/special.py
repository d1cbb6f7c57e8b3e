"""The JSON forms of the types Kubernetes encodes its own way in protobuf.

- ``metav1.Time``: seconds + nanos ↔ RFC 3339 in UTC, whole seconds (``2006-01-02T15:04:05Z``);
- ``metav1.MicroTime``: the same with six fractional digits (``...05.000000Z``);
- ``metav1.Duration``: int64 nanoseconds ↔ Go's duration text (``1h2m3s``, ``1.5s``, ``300ms``);
- ``resource.Quantity``: ``{1 string}`` ↔ the string (a JSON number is read as its text);
- ``intstr.IntOrString``: ``{type, intVal, strVal}`` ↔ an integer or a string.

Each pair is (JSON value → protobuf parts, protobuf parts → JSON value); the converter in
:mod:`.protobuf` calls them on the message fields.
"""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))$")


def parse_time(text: str) -> tuple[int, int]:
    """RFC 3339 text → (seconds since the epoch, nanoseconds)."""
    m = _RFC3339.match(text)
    if m is None:
        raise ValueError(f"parsing time {text!r}: not RFC 3339")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        seconds -= offset if m.group(9) == "+" else -offset
    fraction = m.group(7) or ""
    nanos = int((fraction + "000000000")[:9])
    return seconds, nanos


def format_time(seconds: int) -> str:
    """metav1.Time's JSON: RFC 3339, UTC, whole seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def format_micro_time(seconds: int, nanos: int) -> str:
    """metav1.MicroTime's JSON: RFC 3339, UTC, six fractional digits."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos // 1000:06d}Z"


_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
          "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?([a-z\u00b5\u03bc]+)")


def parse_duration(text: str) -> int:
    """Go's time.ParseDuration: ``[-+]`` then number+unit pairs → nanoseconds."""
    rest, sign = text, 1
    if rest[:1] in ("-", "+"):
        sign, rest = (-1 if rest[0] == "-" else 1), rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"time: invalid duration {text!r}")
    total = 0
    while rest:
        m = _DURATION_PART.match(rest)
        if m is None or not (m.group(1) or m.group(2)) or m.group(3) not in _UNITS:
            raise ValueError(f"time: invalid duration {text!r}")
        unit = _UNITS[m.group(3)]
        total += int(m.group(1) or "0") * unit
        if m.group(2):
            total += int(m.group(2)) * unit // 10 ** len(m.group(2))
        rest = rest[m.end():]
    return sign * total


def _fraction(value: int, digits: int) -> str:
    """``value`` / 10**digits as Go prints it: the integer, then a trimmed fraction."""
    whole, frac = divmod(value, 10 ** digits)
    tail = f"{frac:0{digits}d}".rstrip("0") if frac else ""
    return f"{whole}.{tail}" if tail else str(whole)


def format_duration(nanos: int) -> str:
    """Go's time.Duration.String(): ``0s``, ``1h2m3s``, ``1.5s``, ``300ms``, ``2µs``."""
    if nanos == 0:
        return "0s"
    sign, u = ("-" if nanos < 0 else ""), abs(nanos)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_fraction(u, 3)}\u00b5s"
        return f"{sign}{_fraction(u, 6)}ms"
    hours, u = divmod(u, 3_600_000_000_000)
    minutes, u = divmod(u, 60_000_000_000)
    seconds = _fraction(u, 9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def quantity_text(value: Any) -> str:
    """A Quantity's string from its JSON (a string, or a number as Go reads it)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"quantities must be a string or a number, not {value!r}")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
