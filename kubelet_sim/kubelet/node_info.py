"""What the kubelet says about its machine: the labels it registers its Node with
(``kubernetes.io/os``/``arch`` and their beta twins, which DaemonSet and Deployment
manifests select on) and ``status.nodeInfo`` (kubectl's VERSION, OS-IMAGE,
KERNEL-VERSION and CONTAINER-RUNTIME columns). The simulated nodes share the host's
kernel and architecture; the runtime is the simulator's containerd role."""

from __future__ import annotations

import os
import platform
import uuid

from kubelet_sim.api.model import JSON

KUBELET_VERSION = "v1.35.0-cni-csi-mini"  # as the API server's /version says
CONTAINER_RUNTIME_VERSION = "containerd://2.1.0-kubelet-sim"
OS_IMAGE = "kubelet-sim (simulated node)"
# Go's GOARCH for platform.machine()'s names
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
           "armv7l": "arm", "i686": "386", "i386": "386", "ppc64le": "ppc64le",
           "s390x": "s390x", "riscv64": "riscv64"}


def architecture() -> str:
    machine = platform.machine().lower()
    return _GOARCH.get(machine, machine or "amd64")


def default_labels(node_name: str) -> dict[str, str]:
    """The labels the kubelet sets on its Node (updateDefaultLabels)."""
    arch = architecture()
    return {"kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": arch}


def node_info(node_name: str) -> JSON:
    """``status.nodeInfo`` for the node: ids stable per node name (a real machine's are
    stable per machine), the host's kernel."""
    machine_id = uuid.uuid5(uuid.NAMESPACE_DNS, f"{node_name}.kubelet-sim")
    return {"machineID": machine_id.hex, "systemUUID": str(machine_id),
            "bootID": str(uuid.uuid5(machine_id, "boot")),
            "kernelVersion": os.uname().release, "osImage": OS_IMAGE,
            "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            # no longer set by the kubelet (DisableNodeKubeProxyVersion), but the field has
            # no omitempty: a real Node shows it empty, and clients require it
            "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": architecture()}
