"""JSON text exactly as Go's encoding/json writes it (the reference plugins' output)."""

from __future__ import annotations

import json
from typing import Any

# Go escapes these inside strings even though JSON does not require it.
_GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
               ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _go_escape(text: str) -> str:
    for raw, escaped in _GO_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def dumps_indent(obj: Any) -> str:
    """json.MarshalIndent(obj, "", "    "): four-space indent, no trailing newline."""
    return _go_escape(json.dumps(obj, indent=4, ensure_ascii=False))


def dumps_compact(obj: Any) -> str:
    """json.Marshal(obj): no spaces at all."""
    return _go_escape(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))


def go_quote(text: str) -> str:
    """Go's %q for a string (close enough for printable text)."""
    return json.dumps(text, ensure_ascii=False)


def go_quote_list(items: list[str] | tuple[str, ...]) -> str:
    """Go's %q for a []string: ["a" "b"]."""
    return "[" + " ".join(go_quote(i) for i in items) + "]"
