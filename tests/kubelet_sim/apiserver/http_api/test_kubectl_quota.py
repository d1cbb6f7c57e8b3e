"""ResourceQuota and LimitRange on `python -m kubelet_sim up`, driven by the real kubectl
(v1.35): `kubectl create quota`, the quota controller's status in `kubectl get quota` and
`kubectl describe quota`, the ResourceQuota admission plugin's refusal reaching kubectl
word for word, usage given back when a pod goes, and a LimitRange's defaults filled into
a new pod (and its minimum refusing another)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up() as running:
        yield running


def refused(up: Up, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args], input=stdin,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip()


def used(up: Up, namespace: str) -> dict[str, str]:
    found = json.loads(up.kubectl("get", "quota", "q", "-n", namespace, "-o", "json"))
    return dict(found.get("status", {}).get("used") or {})


CLAIM = """apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: NAME, namespace: quota}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: SIZE}}}
"""


def test_a_third_pod_past_the_quota_is_refused_and_describe_shows_used_and_hard(
        up: Up) -> None:
    up.kubectl("create", "namespace", "quota")
    assert up.kubectl("create", "quota", "q", "-n", "quota",
                      "--hard=pods=2,requests.storage=2Gi").strip() == "resourcequota/q created"
    wait_for(lambda: used(up, "quota") == {"pods": "0", "requests.storage": "0"},
             "the quota controller's first status")
    up.kubectl("run", "a", "-n", "quota", "--image=nginx")
    up.kubectl("run", "b", "-n", "quota", "--image=nginx")
    assert refused(up, "run", "c", "-n", "quota", "--image=nginx") == (
        'Error from server (Forbidden): pods "c" is forbidden: exceeded quota: q, requested: '
        "pods=1, used: pods=2, limited: pods=2")
    up.kubectl("apply", "-f", "-", stdin=CLAIM.replace("NAME", "one").replace("SIZE", "1Gi"))
    assert refused(up, "apply", "-f", "-",
                   stdin=CLAIM.replace("NAME", "two").replace("SIZE", "1536Mi")) == (
        'Error from server (Forbidden): error when creating "STDIN": persistentvolumeclaims '
        '"two" is forbidden: exceeded quota: q, requested: requests.storage=1536Mi, used: '
        "requests.storage=1Gi, limited: requests.storage=2Gi")
    table = up.kubectl("get", "quota", "-n", "quota").splitlines()
    assert table[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert table[1].split()[2:] == ["pods:", "2/2,", "requests.storage:", "1Gi/2Gi"]
    described = [line.split() for line in up.kubectl("describe", "quota", "q", "-n",
                                                     "quota").splitlines()]
    assert described[-4:] == [["Resource", "Used", "Hard"], ["--------", "----", "----"],
                              ["pods", "2", "2"], ["requests.storage", "1Gi", "2Gi"]]
    up.kubectl("delete", "pod", "a", "-n", "quota", "--wait=true", timeout=60)
    wait_for(lambda: used(up, "quota").get("pods") == "1", "the deleted pod given back")
    up.kubectl("run", "c", "-n", "quota", "--image=nginx")


def test_a_limit_range_fills_defaults_into_a_new_pod_and_its_minimum_refuses_less(
        up: Up) -> None:
    up.kubectl("create", "namespace", "limits")
    up.kubectl("apply", "-n", "limits", "-f", "-", stdin="""apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 200m}
    min: {cpu: 100m}
""")
    assert up.kubectl("get", "limits", "-n", "limits").splitlines()[0].split() == [
        "NAME", "CREATED", "AT"]
    up.kubectl("run", "web", "-n", "limits", "--image=nginx")
    made = json.loads(up.kubectl("get", "pod", "web", "-n", "limits", "-o", "json"))
    assert made["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "128Mi"},
        "requests": {"cpu": "200m", "memory": "128Mi"}}
    assert made["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit "
        "for container web")
    assert made["status"]["qosClass"] == "Burstable"
    overrides = json.dumps({"spec": {"containers": [{"name": "tiny", "image": "nginx",
                                                     "resources": {"requests": {"cpu": "50m"}}}]}})
    assert refused(up, "run", "tiny", "-n", "limits", "--image=nginx",
                   f"--overrides={overrides}") == (
        'Error from server (Forbidden): pods "tiny" is forbidden: minimum cpu usage per '
        "Container is 100m, but request is 50m")


def test_a_deployment_past_the_quota_gets_the_pods_it_may_a_failed_create_and_the_failure(
        up: Up) -> None:
    up.kubectl("create", "namespace", "deploy")
    up.kubectl("create", "quota", "q", "-n", "deploy", "--hard=pods=2")
    wait_for(lambda: used(up, "deploy") == {"pods": "0"}, "the quota controller's status")
    up.kubectl("create", "deployment", "web", "-n", "deploy", "--image=nginx", "--replicas=3")

    def failed_create() -> list[dict]:
        return json.loads(up.kubectl("get", "events", "-n", "deploy", "--field-selector",
                                     "reason=FailedCreate", "-o", "json"))["items"]

    # each retry names a new pod, so more of these may follow
    event = wait_for(failed_create, "the ReplicaSet's FailedCreate event")[0]
    assert event["type"] == "Warning" and event["involvedObject"]["kind"] == "ReplicaSet"
    assert event["message"].startswith('Error creating: pods "web-')
    assert event["message"].endswith('" is forbidden: exceeded quota: q, requested: pods=1, '
                                     "used: pods=2, limited: pods=2")
    pods = up.kubectl("get", "pods", "-n", "deploy", "-o", "name").split()
    assert len(pods) == 2

    def deployment_failure() -> str:
        return up.kubectl("get", "deployment", "web", "-n", "deploy", "-o",
                          'jsonpath={.status.conditions[?(@.type=="ReplicaFailure")].reason}')

    assert wait_for(deployment_failure, "the Deployment's ReplicaFailure") == "FailedCreate"
