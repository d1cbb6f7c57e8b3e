"""What the quota evaluators measure: object count names as the served resources are
named, and a pod's effective requests with init containers and sidecars."""

from __future__ import annotations

from kubelet_sim.api.model import KINDS
from kubelet_sim.apiserver.http.resources import RESOURCES
from kubelet_sim.apiserver.quota.resource_lists import to_json
from kubelet_sim.apiserver.quota.usage import object_count_name, plural, pod_resources


def test_object_count_names_use_the_served_resource_and_group() -> None:
    served = {r.kind: r.plural for r in RESOURCES if r.kind in KINDS and r.stored}
    assert {kind: plural(kind) for kind in served} == served
    assert object_count_name("Pod") == "count/pods"
    assert object_count_name("Deployment") == "count/deployments.apps"
    assert object_count_name("NetworkPolicy") == "count/networkpolicies.networking.k8s.io"


def test_a_pods_requests_take_the_largest_init_step_and_add_sidecars() -> None:
    def container(name: str, cpu: str, **extra: str) -> dict:
        return {"name": name, "image": "x", "resources": {"requests": {"cpu": cpu}}, **extra}

    spec = {"containers": [container("a", "200m"), container("b", "300m")],
            "initContainers": [container("sidecar", "100m", restartPolicy="Always"),
                               container("migrate", "1")],
            "overhead": {"cpu": "10m"}}
    # containers 500m + sidecar 100m = 600m; the migrate step needs 1 + 100m = 1100m
    assert to_json(pod_resources(spec, "requests")) == {"cpu": "1110m"}
    assert to_json(pod_resources(spec, "requests", overhead=False)) == {"cpu": "1100m"}
