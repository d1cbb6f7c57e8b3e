"""The API fuzzer's requests: for one served resource and verb (as discovery lists them,
``kubelet_sim.apiserver.http.resources``), its URL, query, body, content type, Accept and
token, drawn mostly sound and partly not."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from kubelet_sim.apiserver.http.resources import (
    POD_BINDING,
    POD_CONNECT,
    POD_EVICTION,
    RESOURCES,
    ApiResource,
    subresources,
)
from tests.kubelet_sim.apiserver.http_api.fuzz_bodies import (
    LABEL,
    LONG_NAMES,
    NAMESPACE,
    encode,
    json_patches,
    merge_patches,
    names,
    object_bodies,
    raw_bodies,
    valid,
)
from tests.kubelet_sim.apiserver.http_api.fuzz_harness import PROTOBUF, Request

JSON_TYPE = "application/json"
JSON_ONLY_GROUPS = ("snapshot.storage.k8s.io",)
PATCH_TYPES = {"json": "application/json-patch+json", "merge": "application/merge-patch+json",
               "strategic": "application/strategic-merge-patch+json",
               "apply": "application/apply-patch+yaml"}
ODD_TYPES = ("text/plain", "application/yaml", PROTOBUF, "", "application/x-www-form-urlencoded",
             "application/json; charset=latin1", "multipart/form-data; boundary=x",
             "application/cbor", "*/*", "application/json-patch+json",
             "application/apply-patch+cbor")
ACCEPTS = ("application/json", "application/json", "application/json", f"{PROTOBUF}, */*",
           PROTOBUF, "application/yaml", "text/plain",
           "application/json;as=Table;g=meta.k8s.io;v=v1",
           "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "",
           "image/png", "*/*")


def _token(rv: Any, start: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": rv,
                                                "start": start}).encode()).decode()


CONTINUE = ("abc", "", "=", "%%%", base64.b64encode(b"\xff" * 40).decode(),
            _token(1, "a"), _token(10 ** 30, 5), _token("x", None), _token(-1, 1e999),
            base64.urlsafe_b64encode(b'{"start": 1e999}').decode(),
            base64.urlsafe_b64encode(json.dumps({"start": 10 ** 400}).encode()).decode(),
            base64.urlsafe_b64encode(b"[" * 1000).decode(), "a" * 5000)
QUERY: dict[str, tuple[str, ...]] = {
    "resourceVersion": ("", "0", "1", "abc", "-1", "99999999999999999999999", "1e3", "\x00"),
    "resourceVersionMatch": ("NotOlderThan", "Exact", "Bogus", ""),
    "timeoutSeconds": ("1", "0", "-1", "abc", "9" * 400, "1.5", "99999999999"),
    "limit": ("1", "2", "0", "-5", "abc", "9" * 30, "1.5"),
    "continue": CONTINUE,
    "labelSelector": ("app=web", "fuzz=yes", "a in (b,c)", "!a", "!!", "a=" + "x" * 70,
                      "a=b\x00", "=", "a,,b", "x notin ()", "a>1", "a=(", "k" * 300 + "=v"),
    "fieldSelector": ("metadata.name=fuzz-a", "spec.nodeName=", "bogus=1", "a==b==c",
                      "metadata.name!=x", "status.phase=Running", "=", ",", "metadata.name"),
    "dryRun": ("All", "", "bogus", "all"),
    "fieldValidation": ("Strict", "Warn", "Ignore", "bogus", ""),
    "gracePeriodSeconds": ("0", "30", "-1", "abc", "9" * 25, "1.5", ""),
    "propagationPolicy": ("Foreground", "Background", "Orphan", "Bogus", ""),
    "fieldManager": ("fuzz", "", "x" * 200, "a\x00b"),
    "force": ("true", "false", "maybe"),
    "allowWatchBookmarks": ("true", "bogus"),
    "sendInitialEvents": ("true", "false", "bogus"),
    "orphanDependents": ("true", "false", "bogus"),
    "pretty": ("true", "x"),
    "watch": ("true", "false", "1", "bogus"),
    "includeObject": ("Object", "None", "Metadata", "Bogus"),
    "bogus": ("1",),
}


@dataclass(frozen=True)
class Target:
    """One thing the fuzzer exercises: a resource, a verb, maybe a subresource."""

    resource: ApiResource
    verb: str  # get list watch create update patch delete deletecollection
    subresource: str = ""

    @property
    def label(self) -> str:
        r = self.resource
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{r.group_version}/{r.plural}{sub}:{self.verb}"


def targets() -> list[Target]:
    """Every served resource with every verb discovery lists for it, and its subresources'."""
    out: list[Target] = []
    for r in RESOURCES:
        out.extend(Target(r, verb) for verb in r.verbs)
        if not r.stored:
            continue
        for sub in subresources(r):
            if sub in POD_CONNECT:
                out.append(Target(r, "get", sub.name))
                continue
            if sub in (POD_BINDING, POD_EVICTION):
                out.append(Target(r, "create", sub.name))
                continue
            out.extend(Target(r, verb, sub.name) for verb in sub.verbs)
    return out


def base_path(r: ApiResource, namespace: str) -> str:
    prefix = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
    scope = f"/namespaces/{quote(namespace, safe='')}" if r.namespaced else ""
    return f"{prefix}{scope}/{r.plural}"


@st.composite
def queries(draw: st.DrawFn, allowed: tuple[str, ...]) -> dict[str, str]:
    """Query parameters, a few of them, each with a sound or a bogus value."""
    picked = draw(st.lists(st.sampled_from(allowed), max_size=3, unique=True))
    return {name: draw(st.sampled_from(QUERY[name])) for name in picked}


def encoded(query: dict[str, str]) -> str:
    return "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in query.items())


READ_PARAMS = ("resourceVersion", "resourceVersionMatch", "limit", "continue", "labelSelector",
               "fieldSelector", "timeoutSeconds", "allowWatchBookmarks", "sendInitialEvents",
               "pretty", "watch", "includeObject", "bogus")
WRITE_PARAMS = ("dryRun", "fieldValidation", "fieldManager", "pretty", "bogus",
                "resourceVersion")
DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "propagationPolicy", "orphanDependents",
                 "pretty", "bogus")


@st.composite
def delete_options(draw: st.DrawFn) -> Any:
    sound = st.fixed_dictionaries({}, optional={
        "gracePeriodSeconds": st.sampled_from([0, 1, 30]),
        "propagationPolicy": st.sampled_from(["Background", "Foreground", "Orphan"]),
        "dryRun": st.just(["All"]),
        "preconditions": st.just({"uid": "nope"}),
    }).map(lambda o: {"apiVersion": "v1", "kind": "DeleteOptions", **o})
    wrong = st.sampled_from([
        {"dryRun": "All"}, {"gracePeriodSeconds": "abc"}, {"gracePeriodSeconds": 1.5},
        {"gracePeriodSeconds": 10 ** 30}, {"preconditions": "x"}, {"propagationPolicy": 5},
        {"preconditions": {"resourceVersion": 5}}, {"orphanDependents": "x"}, "x", [], 5,
        {"kind": "Pod"}, {"apiVersion": "v9", "kind": "DeleteOptions"}])
    return draw(st.one_of(sound, wrong))


@st.composite
def requests(draw: st.DrawFn, target: Target) -> Request:
    r, verb, sub = target.resource, target.verb, target.subresource
    namespace = draw(st.sampled_from([NAMESPACE] * 6 + ["nope", "Bad_NS"]))
    name = draw(st.sampled_from(names(r) * 4 + LONG_NAMES))
    collection = base_path(r, namespace)
    item = f"{collection}/{quote(name, safe='')}" + (f"/{sub}" if sub else "")
    accept = draw(st.sampled_from(ACCEPTS))
    method, path, query, body, content_type = "GET", item, {}, None, None
    watch = False
    label = f"{sub}/{verb}" if sub else verb
    if verb in ("get", "list", "watch"):
        path = item if verb == "get" else collection
        query = draw(queries(READ_PARAMS if verb != "get" else ("resourceVersion", "pretty",
                                                                  "bogus")))
        if verb == "watch":
            query = {"watch": "true", "timeoutSeconds": "1", **query}
        watch = query.get("watch") in ("true", "1")
    elif verb in ("create", "update"):
        method = "POST" if verb == "create" else "PUT"
        path = collection if verb == "create" and not sub else item
        query = draw(queries(WRITE_PARAMS))
        if sub == "eviction":
            doc: Any = {"apiVersion": "policy/v1", "kind": "Eviction",
                        "metadata": {"name": name, "namespace": namespace}}
            if draw(st.booleans()):
                doc["deleteOptions"] = draw(delete_options())
        elif sub == "binding":
            doc = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": name, "namespace": namespace},
                   "target": {"apiVersion": "v1", "kind": "Node",
                              "name": draw(st.sampled_from(["node-1", "missing", 5]))}}
        else:
            doc = draw(object_bodies(r, name, namespace))
        body, content_type = encode(doc), JSON_TYPE
    elif verb == "patch":
        method, path = "PATCH", item
        form = draw(st.sampled_from(sorted(PATCH_TYPES)))
        label = f"{label}/{form}"
        content_type = PATCH_TYPES[form]
        base = valid(r, name, namespace)
        query = draw(queries((*WRITE_PARAMS, "force")))
        if form == "json":
            patch: Any = draw(json_patches(base))
        elif form == "apply":
            patch = draw(object_bodies(r, name, namespace))
            if draw(st.integers(0, 9)):
                query.setdefault("fieldManager", "fuzz")
        else:
            patch = draw(merge_patches(r, base))
        body = encode(patch)
    elif verb == "delete":
        method, path = "DELETE", item
        query = draw(queries(DELETE_PARAMS))
        if draw(st.booleans()):
            body, content_type = encode(draw(delete_options())), JSON_TYPE
    elif verb == "deletecollection":
        method, path = "DELETE", collection
        query = draw(queries((*DELETE_PARAMS, "fieldSelector", "limit", "continue")))
        if not r.namespaced:  # never the cluster's own objects (its nodes, its driver)
            query["labelSelector"] = ",".join(f"{k}={v}" for k, v in LABEL.items())
    else:
        raise AssertionError(f"no requests for {target.label}")
    # the odd ones: a raw body, another content type, no or a forged token
    if method != "GET" and draw(st.integers(0, 5)) == 0:
        body = draw(raw_bodies())
    if body is not None and draw(st.integers(0, 5)) == 0:
        content_type = draw(st.sampled_from(ODD_TYPES))
    token: str | None = draw(st.sampled_from([""] * 30 + [None, "forged", "", "a" * 5000]))
    full = path + ("?" + encoded(query) if query else "")
    return Request(method, full, body, content_type, accept, token, watch,
                   f"{r.plural}:{label}", r.group in JSON_ONLY_GROUPS)
