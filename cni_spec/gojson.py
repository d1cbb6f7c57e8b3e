"""JSON in and out without importing the json package (it pulls in re and enum, which
costs a CNI plugin more start-up time than all its own work).

Parsing uses the C scanner behind json (_json.make_scanner); output is written
exactly as Go's encoding/json does (json.MarshalIndent with four spaces, <, >
and & escaped), which is how the reference plugins print.

Every way a document can fail to parse is a ValueError: input that ends early reads
as Go's "unexpected end of JSON input" (what the reference plugins answer), other
syntax errors carry json's own message and position, and nesting deeper than
MAX_DEPTH is "exceeded max depth".
"""

from __future__ import annotations

import _json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"

# Go's decoder allows 10,000 levels, but the C scanner recurses on the C stack within the
# interpreter's recursion limit (about 1,000 frames, counting the caller's): a fixed limit
# well under it gives every plugin, and every place that parses stdin, the same answer.
MAX_DEPTH = 512


def _reject_constant(name: str) -> object:
    raise ValueError(f"invalid JSON value {name}")


class _ScanContext:
    """The attributes _json.make_scanner reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject_constant)
    memo: dict[str, str] = {}


_scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]


def _skip_space(text: str, idx: int) -> int:
    n = len(text)
    while idx < n and text[idx] in _WHITESPACE:
        idx += 1
    return idx


def _position(text: str, idx: int) -> str:
    line = text.count("\n", 0, idx) + 1
    column = idx - text.rfind("\n", 0, idx)
    return f"line {line} column {column} (char {idx})"


def loads(data: bytes | str) -> Any:
    """Parse one JSON document; ValueError (as json.loads raises) when it is not one."""
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"invalid UTF-8 in JSON: {e}") from e
    else:
        text = data
    # Only a text with more than MAX_DEPTH brackets can nest too deep; the C scanner reads
    # it first and the character walk below runs only when the result (or an error) says
    # so: it costs a pass of Python per character, the scanner a fraction of that.
    deep = text.count("[") + text.count("{") > MAX_DEPTH
    try:
        obj, end = _scan_value(text, _skip_space(text, 0))
        end = _skip_space(text, end)
        if end != len(text):
            raise ValueError(f"Extra data: {_position(text, end)}")
    except ValueError:
        if deep:
            _check_depth(text)  # too deep is reported before any later syntax error
        raise
    if deep and _nesting(obj) > MAX_DEPTH:
        _check_depth(text)  # raises, naming where the text went too deep
    return obj


def _nesting(obj: Any) -> int:
    """How deep arrays and objects nest in a parsed value (what the text's brackets do)."""
    deepest, stack = 0, [(obj, 1)] if isinstance(obj, (dict, list)) else []
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return deepest


def _check_depth(text: str) -> None:
    depth, idx, n, in_string = 0, 0, len(text), False
    while idx < n:
        c = text[idx]
        if in_string:
            if c == "\\":
                idx += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError(f"exceeded max depth of {MAX_DEPTH}: {_position(text, idx)}")
        elif c in "]}":
            depth -= 1
        idx += 1


def _scan_value(text: str, idx: int) -> tuple[Any, int]:
    try:
        return _scan(text, idx)
    except StopIteration as e:
        raise _syntax_error("Expecting value", text, int(e.value)) from None
    except RecursionError:  # a caller already deep in recursion
        raise ValueError(f"exceeded max depth: {_position(text, idx)}") from None
    except SystemError:
        # CPython 3.11's scanner builds every other syntax error from
        # json.decoder.JSONDecodeError, which it looks up in sys.modules without importing
        # it: in a plugin that never imported json the lookup finds nothing and the scanner
        # returns NULL with no exception set. Load it (on this failure path only) and rescan.
        if "json.decoder" in sys.modules:
            raise
        import json.decoder  # noqa: F401

        return _scan_value(text, idx)
    except ValueError as e:  # json.decoder.JSONDecodeError, or a constant refused
        pos = getattr(e, "pos", None)
        if pos is None:
            raise
        raise _syntax_error(str(getattr(e, "msg", e)), text, int(pos)) from None


def _syntax_error(msg: str, text: str, pos: int) -> ValueError:
    if pos >= len(text) or msg.startswith("Unterminated string"):
        return ValueError("unexpected end of JSON input")
    return ValueError(f"{msg}: {_position(text, pos)}")


_GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
               ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def _string(text: str) -> str:
    out: str = _json.encode_basestring(text)
    for raw, escaped in _GO_ESCAPES:
        if raw in out:
            out = out.replace(raw, escaped)
    return out


def _encode(obj: Any, indent: str | None, level: int, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(_string(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        out.append(float.__repr__(obj))
    elif isinstance(obj, dict):
        _container([(k, v) for k, v in obj.items()], "{", "}", indent, level, out)
    elif isinstance(obj, (list, tuple)):
        _container([(None, v) for v in obj], "[", "]", indent, level, out)
    else:
        raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


def _container(items: list[tuple[Any, Any]], opening: str, closing: str, indent: str | None,
               level: int, out: list[str]) -> None:
    if not items:
        out.append(opening + closing)
        return
    out.append(opening)
    inner = "\n" + indent * (level + 1) if indent is not None else ""
    for i, (key, value) in enumerate(items):
        if i:
            out.append(",")
        out.append(inner)
        if key is not None:
            out.append(_string(str(key)))
            out.append(": " if indent is not None else ":")
        _encode(value, indent, level + 1, out)
    if indent is not None:
        out.append("\n" + indent * level)
    out.append(closing)


def dumps_indent(obj: Any) -> str:
    """json.MarshalIndent(obj, "", "    "): four-space indent, no trailing newline."""
    out: list[str] = []
    _encode(obj, "    ", 0, out)
    return "".join(out)


def _unencodable(obj: object) -> object:
    raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


# The C encoder behind json.dumps (no indent support in 3.11, so compact only); the state
# files are written with it on every transaction. No circular check, no NaN.
_compact_encoder = _json.make_encoder(
    None, _unencodable, _json.encode_basestring, None, ":", ",", False, False, False)


def dumps_compact_slow(obj: Any) -> str:
    """The Python encoder alone (what dumps_compact falls back to; the tests compare them)."""
    out: list[str] = []
    _encode(obj, None, 0, out)
    return "".join(out)


def _with_sorted_keys(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _with_sorted_keys(obj[k]) for k in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [_with_sorted_keys(v) for v in obj]
    return obj


def dumps_compact(obj: Any, sort_keys: bool = False) -> str:
    """json.Marshal(obj): no spaces at all.

    ``sort_keys`` writes every object's keys in order, as Go marshals a map (what a
    runtime sends: libcni builds each plugin's stdin from a map); without it the keys keep
    their order, as Go marshals a struct (what a plugin prints).

    Written by the C encoder; the characters Go escapes (<, >, &, U+2028, U+2029) occur
    only inside strings, so escaping them in the whole text equals escaping each string.
    Dict keys are expected to be str (as Go's JSON object keys); what the C encoder
    refuses (NaN, keys of other types, unknown objects) goes through the Python encoder.
    """
    if sort_keys:
        obj = _with_sorted_keys(obj)
    try:
        out: str = "".join(_compact_encoder(obj, 0))
    except (TypeError, ValueError):
        return dumps_compact_slow(obj)
    for raw, escaped in _GO_ESCAPES:
        if raw in out:
            out = out.replace(raw, escaped)
    return out


def go_quote(text: str) -> str:
    """Go's %q for a string (close enough for printable text)."""
    out: str = _json.encode_basestring(text)
    return out


def go_quote_list(items: list[str] | tuple[str, ...]) -> str:
    """Go's %q for a []string: ["a" "b"]."""
    return "[" + " ".join(go_quote(i) for i in items) + "]"
