"""The container runtime with fake plugins: sandboxes, their netns, CNI order, GC, NetworkReady."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cni_spec.errors import CNIError
from kubelet_sim.runtime.containerd import (
    SANDBOX_NOTREADY,
    SANDBOX_READY,
    ContainerRuntime,
    PodSandboxConfig,
    PortMapping,
    SandboxError,
    SandboxNotFound,
)
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.pod_network import PodNetwork
from kubelet_sim.testing.fake_exec import ExecCall, FakeExec, echo_prev_result_plugin
from kubelet_sim.utils.trace import Trace


def loopback_plugin(call: ExecCall):
    if call.command != "ADD":
        return None
    return {
        "cniVersion": call.config["cniVersion"],
        "interfaces": [{"name": "lo", "sandbox": call.env["CNI_NETNS"]}],
        "ips": [{"interface": 0, "address": "127.0.0.1/8"}],
    }


def bridge_plugin(call: ExecCall):
    if call.command != "ADD":
        return None
    return {
        "cniVersion": call.config["cniVersion"],
        "interfaces": [
            {"name": "cni0"},
            {"name": "eth0", "sandbox": call.env["CNI_NETNS"]},
        ],
        "ips": [
            {"interface": 0, "address": "10.244.1.1/24"},
            {"interface": 1, "address": "fd00::2/64", "gateway": "fd00::1"},
            {"interface": 1, "address": "10.244.1.2/24", "gateway": "10.244.1.1"},
        ],
    }


POD_NETWORK = {
    "cniVersion": "1.0.0",
    "name": "podnet",
    "plugins": [
        {"type": "bridge"},
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ],
}


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    d = tmp_path / "net.d"
    d.mkdir()
    (d / "10-podnet.conflist").write_text(json.dumps(POD_NETWORK))
    return d


@pytest.fixture
def fake() -> FakeExec:
    return FakeExec(
        plugins={
            "loopback": loopback_plugin,
            "bridge": bridge_plugin,
            "portmap": echo_prev_result_plugin,
        }
    )


@pytest.fixture
def trace() -> Trace:
    return Trace()


def make_runtime(tmp_path: Path, conf_dir: Path, fake: FakeExec, trace: Trace) -> ContainerRuntime:
    libcni = LibCNI([fake.bin_dir], str(tmp_path / "cache"), fake, trace=trace, node="node-1")
    return ContainerRuntime(str(tmp_path / "state"), PodNetwork(libcni, str(conf_dir)))


@pytest.fixture
def runtime(tmp_path, conf_dir, fake, trace) -> ContainerRuntime:
    return make_runtime(tmp_path, conf_dir, fake, trace)


WEB = PodSandboxConfig(
    name="web",
    namespace="default",
    uid="uid-web",
    annotations={"team": "a"},
    port_mappings=[PortMapping(container_port=80, host_port=8080), PortMapping(container_port=81)],
)


def test_run_pod_sandbox_creates_a_netns_then_adds_loopback_and_the_pod_network(
    runtime, fake, tmp_path
):
    sandbox = runtime.run_pod_sandbox(WEB)
    assert sandbox.state == SANDBOX_READY
    assert len(sandbox.id) == 64
    assert os.path.dirname(sandbox.netns) == str(tmp_path / "state" / "netns")
    assert os.path.basename(sandbox.netns).startswith("cni-")
    assert os.path.exists(sandbox.netns)
    assert fake.commands() == [
        ("ADD", "loopback", "lo"),
        ("ADD", "bridge", "eth0"),
        ("ADD", "portmap", "eth0"),
    ]
    assert {c.env["CNI_NETNS"] for c in fake.calls} == {sandbox.netns}
    assert {c.env["CNI_CONTAINERID"] for c in fake.calls} == {sandbox.id}


def test_the_pod_ips_are_the_first_ip_of_eth0_per_family_ipv4_first(runtime):
    assert runtime.run_pod_sandbox(WEB).ips == ["10.244.1.2", "fd00::2"]


def test_cni_args_and_capability_args_are_containerds(runtime, fake):
    sandbox = runtime.run_pod_sandbox(WEB)
    add_portmap = fake.calls[2]
    assert add_portmap.env["CNI_ARGS"] == (
        "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;"
        f"K8S_POD_INFRA_CONTAINER_ID={sandbox.id};K8S_POD_UID=uid-web"
    )
    # Only mappings with a host port are sent, protocols lower-cased.
    assert add_portmap.config["runtimeConfig"] == {
        "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]
    }
    assert "runtimeConfig" not in fake.calls[1].config
    assert sandbox.capability_args["io.kubernetes.cri.pod-annotations"] == {"team": "a"}


def test_the_sandbox_is_persisted_and_listed(runtime, tmp_path, conf_dir, fake, trace):
    sandbox = runtime.run_pod_sandbox(WEB)
    restarted = make_runtime(tmp_path, conf_dir, fake, trace)
    assert [s.id for s in restarted.list_pod_sandboxes()] == [sandbox.id]
    assert restarted.pod_sandbox_status(sandbox.id) == sandbox


def test_stop_deletes_the_pod_network_in_reverse_then_loopback(runtime, fake):
    sandbox = runtime.run_pod_sandbox(WEB)
    fake.calls.clear()
    stopped = runtime.stop_pod_sandbox(sandbox.id)
    assert fake.commands() == [
        ("DEL", "portmap", "eth0"),
        ("DEL", "bridge", "eth0"),
        ("DEL", "loopback", "lo"),
    ]
    assert stopped.state == SANDBOX_NOTREADY
    assert os.path.exists(sandbox.netns)  # the netns lives until RemovePodSandbox


def test_stopping_a_stopped_sandbox_runs_no_plugin(runtime, fake):
    sandbox = runtime.run_pod_sandbox(WEB)
    runtime.stop_pod_sandbox(sandbox.id)
    fake.calls.clear()
    assert runtime.stop_pod_sandbox(sandbox.id).state == SANDBOX_NOTREADY
    assert fake.calls == []


def test_stopping_an_unknown_sandbox_is_not_found(runtime):
    with pytest.raises(SandboxNotFound):
        runtime.stop_pod_sandbox("f" * 64)


def test_remove_deletes_the_netns_and_the_record_and_is_idempotent(runtime):
    sandbox = runtime.run_pod_sandbox(WEB)
    runtime.stop_pod_sandbox(sandbox.id)
    runtime.remove_pod_sandbox(sandbox.id)
    assert not os.path.exists(sandbox.netns)
    assert runtime.list_pod_sandboxes() == []
    runtime.remove_pod_sandbox(sandbox.id)


def test_removing_a_ready_sandbox_stops_it_first(runtime, fake):
    sandbox = runtime.run_pod_sandbox(WEB)
    fake.calls.clear()
    runtime.remove_pod_sandbox(sandbox.id)
    assert [c.command for c in fake.calls] == ["DEL"] * 3
    assert not os.path.exists(sandbox.netns)


def test_a_failed_add_is_torn_down_as_containerd_does(runtime, fake, tmp_path):
    def refuse(call: ExecCall):
        if call.command == "ADD":
            raise CNIError(11, "no free port")
        return None

    fake.plugins["portmap"] = refuse
    with pytest.raises(SandboxError, match="no free port"):
        runtime.run_pod_sandbox(WEB)
    assert fake.commands() == [
        ("ADD", "loopback", "lo"),
        ("ADD", "bridge", "eth0"),
        ("ADD", "portmap", "eth0"),
        ("DEL", "portmap", "eth0"),
        ("DEL", "bridge", "eth0"),
        ("DEL", "loopback", "lo"),
    ]
    assert runtime.list_pod_sandboxes() == []
    assert os.listdir(tmp_path / "state" / "netns") == []
    assert os.listdir(tmp_path / "cache" / "results") == []


def test_without_network_config_no_sandbox_starts_and_the_network_is_not_ready(
    runtime, conf_dir, fake
):
    (conf_dir / "10-podnet.conflist").unlink()
    condition = runtime.network_status()
    assert not condition.ready
    assert condition.reason == "NetworkPluginNotReady"
    assert "cni plugin not initialized" in condition.message
    with pytest.raises(SandboxError, match="no network config"):
        runtime.run_pod_sandbox(WEB)
    assert fake.calls == []
    assert runtime.list_pod_sandboxes() == []


def test_a_config_appearing_later_makes_the_network_ready(runtime, conf_dir):
    (conf_dir / "10-podnet.conflist").rename(conf_dir / "10-podnet.off")
    assert not runtime.network_status().ready
    (conf_dir / "10-podnet.off").rename(conf_dir / "10-podnet.conflist")
    assert runtime.network_status().ready


def test_a_failing_status_makes_the_network_not_ready(runtime, conf_dir, fake):
    (conf_dir / "10-podnet.conflist").write_text(json.dumps({**POD_NETWORK, "cniVersion": "1.1.0"}))

    def unavailable(call: ExecCall):
        if call.command == "STATUS":
            raise CNIError(50, "address pool exhausted")
        return None

    fake.plugins["bridge"] = unavailable
    condition = runtime.network_status()
    assert not condition.ready
    assert condition.message == "Network plugin returns error: address pool exhausted"
    # Loopback (1.0.0) has no STATUS; only the 1.1.0 pod network is asked.
    assert fake.commands() == [("STATUS", "bridge", "")]


def test_check_pod_network_checks_both_networks_with_their_cached_results(runtime, fake):
    sandbox = runtime.run_pod_sandbox(WEB)
    fake.calls.clear()
    runtime.check_pod_network(sandbox.id)
    assert fake.commands() == [
        ("CHECK", "loopback", "lo"),
        ("CHECK", "bridge", "eth0"),
        ("CHECK", "portmap", "eth0"),
    ]
    assert fake.calls[1].config["prevResult"]["ips"][2]["address"] == "10.244.1.2/24"


def test_a_pod_can_be_stopped_after_its_network_config_was_removed(runtime, conf_dir, fake):
    sandbox = runtime.run_pod_sandbox(WEB)
    (conf_dir / "10-podnet.conflist").unlink()
    fake.calls.clear()
    runtime.stop_pod_sandbox(sandbox.id)
    assert fake.commands() == [
        ("DEL", "portmap", "eth0"),
        ("DEL", "bridge", "eth0"),
        ("DEL", "loopback", "lo"),
    ]


def test_a_restarted_runtime_gcs_attachments_of_sandboxes_it_no_longer_has(
    runtime, tmp_path, conf_dir, fake, trace
):
    keep = runtime.run_pod_sandbox(WEB)
    lost = runtime.run_pod_sandbox(PodSandboxConfig(name="db", namespace="default", uid="uid-db"))
    os.unlink(
        tmp_path / "state" / "sandboxes" / f"{lost.id}.json"
    )  # forgotten, network still there
    fake.calls.clear()
    make_runtime(tmp_path, conf_dir, fake, trace).garbage_collect()
    assert {c.env["CNI_CONTAINERID"] for c in fake.calls} == {lost.id}
    assert sorted(fake.commands()) == sorted(
        [("DEL", "loopback", "lo"), ("DEL", "portmap", "eth0"), ("DEL", "bridge", "eth0")]
    )
    remaining = {name.split("-")[-2] for name in os.listdir(tmp_path / "cache" / "results")}
    assert remaining == {keep.id}


def test_gc_tears_down_a_sandbox_whose_setup_was_interrupted(
    runtime, tmp_path, conf_dir, fake, trace
):
    sandbox = runtime.run_pod_sandbox(WEB)
    record = tmp_path / "state" / "sandboxes" / f"{sandbox.id}.json"
    doc = json.loads(record.read_text())
    record.write_text(json.dumps({**doc, "state": SANDBOX_NOTREADY}))  # as if killed before READY
    fake.calls.clear()
    restarted = make_runtime(tmp_path, conf_dir, fake, trace)
    restarted.garbage_collect()
    assert [c.command for c in fake.calls] == ["DEL"] * 3
    assert restarted.pod_sandbox_status(sandbox.id).network_attached is False
    fake.calls.clear()
    restarted.garbage_collect()
    assert fake.calls == []


def test_every_cni_exec_is_in_the_trace_under_containerd(runtime, trace):
    sandbox = runtime.run_pod_sandbox(WEB)
    runtime.stop_pod_sandbox(sandbox.id)
    assert trace.calls(node="node-1", component="containerd") == [
        "cni ADD loopback",
        "cni ADD bridge",
        "cni ADD portmap",
        "cni DEL portmap",
        "cni DEL bridge",
        "cni DEL loopback",
    ]


def test_cri_calls_are_traced_as_the_kubelets_when_asked(tmp_path, conf_dir, fake, trace):
    libcni = LibCNI([fake.bin_dir], str(tmp_path / "cache"), fake, trace=trace, node="node-1")
    runtime = ContainerRuntime(
        str(tmp_path / "state"), PodNetwork(libcni, str(conf_dir)), cri_trace=trace, node="node-1"
    )
    sandbox = runtime.run_pod_sandbox(WEB)
    runtime.remove_pod_sandbox(sandbox.id)
    with pytest.raises(SandboxNotFound):
        runtime.stop_pod_sandbox(sandbox.id)
    cri = [(e.call, e.result) for e in trace if e.component == "kubelet"]
    assert cri == [
        ("runtime.v1.RuntimeService/RunPodSandbox", "OK"),
        ("runtime.v1.RuntimeService/RemovePodSandbox", "OK"),
        ("runtime.v1.RuntimeService/StopPodSandbox", f"SandboxNotFound: '{sandbox.id}'"),
    ]
    assert len(trace.calls(component="containerd")) == 6


def test_a_sandbox_record_names_its_netns_before_the_netns_exists(runtime, fake, tmp_path):
    seen: list[bool] = []

    def loopback_checking_record(call: ExecCall):
        records = list((tmp_path / "state" / "sandboxes").iterdir())
        doc = json.loads(records[0].read_text())
        seen.append(doc["netns"] == call.env["CNI_NETNS"] and doc["network_attached"])
        return loopback_plugin(call)

    fake.plugins["loopback"] = loopback_checking_record
    runtime.run_pod_sandbox(WEB)
    assert seen == [True]
