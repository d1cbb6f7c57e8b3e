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

from kubelet_sim.api.human_duration import human_duration

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
