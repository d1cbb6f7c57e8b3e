"""100 pods applied at once with the real kubectl on a 5-node `up`: all become Ready with
distinct pod IPs from their nodes' ranges, and `kubectl delete` (which waits until they
are gone) leaves no address leased — every sandbox got its CNI DEL. The wall times are
printed (`pytest -s`), not asserted."""

from __future__ import annotations

import ipaddress
import json
import time
from pathlib import Path

from tests.fixtures.up_process import running_up

from .conftest import needs_kubectl

pytestmark = needs_kubectl
PODS = 100


def manifest() -> str:
    return "---\n".join(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: bulk-{i:03d}, labels: {{app: bulk}}}}\n"
        "spec:\n  containers: [{name: app, image: registry.k8s.io/pause:3.9}]\n"
        for i in range(PODS))


def leased(state: Path) -> list[Path]:
    """host-local's lease files (one per allocated address) on every node."""
    return [f for f in state.glob("cluster/*/ipam/*/*")
            if f.name[0].isdigit() and not f.name.startswith("last_reserved_ip")]


def test_a_hundred_pods_applied_at_once_all_run_and_all_go() -> None:
    with running_up("--nodes", "5") as up:
        state = Path(up.kubeconfig).parent
        started = time.monotonic()
        up.kubectl("apply", "-f", "-", stdin=manifest())
        applied = time.monotonic()
        up.kubectl("wait", "--for=condition=Ready", "pod", "-l", "app=bulk", "--timeout=300s",
                   timeout=320)
        ready = time.monotonic()
        pods = json.loads(up.kubectl("get", "pods", "-l", "app=bulk", "-o", "json"))["items"]
        assert len(pods) == PODS
        assert {p["status"]["phase"] for p in pods} == {"Running"}
        ips = [p["status"]["podIP"] for p in pods]
        assert len(set(ips)) == PODS
        nodes = {n["metadata"]["name"]: ipaddress.ip_network(n["spec"]["podCIDR"])
                 for n in json.loads(up.kubectl("get", "nodes", "-o", "json"))["items"]}
        assert len(nodes) == 5
        for pod in pods:
            assert ipaddress.ip_address(pod["status"]["podIP"]) in nodes[pod["spec"]["nodeName"]]
        assert len(leased(state)) == PODS
        gone_from = time.monotonic()
        up.kubectl("delete", "pod", "-l", "app=bulk", "--timeout=300s", timeout=320)
        gone = time.monotonic()
        assert json.loads(up.kubectl("get", "pods", "-o", "json"))["items"] == []
        assert leased(state) == []
        print(f"\n{PODS} pods via kubectl on 5 nodes: apply {applied - started:.1f} s, "
              f"all Ready {ready - started:.1f} s after the apply began, "
              f"delete until gone {gone - gone_from:.1f} s")
