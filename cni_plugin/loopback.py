"""The loopback plugin: bring `lo` up in the sandbox (127.0.0.1/8 and ::1), as the reference."""

from __future__ import annotations

import sys

from cni_plugin.config import NetConf, load_netconf
from cni_plugin.dataplane import Dataplane, open_dataplane
from cni_plugin.dataplane.base import NetnsNotFound
from cni_plugin.errors import internal
from cni_plugin.skel import CmdArgs, Handlers, plugin_main
from cni_plugin.types import Interface, IPConfig, Result

ABOUT = "CNI loopback plugin (cni-csi-mini emu-loopback)"


def _dataplane(conf: NetConf) -> Dataplane:
    return open_dataplane(conf.dataplane, conf.dataplane_dir)


def cmd_add(args: CmdArgs) -> Result:
    conf = load_netconf(args.stdin_data)
    addrs = _dataplane(conf).loopback_up(args.netns)  # CNI_IFNAME is ignored: always lo
    if conf.prev_result is not None:
        return conf.prev_result
    result = Result(interfaces=[Interface(name="lo", mac="00:00:00:00:00:00",
                                          sandbox=args.netns)])
    for want_v4 in (True, False):
        first = next((a for a in addrs if (":" not in a) == want_v4), None)
        if first is not None:
            result.ips.append(IPConfig(address=first, interface=0))
    return result


def cmd_del(args: CmdArgs) -> None:
    """Idempotent; a sandbox that is already gone is success."""
    if args.netns == "":
        return
    conf = load_netconf(args.stdin_data)
    try:
        _dataplane(conf).loopback_down(args.netns)
    except NetnsNotFound:
        return


def cmd_check(args: CmdArgs) -> None:
    conf = load_netconf(args.stdin_data)
    dp = _dataplane(conf)
    dp.require_netns(args.netns)
    lo = dp.get_link(args.netns, "lo")
    if lo is None:
        raise internal("Link not found")
    if not lo.up:
        raise internal("loopback interface is down")


HANDLERS = Handlers(add=cmd_add, delete=cmd_del, check=cmd_check)


def main() -> None:
    sys.exit(plugin_main(HANDLERS, about=ABOUT))


if __name__ == "__main__":
    main()
