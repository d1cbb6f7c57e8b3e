"""The simulator's CSI boundary: a small typed async client for one CSI driver socket.

`CsiClient` names every Identity, Controller, GroupController and Node call the simulator
makes; each takes the CSI request message and returns the response message, or raises
`CsiError` carrying the gRPC status code. Every call is recorded to the `Trace` (node,
component, ``csi.<Service>/<Method>``, a request summary with the ``csi_secret`` fields
left out, ``OK`` or ``<CODE>: <message>``, duration).

Two backends share that surface: `GrpcCsiClient` talks grpc.aio over a unix socket (the real
driver, or any CSI driver), `kubelet_sim.testing.fake_csi.FakeCsiClient` answers in memory for fast
tests. Callers that act as a different component (external-provisioner, ...) take a view
with `with_component`; views share the connection.
"""

from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from typing import Any, TypeVar

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from csi_protos import csi_pb2, csi_pb2_grpc
from kubelet_sim.utils.trace import Trace

# The kubelet's CSI timeout for node operations (pkg/volume/csi: csiTimeout = 2 minutes).
NODE_CALL_TIMEOUT_SECONDS = 120.0

# Codes after which the operation may still be in progress on the driver side
# (the kubelet's isFinalError): the volume is then "uncertain", not "failed".
NON_FINAL_CODES = frozenset({
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
})

R = TypeVar("R", bound=Message)


class CsiError(Exception):
    """A CSI call that did not return OK: the status code and message the driver sent."""

    def __init__(self, call: str, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{call}: {code.name}: {message}")
        self.call = call
        self.code = code
        self.message = message

    @property
    def final(self) -> bool:
        """False when the driver may still be working on it (timeouts, ABORTED, ...)."""
        return self.code not in NON_FINAL_CODES


class DriverNotRegistered(LookupError):
    """No CSI driver of that name is registered on the node (yet): a transient failure."""


def _is_secret(field: Any) -> bool:
    return bool(field.GetOptions().Extensions[csi_pb2.csi_secret])


def request_summary(message: Message) -> dict[str, Any]:
    """The request as a dict (proto field names), with every csi_secret field left out."""
    summary: dict[str, Any] = MessageToDict(message, preserving_proto_field_name=True)
    _drop_secrets(message, summary)
    return summary


def _drop_secrets(message: Message, summary: dict[str, Any]) -> None:
    for field in message.DESCRIPTOR.fields:
        if field.name not in summary:
            continue
        if _is_secret(field):
            del summary[field.name]
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            value = getattr(message, field.name)
            if field.is_repeated:
                for item, item_summary in zip(value, summary[field.name], strict=False):
                    _drop_secrets(item, item_summary)
            else:
                _drop_secrets(value, summary[field.name])


class CsiClient(ABC):
    """Every CSI call the simulator makes, traced; backends implement `_invoke`."""

    def __init__(
        self,
        *,
        trace: Trace,
        node: str,
        component: str = "kubelet",
        timeout: float = NODE_CALL_TIMEOUT_SECONDS,
    ) -> None:
        self.trace = trace
        self.node = node
        self.component = component
        self.timeout = timeout

    def with_component(self, component: str, *, timeout: float | None = None) -> CsiClient:
        """A view of the same connection that records its calls as another component."""
        view = copy.copy(self)
        view.component = component
        if timeout is not None:
            view.timeout = timeout
        return view

    @abstractmethod
    async def _invoke(self, service: str, method: str, request: Message, timeout: float) -> Message:
        """Send one request; raise `CsiError` for any non-OK status."""

    async def close(self) -> None:  # noqa: B027 - a no-op unless the backend holds a connection
        """Release the connection (shared by every view)."""

    async def _call(
        self, service: str, method: str, request: Message, response_type: type[R],
        timeout: float | None,
    ) -> R:
        call = f"csi.{service}/{method}"
        started = time.monotonic()
        try:
            response = await self._invoke(service, method, request, timeout or self.timeout)
        except CsiError as err:
            self._record(call, request, f"{err.code.name}: {err.message}", started)
            raise
        self._record(call, request, "OK", started)
        if not isinstance(response, response_type):
            raise TypeError(f"{call} answered {type(response).__name__}")
        return response

    def _record(self, call: str, request: Message, result: str, started: float) -> None:
        self.trace.record(
            node=self.node, component=self.component, call=call,
            request=request_summary(request), result=result,
            duration_ms=(time.monotonic() - started) * 1000.0,
        )

    # -- Identity ----------------------------------------------------------------

    async def get_plugin_info(self, timeout: float | None = None) -> csi_pb2.GetPluginInfoResponse:
        return await self._call("Identity", "GetPluginInfo", csi_pb2.GetPluginInfoRequest(),
                                csi_pb2.GetPluginInfoResponse, timeout)

    async def get_plugin_capabilities(
        self, timeout: float | None = None,
    ) -> csi_pb2.GetPluginCapabilitiesResponse:
        return await self._call("Identity", "GetPluginCapabilities",
                                csi_pb2.GetPluginCapabilitiesRequest(),
                                csi_pb2.GetPluginCapabilitiesResponse, timeout)

    async def probe(self, timeout: float | None = None) -> csi_pb2.ProbeResponse:
        return await self._call("Identity", "Probe", csi_pb2.ProbeRequest(),
                                csi_pb2.ProbeResponse, timeout)

    # -- Controller ---------------------------------------------------------------

    async def create_volume(
        self, request: csi_pb2.CreateVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.CreateVolumeResponse:
        return await self._call("Controller", "CreateVolume", request,
                                csi_pb2.CreateVolumeResponse, timeout)

    async def delete_volume(
        self, request: csi_pb2.DeleteVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.DeleteVolumeResponse:
        return await self._call("Controller", "DeleteVolume", request,
                                csi_pb2.DeleteVolumeResponse, timeout)

    async def controller_publish_volume(
        self, request: csi_pb2.ControllerPublishVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.ControllerPublishVolumeResponse:
        return await self._call("Controller", "ControllerPublishVolume", request,
                                csi_pb2.ControllerPublishVolumeResponse, timeout)

    async def controller_unpublish_volume(
        self, request: csi_pb2.ControllerUnpublishVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.ControllerUnpublishVolumeResponse:
        return await self._call("Controller", "ControllerUnpublishVolume", request,
                                csi_pb2.ControllerUnpublishVolumeResponse, timeout)

    async def validate_volume_capabilities(
        self, request: csi_pb2.ValidateVolumeCapabilitiesRequest, timeout: float | None = None,
    ) -> csi_pb2.ValidateVolumeCapabilitiesResponse:
        return await self._call("Controller", "ValidateVolumeCapabilities", request,
                                csi_pb2.ValidateVolumeCapabilitiesResponse, timeout)

    async def list_volumes(
        self, request: csi_pb2.ListVolumesRequest, timeout: float | None = None,
    ) -> csi_pb2.ListVolumesResponse:
        return await self._call("Controller", "ListVolumes", request,
                                csi_pb2.ListVolumesResponse, timeout)

    async def get_capacity(
        self, request: csi_pb2.GetCapacityRequest, timeout: float | None = None,
    ) -> csi_pb2.GetCapacityResponse:
        return await self._call("Controller", "GetCapacity", request,
                                csi_pb2.GetCapacityResponse, timeout)

    async def controller_get_capabilities(
        self, timeout: float | None = None,
    ) -> csi_pb2.ControllerGetCapabilitiesResponse:
        return await self._call("Controller", "ControllerGetCapabilities",
                                csi_pb2.ControllerGetCapabilitiesRequest(),
                                csi_pb2.ControllerGetCapabilitiesResponse, timeout)

    async def create_snapshot(
        self, request: csi_pb2.CreateSnapshotRequest, timeout: float | None = None,
    ) -> csi_pb2.CreateSnapshotResponse:
        return await self._call("Controller", "CreateSnapshot", request,
                                csi_pb2.CreateSnapshotResponse, timeout)

    async def delete_snapshot(
        self, request: csi_pb2.DeleteSnapshotRequest, timeout: float | None = None,
    ) -> csi_pb2.DeleteSnapshotResponse:
        return await self._call("Controller", "DeleteSnapshot", request,
                                csi_pb2.DeleteSnapshotResponse, timeout)

    async def list_snapshots(
        self, request: csi_pb2.ListSnapshotsRequest, timeout: float | None = None,
    ) -> csi_pb2.ListSnapshotsResponse:
        return await self._call("Controller", "ListSnapshots", request,
                                csi_pb2.ListSnapshotsResponse, timeout)

    async def get_snapshot(
        self, request: csi_pb2.GetSnapshotRequest, timeout: float | None = None,
    ) -> csi_pb2.GetSnapshotResponse:
        return await self._call("Controller", "GetSnapshot", request,
                                csi_pb2.GetSnapshotResponse, timeout)

    async def controller_expand_volume(
        self, request: csi_pb2.ControllerExpandVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.ControllerExpandVolumeResponse:
        return await self._call("Controller", "ControllerExpandVolume", request,
                                csi_pb2.ControllerExpandVolumeResponse, timeout)

    async def controller_get_volume(
        self, request: csi_pb2.ControllerGetVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.ControllerGetVolumeResponse:
        return await self._call("Controller", "ControllerGetVolume", request,
                                csi_pb2.ControllerGetVolumeResponse, timeout)

    async def controller_modify_volume(
        self, request: csi_pb2.ControllerModifyVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.ControllerModifyVolumeResponse:
        return await self._call("Controller", "ControllerModifyVolume", request,
                                csi_pb2.ControllerModifyVolumeResponse, timeout)

    # -- GroupController -----------------------------------------------------------

    async def group_controller_get_capabilities(
        self, timeout: float | None = None,
    ) -> csi_pb2.GroupControllerGetCapabilitiesResponse:
        return await self._call("GroupController", "GroupControllerGetCapabilities",
                                csi_pb2.GroupControllerGetCapabilitiesRequest(),
                                csi_pb2.GroupControllerGetCapabilitiesResponse, timeout)

    async def create_volume_group_snapshot(
        self, request: csi_pb2.CreateVolumeGroupSnapshotRequest, timeout: float | None = None,
    ) -> csi_pb2.CreateVolumeGroupSnapshotResponse:
        return await self._call("GroupController", "CreateVolumeGroupSnapshot", request,
                                csi_pb2.CreateVolumeGroupSnapshotResponse, timeout)

    async def delete_volume_group_snapshot(
        self, request: csi_pb2.DeleteVolumeGroupSnapshotRequest, timeout: float | None = None,
    ) -> csi_pb2.DeleteVolumeGroupSnapshotResponse:
        return await self._call("GroupController", "DeleteVolumeGroupSnapshot", request,
                                csi_pb2.DeleteVolumeGroupSnapshotResponse, timeout)

    async def get_volume_group_snapshot(
        self, request: csi_pb2.GetVolumeGroupSnapshotRequest, timeout: float | None = None,
    ) -> csi_pb2.GetVolumeGroupSnapshotResponse:
        return await self._call("GroupController", "GetVolumeGroupSnapshot", request,
                                csi_pb2.GetVolumeGroupSnapshotResponse, timeout)

    # -- Node -----------------------------------------------------------------------

    async def node_stage_volume(
        self, request: csi_pb2.NodeStageVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.NodeStageVolumeResponse:
        return await self._call("Node", "NodeStageVolume", request,
                                csi_pb2.NodeStageVolumeResponse, timeout)

    async def node_unstage_volume(
        self, request: csi_pb2.NodeUnstageVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.NodeUnstageVolumeResponse:
        return await self._call("Node", "NodeUnstageVolume", request,
                                csi_pb2.NodeUnstageVolumeResponse, timeout)

    async def node_publish_volume(
        self, request: csi_pb2.NodePublishVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.NodePublishVolumeResponse:
        return await self._call("Node", "NodePublishVolume", request,
                                csi_pb2.NodePublishVolumeResponse, timeout)

    async def node_unpublish_volume(
        self, request: csi_pb2.NodeUnpublishVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.NodeUnpublishVolumeResponse:
        return await self._call("Node", "NodeUnpublishVolume", request,
                                csi_pb2.NodeUnpublishVolumeResponse, timeout)

    async def node_get_volume_stats(
        self, request: csi_pb2.NodeGetVolumeStatsRequest, timeout: float | None = None,
    ) -> csi_pb2.NodeGetVolumeStatsResponse:
        return await self._call("Node", "NodeGetVolumeStats", request,
                                csi_pb2.NodeGetVolumeStatsResponse, timeout)

    async def node_expand_volume(
        self, request: csi_pb2.NodeExpandVolumeRequest, timeout: float | None = None,
    ) -> csi_pb2.NodeExpandVolumeResponse:
        return await self._call("Node", "NodeExpandVolume", request,
                                csi_pb2.NodeExpandVolumeResponse, timeout)

    async def node_get_capabilities(
        self, timeout: float | None = None,
    ) -> csi_pb2.NodeGetCapabilitiesResponse:
        return await self._call("Node", "NodeGetCapabilities",
                                csi_pb2.NodeGetCapabilitiesRequest(),
                                csi_pb2.NodeGetCapabilitiesResponse, timeout)

    async def node_get_info(self, timeout: float | None = None) -> csi_pb2.NodeGetInfoResponse:
        return await self._call("Node", "NodeGetInfo", csi_pb2.NodeGetInfoRequest(),
                                csi_pb2.NodeGetInfoResponse, timeout)


def socket_target(endpoint: str) -> str:
    """A grpc target for a CSI endpoint given as ``unix:///abs/path`` or a bare path."""
    if endpoint.startswith("unix://"):
        return endpoint
    if endpoint.startswith("/"):
        return f"unix://{endpoint}"
    raise ValueError(f"CSI endpoint must be unix:///abs/path or an absolute path: {endpoint!r}")


class GrpcCsiClient(CsiClient):
    """A CSI client over grpc.aio to one driver socket."""

    _STUBS = {
        "Identity": csi_pb2_grpc.IdentityStub,
        "Controller": csi_pb2_grpc.ControllerStub,
        "GroupController": csi_pb2_grpc.GroupControllerStub,
        "Node": csi_pb2_grpc.NodeStub,
    }

    def __init__(self, endpoint: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.endpoint = endpoint
        self._channel = grpc.aio.insecure_channel(socket_target(endpoint))
        self._stubs = {name: make(self._channel) for name, make in self._STUBS.items()}

    async def _invoke(self, service: str, method: str, request: Message, timeout: float) -> Message:
        rpc = getattr(self._stubs[service], method)
        try:
            response: Message = await rpc(request, timeout=timeout)
        except grpc.aio.AioRpcError as err:
            raise CsiError(f"csi.{service}/{method}", err.code(), err.details() or "") from err
        return response

    async def close(self) -> None:
        await self._channel.close(None)
