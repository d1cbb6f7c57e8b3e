"""The status the kubelet writes for a pod: conditions keep their transition times while
unchanged, waiting containers say ContainerCreating, ids have containerd's shapes; and the
API server's QoS class rules."""

from __future__ import annotations

from kubelet_sim.api import builders
from kubelet_sim.apiserver.defaulting import qos_class
from kubelet_sim.kubelet.pod_status import (
    image_id,
    same_image,
    status_image,
    write_running,
    write_waiting,
)


def test_waiting_then_running_moves_only_the_conditions_that_change() -> None:
    pod = builders.pod("web")
    write_waiting(pod, reason="FailedMount", message="not attached", now="T1")
    conds = {c["type"]: c for c in pod.status["conditions"]}
    assert conds["Ready"]["status"] == "False"
    assert conds["Ready"]["message"] == "ContainerCreating: FailedMount: not attached"
    assert conds["PodReadyToStartContainers"]["status"] == "False"
    assert pod.status["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "ContainerCreating"}}
    write_waiting(pod, reason="FailedMount", message="still not", now="T2")
    assert {c["lastTransitionTime"] for c in pod.status["conditions"]} == {"T1"}
    write_running(pod, sandbox_id="s1", host_ip="192.168.0.1", ips=["10.244.1.5"], now="T3")
    conds = {c["type"]: c for c in pod.status["conditions"]}
    assert conds["Ready"] == {"type": "Ready", "status": "True", "lastTransitionTime": "T3",
                              "lastProbeTime": None}
    assert conds["Initialized"]["lastTransitionTime"] == "T1"  # was True already
    assert pod.status["podIPs"] == [{"ip": "10.244.1.5"}]
    assert pod.status["hostIPs"] == [{"ip": "192.168.0.1"}]
    (running,) = pod.status["containerStatuses"]
    assert running["state"] == {"running": {"startedAt": "T3"}}
    assert running["containerID"].startswith("containerd://")


def test_image_id_is_the_repository_at_a_digest() -> None:
    assert image_id("busybox:1.36").startswith("docker.io/library/busybox@sha256:")
    assert image_id("bitnami/redis:7").startswith("docker.io/bitnami/redis@sha256:")
    assert image_id("localhost/x:1").startswith("localhost/x@sha256:")
    assert image_id("localhost:5000/x/y:tag").startswith("localhost:5000/x/y@sha256:")
    assert image_id("registry.k8s.io/pause").startswith("registry.k8s.io/pause@sha256:")
    assert image_id("a:1") != image_id("a:2")


def test_qos_class() -> None:
    def spec(*resources: dict) -> dict:
        return {"containers": [{"name": f"c{i}", "resources": r}
                               for i, r in enumerate(resources)]}

    assert qos_class(spec({})) == "BestEffort"
    assert qos_class(spec({"limits": {"cpu": "1", "memory": "1Gi"}})) == "Guaranteed"
    assert qos_class(spec({"requests": {"cpu": "1000m", "memory": "1Gi"},
                           "limits": {"cpu": "1", "memory": "1024Mi"}})) == "Guaranteed"
    assert qos_class(spec({"requests": {"cpu": "500m"}, "limits": {"cpu": "1"}})) == "Burstable"
    assert qos_class(spec({"limits": {"cpu": "1", "memory": "1Gi"}}, {})) == "Burstable"
    assert qos_class(spec({"requests": {"ephemeral-storage": "1Gi"}})) == "BestEffort"


def test_a_started_containers_image_is_the_reference_the_runtime_reports() -> None:
    assert status_image("nginx") == "docker.io/library/nginx:latest"
    assert status_image("nginx:1.27") == "docker.io/library/nginx:1.27"
    assert status_image("bitnami/redis:7") == "docker.io/bitnami/redis:7"
    assert status_image("registry.k8s.io/pause:3.10") == "registry.k8s.io/pause:3.10"
    assert status_image("localhost:5000/x/y") == "localhost:5000/x/y:latest"
    assert status_image("nginx@sha256:ab") == "docker.io/library/nginx@sha256:ab"
    pod = builders.pod("web")
    pod.spec["containers"][0]["image"] = "nginx"
    write_waiting(pod, reason="FailedMount", message="not attached", now="T1")
    assert pod.status["containerStatuses"][0]["image"] == "nginx"  # not created yet
    write_running(pod, sandbox_id="s1", host_ip="", ips=[], now="T2")
    assert pod.status["containerStatuses"][0]["image"] == "docker.io/library/nginx:latest"


def test_two_spellings_of_one_reference_are_the_same_image() -> None:
    assert same_image("nginx", "docker.io/library/nginx:latest")
    assert same_image("library/nginx:1", "nginx:1")
    assert not same_image("nginx", "nginx:1")
    assert not same_image("quay.io/nginx", "nginx")


def test_every_container_status_carries_an_empty_last_state_before_a_termination() -> None:
    pod = builders.pod("web")
    pod.spec["initContainers"] = [{"name": "init", "image": "busybox"}]
    write_waiting(pod, reason="FailedMount", message="not attached", now="T1")
    assert pod.status["initContainerStatuses"][0]["lastState"] == {}
    assert pod.status["containerStatuses"][0]["lastState"] == {}
    write_running(pod, sandbox_id="s1", host_ip="", ips=[], now="T2")
    assert pod.status["containerStatuses"][0]["lastState"] == {}
