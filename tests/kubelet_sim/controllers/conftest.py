"""The controller-test cluster fixture (tests/kubelet_sim/controller_cluster.py)."""

from tests.kubelet_sim.controller_cluster import cluster

__all__ = ["cluster"]
