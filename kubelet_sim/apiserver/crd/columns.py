"""``additionalPrinterColumns``: the simple JSONPath of a column (``.spec.replicas``,
``.status.conditions[0].type``, ``.metadata.labels['app.kubernetes.io/name']``) and the
cell it gives for the column's type, as apiextensions' table convertor makes it: integer,
number, boolean and string values, and for ``date`` the time since the stamp (kubectl
prints the cell as it is)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

_STEP = re.compile(r"\.((?:\\\.|[^.\[\\])+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def steps(path: str) -> list[str | int]:
    """The keys and indexes of a simple JSONPath (``{`` ``}`` around it allowed)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    out: list[str | int] = []
    at = 0
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {text[at:]!r}")
        name, index, quoted, double = found.groups()
        if index is not None:
            out.append(int(index))
        else:
            out.append((name or quoted or double or "").replace("\\.", "."))
        at = found.end()
    return out


def evaluate(doc: Any, path: str) -> Any:
    """The value at ``path`` in ``doc``; None when a step is missing."""
    node = doc
    for step in steps(path):
        if isinstance(step, int):
            node = node[step] if isinstance(node, list) and step < len(node) else None
        else:
            node = node.get(step) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def human_duration(seconds: int) -> str:
    """apimachinery's HumanDuration of ``seconds`` (5s, 3m10s, 5h20m, 2d4h, 3y20d, ...)."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def cell(value: Any, column_type: str, now: datetime | None = None) -> Any:
    """The Table cell of ``value`` in a column of ``column_type`` (None: no value)."""
    if value is None:
        return None
    if column_type == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return int(value)
    if column_type == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        if not isinstance(value, str):
            return None
        try:
            then = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "<invalid>"
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
        moment = now or datetime.now(UTC)
        return human_duration(int((moment - then).total_seconds()))
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))
