"""The node status the kubelet posts: Ready from the runtime's network status (CNI
STATUS), the pressure conditions a healthy kubelet reports, NetworkUnavailable, the
volumes in use and the node's info (``node_info.py``). A condition's
``lastTransitionTime`` moves only when its status does; nothing is written when nothing
changed."""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.model import JSON
from kubelet_sim.api.node_conditions import (
    CONDITION_TYPES,
    NETWORK_UNAVAILABLE,
    PRESSURE_CONDITIONS,
    network_unavailable,
)
from kubelet_sim.apiserver.server import APIServer
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


def node_status_writer(api: APIServer, node_name: str, network: NetworkCondition,
                       in_use: list[str], now: str) -> Callable[[], bool]:
    """One attempt at writing the status (for ``retry_on_conflict``); False when the
    node already says all of it."""
    wanted = wanted_conditions(network)
    info = node_info(node_name)

    def write() -> bool:
        node = api.get("Node", node_name)
        status = node.status
        old = {c.get("type"): c for c in status.get("conditions", [])}
        same = all(all(old.get(c["type"], {}).get(k) == v for k, v in c.items())
                   for c in wanted)
        if same and status.get("volumesInUse", []) == in_use and status.get("nodeInfo") == info:
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
        api.update_status(node)
        return True

    return write
