"""Protobuf (``application/vnd.kubernetes.protobuf``) against a running `up`, as client-go
and kubectl speak it: bodies and answers enveloped (``k8s\\x00`` + runtime.Unknown), built
and read here with the generated classes; watch streams as length-prefixed frames; errors
as protobuf Status; custom resources JSON only (415/406); bad bytes a 400 Status."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from k8s_protos import (
    authentication_v1_pb2,
    authorization_v1_pb2,
    coordination_v1_pb2,
    core_v1_pb2,
    events_v1_pb2,
    meta_v1_pb2,
    networking_v1_pb2,
    policy_v1_pb2,
    runtime_pb2,
    storage_v1_pb2,
)
from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT, Up, running_up

from .conftest import needs_kubectl

pytestmark = needs_kubectl

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO_ACCEPT = f"{PROTOBUF}, */*"
MAGIC = b"k8s\x00"


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes

    def unknown(self) -> runtime_pb2.Unknown:
        assert self.content_type == PROTOBUF, (self.content_type, self.body[:200])
        assert self.body[:4] == MAGIC
        return runtime_pb2.Unknown.FromString(self.body[4:])

    def json(self) -> Any:
        assert self.content_type.startswith("application/json"), self.content_type
        return json.loads(self.body)


@dataclass
class Raw:
    """Raw HTTPS to the cluster's API server, with the kubeconfig's CA and token."""

    host: str
    port: int
    token: str
    tls: ssl.SSLContext

    def connect(self, timeout: float = 10) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.tls,
                                           timeout=timeout)

    def send(self, method: str, path: str, body: bytes | None = None, *,
             accept: str = CLIENT_GO_ACCEPT, content_type: str = PROTOBUF) -> Answer:
        connection = self.connect()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            return Answer(answer.status, answer.getheader("Content-Type", ""), answer.read())
        finally:
            connection.close()


def enveloped(api_version: str, kind: str, message: Any) -> bytes:
    unknown = runtime_pb2.Unknown(raw=message.SerializeToString(), contentEncoding="",
                                  contentType="")
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    return MAGIC + unknown.SerializeToString()


def status_of(answer: Answer) -> meta_v1_pb2.Status:
    unknown = answer.unknown()
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "Status")
    return meta_v1_pb2.Status.FromString(unknown.raw)


@dataclass
class Cluster:
    up: Up
    raw: Raw


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_up() as up:
        kubeconfig = yaml.safe_load(Path(up.kubeconfig).read_text())
        server = kubeconfig["clusters"][0]["cluster"]
        tls = ssl.create_default_context(cadata=base64.b64decode(
            server["certificate-authority-data"]).decode())
        host, port = server["server"].removeprefix("https://").rsplit(":", 1)
        yield Cluster(up, Raw(host, int(port), kubeconfig["users"][0]["user"]["token"], tls))


def pod_message(name: str) -> core_v1_pb2.Pod:
    pod = core_v1_pb2.Pod()
    pod.metadata.name = name
    pod.metadata.labels["app"] = "proto"
    container = pod.spec.containers.add(name="c", image="registry.k8s.io/pause:3.9")
    container.resources.requests["cpu"].string = "10m"
    container.ports.add(containerPort=8080, name="http", protocol="TCP")
    return pod


def test_a_pod_is_created_read_listed_patched_and_deleted_in_protobuf(
        cluster: Cluster) -> None:
    raw = cluster.raw
    created = raw.send("POST", "/api/v1/namespaces/default/pods",
                       enveloped("v1", "Pod", pod_message("proto-pod")))
    assert created.status == 201, created.body
    unknown = created.unknown()
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "Pod")
    pod = core_v1_pb2.Pod.FromString(unknown.raw)
    assert pod.metadata.uid and pod.metadata.resourceVersion
    assert pod.metadata.creationTimestamp.seconds > 0
    assert pod.spec.containers[0].resources.requests["cpu"].string == "10m"

    got = core_v1_pb2.Pod.FromString(
        raw.send("GET", "/api/v1/namespaces/default/pods/proto-pod").unknown().raw)
    assert got.metadata.uid == pod.metadata.uid

    listed = raw.send("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dproto")
    assert listed.unknown().typeMeta.kind == "PodList"
    pods = core_v1_pb2.PodList.FromString(listed.unknown().raw)
    assert [p.metadata.name for p in pods.items] == ["proto-pod"]
    assert pods.metadata.resourceVersion

    patched = raw.send("PATCH", "/api/v1/namespaces/default/pods/proto-pod",
                       json.dumps({"metadata": {"annotations": {"a": "b"}}}).encode(),
                       content_type="application/merge-patch+json")
    assert patched.status == 200, patched.body
    assert core_v1_pb2.Pod.FromString(patched.unknown().raw).metadata.annotations["a"] == "b"

    options = meta_v1_pb2.DeleteOptions(gracePeriodSeconds=0)
    options.preconditions.uid = pod.metadata.uid
    deleted = raw.send("DELETE", "/api/v1/namespaces/default/pods/proto-pod",
                       enveloped("v1", "DeleteOptions", options))
    assert deleted.status == 200, deleted.body
    assert deleted.unknown().typeMeta.kind == "Pod"
    gone = raw.send("GET", "/api/v1/namespaces/default/pods/proto-pod")
    assert gone.status == 404
    status = status_of(gone)
    assert (status.status, status.reason, status.code) == ("Failure", "NotFound", 404)
    assert status.details.name == "proto-pod"


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def lease_message(name: str) -> coordination_v1_pb2.Lease:
    lease = coordination_v1_pb2.Lease()
    lease.metadata.name = name
    lease.spec.holderIdentity = "proto-test"
    lease.spec.leaseDurationSeconds = 15
    lease.spec.renewTime.seconds, lease.spec.renewTime.nanos = 1_714_557_600, 123_456_000
    return lease


def test_a_lease_is_updated_in_protobuf_and_a_stale_update_is_a_protobuf_conflict(
        cluster: Cluster) -> None:
    raw = cluster.raw
    created = raw.send("POST", LEASES, enveloped("coordination.k8s.io/v1", "Lease",
                                                 lease_message("proto-lease")))
    assert created.status == 201, created.body
    lease = coordination_v1_pb2.Lease.FromString(created.unknown().raw)
    assert lease.spec.renewTime.nanos == 123_456_000  # a MicroTime keeps its microseconds
    first = coordination_v1_pb2.Lease()
    first.CopyFrom(lease)

    lease.spec.holderIdentity = "someone-else"
    updated = raw.send("PUT", f"{LEASES}/proto-lease",
                       enveloped("coordination.k8s.io/v1", "Lease", lease))
    assert updated.status == 200, updated.body
    after = coordination_v1_pb2.Lease.FromString(updated.unknown().raw)
    assert after.spec.holderIdentity == "someone-else"
    assert after.metadata.resourceVersion != first.metadata.resourceVersion

    first.spec.holderIdentity = "late"  # still the first resourceVersion
    stale = raw.send("PUT", f"{LEASES}/proto-lease",
                     enveloped("coordination.k8s.io/v1", "Lease", first))
    assert stale.status == 409
    assert status_of(stale).reason == "Conflict"
    assert raw.send("DELETE", f"{LEASES}/proto-lease").status == 200


def _frames(response: http.client.HTTPResponse, count: int) -> list[meta_v1_pb2.WatchEvent]:
    events: list[meta_v1_pb2.WatchEvent] = []
    while len(events) < count:
        (length,) = struct.unpack(">I", response.read(4))
        events.append(meta_v1_pb2.WatchEvent.FromString(response.read(length)))
    return events


def test_a_watch_over_protobuf_is_length_prefixed_watch_events(cluster: Cluster) -> None:
    raw = cluster.raw
    listed = raw.send("GET", "/api/v1/namespaces/default/pods")
    since = core_v1_pb2.PodList.FromString(listed.unknown().raw).metadata.resourceVersion
    connection = raw.connect(timeout=30)
    connection.request("GET", f"/api/v1/namespaces/default/pods?watch=1&resourceVersion="
                       f"{since}&labelSelector=app%3Dproto-watch&timeoutSeconds=20",
                       headers={"Authorization": f"Bearer {raw.token}",
                                "Accept": CLIENT_GO_ACCEPT})
    response = connection.getresponse()
    try:
        assert response.status == 200
        assert response.getheader("Content-Type") == f"{PROTOBUF};stream=watch"
        pod = pod_message("proto-watched")
        pod.metadata.labels["app"] = "proto-watch"
        assert raw.send("POST", "/api/v1/namespaces/default/pods",
                        enveloped("v1", "Pod", pod)).status == 201
        assert raw.send("DELETE", "/api/v1/namespaces/default/pods/proto-watched"
                        "?gracePeriodSeconds=0").status == 200
        events = _frames(response, 2)
    finally:
        connection.close()
    assert [e.type for e in events][:1] == ["ADDED"]
    for event in events:
        inner = event.object.raw
        assert inner[:4] == MAGIC
        unknown = runtime_pb2.Unknown.FromString(inner[4:])
        assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "Pod")
        assert core_v1_pb2.Pod.FromString(unknown.raw).metadata.name == "proto-watched"


def test_a_streaming_list_over_protobuf_ends_its_initial_events_with_a_bookmark(
        cluster: Cluster) -> None:
    # what client-go's reflector sends with WatchListClient (on by default in kubectl 1.35)
    connection = cluster.raw.connect(timeout=30)
    connection.request("GET", "/api/v1/nodes?watch=1&sendInitialEvents=true&allowWatchBookmarks"
                       "=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5",
                       headers={"Authorization": f"Bearer {cluster.raw.token}",
                                "Accept": CLIENT_GO_ACCEPT})
    response = connection.getresponse()
    events: list[meta_v1_pb2.WatchEvent] = []
    try:
        while not events or events[-1].type != "BOOKMARK":
            events.extend(_frames(response, 1))
    finally:
        connection.close()
    *added, bookmark = events
    assert {e.type for e in added} == {"ADDED"}
    names = [core_v1_pb2.Node.FromString(runtime_pb2.Unknown.FromString(e.object.raw[4:]).raw)
             .metadata.name for e in added]
    assert "node-1" in names
    marker = runtime_pb2.Unknown.FromString(bookmark.object.raw[4:])
    assert marker.typeMeta.kind == "Node"
    end = core_v1_pb2.Node.FromString(marker.raw).metadata
    assert end.annotations["k8s.io/initial-events-end"] == "true"
    assert end.resourceVersion


def test_every_built_in_list_reads_the_same_in_protobuf_and_json(cluster: Cluster) -> None:
    cluster.up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))
    cluster.up.kubectl("wait", "--for=condition=Ready", "pod/db", "--timeout=60s", timeout=90)
    raw = cluster.raw
    lists = {
        "/api/v1/nodes": core_v1_pb2.NodeList, "/api/v1/namespaces": core_v1_pb2.NamespaceList,
        "/api/v1/pods": core_v1_pb2.PodList, "/api/v1/events": core_v1_pb2.EventList,
        "/api/v1/persistentvolumeclaims": core_v1_pb2.PersistentVolumeClaimList,
        "/api/v1/persistentvolumes": core_v1_pb2.PersistentVolumeList,
        "/apis/storage.k8s.io/v1/csidrivers": storage_v1_pb2.CSIDriverList,
        "/apis/storage.k8s.io/v1/csinodes": storage_v1_pb2.CSINodeList,
        "/apis/storage.k8s.io/v1/storageclasses": storage_v1_pb2.StorageClassList,
        "/apis/storage.k8s.io/v1/volumeattachments": storage_v1_pb2.VolumeAttachmentList,
        "/apis/networking.k8s.io/v1/networkpolicies": networking_v1_pb2.NetworkPolicyList,
        "/apis/coordination.k8s.io/v1/leases": coordination_v1_pb2.LeaseList,
        "/apis/events.k8s.io/v1/events": events_v1_pb2.EventList,
    }
    for path, cls in lists.items():
        as_json = raw.send("GET", path, accept="application/json").json()
        message: Any = cls.FromString(raw.send("GET", path).unknown().raw)  # type: ignore[attr-defined]
        assert message.items or path.endswith("networkpolicies"), path
        assert [(i.metadata.name, i.metadata.uid) for i in message.items] == \
            [(i["metadata"]["name"], i["metadata"]["uid"]) for i in as_json["items"]], path
    claim = core_v1_pb2.PersistentVolumeClaimList.FromString(
        raw.send("GET", "/api/v1/persistentvolumeclaims").unknown().raw).items[0]
    assert (claim.status.phase, claim.status.capacity["storage"].string) == ("Bound", "2Gi")
    volume = core_v1_pb2.PersistentVolumeList.FromString(
        raw.send("GET", "/api/v1/persistentvolumes").unknown().raw).items[0]
    assert volume.spec.persistentVolumeSource.csi.driver == "csi-mini.example.com"
    assert volume.spec.claimRef.name == "db-data"


def test_tables_and_json_stay_json_when_asked_for(cluster: Cluster) -> None:
    table = cluster.raw.send("GET", "/api/v1/nodes", accept=(
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"))
    assert table.json()["kind"] == "Table"
    assert cluster.raw.send("GET", "/api/v1/nodes",
                            accept=f"application/json, {PROTOBUF}").json()["kind"] == "NodeList"
    preferring_json = f"{PROTOBUF};q=0.5, application/json"
    assert cluster.raw.send("GET", "/api/v1/nodes", accept=preferring_json).json()


@pytest.mark.parametrize(("what", "body"), [
    ("garbage", b"\xde\xad\xbe\xef" * 8),
    ("no magic", runtime_pb2.Unknown(raw=b"").SerializeToString()),
    ("truncated", enveloped("v1", "Pod", pod_message("cut"))[:-7]),
    ("an unknown kind", enveloped("v1", "Gizmo", pod_message("g"))),
    ("no kind", enveloped("v1", "", pod_message("g"))),
    ("only the magic", MAGIC),
])
def test_bad_protobuf_is_a_400_status_never_a_500(cluster: Cluster, what: str,
                                                  body: bytes) -> None:
    answer = cluster.raw.send("POST", "/api/v1/namespaces/default/pods", body)
    assert answer.status == 400, (what, answer.body)
    status = status_of(answer)
    assert (status.reason, status.code) == ("BadRequest", 400)
    assert status.message.startswith("the object provided is unrecognized (must be of type "
                                     "Pod)")


def test_a_protobuf_body_of_another_kind_than_the_url_is_a_400(cluster: Cluster) -> None:
    namespace = core_v1_pb2.Namespace()
    namespace.metadata.name = "wrong"
    answer = cluster.raw.send("POST", "/api/v1/namespaces/default/pods",
                              enveloped("v1", "Namespace", namespace))
    assert answer.status == 400
    assert status_of(answer).reason == "BadRequest"


def test_a_patch_in_protobuf_is_415(cluster: Cluster) -> None:
    answer = cluster.raw.send("PATCH", "/api/v1/nodes/node-1",
                              enveloped("v1", "Node", core_v1_pb2.Node()))
    assert answer.status == 415
    status = status_of(answer)
    assert status.reason == "UnsupportedMediaType"
    assert "application/strategic-merge-patch+json" in status.message


def test_custom_resources_are_json_only(cluster: Cluster) -> None:
    raw = cluster.raw
    path = "/apis/snapshot.storage.k8s.io/v1/namespaces/default/volumesnapshots"
    refused = raw.send("POST", path, MAGIC + b"\x0a\x00")
    assert refused.status == 415
    assert refused.json()["reason"] == "UnsupportedMediaType"
    assert raw.send("GET", path).json()["kind"] == "VolumeSnapshotList"  # */* allows JSON
    only_protobuf = raw.send("GET", path, accept=PROTOBUF)
    assert only_protobuf.status == 406
    assert only_protobuf.json()["reason"] == "NotAcceptable"


def test_kubectl_create_sends_protobuf_and_the_namespace_is_made(cluster: Cluster) -> None:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", cluster.up.kubeconfig, "create", "ns",
                           "proto-ns", "-v=8"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "namespace/proto-ns created" in done.stdout
    assert f"Content-Type: {PROTOBUF}" in done.stderr  # kubectl 1.35 sent protobuf
    answer = cluster.raw.send("GET", "/api/v1/namespaces/proto-ns")
    namespace = core_v1_pb2.Namespace.FromString(answer.unknown().raw)
    assert namespace.status.phase == "Active"
    assert cluster.up.kubectl("get", "ns", "proto-ns", "-o", "jsonpath={.metadata.name}") \
        == "proto-ns"


def test_the_official_python_client_still_speaks_json(cluster: Cluster) -> None:
    # typed Any: the client's models declare every field optional and take dicts
    api: Any = client.CoreV1Api(config.new_client_from_config(cluster.up.kubeconfig))
    assert [n.metadata.name for n in api.list_node().items]
    made = api.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "python-ns"}})
    assert made.metadata.name == "python-ns"
    assert api.read_namespace("python-ns").status.phase == "Active"


# -- the request forms main brought (eviction, binding, reviews, metadata-only, YAML) ------

PODS = "/api/v1/namespaces/default/pods"


def _created_pod(raw: Raw, name: str, scheduler: str = "") -> core_v1_pb2.Pod:
    message = pod_message(name)
    if scheduler:
        message.spec.schedulerName = scheduler
    created = raw.send("POST", PODS, enveloped("v1", "Pod", message))
    assert created.status == 201, created.body
    return core_v1_pb2.Pod.FromString(created.unknown().raw)


def test_a_protobuf_eviction_with_delete_options_is_a_protobuf_success_status(
        cluster: Cluster) -> None:
    raw = cluster.raw
    pod = _created_pod(raw, "proto-evicted")
    eviction = policy_v1_pb2.Eviction()
    eviction.metadata.name, eviction.metadata.namespace = "proto-evicted", "default"
    eviction.deleteOptions.gracePeriodSeconds = 0
    eviction.deleteOptions.preconditions.uid = pod.metadata.uid
    answer = raw.send("POST", f"{PODS}/proto-evicted/eviction",
                      enveloped("policy/v1", "Eviction", eviction))
    assert answer.status == 201, answer.body
    assert (status_of(answer).status, status_of(answer).code) == ("Success", 201)
    assert raw.send("GET", f"{PODS}/proto-evicted").status == 404


def test_a_protobuf_eviction_of_a_missing_pod_is_a_protobuf_not_found(cluster: Cluster) -> None:
    eviction = policy_v1_pb2.Eviction()
    eviction.metadata.name = "nobody"
    answer = cluster.raw.send("POST", f"{PODS}/nobody/eviction",
                              enveloped("policy/v1", "Eviction", eviction))
    assert answer.status == 404
    assert status_of(answer).reason == "NotFound"


def test_a_protobuf_binding_places_the_pod(cluster: Cluster) -> None:
    raw = cluster.raw
    _created_pod(raw, "proto-bound", scheduler="by-hand")  # the scheduler leaves it be
    binding = core_v1_pb2.Binding()
    binding.metadata.name = "proto-bound"
    binding.target.kind, binding.target.name = "Node", "node-1"
    answer = raw.send("POST", f"{PODS}/proto-bound/binding",
                      enveloped("v1", "Binding", binding))
    assert answer.status == 201, answer.body
    assert status_of(answer).status == "Success"
    got = core_v1_pb2.Pod.FromString(raw.send("GET", f"{PODS}/proto-bound").unknown().raw)
    assert got.spec.nodeName == "node-1"


def test_the_self_subject_reviews_are_read_and_answered_in_protobuf(cluster: Cluster) -> None:
    raw = cluster.raw
    whoami = raw.send("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                      enveloped("authentication.k8s.io/v1", "SelfSubjectReview",
                                authentication_v1_pb2.SelfSubjectReview()))
    assert whoami.status == 201, whoami.body
    user = authentication_v1_pb2.SelfSubjectReview.FromString(
        whoami.unknown().raw).status.userInfo
    assert user.username == "kubernetes-admin" and "system:masters" in user.groups

    asked = authorization_v1_pb2.SelfSubjectAccessReview()
    asked.spec.resourceAttributes.verb, asked.spec.resourceAttributes.resource = "get", "pods"
    can_i = raw.send("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                     enveloped("authorization.k8s.io/v1", "SelfSubjectAccessReview", asked))
    assert can_i.status == 201, can_i.body
    answered = authorization_v1_pb2.SelfSubjectAccessReview.FromString(can_i.unknown().raw)
    assert answered.status.allowed
    assert answered.spec.resourceAttributes.resource == "pods"

    empty = raw.send("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                     enveloped("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                               authorization_v1_pb2.SelfSubjectAccessReview()))
    assert empty.status == 422
    assert status_of(empty).reason == "Invalid"


def test_metadata_only_answers_come_in_protobuf_when_preferred(cluster: Cluster) -> None:
    raw = cluster.raw
    _created_pod(raw, "proto-meta")
    as_list = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    listed = raw.send("GET", PODS, accept=f"{PROTOBUF};{as_list},application/json;{as_list}")
    assert listed.status == 200, listed.body
    unknown = listed.unknown()
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == (
        "meta.k8s.io/v1", "PartialObjectMetadataList")
    names = [i.metadata.name for i in meta_v1_pb2.PartialObjectMetadataList.FromString(
        unknown.raw).items]
    assert "proto-meta" in names

    one = raw.send("GET", f"{PODS}/proto-meta",
                   accept=f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    assert one.unknown().typeMeta.kind == "PartialObjectMetadata"
    assert meta_v1_pb2.PartialObjectMetadata.FromString(
        one.unknown().raw).metadata.labels["app"] == "proto"

    wrong = raw.send("GET", PODS,
                     accept=f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    assert wrong.status == 406  # an object's transformation asked of a list
    assert status_of(wrong).reason == "NotAcceptable"


def test_a_volume_attributes_class_is_created_in_protobuf_and_deleted_as_a_collection(
        cluster: Cluster) -> None:
    raw = cluster.raw
    path = "/apis/storage.k8s.io/v1/volumeattributesclasses"
    vac = storage_v1_pb2.VolumeAttributesClass(driverName="hostpath.csi.k8s.io")
    vac.metadata.name = "proto-gold"
    vac.metadata.labels["proto"] = "yes"
    vac.parameters["iops"] = "3000"
    created = raw.send("POST", path, enveloped("storage.k8s.io/v1", "VolumeAttributesClass",
                                               vac))
    assert created.status == 201, created.body
    got = storage_v1_pb2.VolumeAttributesClass.FromString(created.unknown().raw)
    assert (got.driverName, dict(got.parameters)) == ("hostpath.csi.k8s.io", {"iops": "3000"})

    deleted = raw.send("DELETE", f"{path}?labelSelector=proto%3Dyes",
                       enveloped("v1", "DeleteOptions", meta_v1_pb2.DeleteOptions()))
    assert deleted.status == 200, deleted.body
    assert deleted.unknown().typeMeta.kind == "VolumeAttributesClassList"
    names = [i.metadata.name for i in storage_v1_pb2.VolumeAttributesClassList.FromString(
        deleted.unknown().raw).items]
    assert names == ["proto-gold"]


def test_an_error_is_written_in_the_negotiated_yaml_too(cluster: Cluster) -> None:
    answer = cluster.raw.send("GET", f"{PODS}/nobody", accept="application/yaml")
    assert (answer.status, answer.content_type) == (404, "application/yaml")
    status = yaml.safe_load(answer.body)
    assert (status["kind"], status["reason"]) == ("Status", "NotFound")


def test_a_yaml_body_is_read_and_a_protobuf_answer_given(cluster: Cluster) -> None:
    body = yaml.safe_dump({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "proto-yaml"},
                           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    answer = cluster.raw.send("POST", PODS, body.encode(), content_type="application/yaml")
    assert answer.status == 201, answer.body
    assert core_v1_pb2.Pod.FromString(answer.unknown().raw).metadata.name == "proto-yaml"
