"""The emulated state never grows with pods that no longer exist: DEL finds an attachment's
records by network, container id and ifname when CNI_NETNS is empty (containerd's second
DEL) or names a namespace that is gone, and GC drops those of attachments the runtime no
longer lists. Exec'd as a runtime execs them; a sandbox is a plain file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.dataplane.shards import ShardedState

from .procharness import cni_env, exec_plugin

NETWORK = "podnet"


def pod_networks(tmp_path: Path, version: str = "1.0.0") -> list[tuple[str, dict[str, Any], str]]:
    """(plugin, config, ifname): containerd's loopback network and a bridge pod network, as
    containerd runs them, sharing one emulated state and no "dataplane" key."""
    dp_dir = str(tmp_path / "dp")
    lo = {"cniVersion": version, "name": "cni-loopback", "type": "emu-loopback",
          "dataplaneDir": dp_dir}
    pod = {"cniVersion": version, "name": NETWORK, "type": "emu-bridge", "bridge": "emtcbr0",
           "isGateway": True, "ipMasq": True, "macspoofchk": True, "dataplaneDir": dp_dir,
           "ipam": {"type": "emu-host-local", "subnet": "10.67.0.0/16",
                    "dataDir": str(tmp_path / "ipam")}}
    return [("emu-loopback", lo, "lo"), ("emu-bridge", pod, "eth0")]


def run_all(command: str, nets: list[tuple[str, dict[str, Any], str]], container_id: str,
            netns: str, cni_bin: str) -> None:
    order = nets if command == "ADD" else list(reversed(nets))
    for plugin, conf, ifname in order:
        proc = exec_plugin(f"{cni_bin}/{plugin}",
                           cni_env(command, container_id, netns, ifname, cni_bin), conf)
        assert proc.status == 0, proc.stdout
        if command == "DEL":
            assert (proc.stdout, proc.stderr) == ("", "")


def state_of(tmp_path: Path) -> dict[str, Any]:
    return ShardedState(str(tmp_path / "dp")).snapshot()


def state_size(tmp_path: Path) -> int:
    """Bytes of every state file (the shards and the host link markers' names)."""
    directory = tmp_path / "dp"
    files = [p for p in directory.iterdir() if p.name != "lock"] if directory.exists() else []
    return sum(len(p.name) if p.is_symlink() else p.stat().st_size for p in files)


def records_of(tmp_path: Path, container_id: str) -> list[str]:
    """Every record of the pod's attachments: the links in its netns (made by
    make_netns), their veth peers on the host, its masquerade chain and spoof check."""
    state = state_of(tmp_path)
    netns = str(tmp_path / f"netns-{container_id}")
    spaces = state.get("namespaces", {})
    found = [f"{netns}:{name}" for name in spaces.get(netns, {}).get("links", {})]
    found += [f"host:{name}" for name, link in spaces.get("", {}).get("links", {}).items()
              if link.get("peer_netns") == netns]
    found += [f"masquerade:{chain}" for chain, entry in state.get("masquerade", {}).items()
              if f'id: "{container_id}"' in entry["comment"]]
    found += [f"macspoofchk:{ref}" for ref in state.get("macspoofchk", {})
              if ref.startswith(f"{container_id}-")]
    return found


def make_netns(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"netns-{name}"
    path.touch()
    return path


def test_containerd_teardown_removes_every_record_of_the_pod(tmp_path: Path,
                                                            cni_bin: str) -> None:
    nets = pod_networks(tmp_path)
    netns = make_netns(tmp_path, "pod1")
    run_all("ADD", nets, "pod1", str(netns), cni_bin)
    assert len(records_of(tmp_path, "pod1")) == 5  # lo, eth0, host veth, chain, spoof check
    run_all("DEL", nets, "pod1", str(netns), cni_bin)
    netns.unlink()
    run_all("DEL", nets, "pod1", "", cni_bin)
    assert records_of(tmp_path, "pod1") == []
    assert list(state_of(tmp_path)["namespaces"]) == [""]


@pytest.mark.parametrize("netns_gone", [True, False], ids=["netns-gone", "netns-still-there"])
def test_del_without_netns_alone_removes_the_records(netns_gone: bool, tmp_path: Path,
                                                     cni_bin: str) -> None:
    """No DEL with the path came first (the runtime lost it): DEL "" still cleans."""
    nets = pod_networks(tmp_path)
    netns = make_netns(tmp_path, "pod1")
    run_all("ADD", nets, "pod1", str(netns), cni_bin)
    if netns_gone:
        netns.unlink()
    run_all("DEL", nets, "pod1", "", cni_bin)
    assert records_of(tmp_path, "pod1") == []
    assert list(state_of(tmp_path)["namespaces"]) == [""]


def test_del_of_one_pod_without_netns_leaves_other_pods_alone(tmp_path: Path,
                                                             cni_bin: str) -> None:
    nets = pod_networks(tmp_path)
    for pod in ("pod1", "pod2"):
        run_all("ADD", nets, pod, str(make_netns(tmp_path, pod)), cni_bin)
    run_all("DEL", nets, "pod1", "", cni_bin)
    assert records_of(tmp_path, "pod1") == []
    assert len(records_of(tmp_path, "pod2")) == 5


def test_many_pods_leave_the_state_as_it_was(tmp_path: Path, cni_bin: str) -> None:
    nets = pod_networks(tmp_path)
    warm = make_netns(tmp_path, "warm")
    run_all("ADD", nets, "warm", str(warm), cni_bin)  # makes the bridge, which stays
    run_all("DEL", nets, "warm", str(warm), cni_bin)
    before, size_before = state_of(tmp_path), state_size(tmp_path)
    pods = [f"pod{i}" for i in range(12)]
    for pod in pods:
        run_all("ADD", nets, pod, str(make_netns(tmp_path, pod)), cni_bin)
    assert state_size(tmp_path) > size_before
    for i, pod in enumerate(pods):
        netns = tmp_path / f"netns-{pod}"
        if i % 2 == 0:  # containerd: DEL with the netns, then without once it is gone
            run_all("DEL", nets, pod, str(netns), cni_bin)
        netns.unlink()
        run_all("DEL", nets, pod, "", cni_bin)
    assert state_of(tmp_path) == before
    assert state_size(tmp_path) == size_before


def gc(plugin: str, conf: dict[str, Any], valid: list[tuple[str, str]], cni_bin: str) -> None:
    listed = [{"containerID": cid, "ifname": ifname} for cid, ifname in valid]
    proc = exec_plugin(f"{cni_bin}/{plugin}", {"CNI_COMMAND": "GC", "CNI_PATH": cni_bin},
                       {**conf, "cni.dev/valid-attachments": listed})
    assert (proc.status, proc.stdout) == (0, "")


def test_gc_drops_the_records_of_attachments_no_longer_valid_network_by_network(
        tmp_path: Path, cni_bin: str) -> None:
    nets = pod_networks(tmp_path, "1.1.0")
    for pod in ("live", "stale"):
        run_all("ADD", nets, pod, str(make_netns(tmp_path, pod)), cni_bin)
    (_, lo_conf, _), (_, pod_conf, _) = nets
    gc("emu-bridge", pod_conf, [("live", "eth0")], cni_bin)
    assert len(records_of(tmp_path, "live")) == 5
    assert [r.rsplit(":", 1)[1] for r in records_of(tmp_path, "stale")] == ["lo"]
    gc("emu-loopback", lo_conf, [("live", "lo")], cni_bin)
    assert records_of(tmp_path, "stale") == []
    assert len(records_of(tmp_path, "live")) == 5


def test_gc_drops_every_record_in_a_namespace_that_is_gone(tmp_path: Path,
                                                          cni_bin: str) -> None:
    nets = pod_networks(tmp_path, "1.1.0")
    gone = make_netns(tmp_path, "gone")
    run_all("ADD", nets, "gone", str(gone), cni_bin)
    gone.unlink()
    gc("emu-bridge", nets[1][1], [("gone", "eth0")], cni_bin)  # still listed, but its netns
    assert [r.split(":", 1)[0] for r in records_of(tmp_path, "gone")] == ["masquerade",
                                                                         "macspoofchk"]
    assert EmulatedDataplane(str(tmp_path / "dp")).namespaces() == [""]
