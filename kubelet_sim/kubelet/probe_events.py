"""The prober's events: every failed probe of a running container is a Warning
``Unhealthy`` event, "<Liveness|Readiness|Startup> probe failed: <output>" (the output of
probe_outcomes.py), naming the container in ``fieldPath``; repeats are counted by the
event correlator as the kubelet's are.

The probes themselves are worked out from the time since the container started
(prober.py); this remembers, per container and probe type, the last failed probe already
reported, so each is reported once. A container seen first (a new one, or after the
kubelet restarted) or a kubelet that was stalled reports its last few failures only.
"""

from __future__ import annotations

from datetime import datetime

from kubelet_sim.api.model import Resource
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.kubelet.container_events import ContainerEvent, record_events
from kubelet_sim.kubelet.probe_outcomes import failure_output
from kubelet_sim.kubelet.prober import PROBE_FIELDS, TITLES, container_spec, probe_container

# failures reported at once at most (a container seen first, a kubelet that was stalled):
# the correlator would fold them into one event's count anyway
_AT_ONCE = 3

_Key = tuple[str, str, str]  # (pod uid, container, probe type)


class ProbeEvents:
    def __init__(self, recorder: EventRecorder, node: str) -> None:
        self.recorder, self.node = recorder, node
        self._reported: dict[_Key, tuple[str, int]] = {}  # -> (container id, last tick)

    def failures(self, pod: Resource, now: datetime) -> list[ContainerEvent]:
        """The Unhealthy events of the probes that failed since the last call (and marks
        them reported)."""
        if pod.status.get("phase") != "Running":
            return []
        events: list[ContainerEvent] = []
        pod_ip = str(pod.status.get("podIP", ""))
        for status in pod.status.get("containerStatuses") or []:
            probes = probe_container(pod, status, now)
            if probes is None:
                continue
            name = str(status.get("name", ""))
            container = container_spec(pod, name) or {}
            container_id = str(status.get("containerID", ""))
            for probe_type, worker in probes.workers.items():
                key = (pod.metadata.uid, name, probe_type)
                seen_id, after = self._reported.get(key, ("", -1))
                same = seen_id == container_id
                ticks = worker.failed_ticks(after if same else -1, limit=_AT_ONCE)
                if ticks:
                    self._reported[key] = (container_id, ticks[-1])
                elif not same:
                    self._reported[key] = (container_id, -1)
                output = failure_output(container.get(PROBE_FIELDS[probe_type]) or {},
                                        container, pod_ip)
                events += [ContainerEvent(name, "Unhealthy",
                                          f"{TITLES[probe_type]} probe failed: {output}",
                                          warning=True) for _ in ticks]
        return events

    def record(self, pod: Resource, now: datetime) -> bool:
        """Record the Unhealthy events of ``pod`` due by ``now``; True when any."""
        events = self.failures(pod, now)
        record_events(self.recorder, pod, self.node, events)
        return bool(events)

    def forget_pod(self, uid: str) -> None:
        for key in [k for k in self._reported if k[0] == uid]:
            del self._reported[key]
