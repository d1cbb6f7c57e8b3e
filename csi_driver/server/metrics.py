"""Prometheus metrics of the driver (``--metrics-address HOST:PORT``, served at
``/metrics`` by ``prometheus-client``).

- ``csi_plugin_operations_seconds`` (histogram; labels ``driver_name``, ``method_name``
  — the full gRPC method, ``/csi.v1.Node/NodeStageVolume`` — and ``grpc_status_code``
  as Go spells it, ``OK``, ``Unavailable``, ...): what csi-lib-utils' metrics manager
  records for a plugin (a sidecar records the same as ``csi_sidecar_...``), with its
  buckets;
- ``csi_mini_volumes`` and ``csi_mini_snapshots`` (gauges): how many the store holds
  now, read at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

# csi-lib-utils' metrics buckets (seconds)
BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 25.0, 50.0, 120.0, 300.0, 600.0)
_GO_NAMES = {"CANCELLED": "Canceled"}  # grpc-go's codes.Code.String()


def go_code_name(name: str) -> str:
    """A status code as grpc-go prints it: INVALID_ARGUMENT → InvalidArgument."""
    if name == "OK":
        return name
    return _GO_NAMES.get(name) or "".join(part.capitalize() for part in name.split("_"))


class _StoreCounts(Collector):
    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = self._counts()
        for kind in ("volumes", "snapshots"):
            yield GaugeMetricFamily(f"csi_mini_{kind}", f"{kind.capitalize()} the store holds",
                                    value=counts.get(kind, 0))


class DriverMetrics:
    def __init__(self, driver_name: str, counts: Callable[[], dict[str, int]]) -> None:
        self.driver_name = driver_name
        self.registry = CollectorRegistry()
        self.operations = Histogram(
            "csi_plugin_operations_seconds", "Time of the CSI operations the plugin served",
            ["driver_name", "method_name", "grpc_status_code"], buckets=BUCKETS,
            registry=self.registry)
        self.registry.register(_StoreCounts(counts))

    def observe(self, method: str, code_name: str, seconds: float) -> None:
        self.operations.labels(self.driver_name, method, go_code_name(code_name)).observe(seconds)

    def serve(self, address: str) -> WSGIServer:
        """Serve ``/metrics`` on ``HOST:PORT`` from a thread; ``shutdown()`` ends it."""
        host, _, port = address.rpartition(":")
        server, _thread = start_http_server(int(port), addr=host or "127.0.0.1",
                                            registry=self.registry)
        return server
