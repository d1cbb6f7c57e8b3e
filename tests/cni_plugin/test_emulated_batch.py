"""Steps grouped with ``dataplane.batch()`` in the emulated dataplane are written in one
transaction at the end of the block, or not at all."""

from __future__ import annotations

from typing import Any

import pytest

from cni_plugin.bridge import HANDLERS, KNOWN_ARGS
from cni_plugin.dataplane import shards
from cni_plugin.dataplane.base import LinkExists
from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.dataplane.shards import ShardedState
from cni_spec.errors import CNIError
from cni_spec.types import IPConfig, Route

from .conftest import RecordingIPAM
from .skelharness import run_in_process


def _bridge(dp: EmulatedDataplane) -> None:
    dp.ensure_bridge("batbr0", 1500, False, False)


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The transactions that wrote, each as the files it wrote."""
    written: list[list[str]] = []
    real_write_back, real_write = ShardedState.write_back, shards.atomic_write

    def write_back(self: ShardedState, *args: Any) -> None:
        written.append([])
        real_write_back(self, *args)
        if not written[-1]:
            written.pop()

    def counting(path: str, data: bytes) -> None:
        written[-1].append(path)
        real_write(path, data)

    monkeypatch.setattr(ShardedState, "write_back", write_back)
    monkeypatch.setattr(shards, "atomic_write", counting)
    return written


def test_steps_of_a_batch_are_invisible_until_the_block_ends(dataplane_dir: str,
                                                             sandbox: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    _bridge(dp)
    with dp.batch():
        host, container = dp.add_veth(sandbox, "eth0", 0, "", "batbr0", False, 0)
        dp.configure_iface(sandbox, "eth0", [IPConfig(address="10.9.0.2/24", gateway="10.9.0.1")],
                           [Route(dst="0.0.0.0/0")], False)
        assert EmulatedDataplane(dataplane_dir).get_link(sandbox, "eth0") is None
    eth0 = EmulatedDataplane(dataplane_dir).get_link(sandbox, "eth0")
    assert eth0 is not None and eth0.up and eth0.addrs == ["10.9.0.2/24"]
    assert eth0.mac == container.mac and eth0.peer_name == host.name
    written_host = EmulatedDataplane(dataplane_dir).get_link(None, host.name)
    assert written_host is not None and written_host.mac == host.mac


def test_a_batch_is_written_in_one_transaction(dataplane_dir: str, sandbox: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    _bridge(dp)
    written = _count_writes(monkeypatch)
    with dp.batch():
        dp.add_veth(sandbox, "eth0", 0, "", "batbr0", False, 0)
        dp.configure_iface(sandbox, "eth0", [IPConfig(address="10.9.0.2/24")], [], False)
        dp.ensure_addr("batbr0", "10.9.0.1/24", False)
        dp.enable_forwarding(False)
        dp.setup_masquerade("10.9.0.2/24", "CNI-x", "c")
    assert len(written) == 1


def test_a_batch_whose_block_raises_writes_nothing(dataplane_dir: str, sandbox: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    _bridge(dp)
    before = dp.state.snapshot()
    with pytest.raises(RuntimeError), dp.batch():
        dp.add_veth(sandbox, "eth0", 0, "", "batbr0", False, 0)
        raise RuntimeError("a later step failed")
    assert dp.state.snapshot() == before


def test_a_step_fails_when_asked_for_as_it_would_alone(dataplane_dir: str,
                                                       sandbox: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    _bridge(dp)
    with pytest.raises(CNIError) as err, dp.batch():
        dp.add_veth(sandbox, "eth0", 0, "", "nosuchbr", False, 0)
    assert err.value.msg == 'could not lookup "nosuchbr": Link not found'


def test_a_step_that_conflicts_with_a_concurrent_write_fails_at_the_end_writing_nothing(
        dataplane_dir: str, sandbox: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    _bridge(dp)
    with pytest.raises(LinkExists), dp.batch():
        dp.add_veth(sandbox, "eth0", 0, "02:00:00:00:00:01", "batbr0", False, 0)
        # another command adds the same interface meanwhile
        EmulatedDataplane(dataplane_dir).add_veth(sandbox, "eth0", 0, "02:00:00:00:00:02",
                                                  "batbr0", False, 0)
    eth0 = dp.get_link(sandbox, "eth0")
    assert eth0 is not None and eth0.mac == "02:00:00:00:00:02"
    assert len([link for link in dp.links(None) if link.kind == "veth"]) == 1


def test_batches_do_not_nest(dataplane_dir: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    with pytest.raises(RuntimeError), dp.batch(), dp.batch():
        pass


def test_bridge_add_with_gateway_and_masquerade_writes_the_state_twice(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    conf: dict[str, Any] = {"cniVersion": "1.1.0", "name": "batnet", "type": "emu-bridge",
                            "bridge": "batbr0", "isGateway": True, "ipMasq": True,
                            "dataplaneDir": dataplane_dir, "ipam": recording_ipam.ipam_conf()}
    env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c0", "CNI_NETNS": sandbox,
           "CNI_IFNAME": "eth0", "CNI_PATH": cni_bin}
    first = run_in_process(HANDLERS, env, conf, known_args=KNOWN_ARGS)
    assert first.status == 0, first.stdout
    written = _count_writes(monkeypatch)
    second = run_in_process(HANDLERS, {**env, "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth1"},
                            conf, known_args=KNOWN_ARGS)
    assert second.status == 0, second.stdout
    # the veth before IPAM runs, then addresses, routes and masquerade together
    assert len(written) == 2
    dp = EmulatedDataplane(dataplane_dir)
    eth1 = dp.get_link(sandbox, "eth1")
    assert eth1 is not None and eth1.up and eth1.addrs == ["10.22.0.5/24"]
    assert "CNI-" in next(iter(dp.state.snapshot()["masquerade"]))


def test_bridge_add_losing_a_race_for_the_ifname_leaves_the_winners_link(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    conf: dict[str, Any] = {"cniVersion": "1.1.0", "name": "batnet", "type": "emu-bridge",
                            "bridge": "batbr0", "macspoofchk": True,
                            "dataplaneDir": dataplane_dir, "ipam": recording_ipam.ipam_conf()}
    real_spoofchk = EmulatedDataplane.setup_macspoofchk

    def another_add_meanwhile(self: EmulatedDataplane, iface: str, mac: str, ref: str) -> None:
        # between this ADD's snapshot and its write, another command takes eth0
        EmulatedDataplane(dataplane_dir).add_veth(sandbox, "eth0", 0, "02:00:00:00:00:09",
                                                  "batbr0", False, 0)
        real_spoofchk(self, iface, mac, ref)

    monkeypatch.setattr(EmulatedDataplane, "setup_macspoofchk", another_add_meanwhile)
    env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c0", "CNI_NETNS": sandbox,
           "CNI_IFNAME": "eth0", "CNI_PATH": cni_bin}
    out = run_in_process(HANDLERS, env, conf, known_args=KNOWN_ARGS)
    assert out.status == 1
    assert out.json()["msg"] == "container veth name provided (eth0) already exists"
    eth0 = EmulatedDataplane(dataplane_dir).get_link(sandbox, "eth0")
    assert eth0 is not None and eth0.mac == "02:00:00:00:00:09"
    assert recording_ipam.commands() == []
