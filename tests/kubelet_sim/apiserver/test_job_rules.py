"""A Job's defaults, validation and update rules as kube-apiserver v1.35 keeps them: the
pod failure, success and replacement policies, the per-index backoff, and which fields
an update may change; every error of one write reported at once."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.apiserver.server import APIServer


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "i"}]}},
                     **spec}}


def refused(body: dict[str, Any], api: APIServer | None = None) -> list[tuple[str, str]]:
    with pytest.raises(InvalidObject) as err:
        (api or APIServer()).create(body)
    assert err.value.message.startswith('Job.batch "j" is invalid: ')
    return [(e.field, e.detail) for e in err.value.errors]


def exit_codes(**req: Any) -> dict[str, Any]:
    return {"rules": [{"action": "FailJob", "onExitCodes": req}]}


def test_backoff_limit_defaults_to_max_int32_with_a_per_index_limit() -> None:
    api = APIServer()
    per_index = api.create(job(completionMode="Indexed", completions=2,
                               backoffLimitPerIndex=1))
    assert per_index.spec["backoffLimit"] == 2147483647
    plain = api.create({**job(), "metadata": {"name": "k", "namespace": "default"}})
    assert (plain.spec["backoffLimit"], plain.spec["podReplacementPolicy"],
            plain.spec["suspend"]) == (6, "TerminatingOrFailed", False)


def test_a_pod_failure_policy_defaults_replacement_to_failed_and_condition_status() -> None:
    created = APIServer().create(job(podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}))
    assert created.spec["podReplacementPolicy"] == "Failed"
    assert created.spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}]


def test_a_pod_failure_policy_needs_never_and_fail_index_a_per_index_limit() -> None:
    body = job(podFailurePolicy={"rules": [
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}]})
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert refused(body) == [
        ("spec.podFailurePolicy.rules[0].action",
         'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set'),
        ("spec.template.spec.restartPolicy",
         'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is '
         "specified")]


def test_on_exit_codes_rules_as_kube_apiserver_words_them() -> None:
    assert refused(job(podFailurePolicy=exit_codes(operator="In", values=[0, 3, 3, 1],
                                                   containerName="x"))) == [
        ("spec.podFailurePolicy.rules[0].onExitCodes.containerName",
         'Invalid value: "x": must be one of the container or initContainer names in the '
         "pod template"),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
         "Invalid value: 0: must not be 0 for the In operator"),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values[2]", "Duplicate value: 3"),
        ("spec.podFailurePolicy.rules[0].onExitCodes.values",
         "Invalid value: [0,3,3,1]: must be ordered")]
    assert refused(job(podFailurePolicy={"rules": [{"onExitCodes": {"values": [1]}}]})) == [
        ("spec.podFailurePolicy.rules[0].action",
         'Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'),
        ("spec.podFailurePolicy.rules[0].onExitCodes.operator",
         'Required value: valid values: ["In" "NotIn"]')]
    assert refused(job(podFailurePolicy={"rules": [{"action": "FailJob"}]})) == [
        ("spec.podFailurePolicy.rules[0]", "Invalid value: specifying one of OnExitCodes and "
                                           "OnPodConditions is required")]


def test_a_success_policy_is_for_indexed_jobs_only_and_within_completions() -> None:
    assert refused(job(successPolicy={"rules": [{"succeededCount": 1}]})) == [
        ("spec.successPolicy", 'Invalid value: {"Rules":[{"SucceededIndexes":null,'
                               '"SucceededCount":1}]}: requires indexed completion mode')]
    indexed = {"completionMode": "Indexed", "completions": 3, "parallelism": 3}
    assert refused(job(**indexed, successPolicy={"rules": [
        {"succeededIndexes": "0-5", "succeededCount": 4}, {}]})) == [
        ("spec.successPolicy.rules[0].succeededIndexes",
         'Invalid value: "0-5": error parsing succeededIndexes: too large index: "5"'),
        ("spec.successPolicy.rules[0].succeededCount",
         "Invalid value: 4: must be less than or equal to 3 (the number of specified "
         "completions)"),
        ("spec.successPolicy.rules[0].succeededCount",
         "Invalid value: 4: must be less than or equal to 0 (the number of indexes in the "
         "specified succeededIndexes field)"),
        ("spec.successPolicy.rules[1]", "Required value: at least one of succeededCount or "
                                        "succeededIndexes must be specified")]


def test_per_index_limits_need_an_indexed_job_and_replacement_failed_with_a_policy() -> None:
    assert refused(job(backoffLimitPerIndex=1, maxFailedIndexes=2)) == [
        ("spec.backoffLimitPerIndex", "Invalid value: 1: requires indexed completion mode"),
        ("spec.maxFailedIndexes", "Invalid value: 2: requires indexed completion mode")]
    assert refused(job(completionMode="Indexed", completions=2, maxFailedIndexes=3)) == [
        ("spec.backoffLimitPerIndex", "Required value: when maxFailedIndexes is specified"),
        ("spec.maxFailedIndexes", "Invalid value: 3: must be less than or equal to "
                                  "completions")]
    assert refused(job(podReplacementPolicy="TerminatingOrFailed",
                       podFailurePolicy=exit_codes(operator="In", values=[1]))) == [
        ("spec.podReplacementPolicy",
         'Unsupported value: "TerminatingOrFailed": supported values: "Failed"')]


def test_suspend_may_change_and_the_policies_may_not() -> None:
    api = APIServer()
    created = api.create(job(podFailurePolicy=exit_codes(operator="In", values=[42])))
    created.spec["suspend"] = True
    assert api.update(created).spec["suspend"] is True
    changed = api.get("Job", "j", "default")
    changed.spec["podFailurePolicy"]["rules"][0]["action"] = "Ignore"
    changed.spec["completions"] = 2
    with pytest.raises(InvalidObject) as err:
        api.update(changed)
    assert [(e.field, e.detail) for e in err.value.errors] == [
        ("spec.completions", "Invalid value: 2: field is immutable"),
        ("spec.podFailurePolicy", 'Invalid value: {"Rules":[{"Action":"Ignore","OnExitCodes":'
                                  '{"ContainerName":null,"Operator":"In","Values":[42]},'
                                  '"OnPodConditions":null}]}: field is immutable')]


def test_an_elastic_indexed_job_changes_completions_with_parallelism() -> None:
    api = APIServer()
    created = api.create(job(completionMode="Indexed", completions=3, parallelism=3))
    created.spec["completions"] = 4
    with pytest.raises(InvalidObject, match=r"spec\.completions: Invalid value: 4: can only be "
                                            r"modified in tandem with spec\.parallelism"):
        api.update(created)
    created.spec["parallelism"] = 4
    assert api.update(created).spec["completions"] == 4


def test_a_suspended_job_that_never_started_may_change_its_node_selector() -> None:
    api = APIServer()
    created = api.create(job(suspend=True))
    created.spec["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    updated = api.update(created)
    assert updated.spec["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    updated.status["startTime"] = "2025-01-01T00:00:00Z"
    started = api.update_status(updated)
    started.spec["template"]["spec"]["nodeSelector"] = {"zone": "b"}
    with pytest.raises(InvalidObject, match=r"spec\.template: Invalid value"):
        api.update(started)


def test_managed_by_is_a_domain_prefixed_path_that_stays() -> None:
    assert refused(job(managedBy="kueue")) == [
        ("spec.managedBy",
         'Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")')]
    api = APIServer()
    created = api.create(job(managedBy="kueue.x-k8s.io/multikueue"))
    created.spec["managedBy"] = "kubernetes.io/job-controller"
    with pytest.raises(InvalidObject) as err:
        api.update(created)
    assert [(e.field, e.detail) for e in err.value.errors] == [
        ("spec.managedBy", 'Invalid value: "kubernetes.io/job-controller": field is immutable')]
