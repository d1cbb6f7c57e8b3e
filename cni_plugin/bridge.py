"""The bridge plugin: a veth pair from the sandbox onto a host bridge, addressed by IPAM.

Behaves as the reference bridge (containernetworking/plugins plugins/main/bridge):
same config fields, IPAM delegated through CNI_PATH, gateway on the bridge when
isGateway. ADD undoes its own steps when a later one fails (veth, IPAM lease,
masquerade); DEL tolerates every missing piece and can be repeated.
"""

from __future__ import annotations

import sys

from cni_plugin import invoke
from cni_plugin.bridge_conf import (
    BridgeConf,
    load_bridge_conf,
    masquerade_chain,
    masquerade_comment,
)
from cni_plugin.dataplane import Dataplane, open_dataplane
from cni_plugin.dataplane.base import NetnsNotFound
from cni_plugin.skel import CmdArgs, Handlers, halfway, plugin_main
from cni_spec import ipnet
from cni_spec.errors import CNIError, internal
from cni_spec.types import DefaultGatewayRoute, Interface, Result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

ABOUT = "CNI bridge plugin (cni-csi-mini emu-bridge)"
KNOWN_ARGS = frozenset({"MAC"})  # as the reference's MacEnvArgs
CONTAINER_INDEX = 2  # interfaces: [bridge, host veth, container veth]


def gateway_for(address: str) -> str:
    """The first address of the subnet, as the reference's calcGatewayIP."""
    return ipnet.first_host(address)


def apply_gateways(result: Result, conf: BridgeConf) -> list[str]:
    """Fill gateways and default routes as the reference's calcGateways.

    Returns the bridge addresses (gateway/prefix) to ensure when isGateway.
    """
    bridge_addrs: list[str] = []
    default_found = {"4": False, "6": False}
    for ip in result.ips:
        ip.interface = CONTAINER_INDEX
        if not ip.gateway and conf.is_gateway:
            ip.gateway = gateway_for(ip.address)
        family = ip.version
        default_dst = "0.0.0.0/0" if family == "4" else "::/0"
        if conf.is_default_gateway and not default_found[family]:
            if not any(r.gw and r.dst == default_dst for r in result.routes):
                result.routes.append(DefaultGatewayRoute(dst=default_dst, gw=ip.gateway))
            default_found[family] = True
        if conf.is_gateway:
            bridge_addrs.append(f"{ip.gateway}/{ip.address.split('/')[1]}")
    return bridge_addrs


def cmd_add(args: CmdArgs) -> Result:
    conf = load_bridge_conf(args.stdin_data, args.args_raw)
    if conf.hairpin_mode and conf.promisc_mode:
        raise internal("cannot set hairpin mode and promiscuous mode at the same time.")
    dp = open_dataplane(conf.net, args)
    bridge = dp.ensure_bridge(conf.bridge, conf.mtu, conf.promisc_mode, conf.vlan != 0)
    dp.require_netns(args.netns)
    undo: list[Callable[[], None]] = []
    try:
        # The veth exists before IPAM runs, as with a kernel (a DEL after a kill mid-ADD
        # finds it); the emulated dataplane writes this block in one transaction.
        veth_steps = dp.batch()
        try:
            with veth_steps:
                host, container = dp.add_veth(args.netns, args.ifname, conf.mtu, conf.mac,
                                              conf.bridge, conf.hairpin_mode, conf.vlan,
                                              conf.preserve_default_vlan)
                undo.append(lambda: _quietly(dp.delete_link, args.netns, args.ifname))
                result = Result(interfaces=[
                    Interface(name=bridge.name, mac=bridge.mac),
                    Interface(name=host.name, mac=host.mac),
                    Interface(name=container.name, mac=container.mac, sandbox=args.netns)])
                if conf.macspoofchk:
                    ref_id = spoofcheck_id(args)
                    undo.append(lambda: _quietly(dp.teardown_macspoofchk, ref_id))
                    dp.setup_macspoofchk(host.name, container.mac, ref_id)
        except BaseException:
            if veth_steps.all_or_nothing:
                # Nothing was written; a link of that name, if any, is another ADD's.
                undo.clear()
            raise
        halfway()  # the veth is there, no address yet
        if conf.is_layer3:
            _add_layer3(args, conf, dp, result, undo)
        else:
            dp.set_up(args.netns, args.ifname)
        refreshed = dp.get_link(None, conf.bridge)
        if refreshed is not None:
            result.interfaces[0].mac = refreshed.mac
        result.dns = conf.net.dns
        return result
    except BaseException:
        for step in reversed(undo):
            step()
        raise


def _add_layer3(args: CmdArgs, conf: BridgeConf, dp: Dataplane, result: Result,
                undo: list[Callable[[], None]]) -> None:
    ipam_result = invoke.delegate_add(conf.net.ipam_type, args.stdin_data, args)
    undo.append(lambda: _quietly(invoke.delegate_del, conf.net.ipam_type, args.stdin_data,
                                 args))
    result.ips, result.routes = ipam_result.ips, ipam_result.routes
    if not result.ips:
        raise internal("IPAM plugin returned missing IP config")
    bridge_addrs = apply_gateways(result, conf)
    # What IPAM's answer configures: one transaction in the emulated dataplane, so the
    # addresses, routes, gateway and masquerade of an answered ADD are written together.
    # (A step that only fails when written, because another command changed the state
    # since it was tried, fails with its own message.)
    with dp.batch():
        dp.configure_iface(args.netns, args.ifname, result.ips, result.routes, conf.enable_dad)
        dp.wait_port_up(result.interfaces[1].name)
        if conf.is_gateway:
            for cidr in bridge_addrs:
                try:
                    dp.ensure_addr(conf.bridge, cidr, conf.force_address)
                except CNIError as e:
                    raise internal(f"failed to set bridge addr: {e.msg}") from e
            for ipv6 in sorted({":" in cidr for cidr in bridge_addrs}):
                dp.enable_forwarding(ipv6)
        if conf.ip_masq:
            chain = masquerade_chain(conf.net.name, args.container_id)
            comment = masquerade_comment(conf.net.name, args.container_id)
            undo.append(lambda: _quietly(dp.teardown_masquerade, chain))
            for ip in result.ips:
                dp.setup_masquerade(ip.address, chain, comment)


def spoofcheck_id(args: CmdArgs) -> str:
    """The reference's uniqueID for an attachment's spoof-check rules."""
    return f"{args.container_id}-{args.ifname}"


def _quietly(step: Callable[..., object], *args: object) -> None:
    """Run an undo step; its own failure must not hide the error that caused the undo."""
    try:
        step(*args)
    except Exception as e:  # reported on stderr; the error that caused the undo wins
        print(f"bridge: undo step failed: {e}", file=sys.stderr)


def cmd_del(args: CmdArgs) -> None:
    """Idempotent: a missing netns, link or lease is not an error. Without a netns
    (containerd's second DEL sends none) the attachment's records go all the same."""
    conf = load_bridge_conf(args.stdin_data, args.args_raw)

    def ipam_del() -> None:
        if conf.is_layer3:
            invoke.delegate_del(conf.net.ipam_type, args.stdin_data, args)

    dp = open_dataplane(conf.net, args)
    if args.netns == "":
        dp.forget_attachment(args.ifname)
    else:
        try:  # noqa: SIM105 - contextlib is slow to import on the exec path
            dp.delete_link(args.netns, args.ifname)
        except NetnsNotFound:
            pass  # the sandbox, and with it the veth, is already gone
    halfway()  # the link is gone, the lease not yet
    ipam_del()
    if conf.macspoofchk:
        dp.teardown_macspoofchk(spoofcheck_id(args))
    if conf.is_layer3 and conf.ip_masq:
        # By chain name, so rules left by an ADD killed half-way go too (the reference
        # finds them through the link's addresses and misses them once the link is gone).
        dp.teardown_masquerade(masquerade_chain(conf.net.name, args.container_id))


def cmd_check(args: CmdArgs) -> None:
    from cni_plugin.bridge_check import check_attachment

    conf = load_bridge_conf(args.stdin_data, args.args_raw)
    check_attachment(args, conf, open_dataplane(conf.net, args))


def cmd_status(args: CmdArgs) -> None:
    conf = load_bridge_conf(args.stdin_data, args.args_raw)
    if conf.is_layer3:
        invoke.delegate_status(conf.net.ipam_type, args.stdin_data, args)


def cmd_gc(args: CmdArgs) -> None:
    """IPAM GC (it releases leases of attachments not in cni.dev/valid-attachments), then
    the dataplane forgets what belongs to those attachments and to sandboxes that no
    longer exist."""
    conf = load_bridge_conf(args.stdin_data, args.args_raw)
    if conf.is_layer3:
        invoke.delegate_gc(conf.net.ipam_type, args.stdin_data, args)
    open_dataplane(conf.net, args).collect_garbage(conf.net.valid_attachments)


HANDLERS = Handlers(add=cmd_add, delete=cmd_del, check=cmd_check, status=cmd_status,
                    gc=cmd_gc)


def main() -> None:
    sys.exit(plugin_main(HANDLERS, about=ABOUT, known_args=KNOWN_ARGS))


if __name__ == "__main__":
    main()
