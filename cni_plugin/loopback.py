"""The loopback plugin: bring `lo` up in the sandbox (127.0.0.1/8 and ::1), as the reference."""

from __future__ import annotations

import sys

from cni_plugin.config import load_netconf
from cni_plugin.dataplane import open_dataplane
from cni_plugin.dataplane.base import NetnsNotFound
from cni_plugin.skel import CmdArgs, Handlers, plugin_main
from cni_spec.errors import internal
from cni_spec.types import Interface, IPConfig, Result

ABOUT = "CNI loopback plugin (cni-csi-mini emu-loopback)"


LOOPBACK = "lo"  # CNI_IFNAME is ignored, as the reference ignores it


def cmd_add(args: CmdArgs) -> Result:
    conf = load_netconf(args.stdin_data)
    addrs = open_dataplane(conf, args).loopback_up(args.netns, args.ifname)
    if conf.prev_result is not None:
        return conf.prev_result
    # As the reference: the current result type labelled with the config's version, so it
    # is printed unconverted (0.3.x/0.4.0 without ips[].version, 0.1.0/0.2.0 with ips).
    result = Result(cni_version=conf.cni_version,
                    interfaces=[Interface(name=LOOPBACK, mac="00:00:00:00:00:00",
                                          sandbox=args.netns)])
    for want_v4 in (True, False):
        first = next((a for a in addrs if (":" not in a) == want_v4), None)
        if first is not None:
            result.ips.append(IPConfig(address=first, interface=0))
    return result


def cmd_del(args: CmdArgs) -> None:
    """Idempotent; a sandbox that is empty (containerd's second DEL) or already gone is
    success, and the records of this attachment go with it."""
    conf = load_netconf(args.stdin_data)
    dp = open_dataplane(conf, args)
    if args.netns == "":
        dp.forget_attachment(LOOPBACK)
        return
    try:
        dp.loopback_down(args.netns)
    except NetnsNotFound:
        return


def cmd_check(args: CmdArgs) -> None:
    conf = load_netconf(args.stdin_data)
    dp = open_dataplane(conf, args)
    dp.require_netns(args.netns)
    lo = dp.get_link(args.netns, LOOPBACK)
    if lo is None:
        raise internal("Link not found")
    if not lo.up:
        raise internal("loopback interface is down")


def cmd_gc(args: CmdArgs) -> None:
    """The reference loopback's GC does nothing; ours also forgets the records of this
    network's attachments that are not in cni.dev/valid-attachments or whose sandbox is gone
    (the emulated dataplane's; a kernel needs no help)."""
    conf = load_netconf(args.stdin_data)
    open_dataplane(conf, args).collect_garbage(conf.valid_attachments)


HANDLERS = Handlers(add=cmd_add, delete=cmd_del, check=cmd_check, gc=cmd_gc)


def main() -> None:
    sys.exit(plugin_main(HANDLERS, about=ABOUT))


if __name__ == "__main__":
    main()
