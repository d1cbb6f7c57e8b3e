"""What a node's health is made of, shared by the kubelet that reports it and the node
lifecycle controller that watches it: the heartbeat Lease's namespace, the conditions a
kubelet posts (with its reasons and messages when healthy)."""

from __future__ import annotations

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

