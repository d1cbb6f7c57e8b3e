"""A Job's policies against a running `up`, driven by the real kubectl: a pod failure
policy's FailJob on an exit code fails the Job (`kubectl wait --for=condition=Failed`),
`kubectl patch` suspends a Job (its pods deleted) and resumes it, and the API refuses a
policy kube-apiserver refuses, naming every field."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

FAILS_ON_42 = """apiVersion: batch/v1
kind: Job
metadata: {name: exits-42}
spec:
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: work, operator: In, values: [42]}
  template:
    metadata:
      annotations: {sim.cni-csi-mini.io/exit-after: 1s, sim.cni-csi-mini.io/exit-code: "42"}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
"""

RUNS_ON = """apiVersion: batch/v1
kind: Job
metadata: {name: sleepy}
spec:
  completions: 4
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
"""


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up() as cluster:
        yield cluster


def get_json(up: Up, *args: str) -> Any:
    return json.loads(up.kubectl("get", *args, "-o", "json"))


def job_pods(up: Up, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(
        up, "pods", "-l", f"batch.kubernetes.io/job-name={name}")["items"]
    return items


def test_fail_job_on_exit_code_42_fails_the_job(up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(FAILS_ON_42)
    up.kubectl("create", "-f", str(manifest))
    up.kubectl("wait", "--for=condition=Failed", "job/exits-42", "--timeout=60s", timeout=90)
    job = get_json(up, "job", "exits-42")
    assert job["spec"]["podReplacementPolicy"] == "Failed"
    [pod] = job_pods(up, "exits-42")
    message = (f"Container work for pod default/{pod['metadata']['name']} failed with exit "
               "code 42 matching FailJob rule at index 0")
    assert [(c["type"], c["reason"], c["message"]) for c in job["status"]["conditions"]] == [
        ("FailureTarget", "PodFailurePolicy", message), ("Failed", "PodFailurePolicy", message)]
    assert (job["status"]["failed"], job["status"].get("active", 0)) == (1, 0)
    events = up.events("involvedObject.name=exits-42")
    assert ("Warning", "PodFailurePolicy", message) in [
        (e["type"], e["reason"], e["message"]) for e in events]


def test_patching_suspend_deletes_the_pods_and_resuming_starts_them_again(
        up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(RUNS_ON)
    up.kubectl("create", "-f", str(manifest))
    wait_for(lambda: len(job_pods(up, "sleepy")) == 2, what="two pods")
    up.kubectl("wait", "--for=condition=Ready", "pod", "-l",
               "batch.kubernetes.io/job-name=sleepy", "--timeout=60s", timeout=90)
    up.kubectl("patch", "job", "sleepy", "--type=merge", "-p", '{"spec":{"suspend":true}}')
    up.kubectl("wait", "--for=condition=Suspended", "job/sleepy", "--timeout=60s", timeout=90)
    wait_for(lambda: not job_pods(up, "sleepy"), what="the suspended Job's pods deleted")
    status = get_json(up, "job", "sleepy")["status"]
    assert (status.get("active", 0), status.get("failed", 0)) == (0, 0)
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "Suspended", "True", "JobSuspended", "Job suspended")

    up.kubectl("patch", "job", "sleepy", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    up.kubectl("wait", "--for=condition=Suspended=False", "job/sleepy", "--timeout=60s",
               timeout=90)
    wait_for(lambda: len(job_pods(up, "sleepy")) == 2, what="two pods again")
    reasons = [e["reason"] for e in up.events("involvedObject.name=sleepy")]
    assert "Suspended" in reasons and "Resumed" in reasons
    up.kubectl("delete", "job", "sleepy")


def test_a_fail_index_rule_without_a_per_index_limit_is_refused(up: Up) -> None:
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad"},
            "spec": {"podFailurePolicy": {"rules": [
                {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]},
                "template": {"spec": {"restartPolicy": "OnFailure",
                                      "containers": [{"name": "c", "image": "i"}]}}}}
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "create", "-f", "-"],
                          input=json.dumps(body), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode != 0
    assert 'The Job "bad" is invalid' in done.stderr
    assert ('spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the '
            "backoffLimitPerIndex to be set") in done.stderr
    assert ('spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is '
            "supported when podFailurePolicy is specified") in done.stderr
