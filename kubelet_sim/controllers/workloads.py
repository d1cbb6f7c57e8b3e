"""The workload controllers of kube-controller-manager, in the order a pass runs them:
Deployment (makes ReplicaSets), ReplicaSet (makes pods), StatefulSet, DaemonSet, Job."""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.daemonset import DaemonSetController
from kubelet_sim.controllers.deployment import DeploymentController
from kubelet_sim.controllers.job import JobController
from kubelet_sim.controllers.replicaset import ReplicaSetController
from kubelet_sim.controllers.statefulset import StatefulSetController

# the kinds whose controllers make pods, owners first
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet")


def workload_controllers(api: APIServer | KubeClient, common: dict[str, Any]) -> list[Controller]:
    return [DeploymentController(api, **common), ReplicaSetController(api, **common),
            StatefulSetController(api, **common), DaemonSetController(api, **common),
            JobController(api, **common)]
