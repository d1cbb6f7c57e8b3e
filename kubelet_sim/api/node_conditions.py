"""What a node's health is made of, shared by the kubelet that reports it and the node
lifecycle controller that watches it: the heartbeat Lease's namespace, the conditions a
kubelet posts (with its reasons and messages when healthy), and parsing of the times."""

from __future__ import annotations

from datetime import UTC, datetime

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


def parse_timestamp(text: str) -> datetime:
    """``metav1.Time`` (seconds) or ``metav1.MicroTime`` (a Lease's renewTime)."""
    for layout in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(text, layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"not a Kubernetes timestamp: {text!r}")
