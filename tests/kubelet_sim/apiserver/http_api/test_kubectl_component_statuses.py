"""`kubectl get componentstatuses` against `up`, as kube-apiserver v1.35 still answers it:
the deprecated core/v1 ComponentStatus, get and list only, each answer with its
deprecation Warning; the scheduler and the controller-manager Healthy as `up` runs them,
`etcd-0` Healthy; never stored, so nothing else can be done to one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from kubelet_sim.apiserver.http.component_statuses import Components, component_statuses
from tests.fixtures.up_process import KUBECTL, Up, running_up

from .conftest import needs_kubectl

WARNING = "Warning: v1 ComponentStatus is deprecated in v1.19+"


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "1") as cluster:
        yield cluster


def kubectl(up: Up, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args],
                          capture_output=True, text=True, timeout=30, check=False)


@needs_kubectl
def test_get_cs_prints_every_component_healthy_with_the_deprecation_warning(up: Up) -> None:
    done = kubectl(up, "get", "cs")
    assert done.returncode == 0, done.stderr
    assert [line.split() for line in done.stdout.splitlines()] == [
        ["NAME", "STATUS", "MESSAGE", "ERROR"],
        ["scheduler", "Healthy", "ok"],
        ["controller-manager", "Healthy", "ok"],
        ["etcd-0", "Healthy", "ok"]]
    assert WARNING in done.stderr


@needs_kubectl
def test_one_component_reads_back_as_its_object(up: Up) -> None:
    done = kubectl(up, "get", "componentstatuses", "etcd-0", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "etcd-0"},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}


@needs_kubectl
def test_selectors_filter_the_list_as_kube_apiservers_predicate(up: Up) -> None:
    named = kubectl(up, "get", "cs", "--field-selector", "metadata.name=scheduler",
                    "-o", "name")
    assert named.stdout.split() == ["componentstatus/scheduler"]
    labelled = kubectl(up, "get", "cs", "-l", "tier=control-plane", "-o", "name")
    assert (labelled.returncode, labelled.stdout) == (0, "")  # they carry no labels


@needs_kubectl
def test_a_component_status_is_only_read(up: Up) -> None:
    deleted = kubectl(up, "delete", "cs", "etcd-0")
    assert "Error from server (MethodNotAllowed): the server does not allow this method " \
        "on the requested resource" in deleted.stderr
    unknown = kubectl(up, "get", "cs", "apiserver")
    assert 'Error from server (NotFound): componentstatuses "apiserver" not found' \
        in unknown.stderr
    resources = kubectl(up, "api-resources", "--api-group=", "-o", "wide").stdout
    row = next(line.split() for line in resources.splitlines()
               if line.startswith("componentstatuses "))
    assert row == ["componentstatuses", "cs", "v1", "false", "ComponentStatus", "get,list"]


def test_without_a_scheduler_or_controller_manager_their_probe_is_refused() -> None:
    scheduler, manager, etcd = component_statuses(Components())
    assert scheduler["conditions"] == [{
        "type": "Healthy", "status": "Unknown",
        "error": 'Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259: '
                 "connect: connection refused"}]
    assert "127.0.0.1:10257" in manager["conditions"][0]["error"]
    assert etcd["conditions"][0]["status"] == "True"
