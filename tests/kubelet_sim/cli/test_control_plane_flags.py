"""The control-plane commands' flags: kube-controller-manager's --controllers syntax and
names, the sidecars' roles and the Leases the upstream sidecars take, Go durations and
booleans, and that `up`'s in-process set comes from the same table."""

from __future__ import annotations

import argparse

import pytest

from kubelet_sim.__main__ import build_parser
from kubelet_sim.component_process import go_bool, go_duration
from kubelet_sim.control_plane import (
    ATTACHER,
    LOOPS,
    MANAGER_LOOPS,
    PROVISIONER,
    RESIZER,
    SIDECAR_ROLES,
    SNAPSHOTTER,
    sidecar_lease_name,
)
from kubelet_sim.control_plane_commands import (
    controller_enabled,
    enabled_loops,
    parse_controllers,
)


def names(value: str) -> set[str]:
    return {loop.name for loop in enabled_loops(parse_controllers(value))}


def test_star_enables_every_loop_of_the_controller_manager() -> None:
    assert names("*") == {loop.name for loop in MANAGER_LOOPS}


def test_a_dash_name_after_star_disables_that_loop_only() -> None:
    assert names("*,-job-controller") == {loop.name for loop in MANAGER_LOOPS} - {
        "job-controller"}


def test_without_star_only_the_named_loops_run() -> None:
    assert names("deployment-controller,replicaset-controller") == {
        "deployment-controller", "replicaset-controller"}


def test_the_first_entry_naming_a_loop_decides() -> None:
    assert "job-controller" in names("job-controller,-job-controller")
    assert "job-controller" not in names("-job-controller,job-controller,*")


def test_legacy_aliases_name_the_same_loops() -> None:
    assert names("deployment,attachdetach,podgc,endpoint") == {
        "deployment-controller", "persistentvolume-attach-detach-controller",
        "pod-garbage-collector-controller", "endpoints-controller"}
    assert parse_controllers("*,-garbagecollector") == ["*", "-garbage-collector-controller"]


def test_one_loop_of_several_names_runs_while_any_of_them_is_enabled() -> None:
    protection = "persistentvolumeclaim-protection-controller"
    assert protection in names("pv-protection")
    assert protection in names("*,-pvc-protection")
    assert protection not in names("*,-pvc-protection,-pv-protection,"
                                   "-volumeattributesclass-protection-controller")


def test_an_unknown_controller_is_refused_by_name() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="'bogus' is not in the list of "
                       "known controllers"):
        parse_controllers("*,-bogus")


def test_star_leaves_off_the_loops_off_by_default() -> None:
    assert not controller_enabled("bootstrap", ["*"], off_by_default=["bootstrap"])
    assert controller_enabled("bootstrap", ["bootstrap", "*"], off_by_default=["bootstrap"])


def test_the_command_line_refuses_an_unknown_controller_with_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["controller-manager", "--kubeconfig", "k",
                                   "--controllers", "*,nope"])
    assert exit_info.value.code == 2
    assert "'nope' is not in the list of known controllers" in capsys.readouterr().err


def test_leader_election_is_on_by_default_for_the_controller_manager_and_off_for_sidecars(
) -> None:
    parse = build_parser().parse_args
    assert parse(["controller-manager", "--kubeconfig", "k"]).leader_elect is True
    assert parse(["controller-manager", "--kubeconfig", "k",
                  "--leader-elect=false"]).leader_elect is False
    assert parse(["scheduler", "--kubeconfig", "k"]).lease_name == "kube-scheduler"
    sidecars = parse(["sidecars", "--kubeconfig", "k", "--csi-address", "unix:///x.sock"])
    assert sidecars.leader_elect is False
    assert sidecars.roles == list(SIDECAR_ROLES)
    assert parse(["sidecars", "--kubeconfig", "k", "--csi-address", "unix:///x.sock",
                  "--leader-election", "--roles", "attacher"]).leader_elect is True


def test_an_unknown_sidecar_role_is_refused() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sidecars", "--kubeconfig", "k", "--csi-address",
                                   "unix:///x.sock", "--roles", "provisioner,mounter"])


def test_each_sidecar_takes_the_lease_its_upstream_sidecar_names() -> None:
    driver = "csi-mini.example.com"
    assert sidecar_lease_name(PROVISIONER, driver) == "csi-mini-example-com"
    assert sidecar_lease_name(ATTACHER, driver) == \
        "external-attacher-leader-csi-mini-example-com"
    assert sidecar_lease_name(RESIZER, driver) == "external-resizer-csi-mini-example-com"
    assert sidecar_lease_name(SNAPSHOTTER, driver) == \
        "external-snapshotter-leader-csi-mini-example-com"


def test_the_capacity_role_runs_under_the_provisioners_lease() -> None:
    capacity = next(loop for loop in LOOPS if loop.name == "capacity")
    assert capacity.component == PROVISIONER


def test_go_durations_and_booleans_read_as_the_upstream_flags_take_them() -> None:
    assert go_duration("15s") == 15.0
    assert go_duration("1m30s") == 90.0
    assert go_duration("500ms") == 0.5
    assert go_duration("2") == 2.0
    with pytest.raises(argparse.ArgumentTypeError):
        go_duration("15 seconds")
    assert go_bool("true") and go_bool("T") and not go_bool("false") and not go_bool("0")
