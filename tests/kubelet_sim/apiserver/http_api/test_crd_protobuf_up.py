"""CustomResourceDefinitions in protobuf against a running `up`, as the apiextensions
clientset (client-go) speaks it: created, read, listed and watched in
``application/vnd.kubernetes.protobuf``, the answers read with the compiled apiextensions
classes; a definition created in protobuf reads back as the one created in JSON does. The
custom resources it defines stay JSON only (415/406), as in kube-apiserver."""

from __future__ import annotations

import base64
import copy
import json
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from k8s_protos import apiextensions_v1_pb2 as ext
from k8s_protos import meta_v1_pb2, runtime_pb2
from tests.fixtures.up_process import running_up

from .conftest import needs_kubectl
from .encoding.crd_samples import gadgets_crd
from .test_protobuf_up import CLIENT_GO_ACCEPT, MAGIC, PROTOBUF, Cluster, Raw, enveloped

pytestmark = needs_kubectl

API_VERSION = "apiextensions.k8s.io/v1"
CRDS = f"/apis/{API_VERSION}/customresourcedefinitions"
JSON = "application/json"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_up() as up:
        kubeconfig = yaml.safe_load(Path(up.kubeconfig).read_text())
        server = kubeconfig["clusters"][0]["cluster"]
        tls = ssl.create_default_context(cadata=base64.b64decode(
            server["certificate-authority-data"]).decode())
        host, port = server["server"].removeprefix("https://").rsplit(":", 1)
        yield Cluster(up, Raw(host, int(port), kubeconfig["users"][0]["user"]["token"], tls))


def _definition(data: bytes) -> ext.CustomResourceDefinition:
    assert data[:4] == MAGIC
    unknown = runtime_pb2.Unknown.FromString(data[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == (
        API_VERSION, "CustomResourceDefinition")
    return ext.CustomResourceDefinition.FromString(unknown.raw)


def _in_protobuf(doc: dict[str, Any]) -> bytes:
    """A definition as a protobuf client sends it (the converter stands in for client-go
    here; the other direction is read with the compiled classes)."""
    from kubelet_sim.apiserver.http.encoding import envelope

    data = envelope.encode(doc)
    assert data is not None
    return data


def _comparable(crd: dict[str, Any]) -> dict[str, Any]:
    """A definition as read in JSON, without what differs between two definitions of the
    same schema (name, group, names, uid, versions, times)."""
    doc = copy.deepcopy(crd)
    for key in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields",
                "generation"):
        doc["metadata"].pop(key, None)
    doc["spec"].pop("group")
    doc["spec"].pop("names")
    doc["status"].pop("acceptedNames")
    for condition in doc.get("status", {}).get("conditions", []):
        condition.pop("lastTransitionTime", None)
    return doc


@pytest.fixture(scope="module")
def created(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """The same definition created in protobuf (Gadget in gadgets.example.com) and in JSON
    (Gizmo in twins.example.com: a kind is served in one group only here); each as its
    creation answered."""
    raw = cluster.raw
    in_protobuf = raw.send("POST", CRDS, _in_protobuf(gadgets_crd()))
    assert in_protobuf.status == 201, in_protobuf.body[:500]
    assert in_protobuf.content_type == PROTOBUF
    in_json = raw.send("POST", CRDS, json.dumps(gadgets_crd("twins", "Gizmo")).encode(),
                       accept=JSON, content_type=JSON)
    assert in_json.status == 201, in_json.body[:500]
    return {"protobuf": {"answer": _definition(in_protobuf.body)}, "json": in_json.json()}


def test_a_definition_created_in_protobuf_reads_back_in_json_as_one_created_in_json(
        cluster: Cluster, created: dict[str, Any]) -> None:
    raw = cluster.raw
    from_protobuf = raw.send("GET", f"{CRDS}/gadgets.gadgets.example.com", accept=JSON).json()
    from_json = raw.send("GET", f"{CRDS}/gizmos.twins.example.com", accept=JSON).json()
    assert _comparable(from_protobuf) == _comparable(from_json)
    sent = gadgets_crd()
    assert from_protobuf["spec"]["versions"] == sent["spec"]["versions"]
    assert from_protobuf["spec"]["names"] == sent["spec"]["names"]
    assert {c["type"]: c["status"] for c in from_protobuf["status"]["conditions"]} == {
        "NamesAccepted": "True", "Established": "True"}
    answer = created["protobuf"]["answer"]
    assert answer.metadata.uid == from_protobuf["metadata"]["uid"]


def _comparable_message(crd: ext.CustomResourceDefinition) -> ext.CustomResourceDefinition:
    """:func:`_comparable` for a definition read in protobuf."""
    out = ext.CustomResourceDefinition()
    out.CopyFrom(crd)
    for name in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields",
                 "generation"):
        out.metadata.ClearField(name)
    out.spec.ClearField("group")
    out.spec.ClearField("names")
    out.status.ClearField("acceptedNames")
    for condition in out.status.conditions:
        condition.ClearField("lastTransitionTime")
    return out


def test_a_definition_read_in_protobuf_holds_the_schema_in_apiextensions_messages(
        cluster: Cluster, created: dict[str, Any]) -> None:
    raw = cluster.raw
    read: list[ext.CustomResourceDefinition] = []
    for name in ("gadgets.gadgets.example.com", "gizmos.twins.example.com"):
        got = raw.send("GET", f"{CRDS}/{name}")
        assert got.status == 200 and got.content_type == PROTOBUF
        crd = _definition(got.body)
        read.append(crd)
        version = crd.spec.versions[0]
        spec = version.schema.openAPIV3Schema.properties["spec"]
        assert json.loads(spec.properties["size"].default.raw) == 3
        assert (spec.properties["size"].minimum, spec.properties["size"].maximum) == (1, 10)
        assert json.loads(spec.properties["settings"].default.raw)["retries"] == [
            1, 2.5, {"deep": None}]
        assert [e.raw for e in spec.properties["mode"].enum] == [b'"fast"', b'"slow"', b""]
        assert spec.properties["tags"].items.schema.type == "string"
        assert spec.properties["labels"].additionalProperties.schema.type == "string"
        settings = spec.properties["settings"].additionalProperties
        assert settings.allows and not settings.HasField("schema")
        ports = spec.properties["ports"]
        assert list(ports.xKubernetesListMapKeys) == ["name"]
        assert ports.items.schema.properties["target"].xKubernetesIntOrString
        rules = spec.properties["limits"].xKubernetesValidations
        assert [r.rule for r in rules] == [
            "has(self.cpu)", "!oldSelf.hasValue() || self == oldSelf.value()"]
        assert version.subresources.HasField("status")
        assert crd.spec.versions[1].deprecationWarning == "use v1"
        established = {c.type: c.status for c in crd.status.conditions}
        assert established["Established"] == "True"
        assert crd.status.conditions[0].lastTransitionTime.seconds > 0
        assert list(crd.status.storedVersions) == ["v1"]
    # the one created in protobuf and the one created in JSON: the same message
    assert _comparable_message(read[0]) == _comparable_message(read[1])


def test_definitions_are_listed_in_protobuf(cluster: Cluster,
                                            created: dict[str, Any]) -> None:
    listed = cluster.raw.send("GET", f"{CRDS}?labelSelector=sample%3Dgadgets")
    unknown = runtime_pb2.Unknown.FromString(listed.body[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == (
        API_VERSION, "CustomResourceDefinitionList")
    crds = ext.CustomResourceDefinitionList.FromString(unknown.raw)
    assert crds.metadata.resourceVersion
    assert sorted(c.metadata.name for c in crds.items) == [
        "gadgets.gadgets.example.com", "gizmos.twins.example.com"]
    as_json = cluster.raw.send("GET", f"{CRDS}?labelSelector=sample%3Dgadgets",
                               accept=JSON).json()
    assert [c.metadata.uid for c in crds.items] == [
        c["metadata"]["uid"] for c in as_json["items"]]


def _frames_until_deleted(response: Any) -> list[meta_v1_pb2.WatchEvent]:
    events: list[meta_v1_pb2.WatchEvent] = []
    while not events or events[-1].type != "DELETED":
        (length,) = struct.unpack(">I", response.read(4))
        events.append(meta_v1_pb2.WatchEvent.FromString(response.read(length)))
    return events


def test_a_definition_is_watched_in_protobuf(cluster: Cluster,
                                             created: dict[str, Any]) -> None:
    raw = cluster.raw
    listed = raw.send("GET", CRDS)
    since = ext.CustomResourceDefinitionList.FromString(
        runtime_pb2.Unknown.FromString(listed.body[4:]).raw).metadata.resourceVersion
    connection = raw.connect(timeout=30)
    connection.request("GET", f"{CRDS}?watch=1&resourceVersion={since}"
                       "&labelSelector=sample%3Dwatched&timeoutSeconds=20",
                       headers={"Authorization": f"Bearer {raw.token}",
                                "Accept": CLIENT_GO_ACCEPT})
    response = connection.getresponse()
    watched = gadgets_crd("watched", "Watched")
    watched["metadata"]["labels"] = {"sample": "watched"}
    try:
        assert response.status == 200
        assert response.getheader("Content-Type") == f"{PROTOBUF};stream=watch"
        assert raw.send("POST", CRDS, _in_protobuf(watched)).status == 201
        name = watched["metadata"]["name"]
        assert raw.send("DELETE", f"{CRDS}/{name}").status == 200
        events = _frames_until_deleted(response)
    finally:
        connection.close()
    assert events[0].type == "ADDED"  # then MODIFIED (established, finalized), DELETED
    assert {e.type for e in events[1:-1]} <= {"MODIFIED"}
    for event in events:
        crd = _definition(event.object.raw)
        assert crd.metadata.name == "watcheds.watched.example.com"
        schema = crd.spec.versions[0].schema.openAPIV3Schema
        assert schema.properties["spec"].properties["tags"].items.schema.type == "string"


def test_what_a_go_client_sends_is_stored_as_go_reads_it(cluster: Cluster) -> None:
    """The zero scalars gogo writes stay out of the JSON where the field is ``omitempty``;
    pointers keep theirs; a float64 with an integral value is written without fraction."""
    crd = ext.CustomResourceDefinition()
    crd.metadata.name = "things.example.com"
    crd.spec.group, crd.spec.scope = "example.com", "Cluster"
    crd.spec.names.plural, crd.spec.names.kind = "things", "Thing"
    crd.spec.preserveUnknownFields = False
    version = crd.spec.versions.add(name="v1", served=True, storage=True, deprecated=False)
    root = version.schema.openAPIV3Schema
    root.type, root.description, root.nullable = "object", "", False
    name = root.properties["name"]  # a zero behind a pointer (apiextensions refuses
    name.type, name.minLength = "string", 0  # x-kubernetes-preserve-unknown-fields: false)
    count = root.properties["count"]
    count.type, count.maximum, count.exclusiveMaximum = "number", 20.0, False
    count.default.raw = b"1.5"
    labels = root.properties["labels"]
    labels.type = "object"
    labels.additionalProperties.allows = True
    labels.additionalProperties.schema.type = "string"
    answer = cluster.raw.send("POST", CRDS, enveloped(API_VERSION,
                                                      "CustomResourceDefinition", crd))
    assert answer.status == 201, answer.body[:500]
    doc = cluster.raw.send("GET", f"{CRDS}/things.example.com", accept=JSON).json()
    assert doc["spec"]["versions"] == [{
        "name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 0},
                "count": {"type": "number", "maximum": 20, "default": 1.5},
                "labels": {"type": "object",
                           "additionalProperties": {"type": "string"}}}}}}]
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    made = cluster.raw.send("POST", "/apis/example.com/v1/things", json.dumps(thing).encode(),
                            accept=JSON, content_type=JSON)
    assert made.status == 201, made.body[:500]
    assert made.json()["count"] == 1.5  # the default the protobuf definition carried


def test_the_custom_resources_of_a_definition_stay_json_only(
        cluster: Cluster, created: dict[str, Any]) -> None:
    raw = cluster.raw
    path = "/apis/gadgets.example.com/v1/namespaces/default/gadgets"
    gadget = {"apiVersion": "gadgets.example.com/v1", "kind": "Gadget",
              "metadata": {"name": "g"}, "spec": {"size": 4}}
    refused = raw.send("POST", path, MAGIC + b"\x0a\x00")
    assert refused.status == 415
    assert refused.json()["reason"] == "UnsupportedMediaType"
    made = raw.send("POST", path, json.dumps(gadget).encode(), content_type=JSON)
    assert made.status == 201 and made.content_type == JSON  # client-go's Accept allows JSON
    assert made.json()["spec"]["mode"] == "fast"  # the schema's default
    only_protobuf = raw.send("GET", f"{path}/g", accept=PROTOBUF)
    assert only_protobuf.status == 406
    assert only_protobuf.json()["reason"] == "NotAcceptable"


def test_additional_properties_neither_boolean_nor_schema_cannot_be_decoded(
        cluster: Cluster) -> None:
    crd = gadgets_crd("odd", "Odd")
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["additionalProperties"] = "yes"
    answer = cluster.raw.send("POST", CRDS, json.dumps(crd).encode(), accept=JSON,
                              content_type=JSON)
    assert answer.status == 400
    status = answer.json()
    assert (status["reason"], status["message"]) == (
        "BadRequest", 'CustomResourceDefinition in version "v1" cannot be handled as a '
        "CustomResourceDefinition: boolean or JSON schema expected")


def _content_types(document: dict[str, Any], path: str) -> dict[str, set[str]]:
    """Each operation of ``path`` → the media types its request and 200 answer list."""
    out: dict[str, set[str]] = {}
    for method, operation in document["paths"][path].items():
        if not isinstance(operation, dict) or "responses" not in operation:
            continue
        types = set(operation["responses"]["200"].get("content", {}))
        types |= set(operation.get("requestBody", {}).get("content", {}))
        out[method] = types
    return out


def test_openapi_lists_protobuf_for_definitions_and_not_for_their_custom_resources(
        cluster: Cluster, created: dict[str, Any]) -> None:
    raw = cluster.raw
    index = raw.send("GET", "/openapi/v3", accept=JSON).json()["paths"]

    def document(key: str) -> dict[str, Any]:
        answer = raw.send("GET", index[key]["serverRelativeURL"], accept=JSON)
        assert answer.status == 200, key
        return dict(answer.json())

    definitions = _content_types(document("apis/apiextensions.k8s.io/v1"), CRDS)
    assert {PROTOBUF, f"{PROTOBUF};stream=watch"} <= definitions["get"]
    assert PROTOBUF in definitions["post"]
    gadgets = _content_types(document("apis/gadgets.example.com/v1"),
                             "/apis/gadgets.example.com/v1/namespaces/{namespace}/gadgets")
    assert gadgets["get"] == {JSON, "application/yaml"}
    assert gadgets["post"] == {JSON, "application/yaml"}
