"""A pod's required node affinity (``requiredDuringSchedulingIgnoredDuringExecution``) as
the scheduler's NodeAffinity filter reads it: the terms are ORed, a term's
``matchExpressions`` (on the node's labels) and ``matchFields`` (``metadata.name``) ANDed;
operators In, NotIn, Exists, DoesNotExist, Gt, Lt. The DaemonSet controller pins each of
its pods to a node with a ``matchFields`` term."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.model import JSON, Resource


def _requirement(req: JSON, value: str | None) -> bool:
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_matches(term: JSON, node: Resource) -> bool:
    for req in term.get("matchExpressions") or []:
        if not _requirement(req, node.labels.get(str(req.get("key")))):
            return False
    for req in term.get("matchFields") or []:
        value = node.name if req.get("key") == "metadata.name" else None
        if not _requirement(req, value):
            return False
    return bool(term.get("matchExpressions") or term.get("matchFields"))


def required_terms(spec: JSON) -> list[Any] | None:
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return None
    return list(required.get("nodeSelectorTerms") or [])


def admits(spec: JSON, node: Resource) -> bool:
    """The node passes the pod's ``nodeSelector`` and required node affinity."""
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    terms = required_terms(spec)
    return terms is None or any(term_matches(t, node) for t in terms)


def pinned_node(spec: JSON) -> str | None:
    """The node a ``matchFields`` ``metadata.name In [node]`` term pins the pod to."""
    for term in required_terms(spec) or []:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("operator") == "In" \
                    and len(req.get("values") or []) == 1:
                return str(req["values"][0])
    return None
