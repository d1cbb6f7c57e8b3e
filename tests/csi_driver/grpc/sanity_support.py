"""What csi-sanity's pkg/sanity gives each spec, rewritten for pytest.

- `expect_error_code`: the one helper that asserts a call failed with a given code.
- `SanityContext`: the per-test mount and staging directories, created with a
  plain (non-recursive) mkdir like csi-sanity, and `<mountdir>/target` as target_path.
- `Resources`: wraps the stubs, remembers what a test created (volumes, controller
  publications, node publications, snapshots, group snapshots) and removes it in
  reverse order at the end, the way csi-sanity's resources wrapper does.
- request builders with csi-sanity's defaults (10 GiB volumes, +1 GiB expansion,
  SINGLE_NODE_WRITER mount capability, idempotent count 10).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from csi_protos import csi_pb2
from tests.fixtures.driver_process import Stubs, unmount_under

GiB = 1024**3
TEST_VOLUME_SIZE = 10 * GiB
TEST_EXPAND_SIZE = TEST_VOLUME_SIZE + GiB
IDEMPOTENT_COUNT = 10
MAX_NAME_LENGTH = 128
MUTABLE_PARAMETERS = {"iops": "3000"}

AccessMode = csi_pb2.VolumeCapability.AccessMode
CtrlCap = csi_pb2.ControllerServiceCapability.RPC
NodeCap = csi_pb2.NodeServiceCapability.RPC
PluginService = csi_pb2.PluginCapability.Service


def expect_error_code(
    call: Callable[..., Any], request: Any, code: grpc.StatusCode
) -> grpc.RpcError:
    """Call `call(request)` and assert it fails with `code` and no response."""
    try:
        response = call(request, timeout=30)
    except grpc.RpcError as err:
        assert err.code() == code, f"expected {code.name}, got {err.code().name}: {err.details()}"
        return err
    raise AssertionError(f"expected {code.name}, got a response: {response!r}")


def unique_string(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def unique_string_with_length(prefix: str, length: int) -> str:
    base = unique_string(prefix)
    return (base + "x" * length)[:length]


def valid_volume_id() -> str:
    return f"fake-vol-id-{uuid.uuid4().hex[:10]}"


INVALID_VOLUME_ID = "fake-vol-id"


def valid_node_id() -> str:
    return f"fake-node-id-{uuid.uuid4().hex[:10]}"


def mount_capability(mode: Any = AccessMode.SINGLE_NODE_WRITER) -> csi_pb2.VolumeCapability:
    return csi_pb2.VolumeCapability(
        access_mode=AccessMode(mode=mode), mount=csi_pb2.VolumeCapability.MountVolume()
    )


def block_capability(mode: Any = AccessMode.SINGLE_NODE_WRITER) -> csi_pb2.VolumeCapability:
    return csi_pb2.VolumeCapability(
        access_mode=AccessMode(mode=mode), block=csi_pb2.VolumeCapability.BlockVolume()
    )


def make_create_volume_req(name: str, size: int = TEST_VOLUME_SIZE) -> csi_pb2.CreateVolumeRequest:
    return csi_pb2.CreateVolumeRequest(
        name=name,
        volume_capabilities=[mount_capability()],
        capacity_range=csi_pb2.CapacityRange(required_bytes=size),
    )


def make_create_snapshot_req(name: str, source_volume_id: str) -> csi_pb2.CreateSnapshotRequest:
    return csi_pb2.CreateSnapshotRequest(name=name, source_volume_id=source_volume_id)


def make_expand_volume_req(volume_id: str) -> csi_pb2.ControllerExpandVolumeRequest:
    return csi_pb2.ControllerExpandVolumeRequest(
        volume_id=volume_id,
        capacity_range=csi_pb2.CapacityRange(required_bytes=TEST_EXPAND_SIZE),
        volume_capability=mount_capability(),
    )


def make_modify_volume_req(volume_id: str) -> csi_pb2.ControllerModifyVolumeRequest:
    return csi_pb2.ControllerModifyVolumeRequest(
        volume_id=volume_id, mutable_parameters=MUTABLE_PARAMETERS
    )


def controller_capabilities(stubs: Stubs) -> set[int]:
    rsp = stubs.controller.ControllerGetCapabilities(csi_pb2.ControllerGetCapabilitiesRequest())
    return {c.rpc.type for c in rsp.capabilities}


def node_capabilities(stubs: Stubs) -> set[int]:
    rsp = stubs.node.NodeGetCapabilities(csi_pb2.NodeGetCapabilitiesRequest())
    return {c.rpc.type for c in rsp.capabilities}


def plugin_services(stubs: Stubs) -> set[int]:
    rsp = stubs.identity.GetPluginCapabilities(csi_pb2.GetPluginCapabilitiesRequest())
    return {c.service.type for c in rsp.capabilities if c.HasField("service")}


def require_controller_capability(stubs: Stubs, cap: int, what: str) -> None:
    if cap not in controller_capabilities(stubs):
        pytest.skip(f"{what} not supported")


def require_node_capability(stubs: Stubs, cap: int, what: str) -> None:
    if cap not in node_capabilities(stubs):
        pytest.skip(f"{what} not supported")


@dataclass
class _Volume:
    volume_id: str
    node_ids: list[str] = field(default_factory=list)


class Resources:
    """Stubs plus a ledger of what the test created; `cleanup` undoes it in reverse."""

    def __init__(self, stubs: Stubs, ctx: SanityContext) -> None:
        self.stubs = stubs
        self.ctx = ctx
        self._ledger: list[tuple[str, Any]] = []
        self.targets: set[str] = set()
        self.staging_paths: set[str] = set()

    # -- controller --------------------------------------------------------------

    def create_volume(
        self, req: csi_pb2.CreateVolumeRequest, timeout: float = 60
    ) -> csi_pb2.CreateVolumeResponse:
        rsp = self.stubs.controller.CreateVolume(req, timeout=timeout)
        if rsp.volume.volume_id and not self._known_volume(rsp.volume.volume_id):
            self._ledger.append(("volume", _Volume(rsp.volume.volume_id)))
        return rsp

    def must_create_volume(self, req: csi_pb2.CreateVolumeRequest) -> csi_pb2.CreateVolumeResponse:
        rsp = self.create_volume(req)
        assert rsp.HasField("volume"), "volume in response is nil"
        assert rsp.volume.volume_id, "volume ID in response is missing"
        return rsp

    def delete_volume(self, volume_id: str) -> csi_pb2.DeleteVolumeResponse:
        rsp = self.stubs.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume_id))
        self._ledger = [
            e for e in self._ledger if not (e[0] == "volume" and e[1].volume_id == volume_id)
        ]
        return rsp

    def controller_publish(
        self, req: csi_pb2.ControllerPublishVolumeRequest, timeout: float = 60
    ) -> csi_pb2.ControllerPublishVolumeResponse:
        rsp = self.stubs.controller.ControllerPublishVolume(req, timeout=timeout)
        vol = self._known_volume(req.volume_id)
        if vol is not None and req.node_id and req.node_id not in vol.node_ids:
            vol.node_ids.append(req.node_id)
        return rsp

    def make_controller_publish_req(
        self,
        volume_id: str,
        node_id: str,
        cap: csi_pb2.VolumeCapability | None = None,
        readonly: bool = False,
    ) -> csi_pb2.ControllerPublishVolumeRequest:
        return csi_pb2.ControllerPublishVolumeRequest(
            volume_id=volume_id,
            node_id=node_id,
            volume_capability=cap or mount_capability(),
            readonly=readonly,
        )

    def create_snapshot(
        self, req: csi_pb2.CreateSnapshotRequest, timeout: float = 60
    ) -> csi_pb2.CreateSnapshotResponse:
        rsp = self.stubs.controller.CreateSnapshot(req, timeout=timeout)
        sid = rsp.snapshot.snapshot_id
        if sid and ("snapshot", sid) not in self._ledger:
            self._ledger.append(("snapshot", sid))
        return rsp

    def must_create_snapshot(
        self, req: csi_pb2.CreateSnapshotRequest
    ) -> csi_pb2.CreateSnapshotResponse:
        rsp = self.create_snapshot(req)
        verify_snapshot_info(rsp.snapshot)
        return rsp

    def must_create_snapshot_from_volume_request(
        self, vol_req: csi_pb2.CreateVolumeRequest, snapshot_name: str
    ) -> tuple[csi_pb2.CreateSnapshotResponse, csi_pb2.CreateVolumeResponse]:
        vol = self.must_create_volume(vol_req)
        snap = self.must_create_snapshot(
            make_create_snapshot_req(snapshot_name, vol.volume.volume_id)
        )
        return snap, vol

    def delete_snapshot(self, snapshot_id: str) -> csi_pb2.DeleteSnapshotResponse:
        rsp = self.stubs.controller.DeleteSnapshot(
            csi_pb2.DeleteSnapshotRequest(snapshot_id=snapshot_id)
        )
        with contextlib.suppress(ValueError):
            self._ledger.remove(("snapshot", snapshot_id))
        return rsp

    def create_group_snapshot(
        self, req: csi_pb2.CreateVolumeGroupSnapshotRequest, timeout: float = 60
    ) -> csi_pb2.CreateVolumeGroupSnapshotResponse:
        rsp = self.stubs.group_controller.CreateVolumeGroupSnapshot(req, timeout=timeout)
        gid = rsp.group_snapshot.group_snapshot_id
        if gid and ("group", gid) not in self._ledger:
            self._ledger.append(("group", gid))
        return rsp

    # -- node --------------------------------------------------------------------

    def node_stage(
        self, req: csi_pb2.NodeStageVolumeRequest, timeout: float = 60
    ) -> csi_pb2.NodeStageVolumeResponse:
        self.staging_paths.add(req.staging_target_path)
        return self.stubs.node.NodeStageVolume(req, timeout=timeout)

    def node_publish(
        self, req: csi_pb2.NodePublishVolumeRequest, timeout: float = 60
    ) -> csi_pb2.NodePublishVolumeResponse:
        self.targets.add(req.target_path)
        return self.stubs.node.NodePublishVolume(req, timeout=timeout)

    # -- cleanup -----------------------------------------------------------------

    def _known_volume(self, volume_id: str) -> _Volume | None:
        for kind, item in self._ledger:
            if kind == "volume" and item.volume_id == volume_id:
                return item
        return None

    def cleanup(self) -> list[str]:
        """Undo everything, newest first; returns the errors (NOT_FOUND is not one)."""
        errors: list[str] = []
        try:
            node_caps: set[int] | None = node_capabilities(self.stubs)
        except grpc.RpcError:  # a --mode controller process serves no Node service
            node_caps = None
        for kind, item in reversed(self._ledger):
            if kind == "snapshot":
                _attempt(
                    errors,
                    self.stubs.controller.DeleteSnapshot,
                    csi_pb2.DeleteSnapshotRequest(snapshot_id=item),
                    strict=True,
                )
            elif kind == "group":
                _attempt(
                    errors,
                    self.stubs.group_controller.DeleteVolumeGroupSnapshot,
                    csi_pb2.DeleteVolumeGroupSnapshotRequest(group_snapshot_id=item),
                    strict=True,
                )
            else:
                self._cleanup_volume(errors, item, node_caps)
        self._ledger.clear()
        return errors

    def _cleanup_volume(self, errors: list[str], vol: _Volume, node_caps: set[int] | None) -> None:
        vid = vol.volume_id
        for target in (
            sorted(self.targets | {self.ctx.target_path}) if node_caps is not None else []
        ):
            _attempt(
                errors,
                self.stubs.node.NodeUnpublishVolume,
                csi_pb2.NodeUnpublishVolumeRequest(volume_id=vid, target_path=target),
            )
        if node_caps is not None and NodeCap.STAGE_UNSTAGE_VOLUME in node_caps:
            for staging in sorted(self.staging_paths | {self.ctx.staging_path}):
                _attempt(
                    errors,
                    self.stubs.node.NodeUnstageVolume,
                    csi_pb2.NodeUnstageVolumeRequest(volume_id=vid, staging_target_path=staging),
                )
        for node_id in vol.node_ids:
            _attempt(
                errors,
                self.stubs.controller.ControllerUnpublishVolume,
                csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vid, node_id=node_id),
                strict=True,
            )
        _attempt(
            errors,
            self.stubs.controller.DeleteVolume,
            csi_pb2.DeleteVolumeRequest(volume_id=vid),
            strict=True,
        )


def _attempt(
    errors: list[str], call: Callable[..., Any], request: Any, strict: bool = False
) -> None:
    """Run one cleanup call; node calls may answer NOT_FOUND (csi-sanity's isRelevantError)."""
    try:
        call(request, timeout=30)
    except grpc.RpcError as err:
        if strict or err.code() != grpc.StatusCode.NOT_FOUND:
            errors.append(f"{type(request).__name__}: {err.code().name} {err.details()}")


def verify_snapshot_info(snapshot: csi_pb2.Snapshot) -> None:
    assert snapshot.snapshot_id, "snapshot id is empty"
    assert snapshot.source_volume_id, "snapshot source volume id is empty"
    assert snapshot.HasField("creation_time") and (
        snapshot.creation_time.seconds or snapshot.creation_time.nanos
    ), "snapshot creation time is zero"


class SanityContext:
    """Mount and staging directories for one test, made like csi-sanity makes them."""

    def __init__(self, base: Path, stubs: Stubs) -> None:
        self.base = base
        self.mount_dir = base / "mnt"
        self.staging_path = str(base / "stg")
        os.mkdir(self.mount_dir, 0o755)  # the parent must exist: not recursive
        os.mkdir(self.staging_path, 0o755)
        self.target_path = str(self.mount_dir / "target")
        self.other_target_path = str(self.mount_dir / "other_target")
        self.stubs = stubs
        self.resources = Resources(stubs, self)

    def teardown(self) -> list[str]:
        errors: list[str] = []
        try:
            errors += self.resources.cleanup()
        except Exception as exc:  # a dead driver must not leave mounts behind
            errors.append(f"cleanup raised {exc!r}")
        finally:
            unmount_under(self.base)
            if self.mount_dir.exists():
                leftovers = [str(p) for p in self.mount_dir.iterdir()]
                if leftovers:
                    errors.append(f"left behind under the mount dir: {leftovers}")
            shutil.rmtree(self.base, ignore_errors=True)
        return errors
