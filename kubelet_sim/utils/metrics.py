"""Prometheus metrics of the simulated cluster (``up --metrics-address HOST:PORT``, served
at ``/metrics`` by ``prometheus-client``), under the names the real components use:

- ``kubelet_pod_start_sli_duration_seconds``: pod creation to all containers running,
  as the kubelet measures its pod start SLI (from ``creationTimestamp``; nothing is
  pulled here, so nothing is subtracted), with the kubelet's buckets;
- ``csi_sidecar_operations_seconds`` (``driver_name``, ``method_name``,
  ``grpc_status_code``): the CSI calls of the external-provisioner/-attacher/
  -snapshotter/-resizer roles, as csi-lib-utils records them for a sidecar;
- ``csi_operations_seconds`` (the same labels and ``migrated``): the kubelet's CSI calls;
- ``cni_exec_duration_seconds`` (``command``, ``plugin``, ``result`` OK|error): each CNI
  plugin execution (no standard name exists for it; the kubelet no longer execs CNI);
- ``apiserver_request_total`` (``verb``, ``resource``, ``subresource``, ``code``): the
  API server's requests as kube-apiserver counts them (verbs GET LIST WATCH POST PUT
  PATCH DELETE).
"""

from __future__ import annotations

from datetime import datetime
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from kubelet_sim.utils.trace import TraceEvent

CSI_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 25.0, 50.0, 120.0, 300.0, 600.0)
POD_START_BUCKETS = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360,
                     480, 600, 900, 1200, 1800, 2700, 3600)
CNI_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIDECARS = frozenset({"external-provisioner", "external-attacher", "csi-snapshotter",
                      "csi-resizer"})


def go_code_name(result: str) -> str:
    """A traced CSI result (``OK``, ``UNAVAILABLE: ...``) as grpc-go names the code."""
    name = result.split(":", 1)[0].strip()
    if name == "OK":
        return name
    if name == "CANCELLED":
        return "Canceled"
    return "".join(part.capitalize() for part in name.split("_"))


class ClusterMetrics:
    def __init__(self, driver_name: str) -> None:
        self.driver_name = driver_name
        self.registry = CollectorRegistry()
        self.pod_start = Histogram(
            "kubelet_pod_start_sli_duration_seconds",
            "Duration from pod creation to all its containers running",
            buckets=POD_START_BUCKETS, registry=self.registry)
        labels = ["driver_name", "method_name", "grpc_status_code"]
        self.sidecar_ops = Histogram(
            "csi_sidecar_operations_seconds", "CSI operations of the CSI sidecar roles",
            labels, buckets=CSI_BUCKETS, registry=self.registry)
        self.kubelet_ops = Histogram(
            "csi_operations_seconds", "CSI operations of the kubelets",
            [*labels, "migrated"], buckets=CSI_BUCKETS, registry=self.registry)
        self.cni = Histogram(
            "cni_exec_duration_seconds", "CNI plugin executions",
            ["command", "plugin", "result"], buckets=CNI_BUCKETS, registry=self.registry)
        self.requests = Counter(
            "apiserver_request_total", "Requests the API server answered",
            ["verb", "resource", "subresource", "code"], registry=self.registry)

    def observe_call(self, event: TraceEvent) -> None:
        """A traced CSI call or CNI exec (a `Trace` listener)."""
        seconds = event.duration_ms / 1000.0
        if event.call.startswith("csi."):
            method = "/csi.v1." + event.call.removeprefix("csi.")
            code = go_code_name(event.result)
            if event.component in SIDECARS:
                self.sidecar_ops.labels(self.driver_name, method, code).observe(seconds)
            elif event.component == "kubelet":
                self.kubelet_ops.labels(self.driver_name, method, code, "false").observe(seconds)
        elif event.call.startswith("cni "):
            _, command, plugin = [*event.call.split(" ", 2), "", ""][:3]
            result = "OK" if event.result == "OK" else "error"
            self.cni.labels(command, plugin, result).observe(seconds)

    def pod_started(self, created: datetime, now: datetime) -> None:
        self.pod_start.observe(max(0.0, (now - created).total_seconds()))

    def request(self, verb: str, resource: str, subresource: str, code: int) -> None:
        self.requests.labels(verb, resource, subresource, str(code)).inc()

    def serve(self, address: str) -> WSGIServer:
        """Serve ``/metrics`` on ``HOST:PORT`` from a thread; ``shutdown()`` ends it."""
        host, _, port = address.rpartition(":")
        server, _thread = start_http_server(int(port), addr=host or "127.0.0.1",
                                            registry=self.registry)
        return server
