"""`kubelet-sim kubelet`'s flags: node names, per-node podCIDRs and InternalIPs, taints,
labels and CSI endpoints, and the runs refused before anything starts (exit 2: flags,
files, a state dir in use; exit 1: the API server cannot be reached)."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from kubelet_sim.__main__ import build_parser
from kubelet_sim.__main__ import main as kubelet_sim_main
from kubelet_sim.kubelet_process import (
    SIM_NODE_LABEL,
    KubeletOptions,
    KubeletRefused,
    node_ip,
    node_object,
    options_from,
    subnet,
)
from kubelet_sim.state_dir_lock import StateDirLock
from tests.fixtures.kubelet_process import run_kubelet


def options(*flags: str) -> KubeletOptions:
    return options_from(build_parser().parse_args(["kubelet", "--kubeconfig", "k", *flags]))


def refusal(*flags: str) -> str:
    with pytest.raises(KubeletRefused) as refused:
        options(*flags)
    assert refused.value.code == 2
    return str(refused.value)


def test_nodes_with_a_name_prefix_are_named_prefix_1_to_k():
    assert options("--nodes", "3", "--name-prefix", "edge-").node_names == [
        "edge-1", "edge-2", "edge-3"]


def test_nodes_without_a_name_prefix_are_sim_nodes():
    assert options("--nodes", "2").node_names == ["sim-node-1", "sim-node-2"]


def test_node_name_runs_exactly_that_node():
    assert options("--node-name", "worker-a").node_names == ["worker-a"]


def test_node_name_and_nodes_together_are_refused():
    assert "do not go together" in refusal("--node-name", "a", "--nodes", "2")


def test_a_node_must_be_named():
    assert "--node-name N, or --nodes K" in refusal()


def test_zero_nodes_are_refused():
    assert "--nodes 0" in refusal("--nodes", "0")


def test_a_name_prefix_making_names_that_are_not_dns_subdomains_is_refused():
    assert "'Edge_1' is not a lowercase RFC 1123 subdomain" in refusal(
        "--nodes", "1", "--name-prefix", "Edge_")


def test_node_i_takes_the_i_th_subnet_of_the_pod_cidr():
    opts = options("--nodes", "3", "--pod-cidr", "10.250.0.0/16",
                   "--node-cidr-mask-size", "20")
    assert [subnet(opts.pod_cidr, i, opts.node_cidr_mask_size, "--pod-cidr")
            for i in range(3)] == ["10.250.0.0/20", "10.250.16.0/20", "10.250.32.0/20"]


def test_node_i_has_the_i_th_address_of_the_node_ip_range():
    assert [node_ip("10.9.0.0/24", i) for i in range(3)] == [
        "10.9.0.1", "10.9.0.2", "10.9.0.3"]


def test_a_pod_cidr_too_small_for_the_nodes_is_refused():
    assert "holds 2 /24 subnet(s), not one per node for 3 nodes" in refusal(
        "--nodes", "3", "--pod-cidr", "10.250.0.0/23")


def test_a_pod_cidr_with_host_bits_is_refused():
    assert "--pod-cidr 10.250.0.1/16" in refusal("--node-name", "a",
                                                 "--pod-cidr", "10.250.0.1/16")


def test_register_with_taints_reads_the_kubelets_key_value_effect_list():
    opts = options("--node-name", "a", "--register-with-taints",
                   "sim.cni-csi-mini.io/node=true:NoSchedule,dedicated:NoExecute")
    assert opts.taints == [
        {"key": "sim.cni-csi-mini.io/node", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"}]


def test_a_taint_with_an_unknown_effect_is_refused():
    assert "Effect one of NoSchedule, PreferNoSchedule, NoExecute" in refusal(
        "--node-name", "a", "--register-with-taints", "k=v:Never")


def test_a_registered_node_carries_the_default_ours_and_the_given_labels_and_taints():
    opts = options("--node-name", "a", "--node-labels", "zone=z1,tier=sim",
                   "--register-with-taints", "sim.cni-csi-mini.io/node=true:NoSchedule",
                   "--max-pods", "30")
    node = node_object("a", "192.168.0.1", opts, "10.244.0.0/24")
    assert node.metadata.labels[SIM_NODE_LABEL] == "true"
    assert node.metadata.labels["kubernetes.io/hostname"] == "a"
    assert node.metadata.labels["zone"] == "z1"
    assert node.metadata.labels["tier"] == "sim"
    assert node.spec["taints"] == opts.taints
    assert node.spec["podCIDR"] == "10.244.0.0/24"
    assert node.status["allocatable"]["pods"] == "30"
    assert {"type": "InternalIP", "address": "192.168.0.1"} in node.status["addresses"]


def test_a_node_label_without_a_value_is_refused():
    assert "--node-labels wants key=value" in refusal("--node-name", "a",
                                                      "--node-labels", "zone")


def test_a_bare_csi_node_endpoint_is_the_only_nodes():
    assert options("--node-name", "a", "--csi-node-endpoint",
                   "unix:///run/csi.sock").csi_node_endpoints == {"a": "unix:///run/csi.sock"}


def test_a_csi_node_endpoint_for_a_node_not_in_this_process_is_refused():
    assert "no node 'b'" in refusal("--nodes", "2", "--csi-node-endpoint",
                                    "b=unix:///run/csi.sock")


def test_a_bare_csi_node_endpoint_with_many_nodes_is_refused():
    assert "wants NODE=EP" in refusal("--nodes", "2", "--csi-node-endpoint",
                                      "unix:///run/csi.sock")


def test_a_root_dir_or_node_ip_with_many_nodes_is_refused():
    assert "--root-dir is one node's" in refusal("--nodes", "2", "--root-dir", "/tmp/r")
    assert "--node-ip is one node's" in refusal("--nodes", "2", "--node-ip", "10.0.0.1")


def test_a_node_ip_that_is_no_address_is_refused():
    assert "--node-ip 10.0.0.300" in refusal("--node-name", "a", "--node-ip", "10.0.0.300")


def test_the_linux_dataplane_is_refused_saying_where_it_runs():
    assert "emulated dataplane only" in refusal("--node-name", "a", "--dataplane", "linux")


def test_bad_flags_exit_2_with_the_reason(capsys):
    assert kubelet_sim_main(["kubelet", "--kubeconfig", "k", "--nodes", "0"]) == 2
    assert "kubelet_sim: --nodes 0: at least 1" in capsys.readouterr().err


def test_a_missing_kubeconfig_exits_2_naming_it(tmp_path, capsys):
    assert kubelet_sim_main(["kubelet", "--kubeconfig", str(tmp_path / "nope"), "--node-name",
                             "a", "--state-dir", str(tmp_path / "state")]) == 2
    assert f"cannot read kubeconfig {tmp_path / 'nope'}" in capsys.readouterr().err


def test_a_kubeconfig_context_that_does_not_exist_exits_2_naming_it(tmp_path, capsys):
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    assert kubelet_sim_main(["kubelet", "--kubeconfig", str(kubeconfig), "--context", "prod",
                             "--node-name", "a", "--state-dir", str(tmp_path / "s")]) == 2
    assert "the kubeconfig has no context named 'prod'" in capsys.readouterr().err


def unreachable_kubeconfig(path: Path) -> Path:
    """A kubeconfig for https://127.0.0.1:PORT where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    return path


def test_an_unreachable_api_server_exits_1_saying_where_it_was_looked_for(tmp_path):
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    server = kubeconfig.read_text().split('server: "')[1].split('"')[0]
    state = Path(tempfile.mkdtemp(prefix="kc-", dir="/tmp"))  # short socket paths
    try:
        done = run_kubelet(kubeconfig, "--nodes", "2", "--api-wait", "0",
                           "--state-dir", str(state))
        assert done.returncode == 1
        assert f"kubelet_sim: cannot reach the API server at {server}" in done.stderr
        assert not (state / "nodes").exists()  # nothing was laid out for the nodes
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_a_state_dir_in_use_is_refused_naming_its_holder(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir()
    lock = StateDirLock.acquire(state)
    try:
        code = kubelet_sim_main(["kubelet", "--kubeconfig",
                                 str(unreachable_kubeconfig(tmp_path / "kubeconfig")),
                                 "--node-name", "a", "--api-wait", "0",
                                 "--state-dir", str(state)])
    finally:
        lock.release()
    assert code == 2
    assert f"{state} is in use by PID {os.getpid()}" in capsys.readouterr().err


def test_a_state_dir_too_deep_for_the_plugin_sockets_is_refused(tmp_path, capsys):
    state = tmp_path / ("d" * 60)
    code = kubelet_sim_main(["kubelet", "--kubeconfig",
                             str(unreachable_kubeconfig(tmp_path / "kubeconfig")),
                             "--nodes", "1", "--api-wait", "0", "--state-dir", str(state)])
    assert code == 2
    assert "is longer than the 107-byte unix limit: choose a shorter --state-dir" in \
        capsys.readouterr().err
