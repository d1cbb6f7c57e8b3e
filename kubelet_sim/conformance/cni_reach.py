"""The ``reachability`` case of the CNI conformance suite (``--dataplane linux``, root).

On one node: two containers ADDed by the list reach each other (a real TCP exchange
between their network namespaces, :mod:`kubelet_sim.network.tcp_probe`). Across two
nodes: two node namespaces on one underlay segment (192.168.77.1 and .2, the
:class:`~kubelet_sim.network.linux_nodes.LinuxNodes` of the simulated cluster), each
running the list with a pod subnet of its own (the host-local IPAM's ``subnet`` or
``ranges`` rewritten per node, its ``dataDir`` moved into the run's scratch), each
forwarding and holding a route to the other node's pod subnet via the other's
underlay address, as flannel's host-gw does; a container on the first node reaches a
container on the second. A list whose IPAM is not host-local (or has neither form) is
skipped across nodes with the reason; the emulated dataplane moves no packets, so
there the whole case is skipped.
"""

from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING

from kubelet_sim.conformance.report import Skip
from kubelet_sim.network.linux_nodes import LinuxNodes
from kubelet_sim.network.tcp_probe import ProbeError, tcp_exchange
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf
from kubelet_sim.runtime.libcni.conf import NetworkConfigList, conf_list_from_bytes
from kubelet_sim.runtime.libcni.invoke import RealExec

if TYPE_CHECKING:
    from kubelet_sim.conformance.cni import CniRun

UNDERLAY = {"node-a": "192.168.77.1", "node-b": "192.168.77.2"}
POD_SUBNETS = {"node-a": "10.177.1.0/24", "node-b": "10.177.2.0/24"}
HOST_LOCAL = ("host-local", "emu-host-local")
PROBE_TIMEOUT_S = 5.0


def per_node_list(net: NetworkConfigList, subnet: str, data_dir: str) -> NetworkConfigList:
    """The list with every host-local IPAM section handing out ``subnet`` from a store
    in ``data_dir``; `Skip` when the list cannot be given a subnet per node."""
    raw = json.loads(net.bytes)
    ipams = [p["ipam"] for p in raw.get("plugins", []) if isinstance(p.get("ipam"), dict)]
    if not ipams:
        raise Skip("across nodes: no plugin of the list has an IPAM section to give each "
                   "node a pod subnet of its own")
    for ipam in ipams:
        if ipam.get("type") not in HOST_LOCAL:
            raise Skip(f"across nodes: IPAM type {ipam.get('type')!r} cannot be given a pod "
                       "subnet per node (only host-local's subnet/ranges are rewritten)")
        if "ranges" in ipam:
            ipam["ranges"] = [[{"subnet": subnet}]]
        elif "subnet" in ipam:
            for key in ("rangeStart", "rangeEnd", "gateway"):
                ipam.pop(key, None)
            ipam["subnet"] = subnet
        else:
            raise Skip("across nodes: the host-local IPAM has neither subnet nor ranges")
        ipam["dataDir"] = data_dir
    return conf_list_from_bytes(json.dumps(raw).encode(), source=net.source)


def _ipv4(addresses: list[str]) -> str:
    for address in addresses:
        ip = address.split("/")[0]
        if ip and ipaddress.ip_address(ip).version == 4:
            return ip
    raise AssertionError(f"ADD gave no IPv4 address to connect to: {addresses}")


def _exchange(what: str, server: RuntimeConf, server_ip: str, client: RuntimeConf) -> None:
    try:
        got = tcp_exchange(server.netns, server_ip, client.netns, server_name="conformance",
                           timeout_s=PROBE_TIMEOUT_S)
    except ProbeError as err:
        raise AssertionError(f"{what}: no TCP exchange with {server_ip}: {err}") from err
    assert got.received, f"{what}: {server_ip} accepted but sent nothing"


def reachability(run: CniRun) -> None:
    if run.target.dataplane != "linux":
        raise Skip("needs --dataplane linux: the emulated dataplane records links in "
                   "files and moves no packets")
    _same_node(run)
    _across_nodes(run)


def _same_node(run: CniRun) -> None:
    first, second = run.rt(run.namespaces.new()), run.rt(run.namespaces.new())
    added: list[RuntimeConf] = []
    try:
        ips = []
        for rt in (first, second):
            added.append(rt)
            ips.append(_ipv4(run.addresses(run.net, rt)))
        _exchange(f"on one node, {ips[0]} to {ips[1]}", second, ips[1], first)
    finally:
        for rt in added:
            run.libcni.del_network_list(run.net, rt)


def _across_nodes(run: CniRun) -> None:
    nets = {node: per_node_list(run.net, subnet, str(run.scratch / f"ipam-{node}"))
            for node, subnet in POD_SUBNETS.items()}
    nodes = LinuxNodes()
    added: list[tuple[LibCNI, NetworkConfigList, RuntimeConf]] = []
    try:
        for node, address in UNDERLAY.items():
            nodes.add_node(node, address)
        for node, other in (("node-a", "node-b"), ("node-b", "node-a")):
            nodes.add_route(node, POD_SUBNETS[other], UNDERLAY[other])
        ips: list[str] = []
        for node in UNDERLAY:
            libcni = run.new_libcni(f"cache-{node}", RealExec(netns=nodes.netns_path(node)))
            rt = run.rt(run.namespaces.new())
            added.append((libcni, nets[node], rt))
            ips.append(_ipv4(run.addresses(nets[node], rt, libcni)))
        _exchange(f"across nodes, {ips[0]} on node-a to {ips[1]} on node-b (a container "
                  "needs a route beyond its subnet: the IPAM's routes or isDefaultGateway)",
                  added[1][2], ips[1], added[0][2])
    finally:
        try:
            for libcni, net, rt in added:
                libcni.del_network_list(net, rt)
        finally:
            nodes.teardown()
