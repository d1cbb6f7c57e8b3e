"""What the fuzzer's valid-looking ids come from: volumes, snapshots, a group snapshot,
attachments, stages and publishes made before the fuzzing, and made again whenever a
fuzzed call removed one (each step is idempotent, so ``ensure`` simply runs them all)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import Message

from csi_protos import csi_pb2
from tests.csi_driver.grpc.fuzz_sandbox import Sandbox
from tests.fixtures.driver_process import Stubs

CALL_GUARD_SECONDS = 30.0  # a guard against a hung call, never asserted on
MiB = 1 << 20
Mode = csi_pb2.VolumeCapability.AccessMode
EPHEMERAL = {"csi.storage.k8s.io/ephemeral": "true"}
# name, access type, how far it goes: "free" (created), "attached" (+ controller
# published), "staged" (+ staged and published on this node)
VOLUMES = (
    ("seed-mount-staged", "mount", "staged"),
    ("seed-block-staged", "block", "staged"),
    ("seed-mount-attached", "mount", "attached"),
    ("seed-mount-free", "mount", "free"),
    ("seed-block-free", "block", "free"),
)
SNAPSHOTS = (("seed-snap-mount", "seed-mount-staged"),
             ("seed-snap-block-1", "seed-block-staged"),
             ("seed-snap-block-2", "seed-block-staged"))
GROUP = ("seed-group", ("seed-mount-attached", "seed-mount-free"))
INLINE = "seed-inline"  # an inline ephemeral volume


def capability(kind: str) -> csi_pb2.VolumeCapability:
    cap = csi_pb2.VolumeCapability(access_mode=Mode(mode=Mode.SINGLE_NODE_WRITER))
    if kind == "block":
        cap.block.SetInParent()
    else:
        cap.mount.SetInParent()
    return cap


@dataclass
class Seeds:
    box: Sandbox
    volumes: dict[str, str] = field(default_factory=dict)  # name → id
    contexts: dict[str, dict[str, str]] = field(default_factory=dict)
    snapshots: dict[str, str] = field(default_factory=dict)
    group: tuple[str, tuple[str, ...]] = ("", ())  # id, member snapshot ids
    errors: Counter[str] = field(default_factory=Counter)  # seed calls that failed

    def ids(self) -> dict[str, tuple[str, ...]]:
        group_id, group_snapshots = self.group
        return {
            "volume": (*self.volumes.values(), INLINE),
            "snapshot": (*self.snapshots.values(), *group_snapshots),
            "group": (group_id,) if group_id else (),
        }

    def all_ids(self) -> set[str]:
        return {i for group in self.ids().values() for i in group}

    def names(self) -> tuple[str, ...]:
        return (*self.volumes, *self.snapshots, GROUP[0])

    def paths(self, name: str) -> tuple[str, str]:
        """(staging path, target path) of a seed."""
        stage = os.path.join(self.box.seed_dir, f"stage-{name}")
        target = os.path.join(self.box.seed_dir, f"pub-{name}", "target")
        return stage, target

    def every_path(self) -> list[str]:
        found = [p for name, _, role in VOLUMES if role == "staged" for p in self.paths(name)]
        return [*found, self.paths(INLINE)[1]]

    def _call(self, what: str, fn: Callable[..., Any], request: Message) -> Any:
        try:
            return fn(request, timeout=CALL_GUARD_SECONDS)
        except grpc.RpcError as exc:
            self.errors[f"{what}: {exc.code().name}"] += 1
            return None

    def ensure(self, s: Stubs, node_id: str) -> None:
        """Volumes (free, attached, staged and published), snapshots, a group snapshot
        and an inline volume, made again where a fuzzed call removed them."""
        for name in [n for n, _, role in VOLUMES if role == "staged"] + [INLINE]:
            stage, target = self.paths(name)  # the CO's part: the dirs
            self.box.make_dirs(stage, os.path.dirname(target))
        for name, kind, role in VOLUMES:
            self._ensure_volume(s, node_id, name, kind, role)
        for name, source in SNAPSHOTS:
            self._ensure_snapshot(s, name, self.volumes.get(source, ""))
        self._ensure_group(s)
        self._call("NodePublishVolume (inline)", s.node.NodePublishVolume,
                   csi_pb2.NodePublishVolumeRequest(
                       volume_id=INLINE, target_path=self.paths(INLINE)[1],
                       volume_capability=capability("mount"), volume_context=EPHEMERAL))

    def _ensure_volume(self, s: Stubs, node_id: str, name: str, kind: str, role: str) -> None:
        cap = capability(kind)
        created = self._call("CreateVolume", s.controller.CreateVolume,
                             csi_pb2.CreateVolumeRequest(
                                 name=name, volume_capabilities=[cap],
                                 capacity_range=csi_pb2.CapacityRange(required_bytes=MiB)))
        if created is None:
            return
        vid = created.volume.volume_id
        self.volumes[name] = vid
        context = self.contexts[name] = dict(created.volume.volume_context)
        if role == "free":
            return
        published = self._call("ControllerPublishVolume", s.controller.ControllerPublishVolume,
                               csi_pb2.ControllerPublishVolumeRequest(
                                   volume_id=vid, node_id=node_id, volume_capability=cap,
                                   volume_context=context))
        if role != "staged":
            return
        publish_context = dict(published.publish_context) if published is not None else {}
        stage, target = self.paths(name)
        self._call("NodeStageVolume", s.node.NodeStageVolume, csi_pb2.NodeStageVolumeRequest(
            volume_id=vid, staging_target_path=stage, volume_capability=cap,
            publish_context=publish_context, volume_context=context))
        self._call("NodePublishVolume", s.node.NodePublishVolume,
                   csi_pb2.NodePublishVolumeRequest(
                       volume_id=vid, staging_target_path=stage, target_path=target,
                       volume_capability=cap, publish_context=publish_context,
                       volume_context=context))

    def _ensure_snapshot(self, s: Stubs, name: str, source: str) -> None:
        request = csi_pb2.CreateSnapshotRequest(name=name, source_volume_id=source)
        try:
            made = s.controller.CreateSnapshot(request, timeout=CALL_GUARD_SECONDS)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.ALREADY_EXISTS or name not in self.snapshots:
                self.errors[f"CreateSnapshot: {exc.code().name}"] += 1
                return
            # its source volume was deleted and made again: cut the snapshot anew
            self._call("DeleteSnapshot", s.controller.DeleteSnapshot,
                       csi_pb2.DeleteSnapshotRequest(snapshot_id=self.snapshots[name]))
            made = self._call("CreateSnapshot", s.controller.CreateSnapshot, request)
            if made is None:
                return
        self.snapshots[name] = made.snapshot.snapshot_id

    def _ensure_group(self, s: Stubs) -> None:
        name, members = GROUP
        request = csi_pb2.CreateVolumeGroupSnapshotRequest(
            name=name, source_volume_ids=[self.volumes.get(m, "") for m in members])
        try:
            made = s.group_controller.CreateVolumeGroupSnapshot(request,
                                                                 timeout=CALL_GUARD_SECONDS)
        except grpc.RpcError as exc:
            group_id, snapshot_ids = self.group
            if exc.code() != grpc.StatusCode.ALREADY_EXISTS or not group_id:
                self.errors[f"CreateVolumeGroupSnapshot: {exc.code().name}"] += 1
                return
            self._call("DeleteVolumeGroupSnapshot", s.group_controller.DeleteVolumeGroupSnapshot,
                       csi_pb2.DeleteVolumeGroupSnapshotRequest(
                           group_snapshot_id=group_id, snapshot_ids=snapshot_ids))
            made = self._call("CreateVolumeGroupSnapshot",
                              s.group_controller.CreateVolumeGroupSnapshot, request)
            if made is None:
                return
        group = made.group_snapshot
        self.group = (group.group_snapshot_id, tuple(snap.snapshot_id for snap in group.snapshots))
