"""Which of a definition's names are accepted, as apiextensions' naming controller decides:
names conflict only with the names other definitions of the **same group** have accepted
(plural, singular and short names among resources; kind and list kind among kinds), so
two groups may both define ``Widget``/``widgets``. A name already accepted for this
definition stays its own. Each conflicting name is left out of ``acceptedNames`` and makes
NamesAccepted False with the reason of the last one found (PluralConflict,
SingularConflict, ShortNamesConflict, KindConflict, ListKindConflict) and the message
``"<name>" is already in use``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubelet_sim.api.model import JSON, Resource


@dataclass(frozen=True)
class NamesInUse:
    """The names the other definitions of one group have accepted."""

    resources: frozenset[str] = frozenset()  # plurals, singulars, short names
    kinds: frozenset[str] = frozenset()  # kinds, list kinds

    @classmethod
    def of(cls, accepted: Iterable[JSON]) -> NamesInUse:
        resources: set[str] = set()
        kinds: set[str] = set()
        for names in accepted:
            resources.update(str(names.get(k) or "") for k in ("plural", "singular"))
            resources.update(str(n) for n in names.get("shortNames") or [])
            kinds.update(str(names.get(k) or "") for k in ("kind", "listKind"))
        return cls(frozenset(resources - {""}), frozenset(kinds - {""}))


@dataclass
class NamesDecision:
    """acceptedNames and the NamesAccepted condition's reason and message ("" reason:
    every name accepted)."""

    accepted: JSON
    reason: str = ""
    message: str = ""


def _in_use(requested: Any, accepted: Any, used: frozenset[str]) -> str:
    if requested == accepted or requested not in used:
        return ""
    return f'"{requested}" is already in use'


def accept_names(crd: Resource, in_use: NamesInUse) -> NamesDecision:
    """The naming controller's decision for ``crd`` given the names its group uses."""
    requested: JSON = crd.spec.get("names") or {}
    before: JSON = crd.status.get("acceptedNames") or {}
    decision = NamesDecision({"plural": "", "kind": "", **before})

    def conflict(reason: str, message: str) -> None:
        decision.reason, decision.message = reason, message

    for key, reason in (("plural", "PluralConflict"), ("singular", "SingularConflict")):
        if problem := _in_use(requested.get(key), before.get(key), in_use.resources):
            conflict(reason, problem)
        elif requested.get(key) is not None:
            decision.accepted[key] = requested[key]
    shorts = list(requested.get("shortNames") or [])
    if shorts != list(before.get("shortNames") or []):
        own = set(before.get("shortNames") or [])
        problems: list[str] = []
        for short in shorts:
            problem = "" if short in own else _in_use(short, "", in_use.resources)
            if problem and problem not in problems:
                problems.append(problem)
        if problems:
            conflict("ShortNamesConflict", problems[0] if len(problems) == 1
                     else "[" + ", ".join(problems) + "]")
        elif shorts:
            decision.accepted["shortNames"] = shorts
        else:
            decision.accepted.pop("shortNames", None)
    for key, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        if problem := _in_use(requested.get(key), before.get(key), in_use.kinds):
            conflict(reason, problem)
        elif requested.get(key) is not None:
            decision.accepted[key] = requested[key]
    if requested.get("categories"):
        decision.accepted["categories"] = list(requested["categories"])
    else:
        decision.accepted.pop("categories", None)
    return decision
