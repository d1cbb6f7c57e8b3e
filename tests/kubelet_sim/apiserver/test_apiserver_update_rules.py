"""Immutable fields and resize admission on update."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import Forbidden, Invalid
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock

DRIVER = "mini.csi.example.com"


@pytest.fixture
def api() -> APIServer:
    api = APIServer(clock=FakeClock())
    api.create(b.storage_class("grow", DRIVER, allow_volume_expansion=True))
    api.create(b.storage_class("fixed", DRIVER))
    return api


def bound_claim(api: APIServer, sc: str, size: str = "10Gi") -> Resource:
    claim = api.create(b.persistent_volume_claim("data", storage=size, storage_class=sc))
    claim.spec["volumeName"] = "pvc-1"
    claim = api.update(claim)
    claim.status = {"phase": "Bound", "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"]}
    return api.update_status(claim)


def resize(api: APIServer, size: str) -> Resource:
    claim = api.get("PersistentVolumeClaim", "data", "default")
    claim.spec["resources"]["requests"]["storage"] = size
    return api.update(claim)


def test_bound_claim_grows_when_its_class_allows_expansion(api: APIServer) -> None:
    bound_claim(api, "grow")
    assert resize(api, "20Gi").spec["resources"]["requests"]["storage"] == "20Gi"


def test_growing_a_claim_whose_class_forbids_expansion_is_forbidden(api: APIServer) -> None:
    bound_claim(api, "fixed")
    with pytest.raises(Forbidden):
        resize(api, "20Gi")


def test_claim_cannot_shrink_below_its_capacity(api: APIServer) -> None:
    bound_claim(api, "grow")
    with pytest.raises(Invalid) as err:
        resize(api, "5Gi")
    assert err.value.field == "spec.resources.requests.storage"


def test_unbound_claim_requests_are_immutable(api: APIServer) -> None:
    api.create(b.persistent_volume_claim("data", storage="1Gi", storage_class="grow"))
    with pytest.raises(Invalid):
        resize(api, "2Gi")


def test_claim_volume_name_is_set_once(api: APIServer) -> None:
    bound_claim(api, "grow")
    claim = api.get("PersistentVolumeClaim", "data", "default")
    claim.spec["volumeName"] = "pvc-2"
    with pytest.raises(Invalid):
        api.update(claim)


def test_claim_access_modes_are_immutable(api: APIServer) -> None:
    claim = api.create(b.persistent_volume_claim("data", storage="1Gi"))
    claim.spec["accessModes"] = ["ReadWriteMany"]
    with pytest.raises(Invalid):
        api.update(claim)


def test_pod_binding_sets_node_name_once(api: APIServer) -> None:
    pod = api.create(b.pod("web"))
    pod.spec["nodeName"] = "node-1"
    pod = api.update(pod)
    pod.spec["nodeName"] = "node-2"
    with pytest.raises(Invalid) as err:
        api.update(pod)
    assert err.value.field == "spec.nodeName"


def test_pod_image_may_change_but_volumes_may_not(api: APIServer) -> None:
    pod = api.create(b.pod("web"))
    pod.spec["containers"][0]["image"] = "nginx:2"
    pod = api.update(pod)
    pod.spec["volumes"] = [b.pvc_volume("v", "data")]
    with pytest.raises(Invalid):
        api.update(pod)


def test_pv_source_is_immutable_but_capacity_and_claim_ref_are_not(api: APIServer) -> None:
    pv = api.create(b.csi_persistent_volume("pv", driver=DRIVER, volume_handle="h",
                                            storage="1Gi"))
    pv.spec["capacity"]["storage"] = "2Gi"
    pv.spec["claimRef"] = {"namespace": "default", "name": "data"}
    pv = api.update(pv)
    pv.spec["csi"]["volumeHandle"] = "other"
    with pytest.raises(Invalid):
        api.update(pv)


def test_storage_class_parameters_are_immutable(api: APIServer) -> None:
    sc = api.get("StorageClass", "fixed")
    sc.body["parameters"] = {"tier": "gold"}
    with pytest.raises(Invalid) as err:
        api.update(sc)
    assert err.value.field == "parameters"


def test_volume_attachment_spec_is_immutable_but_status_is_not(api: APIServer) -> None:
    va = api.create(b.volume_attachment("csi-1", DRIVER, "node-1", "pv"))
    va.status = {"attached": True, "attachmentMetadata": {"devicePath": "/dev/x"}}
    va = api.update_status(va)
    va.spec["nodeName"] = "node-2"
    with pytest.raises(Invalid):
        api.update(va)


def test_snapshot_source_is_immutable(api: APIServer) -> None:
    snap = api.create(b.volume_snapshot("s", source_pvc="data"))
    snap.spec["source"] = {"persistentVolumeClaimName": "other"}
    with pytest.raises(Invalid):
        api.update(snap)
