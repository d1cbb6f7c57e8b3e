"""An in-memory CSI driver behind the `CsiClient` surface, for fast simulator tests.

`FakeCsiDriver` keeps volumes, attachments, stages and publishes in dicts and answers with
the codes the spec gives (NOT_FOUND for unknown volumes, FAILED_PRECONDITION for a publish
of an unstaged volume, ...). Like a real node plugin it creates `target_path` on publish and
removes it on unpublish, and refuses a publish whose parent directory the CO did not make.
Tests choose the node capabilities and queue errors with `fail_next`; `calls` lists every
method name in order. `FakeCsiClient` is the client over it (traced like the real one).
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import Message

from csi_protos import csi_pb2
from kubelet_sim.csi.client import CsiClient, CsiError

NodeRpc = csi_pb2.NodeServiceCapability.RPC
DEFAULT_NODE_CAPS = (NodeRpc.STAGE_UNSTAGE_VOLUME, NodeRpc.EXPAND_VOLUME, NodeRpc.GET_VOLUME_STATS)


@dataclass
class FakeVolume:
    volume_id: str
    capacity_bytes: int
    context: dict[str, str] = field(default_factory=dict)
    mutable_parameters: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeCsiDriver:
    name: str = "fake.csi.example.com"
    node_id: str = "fake-node"
    max_volumes_per_node: int = 0
    topology: dict[str, str] = field(default_factory=dict)
    node_capabilities: tuple[csi_pb2.NodeServiceCapability.RPC.Type, ...] = DEFAULT_NODE_CAPS
    volumes: dict[str, FakeVolume] = field(default_factory=dict)
    attachments: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    staged: dict[str, str] = field(default_factory=dict)  # volume id -> staging path
    published: dict[str, str] = field(default_factory=dict)  # target path -> volume id
    calls: list[str] = field(default_factory=list)
    requests: list[tuple[str, Message]] = field(default_factory=list)
    _failures: dict[str, list[tuple[grpc.StatusCode, str]]] = field(
        default_factory=lambda: defaultdict(list))

    def fail_next(self, method: str, code: grpc.StatusCode, message: str = "injected",
                  times: int = 1) -> None:
        """Make the next `times` calls of `method` fail with `code`."""
        self._failures[method].extend([(code, message)] * times)

    def requests_of(self, method: str) -> list[Any]:
        return [req for name, req in self.requests if name == method]

    def handle(self, method: str, request: Message) -> Message:
        self.calls.append(method)
        self.requests.append((method, request))
        if self._failures.get(method):
            code, message = self._failures[method].pop(0)
            raise csi_error(method, code, message)
        handler: Callable[[Any], Message] | None = getattr(self, f"_{method}", None)
        if handler is None:
            raise csi_error(method, grpc.StatusCode.UNIMPLEMENTED, f"{method} not implemented")
        return handler(request)

    # -- Identity --------------------------------------------------------------------

    def _GetPluginInfo(self, _: Any) -> Message:
        return csi_pb2.GetPluginInfoResponse(name=self.name, vendor_version="0.0.1")

    def _Probe(self, _: Any) -> Message:
        response = csi_pb2.ProbeResponse()
        response.ready.value = True
        return response

    # -- Controller ------------------------------------------------------------------

    def _CreateVolume(self, req: csi_pb2.CreateVolumeRequest) -> Message:
        require_fields("CreateVolume", name=req.name)
        volume = self.volumes.get(req.name) or FakeVolume(
            req.name, req.capacity_range.required_bytes, dict(req.parameters))
        self.volumes[req.name] = volume
        return csi_pb2.CreateVolumeResponse(volume=csi_pb2.Volume(
            volume_id=volume.volume_id, capacity_bytes=volume.capacity_bytes,
            volume_context=volume.context))

    def _DeleteVolume(self, req: csi_pb2.DeleteVolumeRequest) -> Message:
        require_fields("DeleteVolume", volume_id=req.volume_id)
        self.volumes.pop(req.volume_id, None)
        return csi_pb2.DeleteVolumeResponse()

    def _ControllerPublishVolume(self, req: csi_pb2.ControllerPublishVolumeRequest) -> Message:
        require_fields("ControllerPublishVolume", volume_id=req.volume_id, node_id=req.node_id)
        self._known("ControllerPublishVolume", req.volume_id)
        context = {"devicePath": f"/dev/fake/{req.volume_id}"}
        self.attachments[(req.volume_id, req.node_id)] = context
        return csi_pb2.ControllerPublishVolumeResponse(publish_context=context)

    def _ControllerUnpublishVolume(self, req: csi_pb2.ControllerUnpublishVolumeRequest) -> Message:
        self.attachments.pop((req.volume_id, req.node_id), None)
        return csi_pb2.ControllerUnpublishVolumeResponse()

    # -- Node ------------------------------------------------------------------------

    def _NodeGetCapabilities(self, _: Any) -> Message:
        return csi_pb2.NodeGetCapabilitiesResponse(capabilities=[
            csi_pb2.NodeServiceCapability(rpc=csi_pb2.NodeServiceCapability.RPC(type=t))
            for t in self.node_capabilities
        ])

    def _NodeGetInfo(self, _: Any) -> Message:
        response = csi_pb2.NodeGetInfoResponse(
            node_id=self.node_id, max_volumes_per_node=self.max_volumes_per_node)
        if self.topology:
            response.accessible_topology.segments.update(self.topology)
        return response

    def _NodeStageVolume(self, req: csi_pb2.NodeStageVolumeRequest) -> Message:
        method = "NodeStageVolume"
        require_fields(method, volume_id=req.volume_id, staging_target_path=req.staging_target_path)
        self._capable(method, NodeRpc.STAGE_UNSTAGE_VOLUME)
        self._known(method, req.volume_id)
        if not os.path.isdir(req.staging_target_path):
            raise csi_error(method, grpc.StatusCode.INTERNAL, "staging_target_path does not exist")
        previous = self.staged.get(req.volume_id)
        if previous is not None and previous != req.staging_target_path:
            raise csi_error(method, grpc.StatusCode.ALREADY_EXISTS, "staged at another path")
        self.staged[req.volume_id] = req.staging_target_path
        return csi_pb2.NodeStageVolumeResponse()

    def _NodeUnstageVolume(self, req: csi_pb2.NodeUnstageVolumeRequest) -> Message:
        method = "NodeUnstageVolume"
        require_fields(method, volume_id=req.volume_id, staging_target_path=req.staging_target_path)
        self._capable(method, NodeRpc.STAGE_UNSTAGE_VOLUME)
        self.staged.pop(req.volume_id, None)
        return csi_pb2.NodeUnstageVolumeResponse()

    def _NodePublishVolume(self, req: csi_pb2.NodePublishVolumeRequest) -> Message:
        method = "NodePublishVolume"
        require_fields(method, volume_id=req.volume_id, target_path=req.target_path)
        ephemeral = req.volume_context.get("csi.storage.k8s.io/ephemeral") == "true"
        if not ephemeral:
            self._known(method, req.volume_id)
        if NodeRpc.STAGE_UNSTAGE_VOLUME in self.node_capabilities and not ephemeral:
            if not req.staging_target_path:
                raise csi_error(method, grpc.StatusCode.FAILED_PRECONDITION,
                           "staging_target_path missing")
            if self.staged.get(req.volume_id) != req.staging_target_path:
                raise csi_error(method, grpc.StatusCode.FAILED_PRECONDITION, "volume is not staged")
        target = Path(req.target_path)
        if not target.parent.is_dir():
            raise csi_error(method, grpc.StatusCode.INTERNAL,
                            "parent of target_path does not exist")
        target.mkdir(exist_ok=True)
        self.published[req.target_path] = req.volume_id
        return csi_pb2.NodePublishVolumeResponse()

    def _NodeUnpublishVolume(self, req: csi_pb2.NodeUnpublishVolumeRequest) -> Message:
        require_fields("NodeUnpublishVolume", volume_id=req.volume_id, target_path=req.target_path)
        self.published.pop(req.target_path, None)
        with contextlib.suppress(FileNotFoundError):
            Path(req.target_path).rmdir()
        return csi_pb2.NodeUnpublishVolumeResponse()

    def _NodeExpandVolume(self, req: csi_pb2.NodeExpandVolumeRequest) -> Message:
        method = "NodeExpandVolume"
        require_fields(method, volume_id=req.volume_id, volume_path=req.volume_path)
        self._capable(method, NodeRpc.EXPAND_VOLUME)
        volume = self._known(method, req.volume_id)
        volume.capacity_bytes = max(volume.capacity_bytes, req.capacity_range.required_bytes)
        return csi_pb2.NodeExpandVolumeResponse(capacity_bytes=volume.capacity_bytes)

    def _NodeGetVolumeStats(self, req: csi_pb2.NodeGetVolumeStatsRequest) -> Message:
        method = "NodeGetVolumeStats"
        require_fields(method, volume_id=req.volume_id, volume_path=req.volume_path)
        self._capable(method, NodeRpc.GET_VOLUME_STATS)
        volume = self._known(method, req.volume_id)
        if self.published.get(req.volume_path) != req.volume_id:
            raise csi_error(method, grpc.StatusCode.NOT_FOUND, "volume_path is not published")
        return csi_pb2.NodeGetVolumeStatsResponse(usage=[csi_pb2.VolumeUsage(
            unit=csi_pb2.VolumeUsage.BYTES, total=volume.capacity_bytes, used=0,
            available=volume.capacity_bytes)])

    # -- helpers -------------------------------------------------------------------------

    def _capable(self, method: str, capability: csi_pb2.NodeServiceCapability.RPC.Type) -> None:
        if capability not in self.node_capabilities:
            raise csi_error(method, grpc.StatusCode.UNIMPLEMENTED, "capability not advertised")

    def _known(self, method: str, volume_id: str) -> FakeVolume:
        volume = self.volumes.get(volume_id)
        if volume is None:
            raise csi_error(method, grpc.StatusCode.NOT_FOUND, f"volume {volume_id} not found")
        return volume

    def add_volume(self, volume_id: str, capacity_bytes: int = 1 << 30) -> FakeVolume:
        volume = FakeVolume(volume_id, capacity_bytes)
        self.volumes[volume_id] = volume
        return volume


def csi_error(method: str, code: grpc.StatusCode, message: str) -> CsiError:
    return CsiError(f"csi.{method}", code, message)


def require_fields(method: str, **fields: str) -> None:
    missing = [name for name, value in fields.items() if not value]
    if missing:
        raise csi_error(method, grpc.StatusCode.INVALID_ARGUMENT, f"missing {', '.join(missing)}")


class FakeCsiClient(CsiClient):
    """A `CsiClient` answered by a `FakeCsiDriver` in memory."""

    def __init__(self, driver: FakeCsiDriver, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.driver = driver

    async def _invoke(self, service: str, method: str, request: Message, timeout: float) -> Message:
        try:
            return self.driver.handle(method, request)
        except CsiError as err:
            raise CsiError(f"csi.{service}/{method}", err.code, err.message) from None

