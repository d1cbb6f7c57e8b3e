"""Loading Kubernetes-style YAML manifests into API objects."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.manifests import ManifestError, apply_manifests, load_file, load_manifests
from kubelet_sim.testing.fake_clock import FakeClock

APP = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: csi-mini
provisioner: mini.csi.example.com
parameters:
  tier: gold
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: csi-mini
  resources:
    requests:
      storage: 1.5Gi
---
# a comment-only document is skipped
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: nginx
    ports:
    - {name: http, containerPort: 80}
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
  - name: scratch
    csi:
      driver: mini.csi.example.com
      volumeAttributes: {size: 1Gi}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-allow-web, namespace: default}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{protocol: TCP, port: 3306}]
"""


def test_multi_document_yaml_loads_every_object_in_order() -> None:
    objs = load_manifests(APP, "app.yaml")
    assert [(o.kind, o.name) for o in objs] == [
        ("StorageClass", "csi-mini"), ("PersistentVolumeClaim", "data"), ("Pod", "web"),
        ("NetworkPolicy", "db-allow-web")]
    assert objs[0].body["provisioner"] == "mini.csi.example.com"
    assert objs[2].spec["volumes"][1]["csi"]["driver"] == "mini.csi.example.com"


def test_namespaced_objects_default_to_the_default_namespace() -> None:
    objs = load_manifests(APP)
    assert objs[1].namespace == "default" and objs[0].namespace == ""


def test_loaded_objects_round_trip_to_the_same_dicts() -> None:
    for obj in load_manifests(APP):
        assert Resource.from_dict(obj.to_dict()) == obj


def test_applied_manifests_are_defaulted_and_quantities_canonical() -> None:
    api = APIServer(clock=FakeClock())
    stored = apply_manifests(api, load_manifests(APP))
    pvc = api.get("PersistentVolumeClaim", "data", "default")
    assert pvc.spec["resources"]["requests"]["storage"] == "1536Mi"
    assert pvc.spec["volumeMode"] == "Filesystem"
    assert stored[0].body["reclaimPolicy"] == "Delete"
    assert api.get("NetworkPolicy", "db-allow-web", "default").spec["policyTypes"] == ["Ingress"]


def test_applying_twice_updates_instead_of_failing() -> None:
    api = APIServer(clock=FakeClock())
    apply_manifests(api, load_manifests(APP))
    changed = APP.replace("port: 3306", "port: 3307")
    apply_manifests(api, load_manifests(changed))
    policy = api.get("NetworkPolicy", "db-allow-web", "default")
    assert policy.spec["ingress"][0]["ports"][0]["port"] == 3307
    assert policy.metadata.generation == 2


def test_kind_list_is_expanded() -> None:
    text = """
kind: List
apiVersion: v1
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: a}}
- {apiVersion: v1, kind: Namespace, metadata: {name: b}}
"""
    assert [o.name for o in load_manifests(text)] == ["a", "b"]


def _error(text: str) -> ManifestError:
    with pytest.raises(ManifestError) as err:
        load_manifests(text, "bad.yaml")
    return err.value


def test_error_names_document_object_and_field() -> None:
    text = APP.replace("    image: nginx\n", "")
    err = _error(text)
    assert err.document == 4 and err.field == "spec.containers[0].image"
    assert str(err).startswith("bad.yaml: document 4 (Pod web): spec.containers[0].image:")


def test_bad_quantity_is_reported_on_its_field() -> None:
    err = _error(APP.replace("storage: 1.5Gi", "storage: 1.5GB"))
    assert err.field == "spec.resources.requests.storage" and err.document == 2


def test_unknown_kind_is_reported() -> None:
    err = _error("apiVersion: v1\nkind: ComponentStatus\nmetadata: {name: s}\n")
    assert err.field == "kind" and "unsupported kind" in err.detail


def test_wrong_api_version_is_reported() -> None:
    err = _error("apiVersion: v1\nkind: StorageClass\nmetadata: {name: s}\nprovisioner: p\n")
    assert err.field == "apiVersion"


def test_missing_kind_is_reported() -> None:
    assert _error("apiVersion: v1\nmetadata: {name: x}\n").field == "kind"


def test_unknown_top_level_field_is_reported() -> None:
    err = _error("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nspce: {}\n")
    assert err.field == "spce"


def test_unknown_metadata_field_is_reported() -> None:
    err = _error("apiVersion: v1\nkind: Namespace\nmetadata: {name: x, lables: {}}\n")
    assert err.field == "metadata.lables"


def test_invalid_name_is_reported() -> None:
    err = _error("apiVersion: v1\nkind: Namespace\nmetadata: {name: Bad_Name}\n")
    assert err.field == "metadata.name"


def test_non_mapping_document_is_reported() -> None:
    err = _error("- just\n- a list\n")
    assert err.document == 1 and "mapping" in err.detail


def test_yaml_syntax_error_reports_its_line() -> None:
    err = _error("kind: Namespace\nmetadata: {name: x\n")
    assert "invalid YAML" in err.detail and "line" in err.detail


def test_duplicate_keys_are_rejected() -> None:
    err = _error("kind: Namespace\nkind: Pod\nmetadata: {name: x}\n")
    assert "duplicate key" in err.detail


def test_bad_item_in_a_list_names_its_index() -> None:
    text = "kind: List\nitems:\n- {kind: Namespace, metadata: {name: ok}}\n- {kind: Nope}\n"
    assert _error(text).field == "items[1].kind"


def test_network_policy_peer_errors_name_the_peer() -> None:
    bad = APP.replace("from: [{podSelector: {matchLabels: {app: web}}}]",
                      "from: [{ipBlock: {cidr: 10.0.0.0/8, except: [192.168.0.0/16]}}]")
    assert _error(bad).field == "spec.ingress[0].from[0].ipBlock.except[0]"


def test_load_file_uses_the_file_name_as_source(tmp_path: Path) -> None:
    path = tmp_path / "ns.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: BAD}\n")
    with pytest.raises(ManifestError) as err:
        load_file(path)
    assert str(err.value).startswith(f"{path}: document 1")


def test_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError):
        load_file(tmp_path / "absent.yaml")


def test_applying_an_exported_object_drops_server_set_metadata() -> None:
    source = APIServer(clock=FakeClock())
    exported = source.create(load_manifests(APP)[1]).to_dict()
    target = APIServer(clock=FakeClock())
    stored = apply_manifests(target, load_manifests(yaml.safe_dump(exported)))
    assert stored[0].metadata.uid != exported["metadata"]["uid"]


def test_unquoted_yaml_timestamps_are_read_as_rfc3339() -> None:
    text = ("apiVersion: v1\nkind: Namespace\n"
            "metadata: {name: x, creationTimestamp: 2024-05-01T10:00:00Z}\n")
    assert load_manifests(text)[0].metadata.creation_timestamp == "2024-05-01T10:00:00Z"


def test_non_string_label_value_is_reported() -> None:
    err = _error("apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {v: 1.0}}\n")
    assert err.field == "metadata.labels.v"


def test_misspelled_storage_class_field_is_reported() -> None:
    err = _error("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\n"
                 "provisioner: p\nallowVolumeExpanson: true\n")
    assert err.field == "allowVolumeExpanson" and err.detail == "unknown field"
