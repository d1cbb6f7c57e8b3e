"""Where a plugin's links, addresses and routes live: recorded (emulated) or real (linux)."""

from __future__ import annotations

from cni_plugin.dataplane.base import Dataplane

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cni_plugin.config import NetConf
    from cni_plugin.skel import CmdArgs


def open_dataplane(conf: NetConf, args: CmdArgs) -> Dataplane:
    """The config's "dataplane", else the one that fits where the plugin runs
    (cni_plugin.dataplane.choice). The linux one is imported only when used."""
    from cni_plugin.dataplane.emulated import EmulatedDataplane

    # GC acts for the whole network: a CNI_CONTAINERID it may carry names no attachment.
    container_id = "" if args.command == "GC" else args.container_id
    emulated = EmulatedDataplane(conf.dataplane_dir, conf.name, container_id)
    kind = conf.dataplane
    if not kind:
        from cni_plugin.dataplane.choice import choose

        kind = choose(args.netns, emulated.holds_records)
    if kind == "linux":
        from cni_plugin.dataplane.linux import LinuxDataplane

        return LinuxDataplane()
    return emulated


__all__ = ["Dataplane", "open_dataplane"]
