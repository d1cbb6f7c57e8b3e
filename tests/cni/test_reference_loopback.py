"""Differential: the reference loopback and emu-loopback (linux dataplane), fresh netns each."""

from __future__ import annotations

import pytest

from tests.netns_support import REFERENCE_DIR, fresh_netns, ip_json, needs_reference, needs_root

from .procharness import cni_env, exec_plugin

REFERENCE = f"{REFERENCE_DIR}/loopback"
pytestmark = [needs_root, needs_reference, pytest.mark.root, pytest.mark.reference]


def lo_view(netns: str) -> tuple[list[str], list[tuple[str, int]]]:
    lo = ip_json("addr", "show", "dev", "lo", netns=netns)[0]
    return sorted(lo["flags"]), [(a["local"], a["prefixlen"]) for a in lo["addr_info"]]


def without_ip_versions(text: str) -> str:
    """The reference loopback labels a 1.0.0-shaped result with the config's version, so
    for 0.3.x/0.4.0 it omits the ips[].version the spec requires (ours prints it; for
    0.1.0/0.2.0 it even prints ips instead of ip4/ip6, so those are not compared)."""
    return "\n".join(line for line in text.splitlines() if '"version": ' not in line)


@pytest.mark.parametrize("version", ["0.3.0", "0.3.1", "0.4.0", "1.0.0"])
@pytest.mark.parametrize("command", ["ADD", "DEL"])
def test_loopback_matches_reference(version: str, command: str, cni_bin: str) -> None:
    conf = {"cniVersion": version, "name": "lo", "type": "loopback", "dataplane": "linux"}
    outputs, views = [], []
    for plugin in (REFERENCE, f"{cni_bin}/emu-loopback"):
        with fresh_netns() as netns:
            out = exec_plugin(plugin, cni_env("ADD", "c1", netns, "lo", cni_bin), conf)
            if command == "DEL":
                out = exec_plugin(plugin, cni_env("DEL", "c1", netns, "lo", cni_bin), conf)
            outputs.append((out.status, without_ip_versions(out.stdout.replace(netns, "NETNS"))))
            views.append(lo_view(netns))
    assert outputs[1] == outputs[0]
    assert views[1] == views[0]
