"""CreateVolume beyond csi-sanity: idempotency, ALREADY_EXISTS for each incompatible
argument, OUT_OF_RANGE, RESOURCE_EXHAUSTED (pool full, topology impossible), NOT_FOUND sources,
and capacity accounting through GetCapacity (DESIGN.md, CSI section)."""

from __future__ import annotations

import grpc

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    GiB,
    SanityContext,
    block_capability,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    unique_string,
)
from tests.fixtures.driver_process import DriverProcess

ALREADY_EXISTS = grpc.StatusCode.ALREADY_EXISTS
NODE_KEY = "topology.csi-mini.example.com/node"


def capacity(stubs_owner: DriverProcess | SanityContext, **params: str) -> int:
    rsp = stubs_owner.stubs.controller.GetCapacity(csi_pb2.GetCapacityRequest(parameters=params))
    return rsp.available_capacity


class TestCreateVolumeIdempotency:
    def test_same_name_and_compatible_arguments_return_the_same_volume(
        self, sanity: SanityContext
    ) -> None:
        name = unique_string("idem")
        req = make_create_volume_req(name, 2 * GiB)
        req.parameters["tier"] = "gold"
        first = sanity.resources.must_create_volume(req)
        second = sanity.resources.must_create_volume(req)
        assert second.volume == first.volume

    def test_same_name_with_a_different_capability_fails_already_exists(
        self, sanity: SanityContext
    ) -> None:
        name = unique_string("caps")
        sanity.resources.must_create_volume(make_create_volume_req(name, GiB))
        req = make_create_volume_req(name, GiB)
        del req.volume_capabilities[:]
        req.volume_capabilities.append(block_capability())
        expect_error_code(sanity.resources.create_volume, req, ALREADY_EXISTS)

    def test_same_name_with_different_parameters_fails_already_exists(
        self, sanity: SanityContext
    ) -> None:
        name = unique_string("params")
        req = make_create_volume_req(name, GiB)
        req.parameters["tier"] = "gold"
        sanity.resources.must_create_volume(req)
        req.parameters["tier"] = "silver"
        expect_error_code(sanity.resources.create_volume, req, ALREADY_EXISTS)

    def test_same_name_with_different_mutable_parameters_is_not_ok(
        self, sanity: SanityContext
    ) -> None:
        """Spec: OK only when the existing volume "is compatible with the specified
        capacity_range, volume_capabilities, parameters and mutable_parameters"."""
        name = unique_string("mutable")
        req = make_create_volume_req(name, GiB)
        req.mutable_parameters["iops"] = "3000"
        sanity.resources.must_create_volume(req)
        req.mutable_parameters["iops"] = "4000"
        expect_error_code(sanity.resources.create_volume, req, ALREADY_EXISTS)

    def test_same_name_with_a_content_source_fails_already_exists(
        self, sanity: SanityContext
    ) -> None:
        res = sanity.resources
        origin = res.must_create_volume(make_create_volume_req(unique_string("origin"), GiB))
        snap = res.must_create_snapshot(
            make_create_snapshot_req(unique_string("snap"), origin.volume.volume_id)
        )
        name = unique_string("plain")
        res.must_create_volume(make_create_volume_req(name, GiB))
        req = make_create_volume_req(name, GiB)
        req.volume_content_source.snapshot.snapshot_id = snap.snapshot.snapshot_id
        expect_error_code(res.create_volume, req, ALREADY_EXISTS)

    def test_same_name_with_different_topology_fails_already_exists(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        node_a, _ = two_nodes
        res = make_sanity(node_a).resources
        name = unique_string("topo")
        req = make_create_volume_req(name, GiB)
        req.accessibility_requirements.requisite.add().segments[NODE_KEY] = "node-a"
        res.must_create_volume(req)
        req = make_create_volume_req(name, GiB)
        req.accessibility_requirements.requisite.add().segments[NODE_KEY] = "node-b"
        expect_error_code(res.create_volume, req, ALREADY_EXISTS)


class TestCreateVolumeSources:
    def test_a_block_volume_from_a_filesystem_snapshot_is_invalid_argument(
        self, sanity: SanityContext
    ) -> None:
        """Spec: "Source incompatible or not supported → 3 INVALID_ARGUMENT"."""
        res = sanity.resources
        fs = res.must_create_volume(make_create_volume_req(unique_string("fs"), GiB))
        snap = res.must_create_snapshot(
            make_create_snapshot_req(unique_string("fs-snap"), fs.volume.volume_id)
        )
        for source in ("snapshot", "volume"):
            req = make_create_volume_req(unique_string(f"blk-from-{source}"), GiB)
            del req.volume_capabilities[:]
            req.volume_capabilities.append(block_capability())
            if source == "snapshot":
                req.volume_content_source.snapshot.snapshot_id = snap.snapshot.snapshot_id
            else:
                req.volume_content_source.volume.volume_id = fs.volume.volume_id
            expect_error_code(res.create_volume, req, grpc.StatusCode.INVALID_ARGUMENT)

    def test_a_restore_without_capacity_is_at_least_the_snapshot_size(
        self, sanity: SanityContext
    ) -> None:
        res = sanity.resources
        fs = res.must_create_volume(make_create_volume_req(unique_string("src"), 3 * GiB))
        snap = res.must_create_snapshot(
            make_create_snapshot_req(unique_string("src-snap"), fs.volume.volume_id)
        )
        assert snap.snapshot.size_bytes in (0, 3 * GiB)
        req = make_create_volume_req(unique_string("restored"), GiB)
        req.ClearField("capacity_range")
        req.volume_content_source.snapshot.snapshot_id = snap.snapshot.snapshot_id
        vol = res.must_create_volume(req)
        assert vol.volume.capacity_bytes >= 3 * GiB


class TestCreateVolumeLimits:
    def test_capacity_beyond_the_maximum_volume_size_fails_out_of_range(
        self, sanity: SanityContext
    ) -> None:
        req = make_create_volume_req(unique_string("huge"), 2 * 1024 * GiB)  # default max 1Ti
        expect_error_code(sanity.resources.create_volume, req, grpc.StatusCode.OUT_OF_RANGE)

    def test_restoring_into_a_volume_smaller_than_the_snapshot_fails_out_of_range(
        self, sanity: SanityContext
    ) -> None:
        res = sanity.resources
        origin = res.must_create_volume(make_create_volume_req(unique_string("big"), 4 * GiB))
        snap = res.must_create_snapshot(
            make_create_snapshot_req(unique_string("big-snap"), origin.volume.volume_id)
        )
        req = make_create_volume_req(unique_string("small"), GiB)
        req.capacity_range.limit_bytes = GiB
        req.volume_content_source.snapshot.snapshot_id = snap.snapshot.snapshot_id
        expect_error_code(res.create_volume, req, grpc.StatusCode.OUT_OF_RANGE)

    def test_full_pool_fails_resource_exhausted_and_get_capacity_falls(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        proc = spawn_driver("--capacity", "default=30Gi")
        res = make_sanity(proc).resources
        assert capacity(proc) == 30 * GiB
        first = res.must_create_volume(make_create_volume_req(unique_string("a"), 10 * GiB))
        assert capacity(proc) == 20 * GiB
        res.must_create_volume(make_create_volume_req(unique_string("b"), 10 * GiB))
        assert capacity(proc) == 10 * GiB
        expect_error_code(
            res.create_volume,
            make_create_volume_req(unique_string("c"), 20 * GiB),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        )
        assert capacity(proc) == 10 * GiB, "a refused CreateVolume must not reserve space"
        res.delete_volume(first.volume.volume_id)
        assert capacity(proc) == 20 * GiB

    def test_pool_parameter_selects_the_pool_it_draws_from(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        proc = spawn_driver("--capacity", "default=30Gi", "--capacity", "fast=5Gi")
        res = make_sanity(proc).resources
        assert capacity(proc, pool="fast") == 5 * GiB
        req = make_create_volume_req(unique_string("fast"), 2 * GiB)
        req.parameters["pool"] = "fast"
        res.must_create_volume(req)
        assert capacity(proc, pool="fast") == 3 * GiB
        assert capacity(proc) == 30 * GiB

    def test_topology_no_node_offers_fails_resource_exhausted(self, sanity: SanityContext) -> None:
        req = make_create_volume_req(unique_string("nowhere"), GiB)
        req.accessibility_requirements.requisite.add().segments[NODE_KEY] = "no-such-node"
        expect_error_code(sanity.resources.create_volume, req, grpc.StatusCode.RESOURCE_EXHAUSTED)


class TestTopology:
    def test_volume_is_accessible_from_the_creating_node_topology(
        self, sanity: SanityContext
    ) -> None:
        info = sanity.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        assert dict(info.accessible_topology.segments) == {NODE_KEY: info.node_id}
        req = make_create_volume_req(unique_string("topo"), GiB)
        req.accessibility_requirements.requisite.append(info.accessible_topology)
        vol = sanity.resources.must_create_volume(req)
        assert [dict(t.segments) for t in vol.volume.accessible_topology] == [
            {NODE_KEY: "sanity-node"}
        ]

    def test_requisite_places_the_volume_on_the_named_node(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        res = make_sanity(two_nodes[0]).resources
        req = make_create_volume_req(unique_string("on-b"), GiB)
        req.accessibility_requirements.requisite.add().segments[NODE_KEY] = "node-b"
        vol = res.must_create_volume(req)
        assert [dict(t.segments) for t in vol.volume.accessible_topology] == [{NODE_KEY: "node-b"}]

    def test_preferred_topologies_are_tried_in_order_among_the_requisite_ones(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        """Spec: "An SP MUST attempt to make the provisioned volume available using the
        preferred topologies in order from first to last"."""
        res = make_sanity(two_nodes[0]).resources
        for order in (("node-b", "node-a"), ("node-a", "node-b")):
            req = make_create_volume_req(unique_string(f"pref-{order[0]}"), GiB)
            for node in ("node-a", "node-b"):
                req.accessibility_requirements.requisite.add().segments[NODE_KEY] = node
            for node in order:
                req.accessibility_requirements.preferred.add().segments[NODE_KEY] = node
            vol = res.must_create_volume(req)
            topo = [dict(t.segments) for t in vol.volume.accessible_topology]
            assert topo == [{NODE_KEY: order[0]}]

    def test_preferred_alone_places_the_volume(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        res = make_sanity(two_nodes[0]).resources
        req = make_create_volume_req(unique_string("pref-only"), GiB)
        req.accessibility_requirements.preferred.add().segments[NODE_KEY] = "node-b"
        vol = res.must_create_volume(req)
        assert [dict(t.segments) for t in vol.volume.accessible_topology] == [{NODE_KEY: "node-b"}]

    def test_extra_topology_segments_are_reported_by_the_node(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver("--topology-segment", "topology.kubernetes.io/zone=z1", node_id="n1")
        info = proc.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        assert dict(info.accessible_topology.segments) == {
            NODE_KEY: "n1",
            "topology.kubernetes.io/zone": "z1",
        }

    def test_no_topology_flag_drops_the_accessibility_capability(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver("--no-topology")
        caps = proc.stubs.identity.GetPluginCapabilities(csi_pb2.GetPluginCapabilitiesRequest())
        services = {c.service.type for c in caps.capabilities if c.HasField("service")}
        assert csi_pb2.PluginCapability.Service.VOLUME_ACCESSIBILITY_CONSTRAINTS not in services
        info = proc.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        assert not info.HasField("accessible_topology")
