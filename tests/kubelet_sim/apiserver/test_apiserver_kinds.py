"""Every kind through the API server: builders, defaults, validation, wire round trip."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import (
    KINDS,
    Resource,
    condition,
    node_internal_ip,
    node_pod_cidrs,
    pod_ips,
    resolve_named_port,
    set_condition,
)
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock

DRIVER = "mini.csi.example.com"


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def every_kind() -> list[Resource]:
    return [
        b.namespace("team"),
        b.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=False),
        b.pod("web", containers=[b.container("web", "nginx", [b.container_port(80, "http")])],
              volumes=[b.pvc_volume("data", "data"),
                       b.csi_inline_volume("scratch", DRIVER, {"size": "1Gi"})]),
        b.persistent_volume_claim("data", storage="10Gi", storage_class="fast"),
        b.csi_persistent_volume("pvc-1", driver=DRIVER, volume_handle="vol-1", storage="10Gi",
                                fs_type="ext4", claim_ref={"namespace": "default",
                                                           "name": "data"},
                                node_affinity={"required": {"nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "topology/zone",
                                                           "operator": "In",
                                                           "values": ["a"]}]}]}}),
        b.storage_class("fast", DRIVER, parameters={"tier": "gold"},
                        volume_binding_mode="WaitForFirstConsumer", allow_volume_expansion=True,
                        allowed_topologies=[{"matchLabelExpressions": [
                            {"key": "topology/zone", "values": ["a"]}]}]),
        b.volume_attributes_class("gold", DRIVER, {"iops": "5000"}),
        b.csi_storage_capacity("csisc-abcde", "default", "fast",
                               {"matchLabels": {"topology/zone": "a"}}, "10Gi", "1Gi"),
        b.csi_driver(DRIVER, pod_info_on_mount=True,
                     volume_lifecycle_modes=["Persistent", "Ephemeral"]),
        b.csi_node("node-1", [{"name": DRIVER, "nodeID": "node-1",
                               "topologyKeys": ["topology/zone"], "allocatable": {"count": 8}}]),
        b.volume_attachment("csi-abc", DRIVER, "node-1", "pvc-1"),
        b.volume_snapshot_class("snap", DRIVER),
        b.volume_snapshot("snap-1", source_pvc="data", snapshot_class="snap"),
        b.lease("node-1", "default", "node-1", 40, "2026-12-03T12:00:00.000000Z"),
        Resource.from_dict({"apiVersion": "snapshot.storage.k8s.io/v1",
                            "kind": "VolumeSnapshotContent", "metadata": {"name": "snapcontent-1"},
                            "spec": {"driver": DRIVER, "deletionPolicy": "Delete",
                                     "source": {"volumeHandle": "vol-1"},
                                     "volumeSnapshotRef": {"namespace": "default",
                                                           "name": "snap-1"}}}),
        b.network_policy("deny", pod_selector={}),
        Resource.from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": "web", "namespace": "default"},
                            "spec": {"minAvailable": 1,
                                     "selector": {"matchLabels": {"app": "web"}}}}),
        Resource.from_dict({"apiVersion": "v1", "kind": "Event",
                            "metadata": {"name": "web.1880a1b2c3d4e5f6", "namespace": "default"},
                            "involvedObject": {"kind": "Pod", "namespace": "default",
                                               "name": "web", "apiVersion": "v1"},
                            "reason": "Scheduled", "type": "Normal", "count": 1,
                            "message": "Successfully assigned default/web to node-1",
                            "source": {"component": "default-scheduler"},
                            "firstTimestamp": "2026-12-03T12:00:00Z",
                            "lastTimestamp": "2026-12-03T12:00:00Z"}),
        Resource.from_dict({"apiVersion": "apiextensions.k8s.io/v1",
                            "kind": "CustomResourceDefinition",
                            "metadata": {"name": "gadgets.example.com"},
                            "spec": {"group": "example.com", "scope": "Cluster",
                                     "names": {"plural": "gadgets", "kind": "Gadget"},
                                     "versions": [{"name": "v1", "served": True,
                                                   "storage": True, "schema": {
                                                       "openAPIV3Schema": {"type": "object"}}}]}}),
        b.secret("creds", "default", {"token": "s3cret"}),
        Resource.from_dict({"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": "robot", "namespace": "default"}}),
        *config_service_and_rbac_kinds(),
        *workloads(),
        Resource.from_dict({"apiVersion": "v1", "kind": "ResourceQuota",
                            "metadata": {"name": "compute"},
                            "spec": {"hard": {"pods": "10", "requests.cpu": "4"}}}),
        Resource.from_dict({"apiVersion": "v1", "kind": "LimitRange",
                            "metadata": {"name": "limits"},
                            "spec": {"limits": [{"type": "Container",
                                                 "default": {"cpu": "500m"}}]}}),
    ]


def config_service_and_rbac_kinds() -> list[Resource]:
    """The kinds of issue 24's configuration, services and RBAC part."""
    rbac = "rbac.authorization.k8s.io/v1"
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    return [Resource.from_dict(raw) for raw in (
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
         "data": {"mode": "fast"}, "binaryData": {"blob": "aGk="}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
         "subsets": [{"addresses": [{"ip": "10.244.1.5"}], "ports": [{"port": 8080}]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-abcde", "labels": {"kubernetes.io/service-name": "web"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.1.5"],
                                               "conditions": {"ready": True}}],
         "ports": [{"name": "", "port": 8080, "protocol": "TCP"}]},
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "reader"}, "rules": [rule]},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "reader"},
         "rules": [rule]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"kind": "Role", "name": "reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "default"}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"kind": "ClusterRole", "name": "reader"},
         "subjects": [{"kind": "User", "name": "jane"}]},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "high"}, "value": 1000},
    )]


def workloads() -> list[Resource]:
    """The apps/v1 and batch/v1 kinds."""
    template: dict[str, Any] = {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    selector = {"matchLabels": {"app": "web"}}
    out = [Resource.from_dict({"apiVersion": "apps/v1", "kind": kind,
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"selector": selector, "template": template}})
           for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")]
    job_template = {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}
    out.append(Resource.from_dict({"apiVersion": "batch/v1", "kind": "Job",
                                   "metadata": {"name": "web", "namespace": "default"},
                                   "spec": {"template": job_template}}))
    out.append(Resource.from_dict({"apiVersion": "apps/v1", "kind": "ControllerRevision",
                                   "metadata": {"name": "web-1", "namespace": "default"},
                                   "data": {"spec": {"template": template}}, "revision": 1}))
    return out


def test_builders_cover_every_kind() -> None:
    assert sorted(o.kind for o in every_kind()) == sorted(KINDS)


@pytest.mark.parametrize("obj", every_kind(), ids=lambda o: o.kind)
def test_every_kind_is_created_and_round_trips_through_its_wire_form(
        api: APIServer, obj: Resource) -> None:
    created = api.create(obj)
    assert created.namespace == ("default" if KINDS[obj.kind].namespaced else "")
    wire = created.to_dict()
    assert wire["apiVersion"] == KINDS[obj.kind].api_version and wire["kind"] == obj.kind
    assert Resource.from_dict(wire) == created


def test_csi_driver_defaults_match_kubernetes(api: APIServer) -> None:
    drv = api.create(Resource.from_dict({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                                         "metadata": {"name": DRIVER}, "spec": {}}))
    assert drv.spec == {"attachRequired": True, "podInfoOnMount": False,
                        "requiresRepublish": False, "storageCapacity": False,
                        "seLinuxMount": False, "fsGroupPolicy": "ReadWriteOnceWithFSType",
                        "volumeLifecycleModes": ["Persistent"]}


def test_pv_reclaim_policy_defaults_to_retain(api: APIServer) -> None:
    pv = b.csi_persistent_volume("pv", driver=DRIVER, volume_handle="h", storage="1Gi")
    del pv.spec["persistentVolumeReclaimPolicy"]
    assert api.create(pv).spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert api.get("PersistentVolume", "pv").status == {"phase": "Pending"}


def test_pod_defaults_fill_port_protocol_and_grace_period(api: APIServer) -> None:
    raw = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "i", "ports": [{"containerPort": 53, "name": "dns"}]}]}}
    created = api.create(raw)
    assert created.spec["containers"][0]["ports"][0]["protocol"] == "TCP"
    assert created.spec["terminationGracePeriodSeconds"] == 30
    assert resolve_named_port(created, "dns", "TCP") == 53
    assert resolve_named_port(created, "dns", "UDP") is None


def test_node_status_is_kept_on_create_and_read_by_accessors(api: APIServer) -> None:
    node = api.create(b.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=False))
    assert node_internal_ip(node) == "192.168.0.1"
    assert node_pod_cidrs(node) == ["10.244.1.0/24"]
    ready = condition(node, "Ready")
    assert ready is not None and ready["status"] == "False"


def test_set_condition_moves_transition_time_only_on_status_change() -> None:
    node = b.node("n", ready=False)
    t0, t1, t2 = (datetime(2030, 1, 1, 0, 0, s, tzinfo=UTC) for s in (0, 1, 2))
    set_condition(node, {"type": "Ready", "status": "False"}, t0)
    set_condition(node, {"type": "Ready", "status": "False", "reason": "again"}, t1)
    ready = condition(node, "Ready")
    assert ready is not None and ready["lastTransitionTime"] == "2030-01-01T00:00:00Z"
    set_condition(node, {"type": "Ready", "status": "True"}, t2)
    ready = condition(node, "Ready")
    assert ready is not None and ready["lastTransitionTime"] == "2030-01-01T00:00:02Z"
    assert len(node.status["conditions"]) == 1


def test_pod_ips_fall_back_to_pod_ip() -> None:
    p = b.pod("p")
    p.status = {"podIP": "10.0.0.5"}
    assert pod_ips(p) == ["10.0.0.5"]
    p.status["podIPs"] = [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}]
    assert pod_ips(p) == ["10.0.0.5", "fd00::5"]


INVALID: list[tuple[str, Any, str]] = [
    ("Pod", lambda: Resource.from_dict({"kind": "Pod", "metadata": {"name": "p"},
                                        "spec": {"containers": []}}), "spec.containers"),
    ("Pod", lambda: b.pod("p", containers=[b.container("c", ports=[b.container_port(0)])]),
     "spec.containers[0].ports[0].containerPort"),
    ("Pod", lambda: b.pod("p", containers=[b.container("c", ports=[
        b.container_port(80, "http-web-frontend-x")])]), "spec.containers[0].ports[0].name"),
    ("Pod", lambda: b.pod("p", containers=[b.container("c", ports=[
        b.container_port(80, protocol="ICMP")])]), "spec.containers[0].ports[0].protocol"),
    ("Pod", lambda: b.pod("p", volumes=[{"name": "v", "emptyDir": {}, "hostPath": {
        "path": "/data"}}]), "spec.volumes[0].hostPath"),
    ("Pod", lambda: b.pod("p", volumes=[{"name": "v", "csi": {}}]), "spec.volumes[0].csi.driver"),
    ("Pod", lambda: b.pod("p", volumes=[b.pvc_volume("v", "c"), b.pvc_volume("v", "d")]),
     "spec.volumes[1].name"),
    ("Pod", lambda: b.pod("p", labels={"bad key!": "v"}), "metadata.labels"),
    ("Pod", lambda: b.pod("p", labels={"k": "-bad-"}), "metadata.labels[k]"),
    ("Pod", lambda: b.pod("UPPER"), "metadata.name"),
    ("PersistentVolumeClaim", lambda: b.persistent_volume_claim("c", storage="ten"),
     "spec.resources.requests.storage"),
    ("PersistentVolumeClaim", lambda: b.persistent_volume_claim("c", storage="0"),
     "spec.resources.requests.storage"),
    ("PersistentVolumeClaim", lambda: b.persistent_volume_claim(
        "c", storage="1Gi", access_modes=["ReadWriteSometimes"]), "spec.accessModes[0]"),
    ("PersistentVolume", lambda: b.csi_persistent_volume(
        "v", driver=DRIVER, volume_handle="", storage="1Gi"), "spec.csi.volumeHandle"),
    ("PersistentVolume", lambda: b.csi_persistent_volume(
        "v", driver=DRIVER, volume_handle="h", storage="1Gi", reclaim_policy="Keep"),
     "spec.persistentVolumeReclaimPolicy"),
    ("StorageClass", lambda: b.storage_class("s", DRIVER, volume_binding_mode="Later"),
     "volumeBindingMode"),
    ("StorageClass", lambda: b.storage_class("s", "Not A Name"), "provisioner"),
    ("CSIDriver", lambda: b.csi_driver(DRIVER, volume_lifecycle_modes=["Forever"]),
     "spec.volumeLifecycleModes[0]"),
    ("CSINode", lambda: b.csi_node("n", [{"name": DRIVER}]), "spec.drivers[0].nodeID"),
    ("Node", lambda: b.node("n", "10.244.1.0/33"), "spec.podCIDR"),
    ("VolumeAttachment", lambda: b.volume_attachment("a", DRIVER, "n", ""), "spec.source"),
    ("VolumeSnapshotClass", lambda: b.volume_snapshot_class("s", DRIVER, "Keep"),
     "deletionPolicy"),
    ("NetworkPolicy", lambda: b.network_policy("n", ingress=[{"from": [{}]}]),
     "spec.ingress[0].from[0]"),
    ("NetworkPolicy", lambda: b.network_policy("n", ingress=[{"from": [
        {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]), "spec.ingress[0].from[0]"),
    ("NetworkPolicy", lambda: b.network_policy("n", ingress=[{"ports": [
        {"port": "http", "endPort": 90}]}]), "spec.ingress[0].ports[0].endPort"),
    ("NetworkPolicy", lambda: b.network_policy("n", ingress=[{"ports": [
        {"port": 90, "endPort": 80}]}]), "spec.ingress[0].ports[0].endPort"),
    ("NetworkPolicy", lambda: b.network_policy("n", egress=[{"ports": [{"port": 70000}]}]),
     "spec.egress[0].ports[0].port"),
    ("NetworkPolicy", lambda: b.network_policy("n", policy_types=["Sideways"]),
     "spec.policyTypes[0]"),
    ("NetworkPolicy", lambda: b.network_policy("n", pod_selector={"matchExpressions": [
        {"key": "a", "operator": "In"}]}), "spec.podSelector.matchExpressions[0].values"),
]


@pytest.mark.parametrize(("kind", "make", "field"), INVALID,
                         ids=[f"{k}:{f}" for k, _, f in INVALID])
def test_invalid_objects_are_rejected_naming_the_field(
        api: APIServer, kind: str, make: Any, field: str) -> None:
    obj = make()
    assert obj.kind == kind
    with pytest.raises(Invalid) as err:
        api.create(obj)
    assert err.value.field == field and err.value.code == 422


def test_malformed_shapes_are_invalid_not_a_crash(api: APIServer) -> None:
    with pytest.raises(Invalid):
        api.create({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": ["x"]}})
    with pytest.raises(Invalid):
        api.create({"kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": []}})


def test_claim_data_source_and_ref_mirror_each_other(api: APIServer) -> None:
    snap = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s1"}
    restored = api.create(b.persistent_volume_claim("r", storage="1Gi", data_source=snap))
    assert restored.spec["dataSourceRef"] == snap
    claim = b.persistent_volume_claim("r2", storage="1Gi")
    claim.spec["dataSourceRef"] = dict(snap)
    assert api.create(claim).spec["dataSource"] == snap


def test_new_claim_has_empty_status(api: APIServer) -> None:
    claim = b.persistent_volume_claim("c", storage="1Gi")
    claim.status = {"phase": "Bound"}
    assert api.create(claim).status == {}


def test_name_and_label_errors_carry_apimachinerys_wording_and_go_quoting(api: APIServer) -> None:
    with pytest.raises(Invalid) as err:
        api.create(b.pod("Bad_Name"))
    assert str(err.value) == (
        'Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC '
        "1123 subdomain must consist "
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    with pytest.raises(Invalid) as err:
        api.create(b.pod("p", labels={"a/b/c": "v"}))
    assert str(err.value).startswith('Pod "p" is invalid: metadata.labels: Invalid value: '
                                     '"a/b/c": a qualified name '
                                     "must consist of alphanumeric characters")
    with pytest.raises(Invalid) as err:
        api.create(b.pod("p", labels={"k": "x" * 64}))
    assert str(err.value) == ('Pod "p" is invalid: metadata.labels[k]: Invalid value: '
                              f'"{"x" * 64}": '
                              "must be no more than 63 characters")
