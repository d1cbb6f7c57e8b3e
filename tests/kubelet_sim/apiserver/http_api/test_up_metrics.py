"""`up --metrics-address`: the cluster's Prometheus metrics under the real components'
names, scraped over HTTP while kubectl applies two pods with a volume."""

from __future__ import annotations

import socket
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.up_process import PROJECT_ROOT, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(value for (n, have), value in samples.items()
               if n == name and all(dict(have).get(k) == v for k, v in labels.items()))


def test_up_serves_pod_start_csi_cni_and_api_metrics() -> None:
    port = free_port()
    with running_up("--metrics-address", f"127.0.0.1:{port}") as up:
        assert f"metrics: http://127.0.0.1:{port}/metrics" in up.said
        up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))
        up.kubectl("wait", "--for=condition=Ready", "pod/db", "pod/web", "--timeout=60s")
        samples = wait_for(lambda: (s := scrape(port)) and total(
            s, "kubelet_pod_start_sli_duration_seconds_count") >= 2 and s, "pod starts")

    assert total(samples, "kubelet_pod_start_sli_duration_seconds_count") == 2
    assert total(samples, "csi_sidecar_operations_seconds_count",
                 method_name="/csi.v1.Controller/CreateVolume", grpc_status_code="OK") == 1
    assert total(samples, "csi_sidecar_operations_seconds_count",
                 method_name="/csi.v1.Controller/ControllerPublishVolume") == 1
    assert total(samples, "csi_operations_seconds_count",
                 method_name="/csi.v1.Node/NodeStageVolume", grpc_status_code="OK",
                 migrated="false") == 1
    assert total(samples, "cni_exec_duration_seconds_count", command="ADD",
                 plugin="emu-bridge", result="OK") == 2
    assert total(samples, "apiserver_request_total", verb="POST", resource="pods",
                 code="201") == 2
    assert total(samples, "apiserver_request_total", verb="GET", resource="pods") >= 1
