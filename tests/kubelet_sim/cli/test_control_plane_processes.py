"""The control-plane commands as their own processes against a `kubelet-sim apiserver`
process over HTTPS: each takes the Lease its upstream component takes, a second
controller-manager waits as a candidate and takes over when the leader stops, and a
server that cannot be reached is said in one line."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubelet_sim.cluster import DRIVER_NAME
from kubelet_sim.plugin_processes import DriverProcess
from tests.fixtures.apiserver_process import ApiServerProcess
from tests.fixtures.component_process import ComponentProcess
from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT

# the default QPS (5 for the sidecars, 20 for the controller-manager) queues the Lease
# release on stop behind the informers' lists
NO_RATE_LIMIT = ["--kube-api-qps", "100", "--kube-api-burst", "200"]
# short Leases: the controller-manager does not release its Lease on stop (as upstream)
FAST = ["--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
        "--leader-elect-retry-period", "1s", *NO_RATE_LIMIT]


@pytest.fixture
def logs() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ksim-cp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def kubectl(server: ApiServerProcess, *args: str) -> str:
    return subprocess.run([str(KUBECTL), "--kubeconfig", str(server.kubeconfig), *args],
                          capture_output=True, text=True, check=True, timeout=30).stdout


def lease(server: ApiServerProcess, name: str, namespace: str = "kube-system") -> dict:
    return json.loads(kubectl(server, "get", "lease", name, "-n", namespace,
                              "-o", "json"))["spec"]


def identity(line: str) -> str:
    return line.rsplit(" as ", 1)[1]


def test_a_controller_manager_takes_its_leases_a_second_one_takes_over_and_a_lost_lease_ends_it(
        server: ApiServerProcess, logs: Path) -> None:
    first = ComponentProcess(["controller-manager", "--kubeconfig", str(server.kubeconfig),
                              *FAST], logs / "cm1.log")
    second: ComponentProcess | None = None
    try:
        leader = identity(first.wait_for(
            "successfully acquired lease kube-system/kube-controller-manager"))
        spec = lease(server, "kube-controller-manager")
        assert spec["holderIdentity"] == leader
        assert spec["leaseDurationSeconds"] == 4
        # the snapshot-controller runs here under the Lease the upstream one takes
        first.wait_for("successfully acquired lease kube-system/snapshot-controller-leader")
        assert lease(server, "snapshot-controller-leader")["holderIdentity"] == leader
        transitions = spec.get("leaseTransitions", 0)
        second = ComponentProcess(["controller-manager", "--kubeconfig",
                                   str(server.kubeconfig), *FAST], logs / "cm2.log")
        second.wait_for(f"the lease kube-system/kube-controller-manager is held by {leader}")
        assert lease(server, "kube-controller-manager")["holderIdentity"] == leader
        assert first.stop() == 0  # its Lease runs out: the candidate takes it
        successor = identity(second.wait_for(
            "successfully acquired lease kube-system/kube-controller-manager"))
        assert successor != leader
        spec = lease(server, "kube-controller-manager")
        assert spec["holderIdentity"] == successor
        assert spec["leaseTransitions"] == transitions + 1
        # another holder writes itself in: the leader cannot renew, and ends (status 1)
        kubectl(server, "patch", "lease", "kube-controller-manager", "-n", "kube-system",
                "--type", "merge", "-p", json.dumps(
                    {"spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 60}}))
        assert second.wait() == 1
        assert "leaderelection lost: kube-system/kube-controller-manager" in \
            second.log_tail()
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_the_scheduler_takes_the_kube_scheduler_lease(server: ApiServerProcess,
                                                      logs: Path) -> None:
    scheduler = ComponentProcess(["scheduler", "--kubeconfig", str(server.kubeconfig),
                                  *NO_RATE_LIMIT],
                                 logs / "scheduler.log")
    try:
        line = scheduler.wait_for("successfully acquired lease kube-system/kube-scheduler")
        assert lease(server, "kube-scheduler")["holderIdentity"] == identity(line)
    finally:
        assert scheduler.stop() == 0
    # kube-scheduler releases its Lease on a graceful stop: no holder, a 1 s lease
    released = lease(server, "kube-scheduler")
    assert "holderIdentity" not in released and released["leaseDurationSeconds"] == 1


def controller_plugin(work: Path) -> DriverProcess:
    """Our driver's controller plugin, as `up` starts it."""
    return DriverProcess(name="csi-controller-plugin", socket=work / "controller" / "csi.sock",
                         args=["--mode", "controller", "--node-id", "controller",
                               "--driver-name", DRIVER_NAME, "--state-dir",
                               str(work / "storage-array"), "--attach-required"],
                         log_path=work / "csi-controller.log", die_with_parent=True)


async def test_the_sidecars_take_each_upstream_sidecars_lease_for_the_driver(
        server: ApiServerProcess, logs: Path) -> None:
    driver = controller_plugin(logs)
    driver.start()
    try:
        await driver.wait_ready()
        sidecars = ComponentProcess(["sidecars", "--kubeconfig", str(server.kubeconfig),
                                     "--csi-address", driver.endpoint, "--leader-election",
                                     *NO_RATE_LIMIT],
                                    logs / "sidecars.log")
        try:
            for name in ("csi-mini-example-com",
                         "external-attacher-leader-csi-mini-example-com",
                         "external-resizer-csi-mini-example-com",
                         "external-snapshotter-leader-csi-mini-example-com"):
                line = sidecars.wait_for(f"successfully acquired lease default/{name}")
                assert lease(server, name, "default")["holderIdentity"] == identity(line)
        finally:
            assert sidecars.stop() == 0
    finally:
        driver.stop()


def test_an_unreachable_api_server_is_said_in_one_line_with_exit_1(
        server: ApiServerProcess, logs: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = yaml.safe_load(server.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    kubeconfig = logs / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    done = subprocess.run([sys.executable, "-m", "kubelet_sim", "scheduler", "--kubeconfig",
                           str(kubeconfig)], capture_output=True, text=True, timeout=60,
                          cwd=PROJECT_ROOT)
    assert done.returncode == 1
    said = done.stderr.strip().splitlines()
    assert len(said) == 1
    assert said[0].startswith(f"kubelet_sim scheduler: cannot reach the API server at "
                              f"https://127.0.0.1:{port}: GET /api/v1/namespaces/kube-system")
