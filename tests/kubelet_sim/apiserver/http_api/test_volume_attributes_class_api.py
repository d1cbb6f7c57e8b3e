"""VolumeAttributesClass (storage.k8s.io/v1) served over HTTPS: discovery, kubectl's table,
the official client's create/read/list, kube-apiserver's validation and immutability
(422 with the field named), and a claim's class name rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubelet_sim.api import builders

from .conftest import Served, needs_kubectl
from .test_python_client import raw

GOLD = """apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata:
  name: gold
driverName: hostpath.csi.example.com
parameters:
  iops: "5000"
"""


@pytest.fixture
def storage(served: Served) -> Any:
    return client.StorageV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))


def vac_body(name: str = "gold", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
                            "metadata": {"name": name},
                            "driverName": "hostpath.csi.example.com",
                            "parameters": {"iops": "5000"}}
    body.update(fields)
    return {k: v for k, v in body.items() if v is not None}


def rejected(call: Any, *args: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call(*args)
    return caught.value.status, json.loads(caught.value.body or "{}")


def cause_field(status: dict[str, Any]) -> str:
    [cause] = status["details"]["causes"]
    return str(cause["field"])


@needs_kubectl
def test_kubectl_applies_a_class_and_gets_it_by_its_short_name_with_the_driver_column(
    served: Served,
) -> None:
    applied = served.kubectl("apply", "-f", "-", stdin=GOLD).stdout.strip()
    assert applied == "volumeattributesclass.storage.k8s.io/gold created"
    lines = served.kubectl("get", "vac").stdout.splitlines()
    assert lines[0].split() == ["NAME", "DRIVERNAME", "AGE"]
    assert lines[1].split()[:2] == ["gold", "hostpath.csi.example.com"]
    resources = served.kubectl("api-resources", "--api-group=storage.k8s.io").stdout
    row = next(line.split() for line in resources.splitlines()
               if line.startswith("volumeattributesclasses"))
    assert row == ["volumeattributesclasses", "vac", "storage.k8s.io/v1", "false",
                   "VolumeAttributesClass"]


def test_the_client_creates_reads_and_lists_a_class(served: Served, storage: Any) -> None:
    storage.create_volume_attributes_class(vac_body())

    read = storage.read_volume_attributes_class("gold")
    assert (read.driver_name, read.parameters) == ("hostpath.csi.example.com", {"iops": "5000"})
    assert [c.metadata.name for c in storage.list_volume_attributes_class().items] == ["gold"]
    stored = served.api.get("VolumeAttributesClass", "gold")
    assert stored.to_dict()["driverName"] == "hostpath.csi.example.com"


@pytest.mark.parametrize(("fields", "field", "detail"), [
    ({"driverName": None}, "driverName", "Required value"),
    ({"parameters": None}, "parameters",
     "Required value: must contain at least one key/value pair"),
    ({"parameters": {}}, "parameters",
     "Required value: must contain at least one key/value pair"),
    ({"parameters": {"": "1"}}, "parameters", 'Invalid value: "": field can not be empty.'),
    ({"driverName": "not a driver!"}, "driverName", None),
])
def test_a_class_without_a_valid_driver_or_parameters_is_422_naming_the_field(
    served: Served, fields: dict[str, Any], field: str, detail: str | None,
) -> None:
    # raw HTTPS: the client itself refuses a body without driverName
    code, status = raw(served, "/apis/storage.k8s.io/v1/volumeattributesclasses",
                       token=served.handle.credentials.token, method="POST",
                       body=json.dumps(vac_body(**fields)).encode(),
                       content_type="application/json")

    assert (code, status["reason"]) == (422, "Invalid")
    assert cause_field(status) == field
    if detail is not None:
        assert status["details"]["causes"][0]["message"] == detail


@pytest.mark.parametrize(("patch", "field"), [
    ({"driverName": "other.csi.example.com"}, "driverName"),
    ({"parameters": {"iops": "9000"}}, "parameters"),
])
def test_a_class_driver_and_parameters_are_immutable(
    storage: Any, patch: dict[str, Any], field: str,
) -> None:
    storage.create_volume_attributes_class(vac_body())

    code, status = rejected(storage.patch_volume_attributes_class, "gold", patch)

    assert code == 422
    assert cause_field(status) == field
    assert status["details"]["causes"][0]["message"] == \
        f"Forbidden: updates to {field} are forbidden."


def test_labels_of_a_class_may_change(storage: Any) -> None:
    storage.create_volume_attributes_class(vac_body())

    patched = storage.patch_volume_attributes_class("gold", {"metadata": {"labels": {"t": "1"}}})

    assert patched.metadata.labels == {"t": "1"}


# -- a claim's class ----------------------------------------------------------------------


def bound_claim(served: Served, vac: str | None, current: str | None = None) -> None:
    pvc = builders.persistent_volume_claim("data", storage="1Gi", storage_class="csi")
    if vac is not None:
        pvc.spec["volumeAttributesClassName"] = vac
    created = served.api.create(pvc)
    created.status["phase"] = "Bound"
    if current is not None:
        created.status["currentVolumeAttributesClassName"] = current
    served.api.update_status(created)


def claim_patch(served: Served, patch: dict[str, Any]) -> Any:
    core = client.CoreV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))
    return core.patch_namespaced_persistent_volume_claim("data", "default", patch)


def test_a_bound_claim_may_move_to_another_class(served: Served) -> None:
    bound_claim(served, "gold", current="gold")

    patched = claim_patch(served, {"spec": {"volumeAttributesClassName": "silver"}})

    assert patched.spec.volume_attributes_class_name == "silver"


def test_a_pending_claim_may_not_change_its_class(served: Served) -> None:
    pvc = builders.persistent_volume_claim("data", storage="1Gi", storage_class="csi")
    pvc.spec["volumeAttributesClassName"] = "gold"
    served.api.create(pvc)

    code, status = rejected(claim_patch, served, {"spec": {"volumeAttributesClassName": "x"}})

    assert (code, cause_field(status)) == (422, "spec")


def test_a_claim_class_in_effect_may_not_be_cleared(served: Served) -> None:
    bound_claim(served, "gold", current="gold")

    code, status = rejected(claim_patch, served, {"spec": {"volumeAttributesClassName": None}})

    assert (code, cause_field(status)) == (422, "spec.volumeAttributesClassName")
    assert status["details"]["causes"][0]["message"] == (
        "Forbidden: update to nil is forbidden when status.currentVolumeAttributesClassName "
        "is not nil")


def test_a_claim_class_not_yet_in_effect_may_be_cleared(served: Served) -> None:
    bound_claim(served, "gold")

    patched = claim_patch(served, {"spec": {"volumeAttributesClassName": None}})

    assert patched.spec.volume_attributes_class_name is None


def test_a_claim_class_name_must_be_a_dns_subdomain(served: Served) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))
    body = builders.persistent_volume_claim("data", storage="1Gi").to_dict()
    body["spec"]["volumeAttributesClassName"] = "Gold_Class"

    code, status = rejected(core.create_namespaced_persistent_volume_claim, "default", body)

    assert (code, cause_field(status)) == (422, "spec.volumeAttributesClassName")


def test_the_storage_group_lists_the_kind_the_sidecars_probe_for(served: Served) -> None:
    # external-provisioner and external-resizer keep volume modification on only when
    # storage.k8s.io/v1 lists the kind VolumeAttributesClass
    code, resources = raw(served, "/apis/storage.k8s.io/v1",
                          token=served.handle.credentials.token)

    assert code == 200
    [vac] = [r for r in resources["resources"] if r["kind"] == "VolumeAttributesClass"]
    assert (vac["name"], vac["namespaced"], vac["shortNames"]) == \
        ("volumeattributesclasses", False, ["vac"])
    assert {"create", "get", "list", "watch", "patch", "update", "delete"} <= set(vac["verbs"])


def test_a_volume_class_may_change_but_not_be_removed(served: Served) -> None:
    pv = builders.csi_persistent_volume("pv-1", driver="hostpath.csi.example.com",
                                        volume_handle="vol-1", storage="1Gi")
    pv.spec["volumeAttributesClassName"] = "gold"
    served.api.create(pv)
    core: Any = client.CoreV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))

    moved = core.patch_persistent_volume("pv-1", {"spec": {"volumeAttributesClassName": "x"}})
    code, status = rejected(core.patch_persistent_volume, "pv-1",
                            {"spec": {"volumeAttributesClassName": None}})

    assert moved.spec.volume_attributes_class_name == "x"
    assert (code, cause_field(status)) == (422, "spec.volumeAttributesClassName")
    assert status["details"]["causes"][0]["message"] == \
        "Forbidden: update from non-nil value to nil is forbidden"
