"""Go durations (``time.ParseDuration``), as the simulator's pod annotations take them."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds of a Go duration (``5s``, ``1m30s``, ``500ms``); None when it is not one."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0 if text == "0" else None
    pos, total = 0, 0.0
    for found in _PART.finditer(text):
        if found.start() != pos:
            return None
        total += float(found[1]) * _UNITS[found[2]]
        pos = found.end()
    return total if pos == len(text) else None
