"""libcni role against fake plugins: what each plugin is sent, in which order, and the cache."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf, containerd_cni_args
from kubelet_sim.runtime.libcni.cache import cache_path
from kubelet_sim.runtime.libcni.conf import conf_list_from_bytes
from kubelet_sim.testing.fake_exec import ExecCall, FakeExec, echo_prev_result_plugin
from kubelet_sim.utils.trace import Trace

SANDBOX = "5f1c0ffee"


def ipam_like_plugin(address: str, version: str = "1.0.0"):
    """An interface plugin: answers ADD with one interface and one IP in ``version``."""

    def plugin(call: ExecCall):
        if call.command != "ADD":
            return None
        if version.startswith("0.1") or version.startswith("0.2"):
            return {"cniVersion": version, "ip4": {"ip": address, "gateway": "10.1.0.1"}}
        ip = {"address": address, "gateway": "10.1.0.1", "interface": 0}
        if version.startswith("0."):
            ip["version"] = "4"
        return {
            "cniVersion": version,
            "interfaces": [{"name": call.ifname, "sandbox": call.env["CNI_NETNS"]}],
            "ips": [ip],
        }

    return plugin


def network(version: str = "1.0.0", plugins=None, name: str = "podnet") -> bytes:
    plugins = plugins or [
        {"type": "main", "bridge": "br0"},
        {"type": "tuner", "capabilities": {"portMappings": True, "bandwidth": False}},
        {"type": "meta", "capabilities": {"io.kubernetes.cri.pod-annotations": True}},
    ]
    return json.dumps({"cniVersion": version, "name": name, "plugins": plugins}).encode()


@pytest.fixture
def fake() -> FakeExec:
    return FakeExec(
        plugins={
            "main": ipam_like_plugin("10.1.0.5/24"),
            "tuner": echo_prev_result_plugin,
            "meta": echo_prev_result_plugin,
        }
    )


@pytest.fixture
def trace() -> Trace:
    return Trace()


@pytest.fixture
def libcni(tmp_path: Path, fake: FakeExec, trace: Trace) -> LibCNI:
    return LibCNI(
        ["/opt/none", fake.bin_dir], str(tmp_path / "cache"), fake, trace=trace, node="n1"
    )


def pod_rt(ifname: str = "eth0", **caps: Any) -> RuntimeConf:
    return RuntimeConf(
        container_id=SANDBOX,
        netns="/var/run/netns/cni-1234",
        ifname=ifname,
        args=containerd_cni_args(namespace="default", name="web", sandbox_id=SANDBOX, uid="uid-1"),
        capability_args=caps,
    )


def test_add_runs_plugins_in_list_order(libcni, fake):
    libcni.add_network_list(conf_list_from_bytes(network()), pod_rt())
    assert fake.commands() == [
        ("ADD", "main", "eth0"),
        ("ADD", "tuner", "eth0"),
        ("ADD", "meta", "eth0"),
    ]


def test_add_injects_list_name_and_version_into_every_plugin(libcni, fake):
    plugins = [{"type": "main", "name": "other", "cniVersion": "0.2.0"}, {"type": "tuner"}]
    libcni.add_network_list(conf_list_from_bytes(network("0.4.0", plugins)), pod_rt())
    assert [(c.config["name"], c.config["cniVersion"]) for c in fake.calls] == [
        ("podnet", "0.4.0")
    ] * 2


def test_add_threads_each_result_as_the_next_plugins_prev_result(libcni, fake):
    result = libcni.add_network_list(conf_list_from_bytes(network()), pod_rt())
    first, second, third = fake.calls
    assert "prevResult" not in first.config
    assert second.config["prevResult"]["ips"][0]["address"] == "10.1.0.5/24"
    assert third.config["prevResult"] == second.config["prevResult"]
    assert result["ips"][0]["address"] == "10.1.0.5/24"


def test_runtime_config_holds_only_the_capabilities_a_plugin_declares(libcni, fake):
    caps: dict[str, Any] = {
        "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 1000},
        "io.kubernetes.cri.pod-annotations": {"a": "b"},
        "dns": {"servers": ["10.0.0.10"]},
    }
    libcni.add_network_list(conf_list_from_bytes(network()), pod_rt(**caps))
    main, tuner, meta = fake.calls
    assert "runtimeConfig" not in main.config  # declares no capabilities
    assert tuner.config["runtimeConfig"] == {
        "portMappings": caps["portMappings"]
    }  # bandwidth: false
    assert meta.config["runtimeConfig"] == {"io.kubernetes.cri.pod-annotations": {"a": "b"}}


def test_a_declared_capability_without_an_arg_sends_no_runtime_config(libcni, fake):
    libcni.add_network_list(conf_list_from_bytes(network()), pod_rt())
    assert all("runtimeConfig" not in c.config for c in fake.calls)


def test_cni_env_is_what_containerd_sends(libcni, fake):
    libcni.add_network_list(conf_list_from_bytes(network()), pod_rt())
    env = fake.calls[0].env
    assert env["CNI_COMMAND"] == "ADD"
    assert env["CNI_CONTAINERID"] == SANDBOX
    assert env["CNI_NETNS"] == "/var/run/netns/cni-1234"
    assert env["CNI_IFNAME"] == "eth0"
    assert env["CNI_PATH"] == f"/opt/none:{fake.bin_dir}"
    assert env["CNI_ARGS"] == (
        f"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;"
        f"K8S_POD_INFRA_CONTAINER_ID={SANDBOX};K8S_POD_UID=uid-1"
    )


def test_add_caches_the_final_result_in_libcni_format(libcni, tmp_path):
    raw = network()
    rt = pod_rt(portMappings=[])
    result = libcni.add_network_list(conf_list_from_bytes(raw), rt)
    path = Path(cache_path(str(tmp_path / "cache"), "podnet", SANDBOX, "eth0"))
    assert path == tmp_path / "cache" / "results" / f"podnet-{SANDBOX}-eth0"
    doc = json.loads(path.read_bytes())
    assert list(doc) == [
        "kind", "containerId", "config", "ifName", "networkName",
        "netns", "cniArgs", "capabilityArgs", "result",
    ]  # fmt: skip
    assert doc["kind"] == "cniCacheV1"
    assert base64.b64decode(doc["config"]) == raw
    assert (doc["containerId"], doc["ifName"], doc["networkName"]) == (SANDBOX, "eth0", "podnet")
    assert doc["netns"] == rt.netns
    assert doc["cniArgs"] == [list(kv) for kv in rt.args]
    assert doc["capabilityArgs"] == {"portMappings": []}
    assert doc["result"] == result
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_failing_plugin_stops_add_caches_nothing_and_deletes_nothing(libcni, fake, tmp_path):
    def broken(call: ExecCall):
        raise CNIError(11, "no bandwidth left", "try later")

    fake.plugins["tuner"] = broken
    with pytest.raises(CNIError) as info:
        libcni.add_network_list(conf_list_from_bytes(network()), pod_rt())
    assert info.value.code == 11
    assert (
        str(info.value)
        == 'plugin type="tuner" name="podnet" failed (add): no bandwidth left; try later'
    )
    assert fake.commands() == [("ADD", "main", "eth0"), ("ADD", "tuner", "eth0")]
    assert not (tmp_path / "cache" / "results").exists()


def test_del_runs_in_reverse_with_the_cached_result_then_drops_the_cache(libcni, fake, tmp_path):
    net = conf_list_from_bytes(network())
    result = libcni.add_network_list(net, pod_rt())
    fake.calls.clear()
    libcni.del_network_list(net, pod_rt())
    assert fake.commands() == [
        ("DEL", "meta", "eth0"),
        ("DEL", "tuner", "eth0"),
        ("DEL", "main", "eth0"),
    ]
    assert all(c.config["prevResult"] == result for c in fake.calls)
    assert not Path(cache_path(str(tmp_path / "cache"), "podnet", SANDBOX, "eth0")).exists()


def test_del_without_a_cache_sends_no_prev_result(libcni, fake):
    libcni.del_network_list(conf_list_from_bytes(network()), pod_rt())
    assert [c.command for c in fake.calls] == ["DEL"] * 3
    assert all("prevResult" not in c.config for c in fake.calls)


def test_del_of_a_list_older_than_0_4_0_sends_no_prev_result(libcni, fake):
    net = conf_list_from_bytes(network("0.3.1"))
    libcni.add_network_list(net, pod_rt())
    fake.calls.clear()
    libcni.del_network_list(net, pod_rt())
    assert all("prevResult" not in c.config for c in fake.calls)


def test_del_converts_the_cached_result_to_the_lists_version(libcni, fake):
    fake.plugins["main"] = ipam_like_plugin("10.1.0.9/24", version="1.1.0")
    net = conf_list_from_bytes(network("0.4.0", [{"type": "main"}]))
    libcni.add_network_list(net, pod_rt())
    fake.calls.clear()
    libcni.del_network_list(net, pod_rt())
    prev = fake.calls[0].config["prevResult"]
    assert prev["cniVersion"] == "0.4.0"
    assert prev["ips"] == [
        {"version": "4", "interface": 0, "address": "10.1.0.9/24", "gateway": "10.1.0.1"}
    ]


def test_a_failing_del_keeps_the_cache_for_a_retry(libcni, fake, tmp_path):
    net = conf_list_from_bytes(network())
    libcni.add_network_list(net, pod_rt())

    def refuse(call: ExecCall):
        raise CNIError(11, "busy")

    fake.plugins["tuner"] = refuse
    with pytest.raises(CNIError, match=r"failed \(delete\): busy"):
        libcni.del_network_list(net, pod_rt())
    assert Path(cache_path(str(tmp_path / "cache"), "podnet", SANDBOX, "eth0")).exists()
    assert [c.plugin for c in fake.calls if c.command == "DEL"] == ["meta", "tuner"]


def test_check_runs_in_order_with_the_cached_result(libcni, fake):
    net = conf_list_from_bytes(network())
    result = libcni.add_network_list(net, pod_rt())
    fake.calls.clear()
    libcni.check_network_list(net, pod_rt())
    assert fake.commands() == [
        ("CHECK", "main", "eth0"),
        ("CHECK", "tuner", "eth0"),
        ("CHECK", "meta", "eth0"),
    ]
    assert all(c.config["prevResult"] == result for c in fake.calls)


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0", "0.3.0", "0.3.1"])
def test_check_on_a_list_older_than_0_4_0_is_an_error(libcni, fake, version):
    with pytest.raises(
        CNIError, match=f'configuration version "{version}" does not support the CHECK'
    ):
        libcni.check_network_list(conf_list_from_bytes(network(version)), pod_rt())
    assert fake.calls == []


def test_check_with_disable_check_runs_nothing(libcni, fake):
    raw = json.loads(network())
    raw["disableCheck"] = "true"
    libcni.check_network_list(conf_list_from_bytes(json.dumps(raw).encode()), pod_rt())
    assert fake.calls == []


@pytest.mark.parametrize("version", ["0.3.1", "0.4.0", "1.0.0"])
def test_status_is_skipped_for_lists_older_than_1_1_0(libcni, fake, version):
    libcni.status_network_list(conf_list_from_bytes(network(version)))
    assert fake.calls == []


def test_status_on_a_1_1_0_list_asks_every_plugin_without_container_args(libcni, fake):
    libcni.status_network_list(conf_list_from_bytes(network("1.1.0")))
    assert [c.command for c in fake.calls] == ["STATUS"] * 3
    assert all(c.env["CNI_CONTAINERID"] == "" and c.env["CNI_IFNAME"] == "" for c in fake.calls)
    assert all("runtimeConfig" not in c.config and "prevResult" not in c.config for c in fake.calls)


def test_status_failure_carries_the_plugins_code(libcni, fake):
    def unavailable(call: ExecCall):
        raise CNIError(50, "ipam pool not ready")

    fake.plugins["tuner"] = unavailable
    with pytest.raises(CNIError) as info:
        libcni.status_network_list(conf_list_from_bytes(network("1.1.0")))
    assert (info.value.code, str(info.value)) == (50, "ipam pool not ready")
    assert [c.plugin for c in fake.calls] == ["main", "tuner"]


def test_gc_deletes_stale_attachments_then_sends_gc_with_the_valid_ones(libcni, fake):
    net = conf_list_from_bytes(network("1.1.0"))
    libcni.add_network_list(net, pod_rt())
    stale = RuntimeConf(container_id="stale01", netns="/gone", ifname="eth0", args=(("A", "1"),))
    libcni.add_network_list(net, stale)
    fake.calls.clear()
    libcni.gc_network_list(net, [(SANDBOX, "eth0")])
    dels = [c for c in fake.calls if c.command == "DEL"]
    assert [(c.plugin, c.env["CNI_CONTAINERID"]) for c in dels] == [
        ("meta", "stale01"), ("tuner", "stale01"), ("main", "stale01"),
    ]  # fmt: skip
    assert dels[0].env["CNI_NETNS"] == "/gone" and dels[0].env["CNI_ARGS"] == "A=1"
    gcs = [c for c in fake.calls if c.command == "GC"]
    assert [c.plugin for c in gcs] == ["main", "tuner", "meta"]
    valid = [{"containerID": SANDBOX, "ifname": "eth0"}]
    assert all(c.config["cni.dev/valid-attachments"] == valid for c in gcs)
    assert all(c.config["cni.dev/attachments"] == valid for c in gcs)
    assert [a.container_id for a in libcni.cached_attachments()] == [SANDBOX]


def test_gc_of_a_list_older_than_1_1_0_only_deletes_stale_attachments(libcni, fake):
    net = conf_list_from_bytes(network("1.0.0"))
    libcni.add_network_list(net, pod_rt())
    fake.calls.clear()
    libcni.gc_network_list(net, [])
    assert [c.command for c in fake.calls] == ["DEL"] * 3
    assert libcni.cached_attachments() == []


def test_gc_leaves_other_networks_attachments_alone(libcni, fake):
    libcni.add_network_list(conf_list_from_bytes(network(name="other")), pod_rt())
    fake.calls.clear()
    libcni.gc_network_list(conf_list_from_bytes(network("1.1.0")), [])
    assert [c.command for c in fake.calls] == ["GC"] * 3
    assert [a.network for a in libcni.cached_attachments()] == ["other"]


def test_a_plugin_missing_from_cni_path_fails_as_libcni_reports_it(libcni, fake):
    net = conf_list_from_bytes(network(plugins=[{"type": "main"}, {"type": "absent"}]))
    with pytest.raises(CNIError) as info:
        libcni.add_network_list(net, pod_rt())
    assert str(info.value) == (
        'plugin type="absent" name="podnet" failed (add): '
        f'failed to find plugin "absent" in path [/opt/none {fake.bin_dir}]'
    )


@pytest.mark.parametrize(
    ("rt_change", "code", "message"),
    [
        ({"container_id": ""}, 3, "missing containerID"),
        ({"container_id": "bad/id"}, 4, "invalid characters in containerID"),
        ({"ifname": "a-very-long-ifname"}, 4, "interface name is too long"),
        ({"ifname": "eth 0"}, 4, "interface name contains / or : or whitespace characters"),
    ],
)
def test_add_validates_the_attachment_before_exec(libcni, fake, rt_change, code, message):
    rt = RuntimeConf(**{**pod_rt().__dict__, **rt_change})
    with pytest.raises(CNIError) as info:
        libcni.add_network_list(conf_list_from_bytes(network()), rt)
    assert info.value.code == code and message in str(info.value)
    assert fake.calls == []


def test_a_network_name_with_a_slash_is_rejected_before_exec(libcni, fake):
    with pytest.raises(CNIError) as info:
        libcni.add_network_list(conf_list_from_bytes(network(name="../etc")), pod_rt())
    assert info.value.code == 7
    assert fake.calls == []


def test_a_result_without_a_version_is_read_in_the_configs_version(libcni, fake):
    fake.plugins["main"] = lambda call: {"ips": [{"version": "4", "address": "10.1.0.7/24"}]}
    result = libcni.add_network_list(
        conf_list_from_bytes(network("0.3.1", [{"type": "main"}])), pod_rt()
    )
    assert result == {
        "cniVersion": "0.3.1",
        "ips": [{"version": "4", "address": "10.1.0.7/24"}],
        "dns": {},
    }


def test_an_add_answer_that_is_not_json_fails(libcni, fake):
    fake.plugins["main"] = lambda call: None
    with pytest.raises(CNIError, match="failed to unmarshal raw result"):
        libcni.add_network_list(conf_list_from_bytes(network(plugins=[{"type": "main"}])), pod_rt())


def test_every_exec_is_traced_with_its_outcome(libcni, fake, trace):
    def refuse(call: ExecCall):
        raise CNIError(7, "nope")

    fake.plugins["tuner"] = refuse
    with pytest.raises(CNIError):
        libcni.add_network_list(conf_list_from_bytes(network()), pod_rt())
    events = list(trace)
    assert [e.call for e in events] == ["cni ADD main", "cni ADD tuner"]
    assert [e.result for e in events] == ["OK", "code 7: nope"]
    assert all(e.node == "n1" and e.component == "containerd" for e in events)
    assert events[0].request == {
        "container_id": SANDBOX,
        "ifname": "eth0",
        "netns": "/var/run/netns/cni-1234",
        "network": "podnet",
        "pod": "default/web",
    }
