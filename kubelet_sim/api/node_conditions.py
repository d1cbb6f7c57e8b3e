"""What a node's health is made of, shared by the kubelet that reports it and the node
lifecycle controller that watches it: the heartbeat Lease's namespace, the conditions a
kubelet posts (with its reasons and messages when healthy), NetworkUnavailable."""

from __future__ import annotations

from typing import Any

NODE_LEASE_NAMESPACE = "kube-node-lease"

# type -> (status, reason, message) as a healthy kubelet posts them; Ready is the
# kubelet's own computation (KubeletReady / KubeletNotReady).
PRESSURE_CONDITIONS = {
    "MemoryPressure": ("False", "KubeletHasSufficientMemory",
                       "kubelet has sufficient memory available"),
    "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    "PIDPressure": ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
}
# The order `kubectl describe node` shows them in.
CONDITION_TYPES = (*PRESSURE_CONDITIONS, "Ready")


# Not the kubelet's in a real cluster (the network provider's node agent writes it:
# flannel's "FlannelIsUp", calico's "CalicoIsUp"); here the kubelet derives it from the
# CNI plugin's STATUS answer, which is what that agent reports on.
NETWORK_UNAVAILABLE = "NetworkUnavailable"


def network_unavailable(status: Any) -> dict[str, str]:
    """The NetworkUnavailable condition for a runtime network status (``ready``,
    ``reason``, ``message``: the CNI STATUS result)."""
    if status.ready:
        return {"type": NETWORK_UNAVAILABLE, "status": "False", "reason": "CNIStatusReady",
                "message": "the network plugin answers STATUS: ready"}
    return {"type": NETWORK_UNAVAILABLE, "status": "True",
            "reason": status.reason or "NetworkPluginNotReady",
            "message": status.message or "the network plugin is not ready"}
