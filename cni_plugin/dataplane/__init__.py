"""Where a plugin's links, addresses and routes live: recorded (emulated) or real (linux)."""

from __future__ import annotations

from cni_plugin.dataplane.base import Dataplane


def open_dataplane(kind: str, state_dir: str) -> Dataplane:
    """The dataplane named in the network config; the linux one is imported only when used."""
    if kind == "linux":
        from cni_plugin.dataplane.linux import LinuxDataplane

        return LinuxDataplane()
    from cni_plugin.dataplane.emulated import EmulatedDataplane

    return EmulatedDataplane(state_dir)


__all__ = ["Dataplane", "open_dataplane"]
