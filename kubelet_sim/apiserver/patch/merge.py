"""JSON merge patch (RFC 7386) as kube-apiserver applies ``application/merge-patch+json``
(evanphx/json-patch v4's ``MergePatch``).

An object patch merges into the object key by key; ``null`` deletes a key; any other
value (lists included) replaces, with the ``null`` members of a new object dropped. A
patch that is ``null`` or a scalar is a 400 ``Invalid JSON Patch``; a patch that is a list
becomes the whole document (which then fails to decode as the kind: 422).
"""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api.errors import BadRequest


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """``patch`` merged into a copy of ``doc``."""
    if patch is None or not isinstance(patch, (dict, list)):
        raise BadRequest("Invalid JSON Patch")
    if isinstance(patch, list):
        return _pruned(patch)
    if not isinstance(doc, dict):
        return _pruned(patch)
    return _merge(copy.deepcopy(doc), patch)


def _merge(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
        elif isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = _merge(doc[key], value)
        elif doc.get(key) is None or not isinstance(doc.get(key), dict):
            doc[key] = _pruned(value)
        else:
            doc[key] = copy.deepcopy(value)
    return doc


def _pruned(value: Any) -> Any:
    """A copy of ``value`` without the null members of its objects (list items stay)."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value
