"""GC exec'd exactly as libcni sends it, and as cnitool drives it.

libcni's GCNetworkList DELs the cached attachments that are not valid, then execs GC for
each plugin of the list with the plugin's config plus the list's name and cniVersion,
CNI_COMMAND=GC, every other CNI_* variable empty but CNI_PATH, and
`cni.dev/valid-attachments` (and `cni.dev/attachments`) only when the caller passed a
list: cnitool passes none, so its GC means "nothing is valid". containerd passes a Go
slice that is nil when nothing is valid, which reaches the plugin as null.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.netns import needs_root

from .procharness import exec_plugin

NETWORK = "mini-pod-network"
ABSENT = object()


def conflist(tmp_path: Path, name: str = NETWORK, subnet: str = "10.244.1.0/24",
             bridge: str = "cni0") -> dict[str, Any]:
    """A bridge + host-local list as kubelet_sim writes one per node."""
    return {"cniVersion": "1.1.0", "name": name, "plugins": [{
        "type": "emu-bridge", "bridge": bridge, "isGateway": True, "ipMasq": False,
        "dataplane": "emulated", "dataplaneDir": str(tmp_path / "dataplane"),
        "ipam": {"type": "emu-host-local", "ranges": [[{"subnet": subnet}]],
                 "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(tmp_path / "ipam")}}]}


def plugin_config(net: dict[str, Any], plugin: dict[str, Any], **injected: Any) -> dict[str, Any]:
    """What libcni's InjectConf makes of one plugin of the list."""
    return {**plugin, "name": net["name"], "cniVersion": net["cniVersion"], **injected}


def libcni_env(command: str, cni_bin: str, container_id: str = "", netns: str = "",
               ifname: str = "") -> dict[str, str]:
    return {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns,
            "CNI_ARGS": "", "CNI_IFNAME": ifname, "CNI_PATH": cni_bin}


def add(net: dict[str, Any], cni_bin: str, container_id: str, tmp_path: Path) -> None:
    """ADD on eth0 of a sandbox of its own (an emulated netns: any existing file)."""
    netns = tmp_path / f"netns-{container_id}"
    netns.touch()
    plugin = net["plugins"][0]
    proc = exec_plugin(f"{cni_bin}/{plugin['type']}",
                       libcni_env("ADD", cni_bin, container_id, str(netns), "eth0"),
                       plugin_config(net, plugin))
    assert proc.status == 0, proc.stdout


def gc(net: dict[str, Any], cni_bin: str, valid: object) -> None:
    for plugin in net["plugins"]:
        injected = {} if valid is ABSENT else {"cni.dev/valid-attachments": valid,
                                               "cni.dev/attachments": valid}
        proc = exec_plugin(f"{cni_bin}/{plugin['type']}", libcni_env("GC", cni_bin),
                           plugin_config(net, plugin, **injected))
        assert (proc.status, proc.stdout, proc.stderr) == (0, "", "")


def leases(tmp_path: Path, network: str = NETWORK) -> list[str]:
    directory = tmp_path / "ipam" / network
    return sorted(p.name for p in directory.glob("10.*")) if directory.exists() else []


@pytest.mark.parametrize("valid", [ABSENT, None, []], ids=["absent", "null", "empty"])
def test_gc_with_nothing_valid_releases_every_lease_of_the_network(
        valid: object, tmp_path: Path, cni_bin: str) -> None:
    net = conflist(tmp_path)
    other = conflist(tmp_path, name="other-network", subnet="10.245.1.0/24", bridge="cni1")
    for container_id in ("c1", "c2"):
        add(net, cni_bin, container_id, tmp_path)
    add(other, cni_bin, "c3", tmp_path)
    assert leases(tmp_path) == ["10.244.1.2", "10.244.1.3"]
    gc(net, cni_bin, valid)
    assert leases(tmp_path) == []
    assert leases(tmp_path, "other-network") == ["10.245.1.2"]


def test_gc_keeps_the_leases_of_the_attachments_listed_valid(tmp_path: Path,
                                                             cni_bin: str) -> None:
    net = conflist(tmp_path)
    for container_id in ("keep", "stale"):
        add(net, cni_bin, container_id, tmp_path)
    gc(net, cni_bin, [{"containerID": "keep", "ifname": "eth0"}])
    assert leases(tmp_path) == ["10.244.1.2"]
    assert (tmp_path / "ipam" / NETWORK / "10.244.1.2").read_bytes() == b"keep\r\neth0"


# -- cnitool -----------------------------------------------------------------------------------

CNITOOL = os.environ.get("CNITOOL") or shutil.which("cnitool")


@needs_root
@pytest.mark.root
@pytest.mark.skipif(CNITOOL is None, reason="cnitool not found (set CNITOOL or put it on PATH)")
def test_cnitool_gc_with_our_conflist_releases_the_leases(tmp_path: Path, cni_bin: str) -> None:
    """cnitool add, a lease whose cache entry is lost, cnitool gc: every lease is released.

    cnitool keeps libcni's cache in /var/lib/cni, so it runs in a private mount namespace
    with a tmpfs there; nothing on the host is touched.
    """
    assert CNITOOL is not None
    net_dir = tmp_path / "net.d"
    net_dir.mkdir()
    (net_dir / "10-mini.conflist").write_text(json.dumps(conflist(tmp_path)))
    netns = [tmp_path / "netns1", tmp_path / "netns2"]
    for path in netns:
        path.touch()
    # cnitool names the container after the netns path; eth1's cache entry is then dropped,
    # so only the plugins' own GC can release that lease.
    lost = "cnitool-" + hashlib.sha512(str(netns[1]).encode()).hexdigest()[:20]
    script = (
        "set -e; mount -t tmpfs tmpfs /var/lib\n"
        f'"$CNITOOL" add {NETWORK} {netns[0]} >/dev/null\n'
        f'CNI_IFNAME=eth1 "$CNITOOL" add {NETWORK} {netns[1]} >/dev/null\n'
        f"rm /var/lib/cni/results/{NETWORK}-{lost}-eth1\n"
        f"ls {tmp_path}/ipam/{NETWORK} > {tmp_path}/before\n"
        f'"$CNITOOL" gc {NETWORK} {netns[0]}\n')
    env = {**os.environ, "CNITOOL": CNITOOL, "NETCONFPATH": str(net_dir), "CNI_PATH": cni_bin}
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
    before = (tmp_path / "before").read_text().split()
    assert [name for name in before if name.startswith("10.")] == ["10.244.1.2", "10.244.1.3"]
    assert leases(tmp_path) == []
