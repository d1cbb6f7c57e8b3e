"""The control plane with and without the workload controllers (`up
--no-workload-controllers` leaves them to a real kube-controller-manager)."""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.control_plane import cluster_controllers
from kubelet_sim.testing.fake_controller import FakeControllerDriver
from kubelet_sim.testing.fake_csi import FakeCsiClient
from kubelet_sim.utils.trace import Trace

WORKLOAD_LOOPS = {"deployment-controller", "replicaset-controller", "statefulset-controller",
                  "daemonset-controller", "job-controller"}


def names(**options: Any) -> set[str]:
    manager = cluster_controllers(APIServer(), FakeCsiClient(FakeControllerDriver(),
                                                               trace=Trace(), node=""),
                                  "csi.example.com", sidecars=False, **options)
    return {c.name for c in manager.controllers}


def test_the_workload_controllers_run_by_default() -> None:
    assert names() >= WORKLOAD_LOOPS


def test_they_can_be_left_out_while_the_other_loops_stay() -> None:
    left = names(workload_controllers=False)
    assert not WORKLOAD_LOOPS & left
    assert {"default-scheduler", "pod-garbage-collector"} <= left
