"""``metadata.managedFields``: which manager owns which fields, kept on every write as
kube-apiserver's field manager keeps it, and server-side apply built on it.

Each entry is one manager and operation: ``{manager, operation: Apply|Update,
apiVersion, time, fieldsType: FieldsV1, fieldsV1, subresource?}``.

- **Update** (create, update, every patch but apply): the writer's entry gains the fields
  its write added or changed and loses the ones it removed; other managers lose the
  fields it changed. An object that exists without managedFields stays untracked (as
  before server-side apply); one created through the API is tracked from its creation.
- **Apply**: the applier's entry becomes exactly the fields of its configuration. The
  configuration is merged into the live object by the schema; fields the applier owned
  before and no longer sends are removed unless another manager owns them; a change to a
  field another manager owns is a conflict (409, the fields and managers listed) unless
  ``force``, which takes the field from them.

Never owned by anyone: ``apiVersion``, ``kind`` and the server's metadata (name,
namespace, uid, resourceVersion, generation, creationTimestamp, managedFields). The
status of a kind with a status subresource belongs to writes of ``/status``, the rest to
writes of the object (the API server's reset fields).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kubelet_sim.api import kube_types
from kubelet_sim.api.errors import ApplyConflict
from kubelet_sim.apiserver.patch import fieldpath as fp
from kubelet_sim.apiserver.patch import typed
from kubelet_sim.apiserver.patch.fieldpath import FieldSet, Path
from kubelet_sim.apiserver.patch.schema import Node

APPLY, UPDATE = "Apply", "Update"
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"
MAX_UPDATE_MANAGERS = 10
KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FIELD_MANAGER_MAX_LENGTH = 128
_SERVER_OWNED: FieldSet = frozenset({
    (fp.field("apiVersion"),), (fp.field("kind"),), (fp.field("metadata"),),
    *((fp.field("metadata"), fp.field(name)) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")),
})


@dataclass(frozen=True)
class ManagerId:
    """What an entry is for: a manager, its operation, and (Update) the API version it
    wrote and the subresource it wrote through."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""

    def identity(self) -> tuple[str, str, str, str]:
        # Apply entries are one per manager whatever version it applied with
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)


@dataclass
class Owned:
    fields: set[Path]
    api_version: str
    time: str | None = None


@dataclass
class Managers:
    """The decoded managedFields of an object."""

    entries: dict[tuple[str, str, str, str], tuple[ManagerId, Owned]] = field(
        default_factory=dict)

    @classmethod
    def decode(cls, raw: Any) -> Managers:
        """The entries of ``raw`` (an object's ``metadata.managedFields``); ValueError
        when they are not well formed."""
        out = cls()
        if raw is None:
            return out
        if not isinstance(raw, list):
            raise ValueError("managedFields must be a list")
        for entry in raw:
            if not isinstance(entry, dict):
                raise ValueError("a managedFields entry must be an object")
            if entry.get("fieldsType", "FieldsV1") != "FieldsV1":
                raise ValueError(f"unknown fieldsType {entry.get('fieldsType')!r}")
            ident = ManagerId(str(entry.get("manager") or ""), str(entry.get("operation")),
                              str(entry.get("apiVersion") or ""),
                              str(entry.get("subresource") or ""))
            fields = fp.from_fields_v1(entry.get("fieldsV1") or {})
            out.entries[ident.identity()] = (ident, Owned(
                set(fields), ident.api_version, entry.get("time")))
        return out

    def encode(self) -> list[dict[str, Any]]:
        out = []
        for ident, owned in self.entries.values():
            entry: dict[str, Any] = {"manager": ident.manager, "operation": ident.operation,
                                     "apiVersion": owned.api_version}
            if owned.time:
                entry["time"] = owned.time
            entry["fieldsType"] = "FieldsV1"
            entry["fieldsV1"] = fp.to_fields_v1(owned.fields)
            if ident.subresource:
                entry["subresource"] = ident.subresource
            out.append(entry)
        out.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"],
                                e["apiVersion"], e.get("subresource", "")))
        return out

    def drop_empty(self) -> None:
        for ident in [i for i, (_, owned) in self.entries.items() if not owned.fields]:
            del self.entries[ident]

    def cap_updaters(self) -> None:
        """At most ten Update entries: the oldest beyond them fold, per API version, into
        one ``ancient-changes`` entry (its time the newest folded in)."""
        updaters = sorted((i for i, (who, _) in self.entries.items()
                           if who.operation == UPDATE),
                          key=lambda i: (self.entries[i][1].time or "", i))
        left = len(updaters)
        first_of: dict[str, tuple[str, str, str, str]] = {}
        for ident in updaters:
            if left <= MAX_UPDATE_MANAGERS:
                break
            _, owned = self.entries[ident]
            bucket_id = ManagerId(ANCIENT_CHANGES, UPDATE, owned.api_version)
            bucket = bucket_id.identity()
            if owned.api_version not in first_of:
                first_of[owned.api_version] = ident
                continue
            if bucket not in self.entries:
                _, first = self.entries.pop(first_of[owned.api_version])
                self.entries[bucket] = (bucket_id, first)
            merged = self.entries[bucket][1]
            merged.fields |= owned.fields
            merged.time = owned.time
            del self.entries[ident]
            left -= 1


@dataclass(frozen=True)
class Write:
    """Where a write lands: the kind's root node, the endpoint's API version, the
    subresource, whether the kind has a status subresource, and the time now."""

    root: Node
    api_version: str
    subresource: str
    status_subresource: bool
    now: str

    def keep(self, paths: set[Path]) -> set[Path]:
        """``paths`` without those another endpoint owns (reset fields) or the server
        keeps."""
        status = fp.field("status")
        if self.subresource == "status":
            kept = {p for p in paths if p[:1] == (status,)}
        elif self.status_subresource:
            kept = {p for p in paths if p[:1] != (status,)}
        else:
            kept = set(paths)
        return kept - _SERVER_OWNED


def _without_managed_fields(obj: dict[str, Any] | None) -> dict[str, Any]:
    if obj is None:
        return {}
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def zero_object(node: Node) -> dict[str, Any]:
    """The kind's empty object as Go would serialise it: the struct-typed fields held by
    value are present (empty), so creating them is not an addition of the struct itself."""
    key = kube_types.resolve(node.ref)
    if not isinstance(key, str):
        return {}
    return copy.deepcopy(_zero_of(key))


@cache
def _zero_of(key: str) -> dict[str, Any]:
    return _zero_struct(Node(key), 0)


def _zero_struct(node: Node, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if depth > 12:
        return out
    for name, child in node.fields().items():
        if child.field is None or child.field.pointer or child.shape != "struct":
            continue
        out[name] = _zero_struct(child, depth + 1)
    return out


# -- Update ----------------------------------------------------------------------------

def track_update(live: dict[str, Any] | None, new: dict[str, Any], manager: str,
                 write: Write) -> list[dict[str, Any]] | None:
    """The managedFields ``new`` is stored with when ``manager`` writes it over ``live``
    (None: create). None means the object is not tracked (stored without them)."""
    try:
        managers = _managers_for_update(live, new, write)
    except ValueError:
        managers = Managers()
    if live is not None and not managers.entries:
        return None  # an object from before field management: left untracked
    old = _without_managed_fields(live) if live is not None else zero_object(write.root)
    current = _without_managed_fields(new)
    if live is not None and old == current:
        return managers.encode()  # nothing changed: timestamps and all stay
    _record_update(managers, old, current, ManagerId(manager, UPDATE, write.api_version,
                                                     write.subresource), write)
    managers.drop_empty()
    managers.cap_updaters()
    return managers.encode() or None


def _managers_for_update(live: dict[str, Any] | None, new: dict[str, Any],
                         write: Write) -> Managers:
    sent = (new.get("metadata") or {}).get("managedFields")
    if write.subresource or sent is None:
        return Managers.decode(((live or {}).get("metadata") or {}).get("managedFields"))
    if sent == [] or sent == [{}]:
        return Managers()  # a request to reset them
    try:
        decoded = Managers.decode(sent)
    except ValueError:
        decoded = Managers()
    if decoded.entries:
        return decoded
    return Managers.decode(((live or {}).get("metadata") or {}).get("managedFields"))


def _record_update(managers: Managers, old: dict[str, Any], new: dict[str, Any],
                   writer: ManagerId, write: Write) -> None:
    diff = typed.compare(old, new, write.root)
    changed = write.keep(diff.modified | diff.added)
    removed = write.keep(diff.removed)
    for ident, (_, owned) in managers.entries.items():
        if ident == writer.identity() or owned.api_version != write.api_version:
            continue
        owned.fields -= changed | removed
    entry = managers.entries.get(writer.identity())
    fields = (entry[1].fields if entry else set()) - removed | changed
    fields = write.keep(fields)
    if fields:
        managers.entries[writer.identity()] = (writer, Owned(fields, write.api_version,
                                                             write.now))
    else:
        managers.entries.pop(writer.identity(), None)


# -- Apply -----------------------------------------------------------------------------

@dataclass
class Applied:
    """The object an apply produces (None: the live object is unchanged) and its
    managedFields."""

    obj: dict[str, Any] | None
    managed_fields: list[dict[str, Any]]


def apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str, force: bool,
          write: Write) -> Applied:
    """Server-side apply of ``config`` by ``manager`` to ``live`` (None: absent).

    kubectl's own manager (``kubectl``) moves from client-side apply without conflicts:
    a conflict on a field whose live value is still the one the
    ``last-applied-configuration`` annotation records is taken over, and that
    annotation, where present, follows what was applied."""
    try:
        result = _apply(live, config, manager, force, write)
    except ApplyConflict as conflict:
        if manager != KUBECTL or live is None:
            raise
        allowed = _unchanged_since_last_applied(live, write)
        rest = [c for c in conflict.conflicts if c[1] not in allowed]
        if rest:
            raise _conflict_error(rest) from None
        result = _apply(live, config, manager, True, write)
    if manager == KUBECTL and live is not None:
        _follow_last_applied(result, live, config)
    return result


def _unchanged_since_last_applied(live: dict[str, Any], write: Write) -> set[Path]:
    recorded = _annotations(live).get(LAST_APPLIED)
    try:
        last = json.loads(recorded) if isinstance(recorded, str) else None
    except ValueError:
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != write.api_version:
        return set()
    diff = typed.compare(last, _without_managed_fields(live), write.root)
    return typed.field_set(last, write.root) - diff.modified - diff.added - diff.removed


def _follow_last_applied(result: Applied, live: dict[str, Any], config: dict[str, Any]) -> None:
    current = result.obj if result.obj is not None else _without_managed_fields(live)
    if not _annotations(current).get(LAST_APPLIED):
        return
    applied = copy.deepcopy(config)
    kept = {k: v for k, v in _annotations(applied).items() if k != LAST_APPLIED}
    if isinstance(applied.get("metadata"), dict) and "annotations" in applied["metadata"]:
        applied["metadata"]["annotations"] = kept
    text = json.dumps(applied, sort_keys=True, separators=(",", ":")) + "\n"
    if _annotations(current)[LAST_APPLIED] == text:
        return
    updated = copy.deepcopy(current)
    updated["metadata"]["annotations"][LAST_APPLIED] = text
    result.obj = updated


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str, force: bool,
           write: Write) -> Applied:
    try:
        managers = Managers.decode(((live or {}).get("metadata") or {}).get("managedFields"))
    except ValueError:
        managers = Managers()
    base = _without_managed_fields(live) if live is not None else {}
    if live is not None and not managers.entries:
        # fields set before the first apply belong to an Update manager of their own
        _record_update(managers, zero_object(write.root), base,
                       ManagerId(BEFORE_FIRST_APPLY, UPDATE, write.api_version,
                                 write.subresource), write)
        managers.drop_empty()
    applier = ManagerId(manager, APPLY, write.api_version, write.subresource)
    previous = managers.entries.get(applier.identity())
    sent = typed.field_set(config, write.root)
    applied = write.keep(sent)
    merged = typed.merge(base, config, write.root)
    if previous is not None:
        merged = _prune(merged, previous[1].fields - applied, managers, applier, sent,
                        write.root)
    _claim(managers, base, merged, applier, force, write)
    changed = merged != base
    # the applier's time moves when its apply changed the object
    time = write.now if changed else (previous[1].time if previous else None)
    managers.entries[applier.identity()] = (applier, Owned(applied, write.api_version, time))
    managers.drop_empty()
    managers.cap_updaters()
    return Applied(merged if changed else None, managers.encode())


def _prune(merged: dict[str, Any], dropped: set[Path], managers: Managers,
           applier: ManagerId, applied: set[Path], root: Node) -> dict[str, Any]:
    """``merged`` without the fields the applier stopped sending that nobody else owns
    (a struct field counts as owned when anything under it is)."""
    owned = set(applied)
    for ident, (_, fields) in managers.entries.items():
        if ident != applier.identity():
            owned |= fields.fields
    candidates = set(dropped)
    for path in dropped:
        for depth in range(1, len(path)):
            if path[depth - 1][0] == "f":
                candidates.add(path[:depth])
    gone = {p for p in candidates - _SERVER_OWNED
            if p not in owned and not any(fp.has_prefix(o, p) for o in owned)}
    gone = {p for p in gone if not any(fp.has_prefix(p, q) for q in gone)}
    return dict(typed.remove(merged, gone, root))


def _claim(managers: Managers, live: dict[str, Any], merged: dict[str, Any],
           applier: ManagerId, force: bool, write: Write) -> None:
    """Take the applier's changed fields from the other managers, or raise the conflict."""
    diff = typed.compare(live, merged, write.root)
    changed = write.keep(diff.modified | diff.added)
    conflicts: list[tuple[ManagerId, Path]] = []
    for ident, (other, owned) in managers.entries.items():
        if ident == applier.identity() or owned.api_version != write.api_version:
            continue
        for path in sorted(owned.fields & changed, key=fp.path_string):
            conflicts.append((other, path))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for ident, (_, owned) in managers.entries.items():
        if ident == applier.identity() or owned.api_version != write.api_version:
            continue
        owned.fields -= changed | diff.removed


def _conflict_error(conflicts: list[tuple[ManagerId, Path]]) -> ApplyConflict:
    causes = [{"reason": "FieldManagerConflict",
               "message": f"conflict with {_manager_words(who)}",
               "field": fp.path_string(path)} for who, path in conflicts]
    if len(conflicts) == 1:
        who, path = conflicts[0]
        message = (f"Apply failed with 1 conflict: conflict with {_manager_words(who)}: "
                   f"{fp.path_string(path)}")
    else:
        by_manager: dict[str, list[str]] = {}
        for who, path in conflicts:
            by_manager.setdefault(_manager_words(who), []).append(fp.path_string(path))
        lines = []
        for who_words in sorted(by_manager):
            lines.append(f"conflicts with {who_words}:")
            lines += [f"- {p}" for p in by_manager[who_words]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApplyConflict(message, causes, conflicts)


def _manager_words(who: ManagerId) -> str:
    """A manager as the conflict message names it: ``"kubectl-edit" using v1``."""
    words = json.dumps(who.manager)
    if who.subresource:
        words += f" with subresource {json.dumps(who.subresource)}"
    if who.operation == UPDATE:
        words += f" using {who.api_version}"
    return words


# -- the manager's name ----------------------------------------------------------------

def manager_from_user_agent(user_agent: str) -> str:
    """The default manager of a write without ``fieldManager``: the User-Agent up to its
    first ``/``, printable characters only, at most 128 bytes."""
    out = ""
    for char in user_agent.split("/")[0]:
        if not char.isprintable():
            continue
        if len((out + char).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += char
    return out
