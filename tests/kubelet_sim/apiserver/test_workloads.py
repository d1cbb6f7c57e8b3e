"""The workload kinds in the API server: kube-apiserver's defaults, validation and update
rules for Deployment, ReplicaSet, StatefulSet, DaemonSet and Job."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import Invalid, InvalidObject
from kubelet_sim.apiserver.server import APIServer


def workload(kind: str, **spec: Any) -> dict[str, Any]:
    group = "batch/v1" if kind == "Job" else "apps/v1"
    policy = {"restartPolicy": "Never"} if kind == "Job" else {}
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "w"}},
        "template": {"metadata": {"labels": {"app": "w"}},
                     "spec": {"containers": [{"name": "c", "image": "i"}], **policy}}}
    if kind == "Job":
        body.pop("selector")
    return {"apiVersion": group, "kind": kind, "metadata": {"name": "w", "namespace": "default"},
            "spec": {**body, **spec}}


def test_deployment_defaults_are_kube_apiservers() -> None:
    d = APIServer().create(workload("Deployment"))
    assert d.spec["replicas"] == 1
    assert d.spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (d.spec["revisionHistoryLimit"], d.spec["progressDeadlineSeconds"]) == (10, 600)
    template = d.spec["template"]["spec"]
    assert (template["restartPolicy"], template["dnsPolicy"],
            template["terminationGracePeriodSeconds"]) == ("Always", "ClusterFirst", 30)


def test_stateful_set_and_daemon_set_defaults() -> None:
    api = APIServer()
    sts = api.create(workload("StatefulSet", volumeClaimTemplates=[
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]))
    assert sts.spec["podManagementPolicy"] == "OrderedReady"
    # maxUnavailable 1 as v1.35 defaults it (MaxUnavailableStatefulSet on by default)
    assert sts.spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "partition": 0, "maxUnavailable": 1}}
    assert sts.spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain",
                                                                "whenScaled": "Retain"}
    assert sts.spec["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    ds = api.create(workload("DaemonSet"))
    assert ds.spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": 1, "maxSurge": 0}}


def test_a_job_gets_its_generated_selector_and_labels() -> None:
    job = APIServer().create(workload("Job"))
    uid = job.metadata.uid
    assert job.spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = job.spec["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "w" and labels["controller-uid"] == uid
    assert (job.spec["completions"], job.spec["parallelism"], job.spec["backoffLimit"],
            job.spec["completionMode"]) == (1, 1, 6, "NonIndexed")
    assert job.metadata.labels == labels


@pytest.mark.parametrize(("kind", "spec", "field", "message"), [
    ("Deployment", {"selector": None}, "spec.selector", "Required value"),
    ("ReplicaSet", {"selector": {"matchLabels": {"app": "x"}}},
     "spec.template.metadata.labels",
     'Invalid value: map[string]string{"app":"w"}: `selector` does not match template '
     "`labels`"),
    ("Deployment", {"replicas": -1}, "spec.replicas",
     "Invalid value: -1: must be greater than or equal to 0"),
    ("Deployment", {"strategy": {"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 0, "maxUnavailable": 0}}}, "spec.strategy.rollingUpdate.maxUnavailable",
     "Invalid value: 0: may not be 0 when `maxSurge` is 0"),
    ("StatefulSet", {"podManagementPolicy": "Random"}, "spec.podManagementPolicy",
     'Unsupported value: "Random": supported values: "OrderedReady", "Parallel"'),
    ("StatefulSet", {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": 0}}}, "spec.updateStrategy.rollingUpdate.maxUnavailable",
     "Invalid value: 0: cannot be 0"),
    ("StatefulSet", {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "partition": -1}}}, "spec.updateStrategy.rollingUpdate.partition",
     "Invalid value: -1: must be greater than or equal to 0"),
    ("DaemonSet", {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 1, "maxUnavailable": 1}}}, "spec.updateStrategy.rollingUpdate.maxSurge",
     "Invalid value: 1: may not be set when maxUnavailable is non-zero"),
    ("DaemonSet", {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": "0%", "maxUnavailable": 0}}},
     "spec.updateStrategy.rollingUpdate.maxUnavailable",
     "Required value: cannot be 0 when maxSurge is 0"),
])
def test_invalid_workloads_are_refused_with_the_field(kind: str, spec: dict[str, Any],
                                                      field: str, message: str) -> None:
    body = workload(kind)
    body["spec"].update(spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    with pytest.raises(Invalid) as err:
        APIServer().create(body)
    assert (err.value.field, err.value.detail) == (field, message)


def test_restart_policy_is_always_for_apps_and_on_failure_or_never_for_jobs() -> None:
    api = APIServer()
    body = workload("DaemonSet")
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    with pytest.raises(Invalid, match='Unsupported value: "OnFailure": supported values: '
                                      '"Always"'):
        api.create(body)
    body = workload("Job")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(Invalid, match='Required value: valid values: "OnFailure", "Never"'):
        api.create(body)


def test_the_template_is_validated_as_a_pod() -> None:
    body = workload("Deployment")
    body["spec"]["template"]["spec"]["containers"][0]["image"] = ""
    with pytest.raises(Invalid) as err:
        APIServer().create(body)
    assert err.value.field == "spec.template.spec.containers[0].image"


def test_selectors_are_immutable_and_a_stateful_set_keeps_most_of_its_spec() -> None:
    api = APIServer()
    d = api.create(workload("Deployment"))
    d.spec["selector"] = {"matchLabels": {"app": "w", "tier": "x"}}
    d.spec["template"]["metadata"]["labels"]["tier"] = "x"
    with pytest.raises(Invalid, match="field is immutable") as err:
        api.update(d)
    assert err.value.field == "spec.selector"
    sts = api.create(workload("StatefulSet"))
    sts.spec["serviceName"] = "other"
    with pytest.raises(Invalid, match="updates to statefulset spec for fields other than"):
        api.update(sts)
    sts = api.get("StatefulSet", "w", "default")
    sts.spec["replicas"] = 5
    assert api.update(sts).metadata.generation == 2


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet"])
def test_a_changed_selector_no_longer_matching_the_template_gives_both_causes(
        kind: str) -> None:
    api = APIServer()
    obj = api.create(workload(kind))
    obj.spec["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(InvalidObject) as err:
        api.update(obj)
    assert [(e.reason, e.field) for e in err.value.errors] == [
        ("FieldValueInvalid", "spec.template.metadata.labels"),
        ("FieldValueInvalid", "spec.selector")]
    assert err.value.message == (
        f'{kind}.apps "w" is invalid: [spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"w"}: `selector` does not match template `labels`, '
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string'
        '{"app":"other"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
        "field is immutable]")


def test_a_stateful_sets_changed_selector_is_the_forbidden_spec_change_after_the_specs_errors(
        ) -> None:
    api = APIServer()
    sts = api.create(workload("StatefulSet"))
    sts.spec["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(InvalidObject) as err:
        api.update(sts)
    assert [(e.reason, e.field) for e in err.value.errors] == [
        ("FieldValueInvalid", "spec.template.metadata.labels"),
        ("FieldValueForbidden", "spec")]
    sts = api.get("StatefulSet", "w", "default")
    sts.spec["selector"] = {"matchLabels": {"app": "w", "tier": "x"}}
    sts.spec["template"]["metadata"]["labels"]["tier"] = "x"
    with pytest.raises(InvalidObject) as err:
        api.update(sts)
    assert [e.field for e in err.value.errors] == ["spec"]
