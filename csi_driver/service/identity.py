"""Identity service: plugin name and version, capabilities, readiness."""

from __future__ import annotations

import grpc
from google.protobuf.wrappers_pb2 import BoolValue

from csi_driver.service.context import Runtime
from csi_protos import csi_pb2, csi_pb2_grpc

Service = csi_pb2.PluginCapability.Service
Expansion = csi_pb2.PluginCapability.VolumeExpansion


class IdentityServicer(csi_pb2_grpc.IdentityServicer):
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        caps = [
            csi_pb2.PluginCapability(service=Service(type=name))
            for name in sorted(rt.caps.plugin_services)
        ]
        if rt.caps.volume_expansion:
            caps.append(csi_pb2.PluginCapability(
                volume_expansion=Expansion(type=rt.caps.volume_expansion)
            ))
        self._capabilities = csi_pb2.GetPluginCapabilitiesResponse(capabilities=caps)

    async def GetPluginInfo(
        self, request: csi_pb2.GetPluginInfoRequest, context: grpc.aio.ServicerContext
    ) -> csi_pb2.GetPluginInfoResponse:
        return csi_pb2.GetPluginInfoResponse(
            name=self.rt.cfg.driver_name,
            vendor_version=self.rt.cfg.vendor_version,
            manifest={"mode": self.rt.cfg.mode},
        )

    async def GetPluginCapabilities(
        self, request: csi_pb2.GetPluginCapabilitiesRequest, context: grpc.aio.ServicerContext
    ) -> csi_pb2.GetPluginCapabilitiesResponse:
        return self._capabilities

    async def Probe(
        self, request: csi_pb2.ProbeRequest, context: grpc.aio.ServicerContext
    ) -> csi_pb2.ProbeResponse:
        """ready is always set explicitly; an unusable store → FAILED_PRECONDITION."""
        self.rt.store.check_usable()
        return csi_pb2.ProbeResponse(ready=BoolValue(value=True))
