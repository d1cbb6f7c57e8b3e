"""emu-host-local run as a real process, exactly as a runtime execs it, in every cniVersion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PLUGIN = str(Path(sys.executable).parent / "emu-host-local")
ALL_VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")


class Run:
    def __init__(self, returncode: int, stdout: str) -> None:
        self.returncode = returncode
        self.stdout = stdout

    def json(self) -> Any:
        return json.loads(self.stdout)


def cni_env(command: str, container_id: str = "c1", ifname: str = "eth0",
            cni_args: str = "") -> dict[str, str]:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id,
           "CNI_NETNS": "/var/run/netns/test", "CNI_IFNAME": ifname,
           "CNI_PATH": "/usr/lib/cni", "PATH": "/usr/bin:/bin"}
    if cni_args:
        env["CNI_ARGS"] = cni_args
    return env


def run_plugin(plugin: str, command: str, conf: dict[str, Any], container_id: str = "c1",
               ifname: str = "eth0", cni_args: str = "") -> Run:
    proc = subprocess.run([plugin], input=json.dumps(conf).encode(),
                          env=cni_env(command, container_id, ifname, cni_args),
                          capture_output=True, timeout=60, check=False)
    return Run(proc.returncode, proc.stdout.decode())


def start_plugin(plugin: str, command: str, conf: dict[str, Any], container_id: str,
                 ifname: str = "eth0") -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([plugin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=cni_env(command, container_id, ifname))
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(conf).encode())
    proc.stdin.close()
    return proc


def net_conf(data_dir: Path, version: str = "1.0.0", name: str = "net1",
             **ipam: Any) -> dict[str, Any]:
    ipam.setdefault("ranges", [[{"subnet": "10.1.2.0/24"}]])
    conf: dict[str, Any] = {"name": name, "type": "bridge",
                            "ipam": {"type": "host-local", "dataDir": str(data_dir), **ipam}}
    if version:
        conf["cniVersion"] = version
    return conf


def leases_in(data_dir: Path, name: str = "net1") -> dict[str, bytes]:
    directory = data_dir / name
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())
            if p.name != "lock" and not p.name.startswith("last_reserved_ip.")}


def addresses_of(result: dict[str, Any]) -> list[str]:
    if "ips" in result:
        return [ip["address"] for ip in result["ips"]]
    return [result[k]["ip"] for k in ("ip4", "ip6") if k in result]


DUAL_STACK = [[{"subnet": "10.1.2.0/24"}], [{"subnet": "fd00:1::/64"}]]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_leases_the_address_after_the_gateway_in_each_family(tmp_path: Path,
                                                                 version: str) -> None:
    run = run_plugin(PLUGIN, "ADD", net_conf(tmp_path, version, ranges=DUAL_STACK))
    assert run.returncode == 0, run.stdout
    result = run.json()
    assert result["cniVersion"] == version
    assert addresses_of(result) == ["10.1.2.2/24", "fd00:1::2/64"]
    assert leases_in(tmp_path) == {"10.1.2.2": b"c1\r\neth0", "fd00:1::2": b"c1\r\neth0"}
    assert (tmp_path / "net1" / "last_reserved_ip.0").read_bytes() == b"10.1.2.2"
    assert (tmp_path / "net1" / "last_reserved_ip.1").read_bytes() == b"fd00:1::2"


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_result_carries_gateway_routes_and_dns_in_the_versions_shape(tmp_path: Path,
                                                                     version: str) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 10.0.0.53\nsearch a.example b.example\noptions ndots:5\n")
    conf = net_conf(tmp_path, version, routes=[{"dst": "0.0.0.0/0"}],
                    resolvConf=str(resolv))
    result = run_plugin(PLUGIN, "ADD", conf).json()
    assert result["dns"] == {"nameservers": ["10.0.0.53"], "search": ["a.example", "b.example"],
                             "options": ["ndots:5"]}
    if version in ("0.1.0", "0.2.0"):
        assert result["ip4"] == {"ip": "10.1.2.2/24", "gateway": "10.1.2.1",
                                 "routes": [{"dst": "0.0.0.0/0"}]}
    else:
        ip = {"address": "10.1.2.2/24", "gateway": "10.1.2.1"}
        if version in ("0.3.0", "0.3.1", "0.4.0"):
            ip = {"version": "4", **ip}
        assert result["ips"] == [ip]
        assert result["routes"] == [{"dst": "0.0.0.0/0"}]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_del_releases_the_attachments_leases_and_is_idempotent(tmp_path: Path,
                                                               version: str) -> None:
    conf = net_conf(tmp_path, version)
    run_plugin(PLUGIN, "ADD", conf, container_id="keep")
    run_plugin(PLUGIN, "ADD", conf, container_id="drop")
    for _ in range(2):
        run = run_plugin(PLUGIN, "DEL", conf, container_id="drop")
        assert (run.returncode, run.stdout) == (0, "")
    assert leases_in(tmp_path) == {"10.1.2.2": b"keep\r\neth0"}


def test_del_of_a_container_never_added_succeeds_silently(tmp_path: Path) -> None:
    run = run_plugin(PLUGIN, "DEL", net_conf(tmp_path), container_id="never")
    assert (run.returncode, run.stdout) == (0, "")


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0", "1.1.0"])
def test_check_passes_for_the_holder_and_fails_for_others(tmp_path: Path, version: str) -> None:
    conf = net_conf(tmp_path, version)
    run_plugin(PLUGIN, "ADD", conf)
    assert run_plugin(PLUGIN, "CHECK", conf).returncode == 0
    run = run_plugin(PLUGIN, "CHECK", conf, container_id="other")
    assert run.returncode == 1
    assert run.json()["code"] == 999
    assert run.json()["msg"] == "host-local: Failed to find address added by container other"


def test_check_fails_when_prev_result_lists_an_address_the_container_does_not_hold(
        tmp_path: Path) -> None:
    conf = net_conf(tmp_path)
    run_plugin(PLUGIN, "ADD", conf)
    conf["prevResult"] = {"cniVersion": "1.0.0",
                          "ips": [{"address": "10.1.2.9/24", "gateway": "10.1.2.1"}]}
    run = run_plugin(PLUGIN, "CHECK", conf)
    assert run.returncode == 1
    assert "10.1.2.9 is not leased to container c1" in run.json()["msg"]


@pytest.mark.parametrize("version", ["0.1.0", "0.3.1"])
def test_check_before_0_4_0_is_an_incompatible_version(tmp_path: Path, version: str) -> None:
    run = run_plugin(PLUGIN, "CHECK", net_conf(tmp_path, version))
    assert run.returncode == 1 and run.json()["code"] == 1


def test_exhausted_range_fails_naming_the_range(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=[[{"subnet": "10.1.2.0/30"}]])
    assert run_plugin(PLUGIN, "ADD", conf, container_id="a").returncode == 0
    run = run_plugin(PLUGIN, "ADD", conf, container_id="b")
    assert run.returncode == 1
    assert run.json()["msg"] == ("failed to allocate for range 0: no IP addresses available "
                                 "in range set: 10.1.2.1-10.1.2.2")


def test_requested_ips_from_cni_args_args_and_runtime_config_are_honoured(
        tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=DUAL_STACK)
    conf["args"] = {"cni": {"ips": ["fd00:1::99"]}}
    run = run_plugin(PLUGIN, "ADD", conf, cni_args="IgnoreUnknown=1;K8S_POD_NAME=p;IP=10.1.2.50")
    assert addresses_of(run.json()) == ["10.1.2.50/24", "fd00:1::99/64"]
    conf = net_conf(tmp_path, capabilities={"ips": True})
    conf["runtimeConfig"] = {"ips": ["10.1.2.60/24"]}
    assert addresses_of(run_plugin(PLUGIN, "ADD", conf, container_id="c2").json()) == [
        "10.1.2.60/24"]


def test_already_leased_requested_ip_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=DUAL_STACK)
    run_plugin(PLUGIN, "ADD", conf, cni_args="IP=fd00:1::7")
    run = run_plugin(PLUGIN, "ADD", conf, container_id="c2", cni_args="IP=fd00:1::7")
    assert run.returncode == 1
    assert run.json()["msg"] == ("failed to allocate for range 1: requested IP address fd00:1::7 "
                                 "is not available in range set fd00:1::1-"
                                 "fd00:1::ffff:ffff:ffff:ffff")
    assert sorted(leases_in(tmp_path)) == ["10.1.2.2", "fd00:1::7"]


def test_requested_ip_outside_every_range_fails_and_releases(tmp_path: Path) -> None:
    run = run_plugin(PLUGIN, "ADD", net_conf(tmp_path), cni_args="IP=192.168.9.9")
    assert run.json()["msg"] == "failed to allocate all requested IPs: 192.168.9.9"
    assert leases_in(tmp_path) == {}


def test_unknown_cni_args_fail_unless_ignore_unknown(tmp_path: Path) -> None:
    run = run_plugin(PLUGIN, "ADD", net_conf(tmp_path), cni_args="K8S_POD_NAME=p")
    assert run.json()["msg"] == 'ARGS: unknown args ["K8S_POD_NAME=p"]'
    ok = run_plugin(PLUGIN, "ADD", net_conf(tmp_path), cni_args="IgnoreUnknown=true;K8S_POD_NAME=p")
    assert ok.returncode == 0


def test_slash_8_and_ipv6_slash_64_allocate_from_far_into_the_range(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=[[{"subnet": "10.0.0.0/8"}], [{"subnet": "fd00:2::/64"}]])
    (tmp_path / "net1").mkdir()
    (tmp_path / "net1" / "last_reserved_ip.0").write_bytes(b"10.254.255.254")
    (tmp_path / "net1" / "last_reserved_ip.1").write_bytes(b"fd00:2::ffff:0:0:1")
    assert addresses_of(run_plugin(PLUGIN, "ADD", conf).json()) == [
        "10.254.255.255/8", "fd00:2::ffff:0:0:2/64"]


def test_network_name_that_would_leave_the_data_dir_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run = run_plugin(PLUGIN, "ADD", net_conf(data, name="../escape"))
    assert run.returncode == 1
    assert not (tmp_path / "escape").exists()


def test_status_is_available_while_addresses_remain(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, "1.1.0", ranges=[[{"subnet": "10.1.2.0/30"}]])
    assert run_plugin(PLUGIN, "STATUS", conf).returncode == 0
    run_plugin(PLUGIN, "ADD", conf)
    run = run_plugin(PLUGIN, "STATUS", conf)
    assert run.returncode == 1 and run.json()["code"] == 50


def test_status_is_not_available_when_the_data_dir_is_unusable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    run = run_plugin(PLUGIN, "STATUS", net_conf(blocker, "1.1.0"))
    assert run.returncode == 1 and run.json()["code"] == 50


def test_status_before_1_1_0_is_an_incompatible_version(tmp_path: Path) -> None:
    run = run_plugin(PLUGIN, "STATUS", net_conf(tmp_path, "1.0.0"))
    assert run.json()["code"] == 1


def test_gc_releases_leases_of_attachments_not_in_valid_attachments(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, "1.1.0")
    for cid in ("alive", "dead"):
        run_plugin(PLUGIN, "ADD", conf, container_id=cid)
    run_plugin(PLUGIN, "ADD", conf, container_id="alive", ifname="net1")
    conf["cni.dev/valid-attachments"] = [{"containerID": "alive", "ifname": "eth0"}]
    run = run_plugin(PLUGIN, "GC", conf)
    assert (run.returncode, run.stdout) == (0, "")
    assert leases_in(tmp_path) == {"10.1.2.2": b"alive\r\neth0"}


def test_gc_with_valid_attachments_that_are_no_list_of_objects_is_an_invalid_config(
        tmp_path: Path) -> None:
    run_plugin(PLUGIN, "ADD", net_conf(tmp_path, "1.1.0"))
    for valid in ("c1", [["c1", "eth0"]]):
        conf = net_conf(tmp_path, "1.1.0")
        conf["cni.dev/valid-attachments"] = valid
        run = run_plugin(PLUGIN, "GC", conf)
        assert (run.returncode, run.json()["code"]) == (1, 7)
    assert list(leases_in(tmp_path)) == ["10.1.2.2"]


def test_version_lists_every_supported_version(tmp_path: Path) -> None:
    run = run_plugin(PLUGIN, "VERSION", {})
    assert run.json()["supportedVersions"] == list(ALL_VERSIONS)


def test_plugin_killed_mid_add_leaves_nothing_del_cannot_clean(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=DUAL_STACK)
    directory = tmp_path / "net1"
    # SIGKILL at spread-out moments: at once, as soon as the first file of this
    # ADD appears (temporary file or first lease), and after the second one.
    for attempt in range(15):
        before = len(os.listdir(directory)) if directory.exists() else 0
        proc = start_plugin(PLUGIN, "ADD", conf, container_id=f"k{attempt}")
        wanted_growth = attempt % 3
        while wanted_growth and proc.poll() is None:
            now = len(os.listdir(directory)) if directory.exists() else 0
            if now - before >= wanted_growth:
                break
        proc.kill()
        proc.wait()
    for attempt in range(15):
        run = run_plugin(PLUGIN, "DEL", conf, container_id=f"k{attempt}")
        assert run.returncode == 0, run.stdout
    assert leases_in(tmp_path) == {}


def test_add_failing_in_a_later_range_set_releases_the_earlier_lease(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=[[{"subnet": "10.1.2.0/24"}],
                                      [{"subnet": "fd00:4::/126", "rangeEnd": "fd00:4::2"}]])
    assert run_plugin(PLUGIN, "ADD", conf, container_id="first").returncode == 0
    run = run_plugin(PLUGIN, "ADD", conf, container_id="second")
    assert run.returncode == 1
    assert run.json()["msg"] == ("failed to allocate for range 1: no IP addresses available in "
                                 "range set: fd00:4::1-fd00:4::2")
    assert sorted(leases_in(tmp_path).values()) == [b"first\r\neth0", b"first\r\neth0"]


def test_check_and_del_accept_a_lease_written_in_the_legacy_id_only_format(
        tmp_path: Path) -> None:
    conf = net_conf(tmp_path)
    (tmp_path / "net1").mkdir()
    (tmp_path / "net1" / "10.1.2.40").write_bytes(b"legacy\n")
    assert run_plugin(PLUGIN, "CHECK", conf, container_id="legacy").returncode == 0
    assert run_plugin(PLUGIN, "DEL", conf, container_id="legacy").returncode == 0
    assert leases_in(tmp_path) == {}
