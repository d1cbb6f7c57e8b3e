"""Request bodies for the API fuzzer: valid objects of every served kind first, then the
same objects grown from the Kubernetes type table (``kubelet_sim.api.kube_types``) and
mutated — values of the wrong JSON type anywhere, huge numbers, nesting 500+ deep, very
long strings, NUL bytes — and raw bodies no decoder should like."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

from hypothesis import strategies as st

from kubelet_sim.api import kube_types
from kubelet_sim.apiserver.http.resources import ApiResource
from tests.kubelet_sim.apiserver.http_api.encoding.samples import simulator_objects

JSON = dict[str, Any]
NAMESPACE = "fuzz"  # every namespaced request goes here (or to a namespace that is not)
NAMES = ("fuzz-a", "fuzz-b")
LABEL = {"fuzz": "yes"}  # on every valid object: deletecollection of cluster kinds selects it
MAX_DEPTH = 3  # how deep the schema-grown values go

# Values of every JSON type and none of the expected ones, for anywhere in a body.
DEEP = 600
WRONG: tuple[Any, ...] = (
    "x", "", 5, -1, 0, 1.5, True, False, None, [], {}, [1, "a"], {"a": 1},
    2 ** 64, -(2 ** 63) - 1, 10 ** 400, 1e308, "1" * 5000, "9" * 400, "a\x00b", "\x00",
    "x" * 70_000, "1e10000000", "-0", "NaN", "Infinity",
    {"$patch": "delete"}, {"$patch": 5}, {"$retainKeys": "x"},
)
LONG_NAMES = ("Fuzz_Bad", "a" * 300, "x%00y", "-a-", "a.b.c")


def nested(depth: int, as_object: bool = False) -> str:
    """A placeholder for a value nested ``depth`` deep, spelled out by ``encode`` (Python's
    own JSON encoder gives up at about 1,000 levels)."""
    return f"@@deep-{depth}-{'object' if as_object else 'array'}@@"


_DEEP = re.compile(r'"@@deep-(\d+)-(object|array)@@"')


def _spelled(found: re.Match[str]) -> str:
    depth = int(found[1])
    if found[2] == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "1" + "]" * depth


def encode(doc: Any) -> bytes:
    """``doc`` as JSON, its deep-nesting placeholders spelled out."""
    return _DEEP.sub(_spelled, json.dumps(doc)).encode()


def _valid_seeds() -> dict[str, JSON]:
    """One valid object per served kind, as the simulator makes them, without what the
    server stamps, named ``fuzz-a`` and labelled ``fuzz=yes``."""
    seeds: dict[str, JSON] = {}
    for obj in simulator_objects():
        kind = f"{obj['apiVersion']}/{obj['kind']}"
        if kind in seeds:
            continue
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        for stamped in ("uid", "resourceVersion", "creationTimestamp", "managedFields",
                        "generation", "deletionTimestamp", "ownerReferences", "finalizers"):
            meta.pop(stamped, None)
        obj.pop("status", None) if obj["kind"] not in ("Node",) else None
        seeds[kind] = obj
    pvc_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    seeds["snapshot.storage.k8s.io/v1/VolumeSnapshot"] = {
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
        "metadata": {}, "spec": {"source": {"persistentVolumeClaimName": "fuzz-a"}}}
    seeds["snapshot.storage.k8s.io/v1/VolumeSnapshotContent"] = {
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
        "metadata": {}, "spec": {"deletionPolicy": "Delete", "driver": "hostpath.csi.k8s.io",
                                 "source": {"snapshotHandle": "snap-1"},
                                 "volumeSnapshotRef": {"name": "fuzz-a",
                                                       "namespace": NAMESPACE}}}
    seeds["snapshot.storage.k8s.io/v1/VolumeSnapshotClass"] = {
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
        "metadata": {}, "driver": "hostpath.csi.k8s.io", "deletionPolicy": "Delete"}
    seeds["apiextensions.k8s.io/v1/CustomResourceDefinition"] = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.fuzz.example.com"},
        "spec": {"group": "fuzz.example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}}
    seeds["v1/PersistentVolumeClaim"]["spec"] = pvc_spec
    return seeds


SEEDS = _valid_seeds()


def names(r: ApiResource) -> tuple[str, ...]:
    """The names the fuzzer's requests for ``r`` use: never one the cluster itself needs."""
    seed = SEEDS.get(f"{r.group_version}/{r.kind}")
    own = seed["metadata"].get("name") if seed and r.kind == "CustomResourceDefinition" else None
    return (*NAMES, own) if own else NAMES


def valid(r: ApiResource, name: str, namespace: str) -> JSON:
    """A valid object of ``r``'s kind named ``name`` (the seed, renamed)."""
    seed = SEEDS.get(f"{r.group_version}/{r.kind}")
    obj: JSON = copy.deepcopy(seed) if seed else {"apiVersion": r.group_version,
                                                  "kind": r.kind, "metadata": {}}
    meta: JSON = obj.setdefault("metadata", {})
    if r.kind != "CustomResourceDefinition":
        meta["name"] = name
    meta["labels"] = {**meta.get("labels", {}), **LABEL}
    if r.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if r.kind == "Binding":
        obj["target"] = {"apiVersion": "v1", "kind": "Node", "name": "node-1"}
    return obj


# -- values from the type table ---------------------------------------------------------

SPECIAL: dict[str, st.SearchStrategy[Any]] = {
    "Quantity": st.sampled_from(["1", "100m", "1Gi", "5e3", "0.5", "1e5000", "+1Ki"]),
    "Time": st.just("2024-05-01T10:00:00Z"),
    "MicroTime": st.just("2024-05-01T10:00:00.123456Z"),
    "Duration": st.sampled_from(["1s", "5m"]),
    "IntOrString": st.sampled_from([1, 80, "80", "25%", "http"]),
    "RawExtension": st.just({}),
    "FieldsV1": st.just({}),
}
SCALAR: dict[str, st.SearchStrategy[Any]] = {
    "string": st.sampled_from(["a", "web", "Always", "TCP", "ReadWriteOnce", "node-1",
                               "fuzz-a", "Exists", "NoSchedule", ""]),
    "bool": st.booleans(),
    "[]byte": st.just(base64.b64encode(b"fuzz").decode()),
}


def value(ref: kube_types.TypeRef, depth: int = 0) -> st.SearchStrategy[Any]:
    """A value of the type ``ref`` names, as the type table describes it."""
    ref = kube_types.resolve(ref)
    if isinstance(ref, dict) and "slice" in ref:
        if depth >= MAX_DEPTH:
            return st.just([])
        return st.lists(value(ref["slice"], depth + 1), max_size=2)
    if isinstance(ref, dict) and "map" in ref:
        if depth >= MAX_DEPTH:
            return st.just({})
        return st.dictionaries(st.sampled_from(["a", "b", "app", "storage"]),
                               value(ref["map"]["value"], depth + 1), max_size=2)
    if isinstance(ref, str):
        if ref in SCALAR:
            return SCALAR[ref]
        if ref in kube_types.SCALARS:
            return st.integers(-2, 100)
        special = kube_types.special_of(ref)
        if special is not None:
            return SPECIAL.get(special, st.just({}))
        struct = kube_types.struct_of(ref)
        if struct is not None:
            return structure(struct.key, depth)
    return st.just(None)


def structure(key: str, depth: int = 0) -> st.SearchStrategy[JSON]:
    """An object of the struct type ``key`` with up to three of its fields set."""
    info = kube_types.type_info(key)
    fields = [f for f in (info.json_fields() if info else []) if f.json]
    if depth >= MAX_DEPTH or not fields:
        return st.just({})
    chosen = st.lists(st.sampled_from(fields), max_size=3, unique_by=lambda f: f.json)
    return chosen.flatmap(lambda picked: st.fixed_dictionaries(
        {f.json: value(f.type, depth + 1) for f in picked}))


def grown(r: ApiResource, base: JSON) -> st.SearchStrategy[JSON]:
    """``base`` with fields of its kind's schema added (the type table's types)."""
    key = kube_types.kind_type(r.group_version, r.kind)
    if key is None:
        return st.just(base)

    def merge(extra: JSON) -> JSON:
        out = copy.deepcopy(base)
        for name, v in extra.items():
            if name in ("apiVersion", "kind"):
                continue
            if isinstance(v, dict) and isinstance(out.get(name), dict):
                out[name] = {**out[name], **v}
            else:
                out[name] = v
        return out
    return structure(key).map(merge)


# -- mutations --------------------------------------------------------------------------

def paths_in(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a member or element of ``doc`` (keys and indexes)."""
    out: list[tuple[Any, ...]] = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(paths_in(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(paths_in(v, (*prefix, i)))
    return out


def replaced(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.copy(doc)
    inner = doc[path[0]] if len(path) > 1 else None  # the last step may add a member
    out[path[0]] = replaced(inner, path[1:], new)
    return out


def wrong_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(WRONG),
        st.sampled_from([nested(DEEP), nested(DEEP, as_object=True), nested(2000)]),
        st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
    )


@st.composite
def mutated(draw: st.DrawFn, doc: JSON) -> JSON:
    """``doc`` with one to three members replaced by values of the wrong kind, or a
    member added under a name no schema has."""
    out: Any = doc
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths_in(out)))
        if draw(st.booleans()) or not where:
            target = draw(st.sampled_from([p for p in paths_in(out)
                                           if isinstance(_at(out, p), dict)] or [()]))
            member = draw(st.sampled_from(["bogus", "spec", "metadata", "status", "$patch",
                                           "a\x00b", "x" * 300]))
            where = (*target, member)
            if not isinstance(_at(out, target), dict):
                continue
        out = replaced(out, where, draw(wrong_values()))
    return out if isinstance(out, dict) else {"value": out}


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def object_bodies(r: ApiResource, name: str, namespace: str) -> st.SearchStrategy[Any]:
    """Objects for create, update and apply: valid, schema-grown, or mutated."""
    base = valid(r, name, namespace)
    return st.one_of(st.just(base), grown(r, base), grown(r, base).flatmap(mutated),
                     mutated(base))


# -- patches ----------------------------------------------------------------------------

def pointer(path: tuple[Any, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


@st.composite
def json_patches(draw: st.DrawFn, base: JSON) -> Any:
    """RFC 6902 patches over ``base``'s paths, sound or not."""
    paths = [pointer(p) for p in paths_in(base)]
    path = st.one_of(st.sampled_from(paths), st.sampled_from(
        ["", "/", "/metadata/labels/new", "/spec/containers/-", "/a/~2", "/spec/x/0/y",
         "/metadata/labels/" + "k" * 300, 5, None, ["a"]]))
    op = st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "remove", "replace", "test", "move", "copy", "bogus",
                                5])},
        optional={"path": path, "from": path,
                  "value": st.one_of(st.sampled_from(["x", {}, [], None]), wrong_values())})
    return draw(st.one_of(st.lists(op, max_size=4), st.sampled_from([{}, "x", 5, None]),
                          st.just([nested(DEEP)])))


@st.composite
def merge_patches(draw: st.DrawFn, r: ApiResource, base: JSON) -> Any:
    """RFC 7386 and strategic merge patches: a part of an object, maybe mutated, maybe with
    strategic merge directives of the wrong types."""
    part = {k: v for k, v in base.items() if k in ("metadata", "spec")}
    if not part:
        part = {"metadata": {"labels": {"x": "y"}}}
    # a copy: the directive goes in below, and a drawn value must not change later
    patch = copy.deepcopy(draw(st.one_of(st.just(part), grown(r, {}), mutated(part))))
    if draw(st.booleans()):
        directive = draw(st.sampled_from([
            ("$patch", "delete"), ("$patch", "replace"), ("$patch", 5), ("$patch", "bogus"),
            ("$retainKeys", "x"), ("$retainKeys", [5]), ("$setElementOrder/containers", "x"),
            ("$setElementOrder/containers", [{"name": 5}]),
            ("$deleteFromPrimitiveList/finalizers", "x"), ("$deleteFromPrimitiveList/x", [{}]),
        ]))
        where = draw(st.sampled_from([()] + [p for p in paths_in(patch)
                                             if isinstance(_at(patch, p), dict)]))
        target = _at(patch, where)
        if isinstance(target, dict):
            target[directive[0]] = directive[1]
    return patch if isinstance(patch, dict) else {"spec": patch}


# -- raw bodies -------------------------------------------------------------------------

GARBAGE: tuple[bytes, ...] = (
    b"", b"{", b"[", b"null", b"\x00" * 64, b"\xff\xfe\xfd", b"k8s\x00", b"k8s\x00\x0a\xff\xff",
    b"k8s\x00" + bytes(range(256)), b"\n\x04\n\x02v1\x12\x03Pod",
    b"apiVersion: v1\nkind: Pod\nmetadata: {name: fuzz-a}\n", b"- a\n- : b:\n  c",
    b"&a [*a, *a, *a]", b"{" * 10_000, b"[" * 100_000, b'{"a":' * 600 + b"1" + b"}" * 600,
    b'{"metadata": {"name": "fuzz-a"}, "metadata": 5}', json.dumps({"a": "\x00"}).encode(),
    b'{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "' + b"a" * 300_000 + b'"}}',
)


def raw_bodies() -> st.SearchStrategy[bytes]:
    return st.one_of(st.sampled_from(GARBAGE), st.binary(max_size=64))
