"""The node status the kubelet posts: Ready from the runtime's network status (CNI
STATUS), the pressure conditions a healthy kubelet reports, NetworkUnavailable, the
volumes in use and the node's info (``node_info.py``). A condition's
``lastTransitionTime`` moves only when its status does; nothing is written when nothing
changed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.node_conditions import (
    CONDITION_TYPES,
    NETWORK_UNAVAILABLE,
    PRESSURE_CONDITIONS,
    network_unavailable,
)
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.kubelet.node_info import node_info
from kubelet_sim.runtime.containerd import NetworkCondition


def wanted_conditions(network: NetworkCondition) -> list[JSON]:
    ready: JSON = {
        "type": "Ready",
        "status": "True" if network.ready else "False",
        "reason": "KubeletReady" if network.ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if network.ready else (
            "container runtime network not ready: NetworkReady=false "
            f"reason:{network.reason} message:{network.message}"),
    }
    return [*({"type": kind, "status": status, "reason": reason, "message": message}
              for kind, (status, reason, message) in PRESSURE_CONDITIONS.items()), ready,
            network_unavailable(network)]


# the kubelet's node status events (recordNodeStatusEvent) per condition and status,
# recorded when a condition is first posted or changes status
STATUS_EVENTS = {
    ("MemoryPressure", "False"): "NodeHasSufficientMemory",
    ("MemoryPressure", "True"): "NodeHasInsufficientMemory",
    ("DiskPressure", "False"): "NodeHasNoDiskPressure",
    ("DiskPressure", "True"): "NodeHasDiskPressure",
    ("PIDPressure", "False"): "NodeHasSufficientPID",
    ("PIDPressure", "True"): "NodeHasInsufficientPID",
    ("Ready", "True"): "NodeReady",
    ("Ready", "False"): "NodeNotReady",
}


def node_event_message(node_name: str, reason: str) -> str:
    if reason == "Starting":
        return "Starting kubelet."
    if reason == "NodeAllocatableEnforced":
        return "Updated Node Allocatable limit across pods"
    return f"Node {node_name} status is now: {reason}"


def status_events(old: dict[str, JSON], wanted: list[JSON]) -> list[str]:
    return [STATUS_EVENTS[(c["type"], c["status"])] for c in wanted
            if (c["type"], c["status"]) in STATUS_EVENTS
            and old.get(c["type"], {}).get("status") != c["status"]]


def status_is_current(node: Resource, network: NetworkCondition, in_use: list[str]) -> bool:
    """Whether ``node`` (as the kubelet's informer cache has it) already says all the
    kubelet would write: then the pass neither reads nor writes the Node (the kubelet
    reads it from the API server only to change it)."""
    return says_already(node, wanted_conditions(network), in_use, node_info(node.name))


def says_already(node: Resource, wanted: list[JSON], in_use: list[str], info: JSON) -> bool:
    status = node.status
    old = {c.get("type"): c for c in status.get("conditions", [])}
    same = all(all(old.get(c["type"], {}).get(k) == v for k, v in c.items())
               for c in wanted)
    return same and status.get("volumesInUse", []) == in_use and status.get("nodeInfo") == info


def node_status_writer(client: KubeClient, node_name: str, network: NetworkCondition,
                       in_use: list[str], now: str,
                       on_events: Callable[[list[str]], None] | None = None
                       ) -> Callable[[], Awaitable[bool]]:
    """One attempt at writing the status (for ``retry_on_conflict_async``); False when the
    node already says all of it. ``on_events`` is told the status events of a write."""
    wanted = wanted_conditions(network)
    info = node_info(node_name)

    async def write() -> bool:
        node = await client.get("Node", node_name)
        status = node.status
        old = {c.get("type"): c for c in status.get("conditions", [])}
        if says_already(node, wanted, in_use, info):
            return False
        others = [c for c in status.get("conditions", [])
                  if c.get("type") not in (*CONDITION_TYPES, NETWORK_UNAVAILABLE)]
        status["conditions"] = [*others, *(
            dict(c, lastHeartbeatTime=now, lastTransitionTime=old[c["type"]].get(
                "lastTransitionTime", now)
                if old.get(c["type"], {}).get("status") == c["status"] else now)
            for c in wanted)]
        status["volumesInUse"] = in_use
        status["nodeInfo"] = info
        await client.update_status(node)
        if on_events is not None:
            on_events(status_events(old, wanted))
        return True

    return write
