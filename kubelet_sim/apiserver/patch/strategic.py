"""Strategic merge patch (``application/strategic-merge-patch+json``), driven by the
patch strategy and merge key of each field in the kind's schema (:mod:`.schema`), as
k8s.io/apimachinery's ``strategicpatch`` merges a patch into an object:

- objects merge key by key; ``null`` deletes a key; a field whose strategy is ``replace``
  is replaced whole;
- a list whose field has the ``merge`` strategy merges: objects by their merge key
  (``containers`` by ``name``, ``volumeMounts`` by ``mountPath``), scalars as a set
  (``finalizers``); the result keeps the patch's order for the items it names, the
  server's for the others; any other list is replaced;
- directives: ``$patch: replace|delete`` on an object, ``$patch: delete|replace`` as a
  list item, ``$retainKeys``, ``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/
  <list>``.

Errors: the formats kube-apiserver calls bad requests are 400, lists of lists and
``$retainKeys`` mismatches 422. The rest (an unknown ``$patch``, an item without its
merge key, a directive of the wrong type) are 500 InternalError there; here they are 400
BadRequest with the same message, since every error of a malformed request is a 4xx.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubelet_sim.api.errors import BadRequest, Unprocessable
from kubelet_sim.apiserver.patch.json_patch import NOT_APPLIED
from kubelet_sim.apiserver.patch.schema import UNTYPED_NODE, Node

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ORDER = "$setElementOrder"
DELETE_FROM_LIST = "$deleteFromPrimitiveList"

BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ORDER = "invalid patch format of setElementOrder list"


def apply_strategic_merge_patch(original: dict[str, Any], patch: Any,
                                root: Node) -> dict[str, Any]:
    """``patch`` merged into a copy of ``original`` (an object of the kind ``root``)."""
    if not isinstance(patch, dict):
        raise BadRequest(f"json: cannot unmarshal {_go_name(patch)} into Go value of type "
                         "map[string]interface {}")
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), root)


# -- objects ---------------------------------------------------------------------------

def _merge_map(original: Any, patch: dict[str, Any], node: Node) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            return {k: v for k, v in patch.items() if k != DIRECTIVE}
        if directive == "delete":
            return {}
        raise BadRequest(f"unknown patch type: {_go_print(directive)} in map: "
                         f"{_go_print(patch)}")
    merged: dict[str, Any] = original if isinstance(original, dict) else {}
    _retain_keys(merged, patch)
    _set_element_orders(merged, patch, node)
    for key, value in list(patch.items()):
        deleting = key.startswith(DELETE_FROM_LIST)
        if deleting:
            key = _directive_target(key, DELETE_FROM_LIST, BAD_PRIMITIVE_LIST)
        if value is None:
            merged.pop(key, None)
            continue
        if key not in merged or _go_type(merged[key]) != _go_type(value):
            if not deleting:
                _put(merged, key, _without_nulls(value))
            continue
        child = node.child(key) or UNTYPED_NODE
        strategies = [s for s in child.patch_strategies if s != "retainKeys"]
        if isinstance(value, dict):
            merged[key] = value if "replace" in strategies else \
                _merge_map(merged[key], value, child)
        elif isinstance(value, list):
            if "merge" in strategies or deleting:
                merged[key] = _merge_list(merged[key], value, child.elem(), child.merge_key,
                                          deleting, str(child.ref))
            else:
                merged[key] = value
        else:
            merged[key] = value
    return merged


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    keep = patch.pop(RETAIN_KEYS)
    if not isinstance(keep, list):
        raise BadRequest(BAD_RETAIN_KEYS)
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_LIST, SET_ORDER)):
            continue
        if key not in keep:
            raise BadRequest(BAD_RETAIN_KEYS)
    for key in [k for k in original if k not in keep]:
        del original[key]


def _set_element_orders(original: dict[str, Any], patch: dict[str, Any], node: Node) -> None:
    """``$setElementOrder/<list>``: the list merged, then put in the order given (items the
    order does not name keep their place among them by the server's order)."""
    for directive in [k for k in patch if k.startswith(SET_ORDER)]:
        order = patch.pop(directive)
        if not isinstance(order, list):
            raise BadRequest(f"expected a []interface {{}}, but received a {_go_name(order)}")
        key = _directive_target(directive, SET_ORDER, BAD_SET_ORDER)
        current, sent = original.get(key), patch.get(key)
        for value in (current, sent):
            if value is not None and not isinstance(value, list):
                raise BadRequest(f"expected a []interface {{}}, but received a "
                                 f"{_go_name(value)}")
        child = node.child(key) or UNTYPED_NODE
        merge_key = child.merge_key
        _check_order(sent or [], order, merge_key)
        if key in original and key in patch:
            strategies = [s for s in child.patch_strategies if s != "retainKeys"]
            merged = _merge_list(current or [], sent or [], child.elem(), merge_key, False,
                                 str(child.ref)) if "merge" in strategies else list(sent or [])
        elif key in original:
            merged = current or []
        elif key in patch:
            kept, keep = _remove_directives(sent)
            if not keep:
                continue
            merged = kept
        else:
            continue
        kind = _element_type(current or [], sent or [])
        named = [i for i in merged if _index(order, i, merge_key, kind) >= 0]
        others = [i for i in merged if _index(order, i, merge_key, kind) < 0]
        original[key] = _interleave(named, others, order, current or [], merge_key, kind)
        patch.pop(key, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    if not patch_list or not order:
        return
    items = [i for i in patch_list if not (merge_key and isinstance(i, dict) and
                                           i.get(DIRECTIVE) == "delete")]
    at = 0
    for wanted in order:
        if at >= len(items):
            return
        if isinstance(items[at], dict) and DIRECTIVE in items[at]:
            at += 1
            continue
        if _key_of(items[at], merge_key) == _key_of(wanted, merge_key):
            at += 1
    if at < len(items):
        raise BadRequest(f"The order in patch list:\n{_go_print(patch_list)}\n doesn't match "
                         f"{SET_ORDER} list:\n{_go_print(order)}\n")


# -- lists -----------------------------------------------------------------------------

def _merge_list(original: list[Any], patch: list[Any], item: Node, merge_key: str,
                deleting: bool, where: str) -> list[Any]:
    if not original and not patch:
        return original
    kind = _element_type(original, patch)
    if kind != "map":
        if deleting:
            return [v for v in original if not any(_same(v, p) for p in patch)]
        merged: list[Any] = []
        for value in original + patch:
            if not any(_same(value, seen) for seen in merged):
                merged.append(value)
        server_order = original
    else:
        if not merge_key:
            raise BadRequest(f"cannot merge lists without merge key for {where}")
        original, patch = _list_directives(original, patch, merge_key)
        merged = original
        for entry in patch:
            if merge_key not in entry:
                raise BadRequest(_no_merge_key(entry, merge_key))
            found = next((i for i, o in enumerate(merged)
                          if _same(o.get(merge_key), entry[merge_key])), None)
            if found is None:
                merged.append(entry)
            else:
                merged[found] = _merge_map(merged[found], entry, item)
        server_order = original
    named = [i for i in merged if _index(patch, i, merge_key, kind) >= 0]
    others = [i for i in merged if _index(patch, i, merge_key, kind) < 0]
    return _interleave(named, others, patch, server_order, merge_key, kind)


def _list_directives(original: list[Any], patch: list[Any],
                     merge_key: str) -> tuple[list[Any], list[Any]]:
    """Apply the ``$patch`` items of a list of objects: delete by key, replace all."""
    plain: list[Any] = []
    replace = False
    for entry in patch:
        if DIRECTIVE not in entry:
            plain.append(entry)
            continue
        directive = entry[DIRECTIVE]
        if directive == "delete":
            if merge_key not in entry:
                raise BadRequest(_no_merge_key(entry, merge_key))
            original = [o for o in original if not _same(o.get(merge_key), entry[merge_key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise BadRequest("merging lists cannot yet be specified in the patch")
        else:
            raise BadRequest(f"unknown patch type: {_go_print(directive)} in map: "
                             f"{_go_print(entry)}")
    if replace:
        return plain, []
    return original, plain


def _interleave(named: list[Any], others: list[Any], order: list[Any],
                server_order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``named`` in ``order``'s order and ``others`` in the server's, merged so each keeps
    its place relative to the server's order where both are known there."""
    named = sorted(named, key=lambda i: _index(order, i, merge_key, kind))
    others = sorted(others, key=lambda i: _index(server_order, i, merge_key, kind))
    out: list[Any] = []
    left, right = 0, 0
    while left < len(others) or right < len(named):
        if right >= len(named):
            out.append(others[left])
            left += 1
        elif left >= len(others):
            out.append(named[right])
            right += 1
        else:
            li = _index(server_order, others[left], merge_key, kind)
            ri = _index(server_order, named[right], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(others[left])
                left += 1
            else:
                out.append(named[right])
                right += 1
    return out


def _index(items: list[Any], item: Any, merge_key: str, kind: str) -> int:
    wanted = _key_of(item, merge_key) if kind == "map" else item
    for i, candidate in enumerate(items):
        if _same(_key_of(candidate, merge_key) if kind == "map" else candidate, wanted):
            return i
    return -1


def _key_of(item: Any, merge_key: str) -> Any:
    return item.get(merge_key) if merge_key and isinstance(item, dict) else item


def _element_type(*lists: list[Any]) -> str:
    found = ""
    for items in lists:
        for value in items:
            kind = _go_type(value)
            if not found:
                if kind == "list":
                    raise Unprocessable(NOT_APPLIED)  # lists of lists are not supported
                found = kind
            elif kind != found:
                raise BadRequest(f"list element types are not identical: {_go_print(lists)}")
    if not found:
        raise BadRequest("no elements in any of the given slices")
    return found


# -- helpers ---------------------------------------------------------------------------

def _directive_target(key: str, prefix: str, error: str) -> str:
    head, _, rest = key.partition("/")
    if head != prefix or not _:
        raise BadRequest(error)
    return rest


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    kept, keep = _remove_directives(value)
    if keep:
        target[key] = kept
    else:
        target.pop(key, None)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """``value`` without the objects that carry a ``$patch`` (False: drop it whole)."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        out = {}
        for k, v in value.items():
            kept, keep = _remove_directives(v)
            if keep:
                out[k] = kept
        return out, True
    if isinstance(value, list):
        return [kept for kept, keep in map(_remove_directives, value) if keep], True
    return value, True


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _go_type(value: Any) -> str:
    """The Go type a JSON value decodes to (numbers keep int64 apart from float64)."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "nil"


def _same(left: Any, right: Any) -> bool:
    return _go_type(left) == _go_type(right) and left == right


def _go_name(value: Any) -> str:
    return {"map": "object", "list": "array", "int64": "number", "float64": "number",
            "nil": "null"}.get(_go_type(value), _go_type(value))


def _go_print(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _no_merge_key(entry: dict[str, Any], merge_key: str) -> str:
    return f"map: {_go_print(entry)} does not contain declared merge key: {merge_key}"
