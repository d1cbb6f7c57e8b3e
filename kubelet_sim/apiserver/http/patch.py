"""The patch types a PATCH may carry besides JSON merge patch (which the core applies):
JSON patch (RFC 6902) and strategic merge patch, as ``kubectl apply`` and ``kubectl
patch`` send them.

A strategic merge patch merges lists of objects by their merge key (containers and
volumes by ``name``, ports by ``containerPort``, ...) instead of replacing them, and
honours the directives kubectl writes: ``$patch: delete|replace``,
``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/<list>`` and ``$retainKeys``.
"""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api.errors import BadRequest, Invalid

# list field name -> merge key, for the kinds the simulator serves (Kubernetes' patchMergeKey)
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "env": "name", "ports": "containerPort", "imagePullSecrets": "name",
    "conditions": "type", "tolerations": "key", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "finalizers": "",  # primitive: merged as a set
    "ownerReferences": "uid", "resourceClaims": "name",
}


# -- JSON patch -----------------------------------------------------------------------------

def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise BadRequest(f"json patch: invalid path {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        parent[last] = value
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, list):
        return parent.pop(int(last))
    return parent.pop(last)


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply RFC 6902 operations to a copy of ``doc``."""
    if not isinstance(ops, list):
        raise BadRequest("json patch: the body must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind == "add":
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "replace":
                _get(doc, parts)  # must exist
                if parts:
                    _remove(doc, parts)
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind in ("move", "copy"):
                source = _pointer(op["from"])
                value = _get(doc, source) if kind == "copy" else _remove(doc, source)
                doc = _add(doc, parts, copy.deepcopy(value))
            elif kind == "test":
                if _get(doc, parts) != op["value"]:
                    raise Invalid(op["path"], "json patch test operation failed")
            else:
                raise BadRequest(f"json patch: unknown operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise Invalid(str(op.get("path", "")) if isinstance(op, dict) else "",
                          f"json patch could not be applied: {e!r}") from None
    return doc


# -- strategic merge patch ------------------------------------------------------------------

def strategic_merge(target: Any, patch: Any) -> Any:
    """``patch`` merged into a copy of ``target`` with Kubernetes' strategic rules."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_list(result.get(key) or [], value, MERGE_KEYS[key])
        else:
            result[key] = strategic_merge(result.get(key), value)
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            field = key.split("/", 1)[1]
            result[field] = _ordered(result.get(field) or [], value, MERGE_KEYS.get(field, ""))
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    if not key:  # a list of primitives merged as a set, patch order after current
        return current + [v for v in patch if v not in current]
    out = [copy.deepcopy(item) for item in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise Invalid(key, f"strategic merge patch: list item without merge key {key!r}")
        index = next((i for i, o in enumerate(out)
                      if isinstance(o, dict) and o.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
            continue
        if index is None:
            out.append({k: copy.deepcopy(v) for k, v in item.items() if k != "$patch"})
        else:
            out[index] = strategic_merge(out[index], item)
    return out


def _ordered(items: list[Any], order: list[Any], key: str) -> list[Any]:
    """Items in the order ``$setElementOrder`` names; others keep their place after them."""
    def ident(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item
    wanted = [ident(o) for o in order]
    ranked = sorted(items, key=lambda i: wanted.index(ident(i)) if ident(i) in wanted
                    else len(wanted))
    return ranked
