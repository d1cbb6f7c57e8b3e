"""JSON objects ↔ Kubernetes protobuf: every built-in kind the server serves survives the
round trip, and the bytes are what k8s.io/api's messages hold (read back with the
generated classes, not with the server's converter)."""

from __future__ import annotations

import calendar
import json
import struct
from typing import Any

import pytest

from k8s_protos import (
    apps_v1_pb2,
    authentication_v1_pb2,
    coordination_v1_pb2,
    core_v1_pb2,
    events_v1_pb2,
    meta_v1_pb2,
    runtime_pb2,
)
from kubelet_sim.apiserver.http.encoding import envelope
from kubelet_sim.apiserver.http.status import status_body

from .samples import RICH_POD, simulator_objects

MAGIC = b"k8s\x00"


def _raw(data: bytes) -> runtime_pb2.Unknown:
    assert data[:4] == MAGIC
    return runtime_pb2.Unknown.FromString(data[4:])


def _without_zero_values(value: Any) -> Any:
    """``value`` without false/0/""/{}/[] members: what Go's JSON leaves out of omitempty
    fields after a protobuf decode (the explicit tests below pin where zeros stay)."""
    if isinstance(value, dict):
        out = {k: _without_zero_values(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (False, 0, "", {}, [], None)}
    if isinstance(value, list):
        return [_without_zero_values(v) for v in value]
    return value


SAMPLES = simulator_objects()


@pytest.mark.parametrize("obj", SAMPLES, ids=lambda o: f"{o['apiVersion']}/{o['kind']}/"
                         f"{o['metadata'].get('name', '')}")
def test_each_simulator_object_survives_json_protobuf_json(obj: dict[str, Any]) -> None:
    data = envelope.encode(obj)
    assert data is not None
    assert _without_zero_values(envelope.decode(data)) == _without_zero_values(obj)


def test_every_served_built_in_kind_has_a_sample() -> None:
    from kubelet_sim.apiserver.http.resources import RESOURCES

    served = {(r.group_version, r.kind) for r in RESOURCES
              if envelope.message_of(r.group_version, r.kind) is not None}
    sampled = {(o["apiVersion"], o["kind"]) for o in SAMPLES}
    assert served <= sampled
    assert len(served) >= 12


def test_a_rich_pod_comes_back_exactly() -> None:
    data = envelope.encode(RICH_POD)
    assert data is not None
    assert envelope.decode(data) == RICH_POD


def test_the_envelope_names_the_kind_and_holds_the_pod_message() -> None:
    data = envelope.encode(RICH_POD)
    assert data is not None
    unknown = _raw(data)
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "Pod")
    assert unknown.HasField("contentType") and unknown.contentType == ""
    pod = core_v1_pb2.Pod.FromString(unknown.raw)
    assert pod.metadata.name == "web"
    assert pod.metadata.creationTimestamp.seconds == calendar.timegm(
        (2024, 5, 1, 10, 0, 0, 0, 0, 0))
    assert pod.metadata.HasField("deletionGracePeriodSeconds")
    assert pod.metadata.deletionGracePeriodSeconds == 0
    fields = json.loads(pod.metadata.managedFields[0].fieldsV1.Raw)
    assert fields == {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
    container = pod.spec.containers[0]
    assert container.resources.requests["cpu"].string == "100m"
    assert container.resources.limits["memory"].string == "128Mi"
    http_port = container.livenessProbe.handler.httpGet.port
    assert (http_port.type, http_port.strVal) == (1, "http")
    tcp_port = container.readinessProbe.handler.tcpSocket.port
    assert (tcp_port.type, tcp_port.intVal) == (0, 8080)
    env = {e.name: e for e in container.env}
    assert env["B"].valueFrom.secretKeyRef.localObjectReference.name == "s"
    assert env["C"].valueFrom.configMapKeyRef.key == "c"
    volumes = {v.name: v for v in pod.spec.volumes}
    assert volumes["data"].volumeSource.persistentVolumeClaim.claimName == "data-web"
    assert volumes["tmp"].volumeSource.HasField("emptyDir")
    assert volumes["scratch"].volumeSource.emptyDir.sizeLimit.string == "1Gi"
    assert volumes["cfg"].volumeSource.configMap.localObjectReference.name == "cfg"
    assert volumes["inline"].volumeSource.csi.volumeAttributes["size"] == "1Gi"
    toleration = pod.spec.tolerations[0]
    assert (toleration.key, toleration.tolerationSeconds) == ("node.kubernetes.io/not-ready",
                                                              300)
    term = pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
    assert list(term.nodeSelectorTerms[0].matchExpressions[0].values) == ["a", "b"]
    assert pod.status.containerStatuses[0].state.running.startedAt.seconds > 0


def test_micro_times_keep_microseconds_on_the_wire() -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "n", "namespace": "kube-node-lease"},
             "spec": {"holderIdentity": "n", "renewTime": "2024-05-01T10:00:00.123456Z"}}
    data = envelope.encode(lease)
    assert data is not None
    spec = coordination_v1_pb2.Lease.FromString(_raw(data).raw).spec
    assert spec.renewTime.nanos == 123_456_000
    assert envelope.decode(data)["spec"]["renewTime"] == "2024-05-01T10:00:00.123456Z"


def test_an_events_k8s_io_event_is_the_events_v1_message() -> None:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
             "metadata": {"name": "e", "namespace": "default"},
             "eventTime": "2024-05-01T10:00:00.000001Z", "reportingController": "kubelet",
             "reportingInstance": "node-1", "action": "Started", "reason": "Started",
             "regarding": {"kind": "Pod", "name": "app", "namespace": "default"},
             "note": "Started container", "type": "Normal",
             "series": {"count": 3, "lastObservedTime": "2024-05-01T10:00:05.000000Z"}}
    data = envelope.encode(event)
    assert data is not None
    message = events_v1_pb2.Event.FromString(_raw(data).raw)
    assert (message.regarding.name, message.note, message.series.count) == ("app",
                                                                           "Started container", 3)
    assert envelope.decode(data) == event


def test_go_slice_types_with_a_message_are_bare_json_arrays() -> None:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "metadata": {}, "spec": {"token": "t"},
              "status": {"authenticated": True, "user": {
                  "username": "alice", "groups": ["dev"],
                  "extra": {"scopes.example.com": ["read", "write"]}}}}
    data = envelope.encode(review)
    assert data is not None
    message = authentication_v1_pb2.TokenReview.FromString(_raw(data).raw)
    assert list(message.status.user.extra["scopes.example.com"].items) == ["read", "write"]
    assert envelope.decode(data) == review


def test_a_raw_extension_holds_the_embedded_object_as_json() -> None:
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": "web-1", "namespace": "default"},
                "data": {"spec": {"template": {"metadata": {"labels": {"app": "web"}}}}},
                "revision": 1}
    data = envelope.encode(revision)
    assert data is not None
    message = apps_v1_pb2.ControllerRevision.FromString(_raw(data).raw)
    assert json.loads(message.data.raw) == revision["data"]
    assert envelope.decode(data) == revision


def test_a_list_is_its_list_message_with_items_lacking_their_type() -> None:
    pods = {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "7"},
            "items": [RICH_POD]}
    data = envelope.encode(pods)
    assert data is not None
    message = core_v1_pb2.PodList.FromString(_raw(data).raw)
    assert message.metadata.resourceVersion == "7"
    assert [p.metadata.name for p in message.items] == ["web"]
    back = envelope.decode(data)
    item = {k: v for k, v in RICH_POD.items() if k not in ("apiVersion", "kind")}
    assert back == {**pods, "items": [item]}


# -- protobuf written as client-go writes it, read by the server ---------------------------

def _enveloped(api_version: str, kind: str, message: Any) -> bytes:
    unknown = runtime_pb2.Unknown(raw=message.SerializeToString(), contentEncoding="",
                                  contentType="")
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    return MAGIC + unknown.SerializeToString()


def test_zero_values_gogo_writes_are_left_out_where_go_omits_them() -> None:
    # kubectl create namespace: gogo writes every non-pointer field, empty or not
    namespace = core_v1_pb2.Namespace()
    meta = namespace.metadata
    meta.name, meta.generateName, meta.namespace, meta.uid = "demo", "", "", ""
    meta.resourceVersion, meta.generation = "", 0
    meta.creationTimestamp.SetInParent()  # the zero time: an empty message
    namespace.spec.SetInParent()
    namespace.status.phase = ""
    decoded = envelope.decode(_enveloped("v1", "Namespace", namespace))
    # Go's JSON writes a struct even when empty, leaves out the zero time
    assert decoded == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"},
                       "spec": {}, "status": {}}


def test_a_pointer_zero_is_kept_and_a_plain_zero_without_omitempty_too() -> None:
    pod = core_v1_pb2.Pod()
    pod.metadata.name = "p"
    pod.spec.terminationGracePeriodSeconds = 0  # *int64: kept
    pod.spec.nodeName = ""  # string, omitempty: left out
    container = pod.spec.containers.add()
    container.name = "c"
    container.ports.add(containerPort=80, hostPort=0)  # hostPort: omitempty
    container.resources.SetInParent()  # a struct: written when empty
    status = pod.status.containerStatuses.add(name="c", ready=False, restartCount=0)
    status.image = ""  # neither has omitempty: Go writes the zeros
    decoded = envelope.decode(_enveloped("v1", "Pod", pod))
    assert decoded["spec"] == {"terminationGracePeriodSeconds": 0, "containers": [
        {"name": "c", "ports": [{"containerPort": 80}], "resources": {}}]}
    assert decoded["status"] == {"containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 0, "image": ""}]}


def test_delete_options_from_a_typed_client_are_read() -> None:
    options = meta_v1_pb2.DeleteOptions(gracePeriodSeconds=0, propagationPolicy="Foreground")
    options.preconditions.uid = "u-1"
    decoded = envelope.decode(_enveloped("v1", "DeleteOptions", options))
    assert decoded == {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                       "propagationPolicy": "Foreground", "preconditions": {"uid": "u-1"}}


def test_a_watch_frame_is_a_length_and_a_bare_watch_event_holding_the_enveloped_object() -> None:
    frame = envelope.watch_frame("ADDED", RICH_POD)
    assert frame is not None
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    event = meta_v1_pb2.WatchEvent.FromString(frame[4:])
    assert event.type == "ADDED"
    inner = _raw(event.object.raw)
    assert (inner.typeMeta.kind, core_v1_pb2.Pod.FromString(inner.raw).metadata.name) == \
        ("Pod", "web")


def test_a_watch_error_frame_holds_a_protobuf_status() -> None:
    expired = status_body(410, "Expired", "too old resource version: 1 (40)")
    frame = envelope.watch_frame("ERROR", expired)
    assert frame is not None
    event = meta_v1_pb2.WatchEvent.FromString(frame[4:])
    inner = _raw(event.object.raw)
    assert (inner.typeMeta.apiVersion, inner.typeMeta.kind) == ("v1", "Status")
    status = meta_v1_pb2.Status.FromString(inner.raw)
    assert (event.type, status.code, status.reason, status.status) == ("ERROR", 410, "Expired",
                                                                       "Failure")


@pytest.mark.parametrize(("data", "says"), [
    (b"", "empty data"),
    (b"\x0a\x02{}", "does not appear to be a protobuf message"),
    (MAGIC, "empty body"),
    (MAGIC + b"\x0a\xff\xff", "unexpected protobuf"),
    (_enveloped("v1", "Gizmo", core_v1_pb2.Pod()), 'no kind "Gizmo"'),
    (_enveloped("", "Pod", core_v1_pb2.Pod()), "'apiVersion' is missing"),
    (_enveloped("v1", "Pod", core_v1_pb2.Pod())[:-1] + b"\xff", "unexpected"),
])
def test_bytes_that_are_no_known_object_are_refused(data: bytes, says: str) -> None:
    with pytest.raises(envelope.EnvelopeError, match=says):
        envelope.decode(data)


def test_a_custom_resource_has_no_protobuf_form() -> None:
    snapshot = {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                "metadata": {"name": "s"}}
    assert envelope.encode(snapshot) is None


def test_map_entries_are_written_in_key_order_as_gogo_writes_them() -> None:
    def labelled(labels: dict[str, str]) -> bytes | None:
        return envelope.encode({"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": "n", "labels": labels}})

    one, other = labelled({"b": "2", "a": "1"}), labelled({"a": "1", "b": "2"})
    assert one is not None and one == other
    assert one.index(b"\x0a\x01a") < one.index(b"\x0a\x01b")
