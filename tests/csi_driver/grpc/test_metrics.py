"""The driver's Prometheus metrics (``--metrics-address``), scraped over HTTP as
Prometheus does: per-method operation histograms with csi-lib-utils' names and labels
(the grpc-go spelling of the status code), and the volume and snapshot counts."""

from __future__ import annotations

import socket
import time
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import make_create_volume_req


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_operations_and_counts_are_served_for_prometheus(spawn_driver: SpawnDriver) -> None:
    port = free_port()
    proc = spawn_driver("--metrics-address", f"127.0.0.1:{port}")
    proc.stubs.controller.CreateVolume(make_create_volume_req("m1"))
    proc.stubs.controller.CreateVolume(make_create_volume_req("m2"))
    with pytest.raises(grpc.RpcError):
        proc.stubs.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest())  # no volume_id
    driver = "csi-mini.example.com"

    def count(method: str, code: str) -> float:
        labels = (("driver_name", driver), ("grpc_status_code", code),
                  ("method_name", f"/csi.v1.Controller/{method}"))
        return samples.get(("csi_plugin_operations_seconds_count", labels), 0.0)

    deadline = time.monotonic() + 10
    while True:  # each call is counted just after its answer goes out
        samples = scrape(port)
        if count("DeleteVolume", "InvalidArgument") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert count("CreateVolume", "OK") == 2
    assert count("DeleteVolume", "InvalidArgument") == 1
    buckets = {dict(labels)["le"] for (name, labels) in samples
               if name == "csi_plugin_operations_seconds_bucket"}
    assert {"0.1", "0.25", "600.0", "+Inf"} <= buckets
    assert samples[("csi_mini_volumes", ())] == 2
    assert samples[("csi_mini_snapshots", ())] == 0
