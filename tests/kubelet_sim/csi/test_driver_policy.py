"""The kubelet's rules for CSIDriver fields, as pure functions: lifecycle modes, fsGroup
policy, and the SELinux label a volume is mounted with."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from kubelet_sim.csi.driver_policy import (
    DriverPolicy,
    kubelet_applies_fs_group,
    lifecycle_mode_error,
    selinux_file_label,
    selinux_mount_label,
)

SELINUX = DriverPolicy(exists=True, se_linux_mount=True)
RWOP = ("ReadWriteOncePod",)


def pod_spec(*, pod_level: str | None = "s0:c1,c2", container: dict[str, Any] | None = None,
             change_policy: str | None = None) -> dict[str, Any]:
    context: dict[str, Any] = {}
    if pod_level is not None:
        context["seLinuxOptions"] = {"level": pod_level}
    if change_policy:
        context["seLinuxChangePolicy"] = change_policy
    main: dict[str, Any] = {"name": "main", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}
    if container is not None:
        main["securityContext"] = {"seLinuxOptions": container}
    return {"securityContext": context, "containers": [main]}


def test_from_spec_without_an_object_is_kubernetes_defaults() -> None:
    policy = DriverPolicy.from_spec(None)

    assert not policy.exists and policy.attach_required and not policy.pod_info_on_mount
    assert policy.fs_group_policy == "ReadWriteOnceWithFSType"
    assert policy.lifecycle_modes == ("Persistent",)


def test_from_spec_reads_every_field() -> None:
    policy = DriverPolicy.from_spec({
        "attachRequired": False, "podInfoOnMount": True, "fsGroupPolicy": "File",
        "seLinuxMount": True, "volumeLifecycleModes": ["Ephemeral"],
        "nodeAllocatableUpdatePeriodSeconds": 30})

    assert policy == DriverPolicy(exists=True, attach_required=False, pod_info_on_mount=True,
                                  fs_group_policy="File", se_linux_mount=True,
                                  lifecycle_modes=("Ephemeral",),
                                  node_allocatable_update_period_seconds=30)


def test_lifecycle_mode_errors_quote_the_mode_and_list_the_supported_ones_as_go_does() -> None:
    both = DriverPolicy(exists=True, lifecycle_modes=("Persistent", "Ephemeral"))

    assert lifecycle_mode_error("d", both, "Ephemeral") is None
    assert lifecycle_mode_error("d", DriverPolicy(), "Persistent") is None
    assert lifecycle_mode_error("d", DriverPolicy(exists=True), "Ephemeral") == (
        'volume mode "Ephemeral" not supported by driver d (only supports ["Persistent"])')
    assert lifecycle_mode_error("d", DriverPolicy(), "Ephemeral") == (
        'volume mode "Ephemeral" not supported by driver d (no CSIDriver object)')


@pytest.mark.parametrize(("policy", "fs_type", "modes", "inline", "expected"), [
    ("ReadWriteOnceWithFSType", "ext4", ("ReadWriteOnce",), False, True),
    ("ReadWriteOnceWithFSType", "ext4", ("ReadOnlyMany", "ReadWriteOnce"), False, True),
    ("ReadWriteOnceWithFSType", "ext4", ("ReadWriteOncePod",), False, False),
    ("ReadWriteOnceWithFSType", "", ("ReadWriteOnce",), False, False),
    ("ReadWriteOnceWithFSType", "ext4", (), True, True),
    ("File", "", ("ReadWriteMany",), False, True),
    ("None", "ext4", ("ReadWriteOnce",), False, False),
])
def test_which_volumes_the_kubelet_chowns(policy: str, fs_type: str, modes: tuple[str, ...],
                                          inline: bool, expected: bool) -> None:
    assert kubelet_applies_fs_group(fs_group=1000, policy=policy, read_only=False,
                                    fs_type=fs_type, access_modes=modes,
                                    inline=inline) is expected


def test_the_file_label_keeps_user_and_level_and_takes_the_hosts_role_and_type() -> None:
    assert selinux_file_label({"level": "s0:c1,c2"}) == (
        "system_u:object_r:container_file_t:s0:c1,c2")
    assert selinux_file_label({"user": "staff_u", "role": "staff_r", "type": "spc_t",
                               "level": "s0:c3,c4"}) == "staff_u:object_r:container_file_t:s0:c3,c4"
    assert selinux_file_label(None) == ""
    assert selinux_file_label({}) == ""


def test_a_label_without_level_gets_a_random_mcs_pair() -> None:
    label = selinux_file_label({"type": "container_t"}, rng=random.Random(7))

    assert re.fullmatch(r"system_u:object_r:container_file_t:s0:c(\d+),c(\d+)", label)


def test_a_rwop_pv_of_a_selinux_mount_driver_gets_the_pods_label() -> None:
    assert selinux_mount_label(pod_spec(), "data", policy=SELINUX, access_modes=RWOP,
                               persistent=True) == "system_u:object_r:container_file_t:s0:c1,c2"


def test_a_containers_own_options_win_over_the_pods() -> None:
    spec = pod_spec(container={"level": "s0:c5,c6"})

    assert selinux_mount_label(spec, "data", policy=SELINUX, access_modes=RWOP,
                               persistent=True).endswith(":s0:c5,c6")


@pytest.mark.parametrize(("policy", "modes", "persistent", "spec"), [
    (DriverPolicy(exists=True), RWOP, True, pod_spec()),  # seLinuxMount false
    (SELINUX, ("ReadWriteOnce",), True, pod_spec()),  # the SELinuxMount gate is off
    (SELINUX, ("ReadWriteOncePod", "ReadOnlyMany"), True, pod_spec()),  # not RWOP alone
    (SELINUX, (), False, pod_spec()),  # an inline volume
    (SELINUX, RWOP, True, pod_spec(pod_level=None)),  # no SELinux options
    (SELINUX, RWOP, True, pod_spec(change_policy="Recursive")),  # opted out
], ids=["driver-without-selinux-mount", "rwo", "rwop-among-others", "inline", "no-options",
        "recursive"])
def test_no_label_where_the_kubelet_mounts_without_context(
    policy: DriverPolicy, modes: tuple[str, ...], persistent: bool, spec: dict[str, Any],
) -> None:
    assert selinux_mount_label(spec, "data", policy=policy, access_modes=modes,
                               persistent=persistent) == ""


def test_containers_asking_for_different_labels_of_one_rwop_volume_are_an_error() -> None:
    spec = pod_spec(container={"level": "s0:c5,c6"})
    spec["containers"].append({"name": "side", "volumeMounts": [{"name": "data",
                                                                   "mountPath": "/d"}]})

    with pytest.raises(ValueError, match="conflicting SELinux labels of volume data"):
        selinux_mount_label(spec, "data", policy=SELINUX, access_modes=RWOP, persistent=True)
