"""The bridge plugin on the emulated dataplane, in-process, with emu-noop as a recording IPAM."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.bridge import HANDLERS, KNOWN_ARGS
from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.dataplane.shards import ShardedState
from cni_spec.version import ALL_VERSIONS

from .conftest import RecordingIPAM
from .skelharness import Outcome, run_in_process


def bridge_conf(ipam: RecordingIPAM | None, dp_dir: str, version: str = "1.0.0",
                **fields: Any) -> dict[str, Any]:
    # The emulated dataplane by name: as root, a path that is no netns would otherwise
    # make the plugin choose the linux dataplane and touch the host's links.
    conf: dict[str, Any] = {"cniVersion": version, "name": "emnet", "type": "emu-bridge",
                            "bridge": "emtbr0", "dataplane": "emulated",
                            "dataplaneDir": dp_dir}
    if ipam is not None:
        conf["ipam"] = ipam.ipam_conf()
    conf.update(fields)
    return conf


def run(command: str, conf: dict[str, Any], netns: str, cni_bin: str, cid: str = "ctr1",
        ifname: str = "eth0", **env: str) -> Outcome:
    full = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns,
            "CNI_IFNAME": ifname, "CNI_PATH": cni_bin, **env}
    return run_in_process(HANDLERS, full, conf, known_args=KNOWN_ARGS)


def with_prev(conf: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {**conf, "prevResult": result}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_reports_bridge_host_veth_and_container_in_the_config_version(
        version: str, recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str,
        cni_bin: str) -> None:
    out = run("ADD", bridge_conf(recording_ipam, dataplane_dir, version), sandbox, cni_bin)
    assert out.status == 0, out.stdout
    body = out.json()
    assert body["cniVersion"] == version
    if version in ("0.1.0", "0.2.0"):
        assert body["ip4"] == {"ip": "10.22.0.5/24", "gateway": "10.22.0.1",
                               "routes": [{"dst": "0.0.0.0/0"}]}
        return
    names = [i["name"] for i in body["interfaces"]]
    assert names[0] == "emtbr0" and names[1].startswith("veth") and names[2] == "eth0"
    assert body["interfaces"][2]["sandbox"] == sandbox
    assert body["ips"][0]["interface"] == 2
    assert body["ips"][0]["address"] == "10.22.0.5/24"


def test_add_records_links_addresses_and_routes(recording_ipam: RecordingIPAM,
                                                dataplane_dir: str, sandbox: str,
                                                cni_bin: str) -> None:
    body = run("ADD", bridge_conf(recording_ipam, dataplane_dir), sandbox, cni_bin).json()
    dp = EmulatedDataplane(dataplane_dir)
    eth0 = dp.get_link(sandbox, "eth0")
    assert eth0 is not None and eth0.up and eth0.addrs == ["10.22.0.5/24"]
    assert eth0.mac == body["interfaces"][2]["mac"]
    host = dp.get_link(None, body["interfaces"][1]["name"])
    assert host is not None and host.master == "emtbr0" and host.peer_name == "eth0"
    routes = {(r.dst, r.gw) for r in dp.routes(sandbox)}
    assert ("0.0.0.0/0", "10.22.0.1") in routes and ("10.22.0.0/24", "") in routes
    assert recording_ipam.commands() == ["ADD"]


def test_is_gateway_puts_the_gateway_address_on_the_bridge(recording_ipam: RecordingIPAM,
                                                            dataplane_dir: str, sandbox: str,
                                                            cni_bin: str) -> None:
    recording_ipam.set_result({"cniVersion": "1.0.0", "ips": [{"address": "10.23.0.7/16"}]})
    conf = bridge_conf(recording_ipam, dataplane_dir, isGateway=True)
    body = run("ADD", conf, sandbox, cni_bin).json()
    assert body["ips"][0]["gateway"] == "10.23.0.1"
    bridge = EmulatedDataplane(dataplane_dir).get_link(None, "emtbr0")
    assert bridge is not None and bridge.addrs == ["10.23.0.1/16"]


def test_is_default_gateway_adds_a_default_route_via_the_gateway(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str) -> None:
    recording_ipam.set_result({"cniVersion": "1.0.0", "ips": [{"address": "10.24.0.9/24"}]})
    body = run("ADD", bridge_conf(recording_ipam, dataplane_dir, isDefaultGateway=True),
               sandbox, cni_bin).json()
    assert body["routes"] == [{"dst": "0.0.0.0/0", "gw": "10.24.0.1"}]


def test_add_twice_on_the_same_ifname_fails_and_keeps_the_first(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    first = run("ADD", conf, sandbox, cni_bin).json()
    again = run("ADD", conf, sandbox, cni_bin)
    assert (again.status, again.json()["code"], again.json()["msg"]) == \
        (1, 999, "container veth name provided (eth0) already exists")
    eth0 = EmulatedDataplane(dataplane_dir).get_link(sandbox, "eth0")
    assert eth0 is not None and eth0.mac == first["interfaces"][2]["mac"]


def test_add_into_a_missing_netns_fails_before_ipam(recording_ipam: RecordingIPAM,
                                                    dataplane_dir: str, tmp_path: Path,
                                                    cni_bin: str) -> None:
    missing = str(tmp_path / "no-such-netns")
    out = run("ADD", bridge_conf(recording_ipam, dataplane_dir), missing, cni_bin)
    assert out.json()["code"] == 999
    assert out.json()["msg"] == (f'failed to open netns "{missing}": failed to Statfs '
                                 f'"{missing}": no such file or directory')
    assert recording_ipam.commands() == []


def test_ipam_failure_removes_the_veth_it_created(recording_ipam: RecordingIPAM,
                                                  dataplane_dir: str, sandbox: str,
                                                  cni_bin: str) -> None:
    recording_ipam.set_plan(reportError="no addresses left", reportErrorCode=11)
    out = run("ADD", bridge_conf(recording_ipam, dataplane_dir), sandbox, cni_bin)
    assert (out.json()["code"], out.json()["msg"]) == (11, "no addresses left")
    dp = EmulatedDataplane(dataplane_dir)
    assert dp.links(sandbox) == []
    assert [link.name for link in dp.links(None)] == ["emtbr0"]


def test_failure_after_ipam_releases_the_lease_and_removes_the_veth(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    dp.ensure_bridge("emtbr0", 0, False, False)
    dp.ensure_addr("emtbr0", "192.168.9.1/24", False)  # a different address already there
    out = run("ADD", bridge_conf(recording_ipam, dataplane_dir, isGateway=True), sandbox,
              cni_bin)
    assert out.status == 1
    assert out.json()["msg"] == ('failed to set bridge addr: "emtbr0" already has an IP '
                                 "address different from 10.22.0.1/24")
    assert recording_ipam.commands() == ["ADD", "DEL"]
    assert dp.links(sandbox) == []


def test_force_address_replaces_the_bridge_address(recording_ipam: RecordingIPAM,
                                                   dataplane_dir: str, sandbox: str,
                                                   cni_bin: str) -> None:
    dp = EmulatedDataplane(dataplane_dir)
    dp.ensure_bridge("emtbr0", 0, False, False)
    dp.ensure_addr("emtbr0", "192.168.9.1/24", False)
    conf = bridge_conf(recording_ipam, dataplane_dir, isGateway=True, forceAddress=True)
    assert run("ADD", conf, sandbox, cni_bin).status == 0
    bridge = dp.get_link(None, "emtbr0")
    assert bridge is not None and bridge.addrs == ["10.22.0.1/24"]


def test_del_removes_the_attachment_and_is_idempotent(recording_ipam: RecordingIPAM,
                                                      dataplane_dir: str, sandbox: str,
                                                      cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir, ipMasq=True)
    run("ADD", conf, sandbox, cni_bin)
    for _ in range(2):
        out = run("DEL", conf, sandbox, cni_bin)
        assert (out.status, out.stdout) == (0, "")
    dp = EmulatedDataplane(dataplane_dir)
    assert dp.links(sandbox) == []
    assert [link.name for link in dp.links(None)] == ["emtbr0"]
    assert dp.state.snapshot().get("masquerade") == {}
    assert recording_ipam.commands() == ["ADD", "DEL", "DEL"]


def test_del_with_missing_netns_succeeds_releases_ipam_and_forgets_its_links(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    run("ADD", conf, sandbox, cni_bin)
    os.unlink(sandbox)
    out = run("DEL", conf, sandbox, cni_bin)
    assert (out.status, out.stdout) == (0, "")
    assert recording_ipam.commands() == ["ADD", "DEL"]
    assert [link.name for link in EmulatedDataplane(dataplane_dir).links(None)] == ["emtbr0"]


def test_del_without_netns_only_releases_ipam(recording_ipam: RecordingIPAM,
                                              dataplane_dir: str, cni_bin: str) -> None:
    out = run("DEL", bridge_conf(recording_ipam, dataplane_dir), "", cni_bin)
    assert out.status == 0
    assert recording_ipam.commands() == ["DEL"]


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0", "1.1.0"])
def test_check_passes_for_the_attachment_in_prev_result(version: str,
                                                        recording_ipam: RecordingIPAM,
                                                        dataplane_dir: str, sandbox: str,
                                                        cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir, version)
    result = run("ADD", conf, sandbox, cni_bin).json()
    out = run("CHECK", with_prev(conf, result), sandbox, cni_bin)
    assert (out.status, out.stdout) == (0, "")
    assert recording_ipam.commands() == ["ADD", "CHECK"]


def test_check_fails_once_the_container_interface_is_gone(recording_ipam: RecordingIPAM,
                                                          dataplane_dir: str, sandbox: str,
                                                          cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    result = run("ADD", conf, sandbox, cni_bin).json()
    EmulatedDataplane(dataplane_dir).delete_link(sandbox, "eth0")
    out = run("CHECK", with_prev(conf, result), sandbox, cni_bin)
    assert (out.status, out.json()["msg"]) == (1, "Interface name eth0 not found")


def test_check_fails_when_the_mac_differs(recording_ipam: RecordingIPAM, dataplane_dir: str,
                                          sandbox: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    result = run("ADD", conf, sandbox, cni_bin).json()
    real_mac = result["interfaces"][2]["mac"]
    result["interfaces"][2]["mac"] = "02:00:00:00:00:01"
    out = run("CHECK", with_prev(conf, result), sandbox, cni_bin)
    assert out.json()["msg"] == ("Interface eth0 Mac 02:00:00:00:00:01 doesn't match "
                                 f"container Mac: {real_mac}")


def test_check_without_prev_result_fails(recording_ipam: RecordingIPAM, dataplane_dir: str,
                                         sandbox: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    run("ADD", conf, sandbox, cni_bin)
    assert run("CHECK", conf, sandbox, cni_bin).json()["msg"] == "Required prevResult missing"


@pytest.mark.parametrize("command", ["STATUS", "GC"])
def test_status_and_gc_pass_through_to_ipam(command: str, recording_ipam: RecordingIPAM,
                                            dataplane_dir: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir, "1.1.0")
    out = run(command, conf, "", cni_bin)
    assert (out.status, out.stdout) == (0, "")
    assert recording_ipam.commands() == [command]


def test_status_reports_the_ipam_error(recording_ipam: RecordingIPAM, dataplane_dir: str,
                                       cni_bin: str) -> None:
    recording_ipam.set_plan(reportError="range full", reportErrorCode=50)
    out = run("STATUS", bridge_conf(recording_ipam, dataplane_dir, "1.1.0"), "", cni_bin)
    assert (out.json()["code"], out.json()["msg"]) == (50, "range full")


def test_layer2_bridge_without_ipam_brings_the_link_up(dataplane_dir: str, sandbox: str,
                                                        cni_bin: str) -> None:
    body = run("ADD", bridge_conf(None, dataplane_dir), sandbox, cni_bin).json()
    assert "ips" not in body
    eth0 = EmulatedDataplane(dataplane_dir).get_link(sandbox, "eth0")
    assert eth0 is not None and eth0.up and eth0.addrs == []


@pytest.mark.parametrize(("fields", "msg"), [
    ({"hairpinMode": True, "promiscMode": True},
     "cannot set hairpin mode and promiscuous mode at the same time."),
    ({"vlan": 4095}, "invalid VLAN ID 4095 (must be between 0 and 4094)"),
    ({"runtimeConfig": {"mac": "zz"}},
     "failed to make veth pair: address zz: invalid MAC address"),
])
def test_invalid_bridge_settings_fail_before_touching_anything(
        fields: dict[str, Any], msg: str, recording_ipam: RecordingIPAM, dataplane_dir: str,
        sandbox: str, cni_bin: str) -> None:
    out = run("ADD", bridge_conf(recording_ipam, dataplane_dir, **fields), sandbox, cni_bin)
    assert (out.json()["code"], out.json()["msg"]) == (999, msg)
    assert recording_ipam.commands() == []
    assert not ShardedState(dataplane_dir).exists()


def test_bridge_name_is_validated_like_an_interface_name(recording_ipam: RecordingIPAM,
                                                         dataplane_dir: str, sandbox: str,
                                                         cni_bin: str) -> None:
    out = run("ADD", bridge_conf(recording_ipam, dataplane_dir, bridge="../x"), sandbox,
              cni_bin)
    assert out.json()["code"] == 7


@pytest.mark.parametrize(("source", "mac"), [
    ("cni_args", "02:aa:00:00:00:01"), ("args", "02:aa:00:00:00:02"),
    ("runtime", "02:aa:00:00:00:03")])
def test_requested_container_mac_is_used(source: str, mac: str, recording_ipam: RecordingIPAM,
                                         dataplane_dir: str, sandbox: str,
                                         cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    env = {}
    if source == "cni_args":
        env["CNI_ARGS"] = f"IgnoreUnknown=1;MAC={mac}"  # the IPAM must accept it too
    elif source == "args":
        conf["args"] = {"cni": {"mac": mac}}
    else:
        conf["runtimeConfig"] = {"mac": mac}
    body = run("ADD", conf, sandbox, cni_bin, **env).json()
    assert body["interfaces"][2]["mac"] == mac


def test_unknown_cni_args_fail_unless_ignore_unknown(recording_ipam: RecordingIPAM,
                                                     dataplane_dir: str, sandbox: str,
                                                     cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    bad = run("ADD", conf, sandbox, cni_bin, CNI_ARGS="K8S_POD_NAME=p")
    assert bad.json()["msg"] == 'ARGS: unknown args ["K8S_POD_NAME=p"]'
    good = run("ADD", conf, sandbox, cni_bin, CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=p")
    assert good.status == 0


def test_ipam_sees_the_same_env_and_config(recording_ipam: RecordingIPAM, dataplane_dir: str,
                                           sandbox: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    run("ADD", conf, sandbox, cni_bin, cid="abc", CNI_ARGS="IgnoreUnknown=1;X=y")
    (call,) = json.loads(recording_ipam.debug_file.read_text())["calls"]
    assert call["env"]["CNI_CONTAINERID"] == "abc"
    assert call["env"]["CNI_NETNS"] == sandbox
    assert call["env"]["CNI_ARGS"] == "IgnoreUnknown=1;X=y"
    assert json.loads(call["stdin"]) == conf


def test_two_attachments_on_one_bridge_get_distinct_host_veths(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, tmp_path: Path,
        cni_bin: str) -> None:
    other = tmp_path / "netns-other"
    other.touch()
    conf = bridge_conf(recording_ipam, dataplane_dir)
    a = run("ADD", conf, sandbox, cni_bin, cid="a").json()
    b = run("ADD", conf, str(other), cni_bin, cid="b").json()
    assert a["interfaces"][0]["mac"] == b["interfaces"][0]["mac"]  # the same bridge
    assert a["interfaces"][1]["name"] != b["interfaces"][1]["name"]
    ports = [link for link in EmulatedDataplane(dataplane_dir).links(None)
             if link.master == "emtbr0"]
    assert len(ports) == 2


def test_gc_forgets_links_of_sandboxes_that_are_gone(recording_ipam: RecordingIPAM,
                                                     dataplane_dir: str, sandbox: str,
                                                     tmp_path: Path, cni_bin: str) -> None:
    kept = tmp_path / "netns-kept"
    kept.touch()
    conf = bridge_conf(recording_ipam, dataplane_dir, "1.1.0")
    run("ADD", conf, sandbox, cni_bin, cid="gone")
    run("ADD", conf, str(kept), cni_bin, cid="kept")
    os.unlink(sandbox)
    valid = [{"containerID": "kept", "ifname": "eth0"}]
    assert run("GC", {**conf, "cni.dev/valid-attachments": valid}, "", cni_bin).status == 0
    dp = EmulatedDataplane(dataplane_dir)
    assert sandbox not in dp.namespaces()
    assert [a["netns"] for a in dp.attachments()] == [str(kept)]
    assert len([link for link in dp.links(None) if link.master == "emtbr0"]) == 1


def test_attachments_tell_which_sandboxes_share_a_bridge(recording_ipam: RecordingIPAM,
                                                         dataplane_dir: str, sandbox: str,
                                                         cni_bin: str) -> None:
    body = run("ADD", bridge_conf(recording_ipam, dataplane_dir), sandbox, cni_bin).json()
    (attachment,) = EmulatedDataplane(dataplane_dir).attachments()
    assert attachment == {"netns": sandbox, "ifname": "eth0", "up": True, "bridge": "emtbr0",
                          "mac": body["interfaces"][2]["mac"], "addrs": ["10.22.0.5/24"]}


def test_macspoofchk_is_recorded_for_the_container_mac_and_removed_on_del(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir, macspoofchk=True)
    body = run("ADD", conf, sandbox, cni_bin).json()
    dp = EmulatedDataplane(dataplane_dir)
    assert dp.state.snapshot()["macspoofchk"] == {
        "ctr1-eth0": {"iface": body["interfaces"][1]["name"],
                      "mac": body["interfaces"][2]["mac"], "network": "emnet",
                      "container_id": "ctr1", "ifname": "eth0"}}
    run("DEL", conf, sandbox, cni_bin)
    assert dp.state.snapshot()["macspoofchk"] == {}
    assert sandbox not in dp.namespaces()
