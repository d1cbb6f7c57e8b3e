"""Rollouts against a running `up` of three nodes, driven by the real kubectl: `kubectl
scale` in the middle of a stuck `kubectl set image` rollout grows both ReplicaSets in
proportion; `kubectl rollout pause/resume`; a DaemonSet rolled with maxSurge (`kubectl
rollout status ds`); a StatefulSet rolled within maxUnavailable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.up_process import Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

NEVER_READY = '{"spec":{"template":{"metadata":{"annotations":' \
              '{"sim.cni-csi-mini.io/ready-after":"never"}}}}}'

SURGING_DAEMON_SET = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: surge}
spec:
  selector: {matchLabels: {app: surge}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: surge}}
    spec:
      containers: [{name: agent, image: agent:1}]
"""

PARALLEL_STATEFUL_SET = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: cache}
spec:
  serviceName: cache
  replicas: 4
  podManagementPolicy: Parallel
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 50%}}
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: cache, image: cache:1}]
"""


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "3") as cluster:
        yield cluster


def get_json(up: Up, *args: str) -> Any:
    return json.loads(up.kubectl("get", *args, "-o", "json"))


def replica_sets(up: Up, app: str) -> dict[str, int]:
    """revision -> spec.replicas of the app's ReplicaSets."""
    return {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]:
            r["spec"]["replicas"]
            for r in get_json(up, "replicasets", "-l", f"app={app}")["items"]}


def test_kubectl_scale_during_a_rollout_grows_both_replica_sets_in_proportion(
        up: Up) -> None:
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=4")
    up.kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    # a new template whose pods never get Ready: with maxSurge 1 and maxUnavailable 1 of 4
    # the rollout stops at 3 old and 2 new
    up.kubectl("patch", "deployment", "web", "-p", NEVER_READY)
    wait_for(lambda: replica_sets(up, "web") == {"1": 3, "2": 2},
             what="the rollout to stop at 3 old and 2 new")
    up.kubectl("scale", "deployment", "web", "--replicas=8")
    # 8 + maxSurge 2 = 10 of 5: the old ReplicaSet 3 → 6, the new one 2 → 4
    wait_for(lambda: replica_sets(up, "web") == {"1": 6, "2": 4},
             what="both ReplicaSets grown in proportion")
    for rs in get_json(up, "replicasets", "-l", "app=web")["items"]:
        annotations = rs["metadata"]["annotations"]
        assert annotations["deployment.kubernetes.io/desired-replicas"] == "8"
        assert annotations["deployment.kubernetes.io/max-replicas"] == "10"
    events = up.kubectl("get", "events", "--field-selector",
                        "involvedObject.kind=Deployment,involvedObject.name=web")
    assert "Scaled up replica set" in events and "from 3 to 6" in events

    # paused, a template change makes no ReplicaSet; resumed, it rolls out
    up.kubectl("rollout", "undo", "deployment/web")
    up.kubectl("rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    up.kubectl("rollout", "pause", "deployment/web")
    up.kubectl("set", "image", "deployment/web", "nginx=nginx:1.27")
    wait_for(lambda: {c["type"]: c["reason"] for c in get_json(
        up, "deployment", "web")["status"]["conditions"]}["Progressing"] == "DeploymentPaused",
        what="the Progressing condition to say the Deployment is paused")
    assert len(replica_sets(up, "web")) == 2
    up.kubectl("rollout", "resume", "deployment/web")
    said = up.kubectl("rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    assert 'deployment "web" successfully rolled out' in said
    assert sorted(replica_sets(up, "web").values()) == [0, 0, 8]
    up.kubectl("delete", "deployment", "web")


def test_a_daemon_set_rolls_with_max_surge_and_rollout_status_waits_for_it(
        up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(SURGING_DAEMON_SET)
    up.kubectl("apply", "-f", str(manifest))
    up.kubectl("rollout", "status", "daemonset/surge", "--timeout=60s", timeout=90)
    up.kubectl("set", "image", "daemonset/surge", "agent=agent:2")
    said = up.kubectl("rollout", "status", "daemonset/surge", "--timeout=90s", timeout=120)
    assert 'daemon set "surge" successfully rolled out' in said
    wait_for(lambda: len(get_json(up, "pods", "-l", "app=surge")["items"]) == 3,
             what="the old pods gone")
    pods = get_json(up, "pods", "-l", "app=surge")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["node-1", "node-2", "node-3"]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"agent:2"}
    status = get_json(up, "daemonset", "surge")["status"]
    assert {k: status.get(k) for k in ("desiredNumberScheduled", "updatedNumberScheduled",
                                       "numberAvailable", "numberUnavailable")} == {
        "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3,
        "numberUnavailable": None}
    # surging, every node kept a pod: no SuccessfulDelete before a SuccessfulCreate there
    events = up.kubectl("get", "events", "--field-selector",
                        "involvedObject.kind=DaemonSet,involvedObject.name=surge")
    assert events.count("SuccessfulCreate") == 6 and events.count("SuccessfulDelete") == 3
    up.kubectl("delete", "daemonset", "surge")


def test_a_stateful_set_rolls_within_max_unavailable(up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "sts.yaml"
    manifest.write_text(PARALLEL_STATEFUL_SET)
    up.kubectl("apply", "-f", str(manifest))
    up.kubectl("rollout", "status", "statefulset/cache", "--timeout=60s", timeout=90)
    strategy = get_json(up, "statefulset", "cache")["spec"]["updateStrategy"]
    assert strategy == {"type": "RollingUpdate",
                        "rollingUpdate": {"partition": 0, "maxUnavailable": "50%"}}
    up.kubectl("set", "image", "statefulset/cache", "cache=cache:2")
    said = up.kubectl("rollout", "status", "statefulset/cache", "--timeout=90s", timeout=120)
    assert "partitioned roll out complete" in said or "rolling update complete" in said
    pods = get_json(up, "pods", "-l", "app=cache")["items"]
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"cache:2"}
    events = up.kubectl("get", "events", "--field-selector",
                        "involvedObject.kind=StatefulSet,involvedObject.name=cache")
    assert "delete Pod cache-3 in StatefulSet cache successful" in events
    up.kubectl("delete", "statefulset", "cache")
