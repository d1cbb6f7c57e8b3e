"""Label selectors, field selectors and node selector terms, as Kubernetes evaluates them.

Two spellings of a label selector exist in Kubernetes and both are supported:

* the query-string form used by ``list``/``watch``
  (``app=web,tier in (a,b),!legacy,env!=prod``), parsed by :meth:`LabelSelector.parse`;
* the structured ``LabelSelector`` object used inside specs
  (``{"matchLabels": {...}, "matchExpressions": [...]}``), read by
  :meth:`LabelSelector.from_dict`.

An empty selector matches everything. ``NotIn`` and ``!=`` also match objects that lack
the key, as in Kubernetes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubelet_sim.api.errors import BadRequest, Invalid
from kubelet_sim.api.label_rules import label_value_errors, qualified_name_errors
from kubelet_sim.api.model import Resource

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|[^\s!=(),]+)")


@dataclass(frozen=True)
class Requirement:
    """One ``key operator values`` term; all terms of a selector must hold (AND)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when ``labels`` satisfy this requirement."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return "!" + self.key
        op = "in" if self.operator == "In" else "notin"
        return f"{self.key} {op} ({','.join(self.values)})"


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements. ``nothing=True`` is the selector that matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls()

    @classmethod
    def none(cls) -> LabelSelector:
        return cls(nothing=True)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True when every requirement holds for ``labels``."""
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def is_empty(self) -> bool:
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None, path: str = "selector") -> LabelSelector:
        """Read a structured LabelSelector. ``None`` matches nothing (as Kubernetes'
        ``LabelSelectorAsSelector(nil)``); ``{}`` matches everything."""
        if raw is None:
            return cls.none()
        if not isinstance(raw, Mapping):
            raise Invalid(path, "must be an object")
        unknown = set(raw) - {"matchLabels", "matchExpressions"}
        if unknown:
            raise Invalid(f"{path}.{sorted(unknown)[0]}", "unknown field")
        reqs: list[Requirement] = []
        match_labels = raw.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise Invalid(f"{path}.matchLabels", "must be a map of strings")
        for key, value in sorted(match_labels.items()):
            if not isinstance(value, str):
                raise Invalid(f"{path}.matchLabels.{key}", "must be a string")
            reqs.append(Requirement(str(key), "In", (value,)))
        for i, expr in enumerate(raw.get("matchExpressions") or []):
            reqs.append(_expression(expr, f"{path}.matchExpressions[{i}]", OPERATORS))
        return cls(tuple(reqs))

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        """Parse the query-string form. Raises :class:`BadRequest` on bad syntax."""
        if not text or not text.strip():
            return cls()
        return cls(tuple(_Parser(text).requirements()))


def _expression(expr: Any, path: str, operators: tuple[str, ...]) -> Requirement:
    if not isinstance(expr, Mapping):
        raise Invalid(path, "must be an object")
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not key:
        raise Invalid(f"{path}.key", "Required value")
    if op not in operators:
        raise Invalid(f"{path}.operator", f"Unsupported value: {op!r}: supported {operators}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise Invalid(f"{path}.values", "must be a list of strings")
    if op in ("In", "NotIn") and not values:
        raise Invalid(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    if op in ("Exists", "DoesNotExist") and values:
        raise Invalid(
            f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        )
    if op in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise Invalid(f"{path}.values", "must be a single integer for 'Gt' and 'Lt'")
    return Requirement(key, op, tuple(values))


def _checked(req: Requirement) -> Requirement:
    """``req`` when its key and values are valid label keys and values; else the
    BadRequest kube-apiserver answers (labels.NewRequirement's field errors)."""
    problems = [f"key: Invalid value: {json.dumps(req.key)}: {'; '.join(errors)}"
                for errors in [qualified_name_errors(req.key)] if errors]
    problems += [f"values[{i}][{req.key}]: Invalid value: {json.dumps(value)}: "
                 f"{'; '.join(errors)}"
                 for i, value in enumerate(req.values)
                 for errors in [label_value_errors(value)] if errors]
    if len(problems) == 1:
        raise BadRequest(f"unable to parse requirement: {problems[0]}")
    if problems:
        raise BadRequest(f"unable to parse requirement: [{', '.join(problems)}]")
    return req


class _Parser:
    """Recursive-descent parser for the label selector query string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]
        self.pos = 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self) -> str:
        tok = self._peek()
        if tok is None:
            raise BadRequest(f"unable to parse requirement: unexpected end of {self.text!r}")
        self.pos += 1
        return tok

    def requirements(self) -> list[Requirement]:
        reqs = [_checked(self._requirement())]
        while self._peek() is not None:
            if self._next() != ",":
                raise BadRequest(f"unable to parse requirement: expected ',' in {self.text!r}")
            reqs.append(_checked(self._requirement()))
        return reqs

    def _requirement(self) -> Requirement:
        tok = self._next()
        if tok == "!":
            return Requirement(self._key(self._next()), "DoesNotExist")
        key = self._key(tok)
        op = self._peek()
        if op is None or op == ",":
            return Requirement(key, "Exists")
        self.pos += 1
        if op in ("=", "=="):
            return Requirement(key, "In", (self._value(),))
        if op == "!=":
            return Requirement(key, "NotIn", (self._value(),))
        if op in ("in", "notin"):
            return Requirement(key, "In" if op == "in" else "NotIn", self._set())
        raise BadRequest(f"unable to parse requirement: unknown operator {op!r}")

    def _key(self, tok: str) -> str:
        if tok in ("(", ")", ",", "=", "==", "!=", "!"):
            raise BadRequest(f"unable to parse requirement: expected a key, found {tok!r}")
        return tok

    def _value(self) -> str:
        tok = self._peek()
        if tok is None or tok == ",":
            return ""  # "key=" selects an empty value
        if tok in ("(", ")", "=", "==", "!=", "!"):
            raise BadRequest(f"unable to parse requirement: expected a value, found {tok!r}")
        self.pos += 1
        return tok

    def _set(self) -> tuple[str, ...]:
        if self._next() != "(":
            raise BadRequest("unable to parse requirement: expected '(' after in/notin")
        values: list[str] = []
        while True:
            tok = self._next()
            if tok == ")":
                break
            if tok == ",":
                continue
            values.append(tok)
        if not values:
            raise BadRequest("unable to parse requirement: in/notin needs at least one value")
        return tuple(values)


# --------------------------------------------------------------------------- field selectors


@dataclass(frozen=True)
class FieldSelector:
    """``path=value`` / ``path!=value`` terms over dotted field paths, ANDed."""

    terms: tuple[tuple[str, bool, str], ...] = field(default=())

    @classmethod
    def parse(cls, text: str | None, supported: frozenset[str]) -> FieldSelector:
        """Parse ``metadata.name=x,spec.nodeName!=y``; only ``supported`` paths are accepted,
        as the Kubernetes API rejects unsupported field labels with 400."""
        if not text or not text.strip():
            return cls()
        terms: list[tuple[str, bool, str]] = []
        for part in text.split(","):
            m = re.fullmatch(r"\s*([A-Za-z0-9_.]+)\s*(!=|==|=)\s*(\S*)\s*", part)
            if not m:
                raise BadRequest(f"invalid field selector term {part!r}")
            path, op, value = m.groups()
            if path not in supported:
                raise BadRequest(f"field label not supported: {path}")
            terms.append((path, op != "!=", value))
        return cls(tuple(terms))

    def matches(self, lookup: Callable[[str], str]) -> bool:
        """``lookup(path)`` returns the object's value at ``path`` ('' when absent)."""
        return all((lookup(path) == value) == equal for path, equal, value in self.terms)


# --------------------------------------------------------------------------- node selectors

NODE_OPERATORS = (*OPERATORS, "Gt", "Lt")


def node_selector_term_matches(
    term: Mapping[str, Any], labels: Mapping[str, str], fields: Mapping[str, str]
) -> bool:
    """One NodeSelectorTerm: its matchExpressions (on labels) and matchFields (on
    ``metadata.name``) are ANDed. An empty term matches nothing, as in Kubernetes."""
    exprs = term.get("matchExpressions") or []
    field_exprs = term.get("matchFields") or []
    if not exprs and not field_exprs:
        return False
    for i, expr in enumerate(exprs):
        if not _node_requirement_holds(
            _expression(expr, f"matchExpressions[{i}]", NODE_OPERATORS), labels
        ):
            return False
    for i, expr in enumerate(field_exprs):
        if not _node_requirement_holds(
            _expression(expr, f"matchFields[{i}]", NODE_OPERATORS), fields
        ):
            return False
    return True


def node_selector_matches(
    terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str], fields: Mapping[str, str]
) -> bool:
    """NodeSelector: the terms are ORed."""
    return any(node_selector_term_matches(t, labels, fields) for t in terms)


def _node_requirement_holds(req: Requirement, labels: Mapping[str, str]) -> bool:
    if req.operator in ("Gt", "Lt"):
        value = labels.get(req.key)
        if value is None or not value.lstrip("-").isdigit():
            return False
        bound = int(req.values[0])
        return int(value) > bound if req.operator == "Gt" else int(value) < bound
    return req.matches(labels)


def field_value(obj: Resource, path: str) -> str:
    """The string form of ``obj``'s field at dotted ``path`` ('' when absent), as field
    selectors compare it."""
    if path == "metadata.name":
        return obj.metadata.name
    if path == "metadata.namespace":
        return obj.metadata.namespace
    if path == "source":  # an Event's field label for source.component
        path = "source.component"
    node: Any = {**obj.body, "spec": obj.spec, "status": obj.status}
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, bool):
        return "true" if node else "false"
    return "" if node is None else str(node)


# --------------------------------------------------------------------------- list/watch query

_COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
# The field labels the Kubernetes API accepts per kind; anything else is a 400.
SUPPORTED_FIELDS: dict[str, frozenset[str]] = {
    "Pod": _COMMON_FIELDS
    | {"spec.nodeName", "spec.schedulerName", "spec.serviceAccountName", "spec.restartPolicy",
       "status.phase", "status.podIP", "status.nominatedNodeName"},
    "Node": _COMMON_FIELDS | {"spec.unschedulable"},
    "PersistentVolumeClaim": _COMMON_FIELDS | {"spec.volumeName"},
    "Namespace": _COMMON_FIELDS | {"status.phase"},
    "Event": _COMMON_FIELDS
    | {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
       "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
       "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
}


def query_predicate(
    kind: str | None,
    namespace: str | None,
    label_selector: str | LabelSelector | None,
    field_selector: str | None,
) -> Callable[[Resource], bool]:
    """The filter of a list or watch request: namespace (None or "" = all, as in
    client-go), label selector
    (string or parsed) and field selector (validated against ``kind``'s field labels)."""
    labels = (
        label_selector
        if isinstance(label_selector, LabelSelector)
        else LabelSelector.parse(label_selector)
    )
    fields = FieldSelector.parse(field_selector, SUPPORTED_FIELDS.get(kind or "", _COMMON_FIELDS))

    def matches(obj: Resource) -> bool:
        if namespace and obj.metadata.namespace != namespace:
            return False
        return labels.matches(obj.metadata.labels) and fields.matches(
            lambda path: field_value(obj, path)
        )

    return matches
