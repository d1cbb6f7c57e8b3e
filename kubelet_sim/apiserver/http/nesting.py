"""How deep a request body may nest. Go's JSON decoder refuses past 10,000 levels
("exceeded max depth"); the server's own walkers (merge patches, validation, copies) are
recursive Python, so the bound here is lower: deep enough for any real object, custom
resource schemas included, and far from the interpreter's recursion limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

MAX_DEPTH = 100
EXCEEDED = "exceeded max depth"


class TooDeep(ValueError):
    """A body nested deeper than ``MAX_DEPTH`` (a decode error: 400)."""

    def __init__(self) -> None:
        super().__init__(EXCEEDED)


def depth(value: Any) -> int:
    """The nesting depth of a decoded JSON value (a scalar is 0), without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        pending.extend((child, level + 1) for child in children)
    return deepest


def checked(value: Any) -> Any:
    """``value``, or ``TooDeep`` when it nests past the bound."""
    if depth(value) > MAX_DEPTH:
        raise TooDeep()
    return value


def loads_json(raw: bytes | str, object_pairs_hook: Callable[..., Any] | None = None) -> Any:
    """``json.loads`` with the depth bound (a body too deep for the decoder itself is
    refused the same way)."""
    try:
        return checked(json.loads(raw, object_pairs_hook=object_pairs_hook))
    except RecursionError:
        raise TooDeep() from None


# libyaml's parser where PyYAML was built with it: pure Python takes over a second of the
# event loop on 100 KiB of brackets, libyaml milliseconds (and it bounds nesting itself)
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def loads_yaml(text: bytes | str) -> Any:
    """YAML read as ``yaml.safe_load`` reads it, with the depth bound."""
    try:
        return checked(yaml.load(text, Loader=_YAML_LOADER))
    except RecursionError:
        raise TooDeep() from None
    except yaml.YAMLError as e:
        if "maximum nesting depth" in str(e):  # libyaml's own bound (1,000 levels)
            raise TooDeep() from None
        raise
