"""The sandbox request the kubelet sends the runtime for a pod (its name, namespace and
uid, annotations, and the port mappings of its containers' ports), as the kubelet's
generatePodSandboxConfig builds it."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.runtime.containerd import PodSandboxConfig, PortMapping


def sandbox_config(pod: Resource) -> PodSandboxConfig:
    ports = [
        PortMapping(container_port=int(p["containerPort"]), host_port=int(p.get("hostPort", 0)),
                    protocol=p.get("protocol", "TCP"), host_ip=p.get("hostIP", ""))
        for c in pod.spec.get("containers", []) for p in c.get("ports", [])
    ]
    return PodSandboxConfig(
        name=pod.name,
        namespace=pod.namespace,
        uid=pod.metadata.uid,
        annotations=dict(pod.metadata.annotations),
        port_mappings=ports,
    )
