"""Objects walked with their schema, as structured-merge-diff walks typed values: the set
of fields an object sets, the fields two objects differ in, the merge of an applied
configuration into a live object, and the removal of fields.

The semantics come from the schema (:class:`.schema.Node`): struct fields and map keys
are granular unless the map or struct is atomic; a list is ``atomic`` (one value),
a ``set`` (items by value) or a ``map`` (items by their key fields). Untyped parts
(deduced): maps granular, lists atomic.
"""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api.errors import BadRequest
from kubelet_sim.apiserver.patch import fieldpath as fp
from kubelet_sim.apiserver.patch.fieldpath import Path, PathElement
from kubelet_sim.apiserver.patch.schema import LIST, MAP, STRUCT, UNTYPED, UNTYPED_NODE, Node

MISSING: Any = object()  # a field that is absent (JSON null is a value)

# Defaults of list-map key fields the OpenAPI schema declares (``+default="TCP"`` on the
# protocol of ports): an item that omits one is keyed by the default, as apply keys it.
KEY_DEFAULTS = {"protocol": "TCP"}


def _granular_list(node: Node, value: Any) -> bool:
    return node.shape == LIST and node.list_type != "atomic" and isinstance(value, list)


def _granular_map(node: Node, value: Any) -> bool:
    return (node.shape in (STRUCT, MAP, UNTYPED) and not node.atomic
            and isinstance(value, dict))


def _child(node: Node, name: str) -> tuple[Node, bool]:
    """The node under ``name`` and whether it is a declared struct field."""
    if node.shape == STRUCT:
        found = node.fields().get(name)
        return (found, True) if found is not None else (UNTYPED_NODE, False)
    return node.child(name) or UNTYPED_NODE, False


def item_element(node: Node, item: Any, position: int) -> PathElement:
    """The path element of one item of a granular list."""
    if node.list_type == "set":
        return fp.value(item)
    keys = node.list_keys
    if node.list_type == "map" and keys:
        if not isinstance(item, dict):
            raise BadRequest(f"associative list with keys has an element that is not a "
                             f"map: {item!r}")
        values: dict[str, Any] = {}
        for name in keys:
            if name in item:
                values[name] = item[name]
            elif name in KEY_DEFAULTS:
                values[name] = KEY_DEFAULTS[name]
            elif len(keys) == 1:
                raise BadRequest(f'associative list with keys has an element that omits key '
                                 f'field "{name}" (and doesn\'t have default value)')
        return fp.key(values)
    return fp.index(position)


def _items(node: Node, items: list[Any]) -> tuple[list[PathElement], dict[PathElement, Any],
                                                  set[PathElement]]:
    order: list[PathElement] = []
    found: dict[PathElement, Any] = {}
    duplicated: set[PathElement] = set()
    for i, item in enumerate(items):
        element = item_element(node, item, i)
        if element in found:
            duplicated.add(element)
            continue
        found[element] = item
        order.append(element)
    return order, found, duplicated


# -- the fields an object sets ---------------------------------------------------------

def field_set(obj: Any, node: Node) -> set[Path]:
    out: set[Path] = set()
    _collect(obj, node, (), out)
    return out


def _collect(value: Any, node: Node, path: Path, out: set[Path]) -> None:
    if _granular_list(node, value):
        elem = node.elem()
        order, found, duplicated = _items(node, value)
        for element in order:
            item_path = (*path, element)
            if element not in duplicated:
                _collect(found[element], elem, item_path, out)
            out.add(item_path)
        return
    if _granular_map(node, value):
        for name, child_value in value.items():
            child, declared = _child(node, name)
            child_path = (*path, fp.field(name))
            _collect(child_value, child, child_path, out)
            if child_value is None or child_value == {} or not declared:
                out.add(child_path)
        return
    if node.shape == LIST and isinstance(value, list) and node.list_type != "atomic":
        return
    if path:
        out.add(path)


# -- how two objects differ ------------------------------------------------------------

class Comparison:
    def __init__(self) -> None:
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()


def compare(old: Any, new: Any, node: Node) -> Comparison:
    result = Comparison()
    _compare(old, new, node, (), result)
    return result


def _compare(old: Any, new: Any, node: Node, path: Path, out: Comparison) -> None:
    both_empty = _empty(old) and _empty(new)
    if not both_empty and _walkable(node, old, new):
        if node.shape == LIST:
            _compare_lists(old, new, node, path, out)
        else:
            olds = old if isinstance(old, dict) else {}
            news = new if isinstance(new, dict) else {}
            for name in {**olds, **news}:
                child, _ = _child(node, name)
                _compare(olds.get(name, MISSING), news.get(name, MISSING), child,
                         (*path, fp.field(name)), out)
        if path and old is MISSING:
            out.added.add(path)
        elif path and new is MISSING:
            out.removed.add(path)
        return
    if not path:
        return
    if old is MISSING:
        out.added.add(path)
    elif new is MISSING:
        out.removed.add(path)
    elif not _equal(old, new):
        out.modified.add(path)


def _compare_lists(old: Any, new: Any, node: Node, path: Path, out: Comparison) -> None:
    elem = node.elem()
    old_order, olds, old_dups = _items(node, old if isinstance(old, list) else [])
    new_order, news, new_dups = _items(node, new if isinstance(new, list) else [])
    for element in dict.fromkeys([*old_order, *new_order]):
        item_path = (*path, element)
        if element in old_dups or element in new_dups:
            if element not in new_dups:
                out.removed.add(item_path)
            elif element not in old_dups:
                out.added.add(item_path)
            else:
                out.modified.add(item_path)
            continue
        _compare(olds.get(element, MISSING), news.get(element, MISSING), elem, item_path, out)


def _walkable(node: Node, old: Any, new: Any) -> bool:
    """Whether both sides (those present) are containers walked item by item."""
    sides = [v for v in (old, new) if v is not MISSING]
    if node.shape == LIST:
        return node.list_type != "atomic" and all(isinstance(v, list) for v in sides)
    return all(_granular_map(node, v) for v in sides)


def _empty(value: Any) -> bool:
    return value is MISSING or value in ({}, [])


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


# -- merging an applied configuration ----------------------------------------------------

def merge(live: Any, config: Any, node: Node) -> Any:
    """``config`` merged over ``live``: config's values win, granular parts merge."""
    if config is MISSING:
        return copy.deepcopy(live)
    if live is MISSING or (_empty(live) and _empty(config)):
        return copy.deepcopy(config)
    if not _walkable(node, live, config):
        return copy.deepcopy(config)
    if node.shape == LIST:
        return _merge_lists(live, config, node)
    out = copy.deepcopy(live)
    for name, value in config.items():
        child, _ = _child(node, name)
        out[name] = merge(live.get(name, MISSING), value, child)
    return out


def _merge_lists(live: list[Any], config: list[Any], node: Node) -> list[Any]:
    """Items of both, merged; config's items in config's order, live-only items kept
    where they were relative to the items both have."""
    elem = node.elem()
    live_order, lives, _ = _items(node, live)
    config_order, configs, _ = _items(node, config)
    shared = [e for e in config_order if e in lives]
    out: list[Any] = []
    done: set[PathElement] = set()
    li = ci = 0
    next_shared = shared.pop(0) if shared else None
    while li < len(live_order) or ci < len(config_order):
        if li < len(live_order) and ci < len(config_order):
            element = live_order[li]
            if element == config_order[ci]:
                done.add(element)
                out.append(merge(lives[element], configs[element], elem))
                li, ci = li + 1, ci + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in configs and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(live_order):
            element = live_order[li]
            if element not in configs:
                out.append(copy.deepcopy(lives[element]))
                li += 1
                continue
            if element in done:
                li += 1
        if ci < len(config_order):
            element = config_order[ci]
            done.add(element)
            out.append(merge(lives.get(element, MISSING), configs[element], elem))
            ci += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out


# -- removing fields --------------------------------------------------------------------

def remove(obj: Any, paths: set[Path], node: Node) -> Any:
    """A copy of ``obj`` without the parts at ``paths``."""
    out = copy.deepcopy(obj)
    for path in sorted(paths, key=len):
        _remove_one(out, path, node)
    return out


def _remove_one(value: Any, path: Path, node: Node) -> None:
    holder, current = value, node
    for depth, element in enumerate(path):
        last = depth == len(path) - 1
        kind, content = element
        if kind == "f":
            if not isinstance(holder, dict) or content not in holder:
                return
            if last:
                del holder[content]
                return
            current, _ = _child(current, content)
            holder = holder[content]
            continue
        if not isinstance(holder, list):
            return
        found = None
        for i, item in enumerate(holder):
            try:
                if item_element(current, item, i) == element:
                    found = i
                    break
            except BadRequest:
                continue
        if found is None:
            return
        if last:
            del holder[found]
            return
        holder = holder[found]
        current = current.elem()
