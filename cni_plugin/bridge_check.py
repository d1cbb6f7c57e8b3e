"""CHECK for the bridge plugin: the attachment in prevResult must still be there.

Same order and messages as the reference's cmdCheck: IPAM CHECK, then the
bridge, the container veth, its host peer on the bridge, the addresses and the
routes inside the sandbox.
"""

from __future__ import annotations

from cni_plugin import invoke
from cni_plugin.bridge_conf import BridgeConf
from cni_plugin.dataplane import Dataplane
from cni_plugin.dataplane.base import Link
from cni_plugin.skel import CmdArgs
from cni_spec.errors import internal
from cni_spec.types import Interface


def check_attachment(args: CmdArgs, conf: BridgeConf, dp: Dataplane) -> None:
    dp.require_netns(args.netns)
    if conf.is_layer3:
        invoke.delegate_check(conf.net.ipam_type, args.stdin_data, args)
    prev = conf.net.prev_result
    if prev is None:
        raise internal("Required prevResult missing")
    bridge_entry = next((i for i in prev.interfaces if i.name == conf.bridge), Interface(""))
    cont_entry = next((i for i in prev.interfaces
                       if i.name == args.ifname and i.sandbox == args.netns), Interface(""))
    bridge = _check_bridge(dp, bridge_entry, conf)
    if args.netns != cont_entry.sandbox:
        raise internal(f"Sandbox in prevResult {cont_entry.sandbox} doesn't match configured "
                       f"netns: {args.netns}")
    container = _check_container(dp, args.netns, cont_entry)
    if not any(_is_our_veth(dp, entry, bridge, container, args.netns)
               for entry in prev.interfaces
               if entry.name not in (bridge_entry.name, cont_entry.name)):
        raise internal(f"CNI veth created for bridge {conf.bridge} was not found")
    for ip in prev.ips:
        if ip.address not in container.addrs:
            raise internal(f"Failed to match addr {ip.address} on interface {args.ifname}")
    present = dp.routes(args.netns)
    for route in prev.routes:
        if not any(r.dst == route.dst and (not route.gw or r.gw == route.gw) for r in present):
            raise internal(f"Failed to match route {route.dst} via {route.gw or '<nil>'}")


def _link(dp: Dataplane, netns: str | None, entry: Interface) -> Link:
    """The link a result's interface names, in ``netns`` (None: the host)."""
    if entry.name == "":
        raise internal("Interface name missing ")
    link = dp.get_link(netns, entry.name)
    if link is None:
        raise internal(f"Interface name {entry.name} not found")
    return link


def _check_bridge(dp: Dataplane, entry: Interface, conf: BridgeConf) -> Link:
    link = _link(dp, None, entry)
    if entry.sandbox:
        raise internal(f"Interface {entry.name} should not be in sandbox")
    if link.kind != "bridge":
        raise internal(f"Interface {entry.name} does not have link type of bridge")
    if entry.mac and entry.mac != link.mac:
        raise internal(f"Bridge interface {entry.name} Mac doesn't match: {entry.mac}")
    if link.promisc != conf.promisc_mode:
        raise internal(f"Bridge interface {entry.name} configured Promisc Mode "
                       f"{str(conf.promisc_mode).lower()} doesn't match current state: "
                       f"{str(link.promisc).lower()} ")
    return link


def _check_container(dp: Dataplane, netns: str, entry: Interface) -> Link:
    link = _link(dp, netns, entry)
    if link.kind != "veth":
        raise internal(f"Error: Container interface {entry.name} not of type veth")
    if entry.mac and entry.mac != link.mac:
        raise internal(f"Interface {entry.name} Mac {entry.mac} doesn't match container Mac: "
                       f"{link.mac}")
    return link


def _is_our_veth(dp: Dataplane, entry: Interface, bridge: Link, container: Link,
                 netns: str) -> bool:
    """Is this prevResult interface the host end of the container's veth, on the bridge?"""
    if entry.sandbox:
        raise internal(f"Interface {entry.name} should not be in sandbox")
    link = dp.get_link(None, entry.name)
    if link is None:
        raise internal(f"Interface name {entry.name} not found")
    if link.kind != "veth" or link.master != bridge.name:
        return False
    if link.ifindex and container.peer_ifindex:
        paired = (link.ifindex == container.peer_ifindex
                  and container.ifindex == link.peer_ifindex)
    else:
        paired = link.peer_name == container.name and container.peer_name == link.name
    if not paired:
        return False
    if entry.mac and entry.mac != link.mac:
        raise internal(f"Interface {entry.name} Mac doesn't match: {entry.mac} not found")
    return True
