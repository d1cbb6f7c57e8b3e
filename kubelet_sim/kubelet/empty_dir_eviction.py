"""The kubelet's eviction of a pod whose emptyDir outgrew its ``sizeLimit`` (the eviction
manager's local storage check, every ``--eviction-monitoring-interval``, 10 s).

What the kubelet does, and this does: a Warning event ``Evicted`` on the pod with the
message ``Usage of EmptyDir volume "v" exceeds the limit "1Gi". ``; the pod's status
``Failed``, reason ``Evicted``, that message, the ``DisruptionTarget`` condition (reason
``TerminationByKubelet``), Ready and ContainersReady False and its containers
terminated (killed: exit code 137). The pod stays in the API until deleted; the
kubelet's handling of a terminated pod stops its sandbox and unmounts its volumes.
"""

from __future__ import annotations

import contextlib
import math

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.client.events import WARNING, EventRecorder
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.kubelet.local_volumes import LocalVolumes
from kubelet_sim.kubelet.observed_generation import observe
from kubelet_sim.utils.clock import Clock

EVICTION_MONITORING_INTERVAL = 10.0
EVICTED = "Evicted"
KILLED_EXIT_CODE = 137


class EmptyDirEviction:
    def __init__(self, client: KubeClient, recorder: EventRecorder, node_name: str,
                 volumes: LocalVolumes, clock: Clock,
                 interval: float = EVICTION_MONITORING_INTERVAL) -> None:
        self.client = client
        self.recorder = recorder
        self.node_name = node_name
        self.volumes = volumes
        self.clock = clock
        self.interval = interval
        self._checked_at = -math.inf

    async def check(self, pods: list[Resource]) -> bool:
        """Evict the running pods over an emptyDir limit, at most once per interval;
        True when one was evicted."""
        now = self.clock.monotonic()
        if now - self._checked_at < self.interval:
            return False
        self._checked_at = now
        evicted = False
        for pod in pods:
            if pod.status.get("phase") != "Running" or pod.is_terminating:
                continue
            over = self.volumes.empty_dir_over_limit(pod)
            if over:
                await self._evict(pod, over[0])
                evicted = True
        return evicted

    async def _evict(self, pod: Resource, message: str) -> None:
        self.recorder.record("Pod", pod.namespace, pod.name, WARNING, EVICTED, message,
                             "kubelet", host=self.node_name)
        when = format_time(self.clock.now())

        async def write() -> None:
            current = await self.client.get("Pod", pod.name, pod.namespace)
            write_evicted(current, message, when)
            observe(current)
            await self.client.update_status(current)
        with contextlib.suppress(NotFound):
            await retry_on_conflict_async(write)


def write_evicted(pod: Resource, message: str, now: str) -> None:
    """The status the kubelet writes for a pod it evicted."""
    status = pod.status
    status["phase"] = "Failed"
    status["reason"] = EVICTED
    status["message"] = message
    conditions: list[JSON] = []
    for cond in status.get("conditions") or []:
        if cond.get("type") == "DisruptionTarget":
            continue
        if cond.get("type") in ("Ready", "ContainersReady", "PodReadyToStartContainers") \
                and cond.get("status") != "False":
            cond = {**cond, "status": "False", "lastTransitionTime": now}
            if cond["type"] != "PodReadyToStartContainers":
                cond["reason"] = "PodFailed"
        conditions.append(cond)
    conditions.append({"type": "DisruptionTarget", "status": "True",
                       "reason": "TerminationByKubelet", "message": message,
                       "lastProbeTime": None, "lastTransitionTime": now})
    status["conditions"] = conditions
    for container in status.get("containerStatuses") or []:
        running = (container.get("state") or {}).get("running") or {}
        container["ready"] = False
        container["started"] = False
        container["state"] = {"terminated": {
            "exitCode": KILLED_EXIT_CODE, "reason": "Error",
            "startedAt": running.get("startedAt", now), "finishedAt": now,
            **({"containerID": container["containerID"]} if container.get("containerID")
               else {})}}
