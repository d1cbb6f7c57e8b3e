"""One simulated node's machine, as the in-process :class:`~kubelet_sim.cluster.Cluster`
and the ``kubelet-sim kubelet`` command both lay it out: its directory (kubelet root,
CNI conf dir, IPAM and dataplane state, containerd state), its pod network config (a
bridge with host-local IPAM over the node's podCIDR), its CSI node plugin process (ours,
registering through the kubelet's ``plugins_registry``) or the registration of a plugin
the user runs, and its container runtime exec'ing the CNI plugins.

Per node, under ``work_dir/<node>/``::

    kubelet/                           the kubelet's --root-dir
    kubelet/plugins_registry/          registration sockets (node-driver-registrar's role)
    kubelet/plugins/<driver>/csi.sock  our CSI node plugin's socket
    net.d/10-mini.conflist             the CNI network config (--cni-conf-dir)
    cni-cache/  ipam/  dataplane/      libcni's cache, host-local's leases, the emulated links
    containerd/                        the runtime's sandboxes (what a restart recovers)
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kubelet_sim.plugin_processes import DriverProcess
from kubelet_sim.runtime.containerd import ContainerRuntime
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.libcni.conf import loopback_network
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.pod_network import PodNetwork
from kubelet_sim.utils.trace import Trace
from node_driver_registrar.server import RegistrationServer, serve_registration

DRIVER_NAME = "csi-mini.example.com"
CONFLIST_NAME = "10-mini.conflist"
NETWORK_NAME = "mini-pod-network"


@dataclass(frozen=True)
class NodeDirs:
    """Where one node keeps its state: ``work_dir/<node>``; the kubelet's root dir is
    ``root/kubelet`` unless given (the real kubelet's ``--root-dir``)."""

    root: Path
    kubelet_dir: Path | None = None

    @property
    def kubelet_root(self) -> Path:
        return self.kubelet_dir or self.root / "kubelet"

    @property
    def plugins_registry(self) -> Path:
        return self.kubelet_root / "plugins_registry"

    def plugin_dir(self, driver: str) -> Path:
        return self.kubelet_root / "plugins" / driver

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "net.d"

    @property
    def cni_cache(self) -> Path:
        return self.root / "cni-cache"

    @property
    def ipam(self) -> Path:
        return self.root / "ipam"

    @property
    def dataplane(self) -> Path:
        return self.root / "dataplane"

    @property
    def containerd(self) -> Path:
        return self.root / "containerd"


@dataclass(frozen=True)
class CniSetup:
    """Which CNI plugins a node's network config names and where they are exec'd from."""

    bin_dir: Path
    dataplane: str = "emulated"  # or "linux" (root): real netns, bridges and veths
    bridge_type: str = "emu-bridge"
    ipam_type: str = "emu-host-local"
    loopback_type: str = "emu-loopback"
    faults: Path | None = None  # a fault rules file our plugins obey

    @property
    def emulated_plugins(self) -> bool:
        return self.bridge_type.startswith("emu-")


def network_config(cni: CniSetup, dirs: NodeDirs, pod_cidr: str) -> dict[str, object]:
    """The node's pod network: a bridge with host-local IPAM over its podCIDR."""
    bridge: dict[str, object] = {
        "type": cni.bridge_type,
        "bridge": "cni0",  # on linux, inside the node's own namespace
        "isGateway": True,
        "ipMasq": False,
        "ipam": {
            "type": cni.ipam_type,
            "ranges": [[{"subnet": pod_cidr}]],
            "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": str(dirs.ipam),
        },
    }
    if cni.emulated_plugins:
        bridge["dataplane"] = cni.dataplane
        bridge["dataplaneDir"] = str(dirs.dataplane)
        if cni.faults is not None:
            bridge["faults"] = str(cni.faults)
    # The reference plugins packaged here (1.1.1) speak CNI up to 1.0.0: a 1.1.0 list
    # would fail their STATUS/GC and keep the node NotReady.
    version = "1.1.0" if cni.emulated_plugins else "1.0.0"
    return {"cniVersion": version, "name": NETWORK_NAME, "plugins": [bridge]}


def write_network_config(cni: CniSetup, dirs: NodeDirs, pod_cidr: str) -> Path:
    """Write the node's conflist into its CNI conf dir; its path."""
    dirs.cni_conf_dir.mkdir(parents=True, exist_ok=True)
    path = dirs.cni_conf_dir / CONFLIST_NAME
    path.write_text(json.dumps(network_config(cni, dirs, pod_cidr), indent=2))
    return path


def container_runtime(cni: CniSetup, dirs: NodeDirs, node: str, trace: Trace,
                      netns: str | None = None) -> ContainerRuntime:
    """The node's containerd role: sandboxes whose networks are made by exec'ing the CNI
    plugins of ``cni.bin_dir`` with the node's conf dir (inside ``netns`` on linux)."""
    libcni = LibCNI([str(cni.bin_dir)], str(dirs.cni_cache), RealExec(netns=netns),
                    trace=trace, node=node)
    loopback_keys: dict[str, object] = {}
    if cni.loopback_type.startswith("emu-"):
        loopback_keys = {"dataplane": cni.dataplane, "dataplaneDir": str(dirs.dataplane)}
    network = PodNetwork(libcni, str(dirs.cni_conf_dir),
                         loopback=loopback_network(cni.loopback_type, **loopback_keys))
    return ContainerRuntime(str(dirs.containerd), network,
                            linux_netns=cni.dataplane == "linux")


def node_plugin(node: str, dirs: NodeDirs, driver: str, common: list[str], log_dir: Path, *,
                zone: str = "", die_with_parent: bool = False) -> DriverProcess:
    """Our CSI node plugin for ``node`` (not started): node id = the node's name, its
    socket under the kubelet's plugins dir, registering through ``plugins_registry``;
    ``common`` are the flags every driver process of the storage array shares."""
    plugin_dir = dirs.plugin_dir(driver)
    args = ["--mode", "node", "--node-id", node,
            "--registration-dir", str(dirs.plugins_registry), *common,
            *fault_control(plugin_dir / "faults.sock")]
    if zone:
        args += ["--topology-segment", f"topology.kubernetes.io/zone={zone}"]
    return DriverProcess(name=f"csi-node-plugin-{node}", socket=plugin_dir / "csi.sock",
                         args=args, log_path=log_dir / f"csi-{node}.log",
                         die_with_parent=die_with_parent)


async def register_running_plugin(dirs: NodeDirs, driver: str,
                                  endpoint: str) -> RegistrationServer:
    """A CSI node plugin the user runs at ``endpoint``, announced to the node's kubelet
    as node-driver-registrar does."""
    return await serve_registration(dirs.plugins_registry / f"{driver}-reg.sock",
                                    driver_name=driver, csi_endpoint=endpoint)


def fault_control(socket: Path) -> list[str]:
    """A driver's --fault-control flag (`python -m csi_driver faults --control SOCKET`
    changes its fault rules while it runs); none where the path is too long for a unix
    socket."""
    return ["--fault-control", str(socket)] if len(str(socket)) < 100 else []


def install_cni_plugins(bin_dir: Path) -> None:
    """Lay our plugin executables into ``bin_dir`` the way a user does (``python -m
    cni_plugin.install DIR``), so the simulator never imports the plugins' code."""
    done = subprocess.run([sys.executable, "-m", "cni_plugin.install", str(bin_dir.resolve())],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"installing the CNI plugins into {bin_dir} failed: "
                           f"{done.stderr.strip() or done.stdout.strip()}")
