"""Processes sharing one state directory (the "storage array"): a `--mode controller`
process and a `--mode node` process cooperate; and every answered mutation survives
kill -9, including a kill in the middle of a burst of CreateVolume calls."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver, needs_root
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    CtrlCap,
    GiB,
    PluginService,
    expect_error_code,
    make_create_volume_req,
    plugin_services,
    unique_string,
)
from tests.fixtures.driver_process import DriverProcess, unmount_under

NODE_KEY = "topology.csi-mini.example.com/node"


class TestControllerAndNodeProcesses:
    @pytest.fixture
    def split(
        self, shared_state_dir: Path, spawn_driver: SpawnDriver
    ) -> tuple[DriverProcess, DriverProcess]:
        controller = spawn_driver("--mode", "controller", node_id="ctl", state_dir=shared_state_dir)
        node = spawn_driver("--mode", "node", node_id="worker-1", state_dir=shared_state_dir)
        return controller, node

    def test_each_process_serves_only_its_services(
        self, split: tuple[DriverProcess, DriverProcess]
    ) -> None:
        """Plugin capabilities are the plugin's "as a whole": every instance reports the
        same set whichever RPCs it serves (spec, GetPluginCapabilities); csi-sanity
        reads them from the node endpoint to decide whether a controller exists."""
        controller, node = split
        assert PluginService.CONTROLLER_SERVICE in plugin_services(controller.stubs)
        assert plugin_services(node.stubs) == plugin_services(controller.stubs)
        expect_error_code(
            node.stubs.controller.CreateVolume,
            make_create_volume_req("x", GiB),
            grpc.StatusCode.UNIMPLEMENTED,
        )
        expect_error_code(
            controller.stubs.node.NodeGetInfo,
            csi_pb2.NodeGetInfoRequest(),
            grpc.StatusCode.UNIMPLEMENTED,
        )

    def test_controller_publishes_to_a_node_registered_by_its_own_process(
        self, split: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        controller, node = split
        ctl = make_sanity(controller)
        vid = ctl.resources.must_create_volume(
            make_create_volume_req(unique_string("split"), GiB)
        ).volume.volume_id
        expect_error_code(
            ctl.resources.controller_publish,
            ctl.resources.make_controller_publish_req(vid, "never-registered"),
            grpc.StatusCode.NOT_FOUND,
        )
        pub = ctl.resources.controller_publish(
            ctl.resources.make_controller_publish_req(vid, "worker-1")
        )
        # the node process stages and publishes what the controller attached to it
        nctx = make_sanity(node, controller)
        vol = ctl.stubs.controller.ControllerGetVolume(
            csi_pb2.ControllerGetVolumeRequest(volume_id=vid)
        )
        flow = NodeFlow(nctx)
        create_rsp = csi_pb2.CreateVolumeResponse(volume=vol.volume)
        flow.node_stage(create_rsp, pub)
        flow.node_publish(create_rsp, pub)
        Path(nctx.target_path, "hello").write_text("from the node process")
        stats = node.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(volume_id=vid, volume_path=nctx.target_path)
        )
        assert stats.usage
        # node-side cleanup first, then the controller context removes the volume
        node.stubs.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=vid, target_path=nctx.target_path)
        )
        node.stubs.node.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(volume_id=vid, staging_target_path=nctx.staging_path)
        )

    def test_controller_provisions_in_the_topology_a_node_process_registered(
        self, split: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        controller, node = split
        info = node.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        cap = controller.stubs.controller.GetCapacity(
            csi_pb2.GetCapacityRequest(accessible_topology=info.accessible_topology)
        )
        assert cap.available_capacity > 0
        nowhere = csi_pb2.Topology(segments={NODE_KEY: "no-such-node"})
        none = controller.stubs.controller.GetCapacity(
            csi_pb2.GetCapacityRequest(accessible_topology=nowhere)
        )
        assert none.available_capacity == 0, "no registered node offers that topology"
        req = make_create_volume_req(unique_string("in-worker"), GiB)
        req.accessibility_requirements.requisite.append(info.accessible_topology)
        vol = make_sanity(controller).resources.must_create_volume(req)
        assert [dict(t.segments) for t in vol.volume.accessible_topology] == [
            dict(info.accessible_topology.segments)
        ]


class TestKillNineAndRestart:
    @pytest.mark.parametrize("durability", ["process", "host"])
    def test_created_published_staged_state_survives_kill_9(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity, durability: str
    ) -> None:
        proc = spawn_driver("--durability", durability, node_id="n1")
        ctx = make_sanity(proc)
        flow = NodeFlow(ctx)
        name = unique_string("durable")
        req = make_create_volume_req(name, GiB)
        vol = ctx.resources.must_create_volume(req)
        vid = vol.volume.volume_id
        pub = flow.controller_publish(vol, "n1")
        flow.node_stage(vol, pub)
        flow.node_publish(vol, pub)
        Path(ctx.target_path, "data").write_text("survives")
        snap = ctx.resources.must_create_snapshot(
            csi_pb2.CreateSnapshotRequest(name=unique_string("durable-snap"), source_volume_id=vid)
        )

        proc.restart()  # kill -9, then start on the same socket and state dir
        ctx.stubs = ctx.resources.stubs = proc.stubs

        got = proc.stubs.controller.ControllerGetVolume(
            csi_pb2.ControllerGetVolumeRequest(volume_id=vid)
        )
        assert list(got.status.published_node_ids) == ["n1"]
        listed = proc.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest()).entries
        assert [list(e.status.published_node_ids) for e in listed if e.volume.volume_id == vid] == [
            ["n1"]
        ]
        again = ctx.resources.must_create_volume(req)
        assert again.volume.volume_id == vid
        flow = NodeFlow(ctx)
        pub2 = flow.controller_publish(vol, "n1")
        assert pub2 is not None and pub is not None
        assert dict(pub2.publish_context) == dict(pub.publish_context)
        flow.node_stage(vol, pub2)
        flow.node_publish(vol, pub2)
        stats = proc.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(volume_id=vid, volume_path=ctx.target_path)
        )
        assert stats.usage
        assert Path(ctx.target_path, "data").read_text() == "survives"
        got_snap = proc.stubs.controller.GetSnapshot(
            csi_pb2.GetSnapshotRequest(snapshot_id=snap.snapshot.snapshot_id)
        )
        assert got_snap.snapshot.source_volume_id == vid

    @needs_root
    def test_a_publish_lost_with_the_mounts_is_redone_by_a_repeated_node_publish(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        """After kill -9 and a node reboot (mounts gone), kubelet repeats NodeStage and
        NodePublish: the repeat must bring the data back, not just answer OK."""
        proc = spawn_driver(node_id="n1")
        ctx = make_sanity(proc)
        flow = NodeFlow(ctx)
        vol, pub = flow.stage_and_publish(unique_string("reboot"))
        Path(ctx.target_path, "data").write_text("after reboot")
        proc.kill9()
        unmount_under(ctx.base)  # the "reboot"
        assert not Path(ctx.target_path, "data").exists()
        proc.start()
        ctx.stubs = ctx.resources.stubs = proc.stubs
        flow = NodeFlow(ctx)
        flow.node_stage(vol, pub)
        flow.node_publish(vol, pub)
        assert Path(ctx.target_path, "data").read_text() == "after reboot"

    @pytest.mark.parametrize("durability", ["process", "host"])
    def test_kill_9_during_a_create_burst_loses_no_answered_volume(
        self, spawn_driver: SpawnDriver, durability: str
    ) -> None:
        proc = spawn_driver("--durability", durability, node_id="n1")
        answered: dict[str, str] = {}
        attempted: set[str] = set()
        lock = threading.Lock()
        stop = threading.Event()
        enough = threading.Event()
        channel_target = proc.endpoint

        def worker(worker_id: int) -> None:
            with grpc.insecure_channel(channel_target) as channel:
                from csi_protos import csi_pb2_grpc

                stub = csi_pb2_grpc.ControllerStub(channel)
                i = 0
                while not stop.is_set():
                    name = f"burst-{worker_id}-{i}"
                    i += 1
                    with lock:
                        attempted.add(name)
                    try:
                        rsp = stub.CreateVolume(make_create_volume_req(name, GiB), timeout=10)
                    except grpc.RpcError:
                        return  # the driver died under us
                    with lock:
                        answered[name] = rsp.volume.volume_id
                        if len(answered) >= 40:
                            enough.set()

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            assert enough.wait(timeout=120), "the burst never got going"
            proc.kill9()
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
        proc.start()
        with lock:
            survivors = dict(answered)
        ids = set()
        token = ""
        while True:
            rsp = proc.stubs.controller.ListVolumes(
                csi_pb2.ListVolumesRequest(starting_token=token)
            )
            ids |= {e.volume.volume_id for e in rsp.entries}
            token = rsp.next_token
            if not token:
                break
        missing = {n: v for n, v in survivors.items() if v not in ids}
        assert not missing, f"answered CreateVolume calls lost by kill -9: {sorted(missing)[:5]}"
        # Retrying every attempted name (answered or cut off) must reach every stored volume:
        # answered names keep their id, and an interrupted create leaves no orphan behind.
        retried = {
            name: proc.stubs.controller.CreateVolume(
                make_create_volume_req(name, GiB)
            ).volume.volume_id
            for name in sorted(attempted)
        }
        assert all(retried[n] == v for n, v in survivors.items())
        assert ids <= set(retried.values()), "a volume no name leads to survived the kill"

    def test_controller_capabilities_are_unchanged_by_a_restart(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver()
        before = {
            c.rpc.type
            for c in proc.stubs.controller.ControllerGetCapabilities(
                csi_pb2.ControllerGetCapabilitiesRequest()
            ).capabilities
        }
        assert CtrlCap.CREATE_DELETE_VOLUME in before
        proc.restart()
        after = {
            c.rpc.type
            for c in proc.stubs.controller.ControllerGetCapabilities(
                csi_pb2.ControllerGetCapabilitiesRequest()
            ).capabilities
        }
        assert after == before
