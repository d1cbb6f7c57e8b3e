"""csi-sanity's node-side helpers: create → controller publish → stage → publish, each
step skipped when the driver does not advertise it, plus its runControllerTest."""

from __future__ import annotations

from csi_protos import csi_pb2
from tests.csi_driver.grpc.sanity_support import (
    CtrlCap,
    NodeCap,
    PluginService,
    SanityContext,
    controller_capabilities,
    make_create_volume_req,
    mount_capability,
    node_capabilities,
    plugin_services,
)


class NodeFlow:
    """Capabilities read once per test, like csi-sanity's Node Service BeforeEach."""

    def __init__(self, ctx: SanityContext) -> None:
        self.ctx = ctx
        self.res = ctx.resources
        services = plugin_services(ctx.stubs)
        self.provides_controller = PluginService.CONTROLLER_SERVICE in services
        ctrl = controller_capabilities(ctx.stubs) if self.provides_controller else set()
        node = node_capabilities(ctx.stubs)
        self.controller_publish_supported = CtrlCap.PUBLISH_UNPUBLISH_VOLUME in ctrl
        self.controller_expansion_supported = CtrlCap.EXPAND_VOLUME in ctrl
        self.stage_supported = NodeCap.STAGE_UNSTAGE_VOLUME in node
        self.stats_supported = NodeCap.GET_VOLUME_STATS in node
        self.node_expansion_supported = NodeCap.EXPAND_VOLUME in node
        self.single_node_multi_writer_supported = NodeCap.SINGLE_NODE_MULTI_WRITER in node

    def node_info(self) -> csi_pb2.NodeGetInfoResponse:
        info = self.ctx.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        assert info.node_id
        return info

    def create_volume(
        self, name: str, cap: csi_pb2.VolumeCapability | None = None
    ) -> csi_pb2.CreateVolumeResponse:
        req = make_create_volume_req(name)
        del req.volume_capabilities[:]
        req.volume_capabilities.append(cap or mount_capability())
        return self.res.must_create_volume(req)

    def controller_publish(
        self,
        vol: csi_pb2.CreateVolumeResponse,
        node_id: str,
        cap: csi_pb2.VolumeCapability | None = None,
    ) -> csi_pb2.ControllerPublishVolumeResponse | None:
        if not self.controller_publish_supported:
            return None
        return self.res.controller_publish(
            csi_pb2.ControllerPublishVolumeRequest(
                volume_id=vol.volume.volume_id,
                node_id=node_id,
                volume_capability=cap or mount_capability(),
                volume_context=vol.volume.volume_context,
                readonly=False,
            )
        )

    def node_stage(
        self,
        vol: csi_pb2.CreateVolumeResponse,
        pub: csi_pb2.ControllerPublishVolumeResponse | None,
        cap: csi_pb2.VolumeCapability | None = None,
    ) -> None:
        if not self.stage_supported:
            return
        self.res.node_stage(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=vol.volume.volume_id,
                volume_capability=cap or mount_capability(),
                staging_target_path=self.ctx.staging_path,
                volume_context=vol.volume.volume_context,
                publish_context=pub.publish_context if pub else {},
            )
        )

    def publish_request(
        self,
        vol: csi_pb2.CreateVolumeResponse,
        pub: csi_pb2.ControllerPublishVolumeResponse | None,
        cap: csi_pb2.VolumeCapability | None = None,
        target: str | None = None,
        readonly: bool = False,
    ) -> csi_pb2.NodePublishVolumeRequest:
        return csi_pb2.NodePublishVolumeRequest(
            volume_id=vol.volume.volume_id,
            target_path=target or self.ctx.target_path,
            staging_target_path=self.ctx.staging_path if self.stage_supported else "",
            volume_capability=cap or mount_capability(),
            volume_context=vol.volume.volume_context,
            publish_context=pub.publish_context if pub else {},
            readonly=readonly,
        )

    def node_publish(
        self,
        vol: csi_pb2.CreateVolumeResponse,
        pub: csi_pb2.ControllerPublishVolumeResponse | None,
        cap: csi_pb2.VolumeCapability | None = None,
    ) -> csi_pb2.NodePublishVolumeResponse:
        return self.res.node_publish(self.publish_request(vol, pub, cap))

    def stage_and_publish(
        self, name: str, cap: csi_pb2.VolumeCapability | None = None
    ) -> tuple[csi_pb2.CreateVolumeResponse, csi_pb2.ControllerPublishVolumeResponse | None]:
        vol = self.create_volume(name, cap)
        pub = self.controller_publish(vol, self.node_info().node_id, cap)
        self.node_stage(vol, pub, cap)
        self.node_publish(vol, pub, cap)
        return vol, pub


def run_controller_test(flow: NodeFlow, name: str, count: int) -> None:
    """csi-sanity's runControllerTest: the full node path, stage and publish `count` times."""
    info = flow.node_info()
    req = make_create_volume_req(name)
    if info.HasField("accessible_topology"):
        req.accessibility_requirements.requisite.append(info.accessible_topology)
    vol = flow.res.must_create_volume(req)
    pub = flow.controller_publish(vol, info.node_id)
    for _ in range(count):
        flow.node_stage(vol, pub)
    for _ in range(count):
        flow.node_publish(vol, pub)
    if flow.stats_supported:
        stats = flow.ctx.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=vol.volume.volume_id, volume_path=flow.ctx.target_path
            )
        )
        assert stats.usage, "usage must be reported"
