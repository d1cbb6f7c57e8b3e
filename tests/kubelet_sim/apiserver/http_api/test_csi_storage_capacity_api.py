"""CSIStorageCapacity (storage.k8s.io/v1, namespaced) served over HTTPS: discovery, kubectl's
table and explain, the official client's create/read/list, kube-apiserver's validation and
the immutable GetCapacity inputs (422 with the field named)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from .conftest import Served, needs_kubectl

ZONE_A = """apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata:
  name: csisc-zone-a
  namespace: default
storageClassName: fast
nodeTopology:
  matchLabels: {topology.example.com/zone: a}
capacity: 1536Mi
maximumVolumeSize: 1Gi
"""


@pytest.fixture
def storage(served: Served) -> Any:
    return client.StorageV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))


def capacity_body(name: str = "csisc-abc", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                            "metadata": {"name": name}, "storageClassName": "fast",
                            "nodeTopology": {"matchLabels": {"zone": "a"}},
                            "capacity": "10Gi"}
    body.update(fields)
    return {k: v for k, v in body.items() if v is not None}


def rejected(call: Any, *args: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call(*args)
    return caught.value.status, json.loads(caught.value.body or "{}")


@needs_kubectl
def test_kubectl_creates_a_capacity_and_lists_it_with_the_class_and_capacity_columns(
    served: Served,
) -> None:
    created = served.kubectl("create", "-f", "-", stdin=ZONE_A).stdout.strip()
    assert created == "csistoragecapacity.storage.k8s.io/csisc-zone-a created"
    lines = served.kubectl("get", "csistoragecapacities").stdout.splitlines()
    assert [line.split() for line in lines] == [["NAME", "STORAGECLASSNAME", "CAPACITY"],
                                                ["csisc-zone-a", "fast", "1536Mi"]]
    resources = served.kubectl("api-resources", "--api-group=storage.k8s.io").stdout
    row = next(line.split() for line in resources.splitlines()
               if line.startswith("csistoragecapacities"))
    assert row == ["csistoragecapacities", "storage.k8s.io/v1", "true", "CSIStorageCapacity"]
    explained = served.kubectl("explain", "csistoragecapacities.maximumVolumeSize").stdout
    assert "FIELD: maximumVolumeSize <Quantity>" in explained


def test_the_client_creates_reads_and_lists_a_capacity_with_canonical_quantities(
    served: Served, storage: Any,
) -> None:
    storage.create_namespaced_csi_storage_capacity(
        "default", capacity_body(capacity="1.5Gi", maximumVolumeSize="1024Mi"))

    read = storage.read_namespaced_csi_storage_capacity("csisc-abc", "default")
    assert (read.storage_class_name, read.capacity, read.maximum_volume_size) == \
        ("fast", "1536Mi", "1Gi")
    assert read.node_topology.match_labels == {"zone": "a"}
    listed = storage.list_csi_storage_capacity_for_all_namespaces().items
    assert [c.metadata.name for c in listed] == ["csisc-abc"]


@pytest.mark.parametrize(("fields", "field", "detail"), [
    ({"storageClassName": ""}, "storageClassName", 'Invalid value: "": a lowercase RFC 1123'),
    ({"storageClassName": "Fast"}, "storageClassName", 'Invalid value: "Fast"'),
    ({"capacity": "-1Gi"}, "capacity", "must be greater than or equal to 0"),
    ({"nodeTopology": {"matchExpressions": [{"key": "zone", "operator": "Near"}]}},
     "nodeTopology.matchExpressions[0].operator", "Near"),
])
def test_an_invalid_capacity_is_422_naming_the_field(
    served: Served, storage: Any, fields: dict[str, Any], field: str, detail: str,
) -> None:
    code, status = rejected(storage.create_namespaced_csi_storage_capacity, "default",
                            capacity_body(**fields))
    assert (code, status["reason"]) == (422, "Invalid")
    [cause] = status["details"]["causes"]
    assert cause["field"] == field and detail in cause["message"]


def test_the_class_and_topology_are_immutable_and_the_capacity_is_not(
    served: Served, storage: Any,
) -> None:
    storage.create_namespaced_csi_storage_capacity("default", capacity_body())

    storage.patch_namespaced_csi_storage_capacity("csisc-abc", "default", {"capacity": "2Gi"})
    assert storage.read_namespaced_csi_storage_capacity("csisc-abc", "default").capacity == "2Gi"
    for change, field in (({"storageClassName": "slow"}, "storageClassName"),
                          ({"nodeTopology": {"matchLabels": {"zone": "b"}}}, "nodeTopology")):
        code, status = rejected(storage.patch_namespaced_csi_storage_capacity, "csisc-abc",
                                "default", change)
        assert (code, status["details"]["causes"][0]["field"]) == (422, field)
        assert "field is immutable" in status["message"]
