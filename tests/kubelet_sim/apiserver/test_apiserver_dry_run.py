"""The API server's dry run (``dry_run=True``, a request's ``dryRun=All``): the whole
write — admission, defaulting, validation, the update rules, generation — and nothing
stored, no watch event, no quota charged."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import InvalidObject, ObjectForbidden
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


def claim(name: str, storage_class: str = "slow") -> Resource:
    return new("PersistentVolumeClaim", name, "default", spec={
        "storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}})


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock(), storage_object_in_use_protection=True)


def test_a_dry_run_create_answers_the_admitted_object_and_stores_nothing(
        api: APIServer) -> None:
    before = api.resource_version
    shown = api.create(claim("data"), dry_run=True)
    assert shown.metadata.uid and shown.metadata.creation_timestamp
    assert shown.metadata.resource_version == ""
    assert shown.metadata.finalizers == ["kubernetes.io/pvc-protection"]  # admission ran
    assert shown.spec["volumeMode"] == "Filesystem"  # defaulted
    assert api.list("PersistentVolumeClaim").items == [] and api.resource_version == before


def test_a_dry_run_update_keeps_the_update_rules_and_bumps_nothing_stored(
        api: APIServer) -> None:
    stored = api.create(claim("data"))
    changed = stored.copy()
    changed.spec["storageClassName"] = "fast"
    with pytest.raises(InvalidObject) as refused:
        api.update(changed, dry_run=True)
    assert "spec is immutable after creation" in refused.value.message
    labelled = stored.copy()
    labelled.metadata.labels["tier"] = "gold"
    assert api.update(labelled, dry_run=True).metadata.labels == {"tier": "gold"}
    assert api.get("PersistentVolumeClaim", "data", "default").to_dict() == stored.to_dict()


def test_a_dry_run_create_is_refused_by_a_full_quota_and_charges_a_roomy_one(
        api: APIServer) -> None:
    quota = api.create(new("ResourceQuota", "q", "default", spec={"hard": {"pods": "1"}}))
    quota.status = {"hard": {"pods": "1"}, "used": {"pods": "0"}}
    api.update_status(quota)
    pod = new("Pod", "a", "default", spec={"containers": [{"name": "c", "image": "nginx"}]})
    api.create(pod, dry_run=True)
    assert api.get("ResourceQuota", "q", "default").status["used"] == {"pods": "0"}
    api.create(pod)
    with pytest.raises(ObjectForbidden) as refused:
        api.create(new("Pod", "b", "default",
                       spec={"containers": [{"name": "c", "image": "nginx"}]}), dry_run=True)
    assert "exceeded quota: q" in refused.value.message


def test_a_dry_run_delete_answers_the_deleting_object_and_changes_nothing(
        api: APIServer) -> None:
    api.create(claim("data"))
    before = api.resource_version
    shown = api.delete("PersistentVolumeClaim", "data", "default", dry_run=True)
    assert shown.metadata.deletion_timestamp is not None
    kept = api.get("PersistentVolumeClaim", "data", "default")
    assert kept.metadata.deletion_timestamp is None and api.resource_version == before
    api.create(new("ConfigMap", "plain", "default"))
    assert api.delete("ConfigMap", "plain", "default", dry_run=True).name == "plain"
    assert api.get("ConfigMap", "plain", "default").name == "plain"
