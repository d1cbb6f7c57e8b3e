"""Feature flags: every optional capability is on by default and each `--no-…` flag removes
it from the advertised capabilities, after which its RPCs answer UNIMPLEMENTED (spec:
"capability not advertised → UNIMPLEMENTED"). Also identity flags and concurrency."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    AccessMode,
    CtrlCap,
    GiB,
    NodeCap,
    PluginService,
    controller_capabilities,
    expect_error_code,
    make_create_volume_req,
    mount_capability,
    node_capabilities,
    plugin_services,
    unique_string,
)
from tests.fixtures.driver_process import DriverProcess, Stubs

UNIMPLEMENTED = grpc.StatusCode.UNIMPLEMENTED
Probe = tuple[Callable[[Stubs], Any], Any]

FLAG_CASES: list[tuple[str, set[int], set[int], set[int], Probe | None]] = [
    # flag, controller caps gone, node caps gone, plugin services gone, an RPC now UNIMPLEMENTED
    (
        "--no-snapshots",
        {CtrlCap.CREATE_DELETE_SNAPSHOT, CtrlCap.LIST_SNAPSHOTS, CtrlCap.GET_SNAPSHOT},
        set(),
        set(),
        (
            lambda s: s.controller.CreateSnapshot,
            csi_pb2.CreateSnapshotRequest(name="s", source_volume_id="v"),
        ),
    ),
    (
        "--no-snapshot-metadata",
        set(),
        set(),
        {PluginService.SNAPSHOT_METADATA_SERVICE},
        None,  # streaming: checked separately below
    ),
    (
        "--no-volume-condition",
        {CtrlCap.VOLUME_CONDITION},
        {NodeCap.VOLUME_CONDITION},
        set(),
        None,
    ),
    (
        "--no-single-node-multi-writer",
        {CtrlCap.SINGLE_NODE_MULTI_WRITER},
        {NodeCap.SINGLE_NODE_MULTI_WRITER},
        set(),
        None,
    ),
    (
        "--no-topology",
        set(),
        set(),
        {PluginService.VOLUME_ACCESSIBILITY_CONSTRAINTS},
        None,
    ),
]


def test_everything_is_on_by_default(driver: DriverProcess) -> None:
    assert controller_capabilities(driver.stubs) >= {
        CtrlCap.CREATE_DELETE_VOLUME, CtrlCap.PUBLISH_UNPUBLISH_VOLUME, CtrlCap.LIST_VOLUMES,
        CtrlCap.GET_CAPACITY, CtrlCap.CREATE_DELETE_SNAPSHOT, CtrlCap.LIST_SNAPSHOTS,
        CtrlCap.CLONE_VOLUME, CtrlCap.PUBLISH_READONLY, CtrlCap.EXPAND_VOLUME,
        CtrlCap.LIST_VOLUMES_PUBLISHED_NODES, CtrlCap.VOLUME_CONDITION, CtrlCap.GET_VOLUME,
        CtrlCap.SINGLE_NODE_MULTI_WRITER, CtrlCap.MODIFY_VOLUME, CtrlCap.GET_SNAPSHOT,
    }  # fmt: skip
    assert node_capabilities(driver.stubs) >= {
        NodeCap.STAGE_UNSTAGE_VOLUME, NodeCap.GET_VOLUME_STATS, NodeCap.EXPAND_VOLUME,
        NodeCap.VOLUME_CONDITION, NodeCap.SINGLE_NODE_MULTI_WRITER,
    }  # fmt: skip
    assert plugin_services(driver.stubs) == {
        PluginService.CONTROLLER_SERVICE, PluginService.VOLUME_ACCESSIBILITY_CONSTRAINTS,
        PluginService.GROUP_CONTROLLER_SERVICE, PluginService.SNAPSHOT_METADATA_SERVICE,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "ctrl_gone", "node_gone", "services_gone", "probe"),
    FLAG_CASES,
    ids=[c[0] for c in FLAG_CASES],
)
def test_a_no_flag_withdraws_its_capability(
    spawn_driver: SpawnDriver,
    driver: DriverProcess,
    flag: str,
    ctrl_gone: set[int],
    node_gone: set[int],
    services_gone: set[int],
    probe: Probe | None,
) -> None:
    proc = spawn_driver(flag)
    assert controller_capabilities(proc.stubs) == controller_capabilities(driver.stubs) - ctrl_gone
    assert node_capabilities(proc.stubs) == node_capabilities(driver.stubs) - node_gone
    assert plugin_services(proc.stubs) == plugin_services(driver.stubs) - services_gone
    if probe is not None:
        expect_error_code(probe[0](proc.stubs), probe[1], UNIMPLEMENTED)


def test_volume_mount_group_is_off_by_default_and_offered_with_its_flag(
    spawn_driver: SpawnDriver, driver: DriverProcess,
) -> None:
    proc = spawn_driver("--volume-mount-group")

    assert NodeCap.VOLUME_MOUNT_GROUP not in node_capabilities(driver.stubs)
    assert node_capabilities(proc.stubs) == node_capabilities(driver.stubs) | {
        NodeCap.VOLUME_MOUNT_GROUP}


def test_no_snapshot_metadata_streams_answer_unimplemented(spawn_driver: SpawnDriver) -> None:
    proc = spawn_driver("--no-snapshot-metadata")
    stream = proc.stubs.snapshot_metadata.GetMetadataAllocated(
        csi_pb2.GetMetadataAllocatedRequest(snapshot_id="s")
    )
    with pytest.raises(grpc.RpcError) as err:
        list(stream)
    assert err.value.code() == UNIMPLEMENTED


def test_single_node_multi_writer_volumes_are_refused_when_that_mode_is_off(
    spawn_driver: SpawnDriver,
) -> None:
    proc = spawn_driver("--no-single-node-multi-writer")
    req = make_create_volume_req("snmw", GiB)
    del req.volume_capabilities[:]
    req.volume_capabilities.append(mount_capability(AccessMode.SINGLE_NODE_MULTI_WRITER))
    expect_error_code(proc.stubs.controller.CreateVolume, req, grpc.StatusCode.INVALID_ARGUMENT)


def test_driver_name_and_vendor_version_flags_are_reported(spawn_driver: SpawnDriver) -> None:
    proc = spawn_driver("--driver-name", "other.example.org", "--vendor-version", "9.8.7")
    info = proc.stubs.identity.GetPluginInfo(csi_pb2.GetPluginInfoRequest())
    assert (info.name, info.vendor_version) == ("other.example.org", "9.8.7")


def test_concurrent_creates_of_one_name_yield_one_volume(driver: DriverProcess) -> None:
    """Same name in flight from 8 clients: each answer is the one volume or ABORTED (spec:
    operation pending), and exactly one volume with that name exists afterwards."""
    name = unique_string("race")
    answers: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        try:
            rsp = driver.stubs.controller.CreateVolume(
                make_create_volume_req(name, GiB), timeout=30
            )
            result = rsp.volume.volume_id
        except grpc.RpcError as err:
            result = err.code().name
        with lock:
            answers.append(result)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    ids = {a for a in answers if a != "ABORTED"}
    assert len(answers) == 8
    assert len(ids) == 1, answers
    vid = ids.pop()
    final = driver.stubs.controller.CreateVolume(make_create_volume_req(name, GiB))
    assert final.volume.volume_id == vid
    driver.stubs.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=vid))


def test_zero_max_volumes_per_node_means_unlimited(spawn_driver: SpawnDriver) -> None:
    proc = spawn_driver("--max-volumes-per-node", "0", node_id="n0")
    assert proc.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest()).max_volumes_per_node == 0
    ids = []
    for i in range(3):
        rsp = proc.stubs.controller.CreateVolume(make_create_volume_req(f"u{i}", GiB))
        ids.append(rsp.volume.volume_id)
        proc.stubs.controller.ControllerPublishVolume(
            csi_pb2.ControllerPublishVolumeRequest(
                volume_id=rsp.volume.volume_id, node_id="n0", volume_capability=mount_capability()
            )
        )


@pytest.mark.parametrize(
    "bad",
    [
        ["--capacity", "default=lots"],
        ["--capacity", "default=0"],
        ["--max-volume-size", "-1Gi"],
        ["--socket-mode", "999"],
        ["--mode", "both"],
        ["--expansion", "sometimes"],
        ["--mount-method", "nfs"],
        ["--secret", "novalue"],
        ["--allowed-target-root", "relative/dir"],
        ["--fs-backend", "zfs"],
        ["--orphan-sweep-interval", "0"],
        ["--orphan-sweep-interval", "nan"],
        ["--orphan-min-age", "-1"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_bad_flag_value_exits_non_zero_without_a_traceback(
    spawn_driver: SpawnDriver, bad: list[str]
) -> None:
    proc = spawn_driver(*bad, start=False)
    status = proc.spawn().wait(timeout=30)
    assert status != 0
    assert "Traceback" not in proc.stderr()
    assert not proc.socket_path.exists()
