"""Field paths and sets of them, as structured-merge-diff names the parts of an object
that a manager owns, and their ``FieldsV1`` form in ``metadata.managedFields``.

A path is a tuple of elements, each one of:

- ``("f", name)``: a field of a struct or a key of a map (``f:spec``);
- ``("k", '{"name":"c"}')``: the item of a list-map with these key values (``k:{...}``,
  the keys sorted by name, compact JSON);
- ``("v", '"a"')``: the item of a set with this value (``v:"a"``);
- ``("i", 0)``: an item by index (lists of a type without keys, in deduced objects).

In ``FieldsV1`` a set is a JSON object: each element is a key (``"f:spec"``), its value
the set below it; ``{}`` marks a path that is itself in the set, and ``".": {}`` marks a
path in the set that also has children in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

PathElement = tuple[str, Any]
Path = tuple[PathElement, ...]
FieldSet = frozenset[Path]
_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


def field(name: str) -> PathElement:
    return ("f", name)


def key(values: dict[str, Any]) -> PathElement:
    return ("k", json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def value(item: Any) -> PathElement:
    return ("v", json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def index(i: int) -> PathElement:
    return ("i", i)


def serialized(element: PathElement) -> str:
    kind, content = element
    return f"{kind}:{content}"


def parse_element(text: str) -> PathElement | None:
    """The element a FieldsV1 key names; None for a kind this version does not know."""
    kind, sep, content = text.partition(":")
    if not sep or len(kind) != 1:
        raise ValueError(f"missing colon: {text}")
    if kind == "f":
        return ("f", content)
    if kind in ("k", "v"):
        # re-encode so equal keys compare equal whatever spacing the writer used
        decoded = json.loads(content)
        return key(decoded) if kind == "k" else value(decoded)
    if kind == "i":
        return ("i", int(content))
    return None


def _sort_key(element: PathElement) -> tuple[int, Any]:
    kind, content = element
    return (_ORDER[kind], content if kind != "i" else int(content))


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 object of a set of paths."""
    tree: dict[PathElement, Any] = {}
    members: set[Path] = set()
    for path in paths:
        if not path:
            continue
        members.add(path)
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return _emit(tree, (), members)


def _emit(tree: dict[PathElement, Any], prefix: Path, members: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for element in sorted(tree, key=_sort_key):
        path = (*prefix, element)
        children = _emit(tree[element], path, members)
        if children and path in members:
            children = {".": {}, **children}
        out[serialized(element)] = children
    return out


def from_fields_v1(fields: Any) -> FieldSet:
    """The set of paths of a FieldsV1 object (ValueError when it is not one)."""
    if not isinstance(fields, dict):
        raise ValueError("FieldsV1 must be an object")
    found: set[Path] = set()
    _read(fields, (), found)
    return frozenset(found)


def _read(node: dict[str, Any], prefix: Path, found: set[Path]) -> None:
    for text, child in node.items():
        if text == ".":
            found.add(prefix)
            continue
        element = parse_element(text)
        if element is None:
            continue
        path = (*prefix, element)
        if not isinstance(child, dict):
            raise ValueError(f"FieldsV1 entry {text} is not an object")
        if not child:
            found.add(path)
        else:
            _read(child, path, found)


def path_string(path: Path) -> str:
    """A path as structured-merge-diff prints it: ``.spec.containers[name="c"].image``."""
    return "".join(_element_string(e) for e in path)


def _element_string(element: PathElement) -> str:
    kind, content = element
    if kind == "f":
        return f".{content}"
    if kind == "k":
        pairs = json.loads(content)
        return "[" + ",".join(f"{k}={_scalar_string(v)}" for k, v in pairs.items()) + "]"
    if kind == "v":
        return f"[={_scalar_string(json.loads(content))}]"
    return f"[{content}]"


def _scalar_string(item: Any) -> str:
    if isinstance(item, str):
        return json.dumps(item, ensure_ascii=False)
    if isinstance(item, bool):
        return "true" if item else "false"
    if item is None:
        return "null"
    return str(item)


def has_prefix(path: Path, prefix: Path) -> bool:
    return len(path) > len(prefix) and path[:len(prefix)] == prefix
