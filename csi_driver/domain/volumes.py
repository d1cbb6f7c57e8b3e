"""Controller-side volume rules: create, delete, validate, list, capacity, expand, modify.

Pure domain: no grpc.  Idempotency rules are written next to each operation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from csi_driver.config import Config
from csi_driver.domain import access_modes
from csi_driver.domain.lookup import must_exist
from csi_driver.domain.pagination import decode_token, encode_token
from csi_driver.domain.topology import choose_topology, matches
from csi_driver.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    OutOfRange,
    ResourceExhausted,
)
from csi_driver.state.records import Node, Snapshot, Topology, Volume, VolumeCapability
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData

DEFAULT_VOLUME_SIZE = 1 << 30


@dataclass(frozen=True)
class CapacityRange:
    required_bytes: int = 0
    limit_bytes: int = 0

    def check(self) -> None:
        if self.required_bytes < 0 or self.limit_bytes < 0:
            raise InvalidArgument("capacity range bytes must not be negative")
        if self.limit_bytes and self.required_bytes > self.limit_bytes:
            raise InvalidArgument("required_bytes exceeds limit_bytes")

    def admits(self, size: int) -> bool:
        return size >= self.required_bytes and (not self.limit_bytes or size <= self.limit_bytes)


@dataclass(frozen=True)
class CreateVolumeArgs:
    name: str
    capabilities: tuple[VolumeCapability, ...]
    capacity: CapacityRange = CapacityRange()
    parameters: dict[str, str] = field(default_factory=dict)
    mutable_parameters: dict[str, str] = field(default_factory=dict)
    source_type: str = ""  # "", "snapshot" or "volume"
    source_id: str = ""
    requisite: tuple[Topology, ...] = ()
    preferred: tuple[Topology, ...] = ()

    def fingerprint(self) -> str:
        """Everything but capacity that must match for a retried CreateVolume to be OK."""
        return json.dumps(
            {
                "caps": sorted(json.dumps(c.to_json(), sort_keys=True) for c in self.capabilities),
                "parameters": self.parameters,
                "mutable": self.mutable_parameters,
                "source": [self.source_type, self.source_id],
                "requisite": list(self.requisite),
                "preferred": list(self.preferred),
            },
            sort_keys=True,
        )


@dataclass(frozen=True)
class VolumeStatus:
    volume: Volume
    published_node_ids: list[str]
    abnormal: bool
    message: str


@dataclass(frozen=True)
class Capacity:
    available_bytes: int
    maximum_volume_size: int
    minimum_volume_size: int


class Volumes:
    def __init__(self, cfg: Config, store: Store, data: VolumeData) -> None:
        self.cfg = cfg
        self.store = store
        self.data = data

    # helpers ---------------------------------------------------------------

    def get(self, volume_id: str) -> Volume:
        return must_exist(self.store.get_volume(volume_id), "volume", volume_id)

    def pool_of(self, parameters: dict[str, str]) -> str:
        pool = parameters.get("pool", self.cfg.default_pool)
        if pool not in self.cfg.pools:
            raise InvalidArgument(f"unknown capacity pool {pool!r}")
        return pool

    def check_mutable_parameters(self, params: dict[str, str]) -> None:
        if not params:
            return
        if not self.cfg.modify_volume:
            raise InvalidArgument("this plugin does not accept mutable parameters")
        unknown = sorted(set(params) - set(self.cfg.mutable_parameters))
        if unknown:
            raise InvalidArgument(f"unsupported mutable parameters: {', '.join(unknown)}")

    def _size_for(self, capacity: CapacityRange, source_size: int) -> int:
        capacity.check()
        size = capacity.required_bytes or max(source_size, DEFAULT_VOLUME_SIZE)
        if capacity.limit_bytes and size > capacity.limit_bytes:
            size = max(capacity.limit_bytes, capacity.required_bytes)
        if size > self.cfg.max_volume_size:
            raise OutOfRange(
                f"requested {size} bytes exceeds the maximum volume size {self.cfg.max_volume_size}"
            )
        if size < source_size:
            raise OutOfRange(f"source holds {source_size} bytes; {size} bytes are too few")
        return size

    def _check_space(self, pool: str, extra: int) -> None:
        total = self.cfg.pools[pool]
        if self.store.pool_used(pool) + extra > total:
            raise ResourceExhausted(f"capacity pool {pool!r} has no room for {extra} more bytes")

    # CreateVolume ----------------------------------------------------------

    def create_volume(self, args: CreateVolumeArgs) -> Volume:
        """Same name + compatible arguments → the existing volume (OK); same name +
        incompatible capacity/capabilities/parameters/source/topology → ALREADY_EXISTS."""
        access_type = access_modes.access_type_of(args.capabilities)
        for cap in args.capabilities:
            access_modes.require_supported(cap, self.cfg.single_node_multi_writer)
        pool = self.pool_of(args.parameters)
        self.check_mutable_parameters(args.mutable_parameters)
        args.capacity.check()
        fingerprint = args.fingerprint()
        if args.source_type:
            return self._create_with_data(args, access_type, pool, fingerprint,
                                          self._source_size(args, access_type), self._copy_data)
        if self.data.makes_fs_image(access_type, self._size_for(args.capacity, 0)):
            return self._create_with_data(args, access_type, pool, fingerprint, 0, lambda v:
                                          self.data.create_volume(v.volume_id, v.access_type,
                                                                  v.capacity_bytes))
        # Lookup, checks and insert in one transaction: under the write lock the name
        # cannot be taken meanwhile, by this process or another.
        with self.store.transaction():
            existing = self.store.get_volume_by_name(args.name)
            if existing is not None:
                return self._existing(existing, args, fingerprint)
            volume = self._new_volume(args, access_type, pool, fingerprint, 0)
            self._check_space(pool, volume.capacity_bytes)
            if not self.store.insert_volume(volume):
                raise AssertionError("volume name taken under the write lock")
            # Empty data is made just before the record commits (in the commit
            # thread under group commit, off the event loop); one directory fsync,
            # when asked for, covers every volume of the commit.
            self.store.before_commit(lambda: self.data.create_volume(
                volume.volume_id, volume.access_type, volume.capacity_bytes, sync=False))
            self.store.before_commit(self.data.sync_volumes_dir)
            return volume

    def prepares_data(self, args: CreateVolumeArgs) -> bool:
        """Whether CreateVolume does long data work (a copy, a mkfs): the server runs
        those in a worker thread, off the event loop."""
        return bool(args.source_type) or self.data.makes_fs_image(
            access_modes.access_type_of(args.capabilities), self._size_for(args.capacity, 0))

    def _create_with_data(self, args: CreateVolumeArgs, access_type: str, pool: str,
                          fingerprint: str, source_size: int,
                          make_data: Callable[[Volume], None]) -> Volume:
        """Clone, restore or a formatted image: the data (long, outside any transaction)
        is complete before the record exists; a name taken meanwhile wins and the data
        is dropped."""
        existing = self.store.get_volume_by_name(args.name)
        if existing is not None:
            return self._existing(existing, args, fingerprint)
        volume = self._new_volume(args, access_type, pool, fingerprint, source_size)
        make_data(volume)
        try:
            with self.store.transaction():
                self._check_space(pool, volume.capacity_bytes)
                if self.store.insert_volume(volume):
                    return volume
        except BaseException:
            self.data.delete_volume(volume.volume_id, access_type)
            raise
        self.data.delete_volume(volume.volume_id, access_type)
        winner = self.store.get_volume_by_name(args.name)
        assert winner is not None
        return self._existing(winner, args, fingerprint)

    def _new_volume(self, args: CreateVolumeArgs, access_type: str, pool: str,
                    fingerprint: str, source_size: int) -> Volume:
        size = self._size_for(args.capacity, source_size)
        topology = (choose_topology(args.requisite, args.preferred, self._topology_nodes())
                    if args.requisite or args.preferred else [])
        return Volume(
            volume_id=str(uuid.uuid4()),
            name=args.name,
            capacity_bytes=size,
            pool=pool,
            access_type=access_type,
            parameters=dict(args.parameters),
            mutable_parameters=dict(args.mutable_parameters),
            accessible_topology=topology,
            source_type=args.source_type,
            source_id=args.source_id,
            request_fingerprint=fingerprint,
            created_at=time.time(),
        )

    def _existing(self, volume: Volume, args: CreateVolumeArgs, fingerprint: str) -> Volume:
        if volume.request_fingerprint != fingerprint or (not args.capacity.admits(
            volume.capacity_bytes
        ) and (args.capacity.required_bytes or args.capacity.limit_bytes)):
            raise AlreadyExists(
                f"volume {args.name!r} exists with incompatible capacity, capabilities, "
                "parameters, source or topology"
            )
        return volume

    def _topology_nodes(self) -> list[Node]:
        return self.store.list_nodes() if self.cfg.topology else []

    def _source_size(self, args: CreateVolumeArgs, access_type: str) -> int:
        """The size of the content source (0 without one); it must exist and have the new
        volume's access type."""
        if args.source_type not in ("snapshot", "volume"):
            return 0
        what = f"source {args.source_type}"
        source: Snapshot | Volume = (
            must_exist(self.store.get_snapshot(args.source_id), what, args.source_id)
            if args.source_type == "snapshot"
            else must_exist(self.store.get_volume(args.source_id), what, args.source_id))
        if source.access_type != access_type:
            raise InvalidArgument(
                f"source {args.source_type} and new volume differ in access type")
        return source.size_bytes if isinstance(source, Snapshot) else source.capacity_bytes

    def _copy_data(self, v: Volume) -> None:
        if v.source_type == "snapshot":
            self.data.restore_snapshot(v.source_id, v.volume_id, v.access_type, v.capacity_bytes)
        else:
            self.data.clone_volume(v.source_id, v.volume_id, v.access_type, v.capacity_bytes)

    # DeleteVolume ----------------------------------------------------------

    def delete_volume(self, volume_id: str) -> None:
        """Unknown id → OK.  Attached, staged or published → FAILED_PRECONDITION.
        Snapshots are independent copies and outlive their source, as in
        csi-driver-host-path; with ``snapshots_block_delete`` a volume that still has
        snapshots → FAILED_PRECONDITION too (the spec allows either)."""
        with self.store.transaction():
            volume = self.store.get_volume(volume_id)
            if volume is None:
                return
            in_use = self.store.volume_in_use(volume_id, self.cfg.snapshots_block_delete)
            if in_use:
                raise FailedPrecondition(f"volume {volume_id!r} is still {in_use}")
            self.store.delete_volume(volume)
            # The data goes only once the record's removal is durable.
            self.store.after_commit(
                lambda: self.data.delete_volume(volume.volume_id, volume.access_type)
            )

    # ValidateVolumeCapabilities ----------------------------------------------

    def validate_capabilities(
        self,
        volume_id: str,
        caps: tuple[VolumeCapability, ...],
        parameters: dict[str, str],
        mutable_parameters: dict[str, str],
        volume_context: dict[str, str] | None = None,
    ) -> str:
        """Unknown volume → NOT_FOUND.  Returns "" when all are confirmed, else why not."""
        volume = self.get(volume_id)
        if volume_context and volume_context != volume.volume_context:
            return "volume_context is not the volume's"
        for cap in caps:
            reason = access_modes.unsupported_reason(cap, self.cfg.single_node_multi_writer)
            if reason:
                return reason
            if cap.access_type != volume.access_type:
                return f"volume is a {volume.access_type} volume, not {cap.access_type}"
        if parameters and parameters != volume.parameters:
            return "parameters differ from those the volume was created with"
        if mutable_parameters and any(
            volume.mutable_parameters.get(k) != v for k, v in mutable_parameters.items()
        ):
            return "mutable parameters differ from the volume's"
        return ""

    # ListVolumes / ControllerGetVolume ---------------------------------------

    def status(self, volume: Volume) -> VolumeStatus:
        nodes = sorted(a.node_id for a in self.store.attachments_of_volume(volume.volume_id))
        if not self.cfg.attach_required:
            nodes = sorted({p.node_id for p in self.store.publishes_of_volume(volume.volume_id)})
        healthy = self.data.exists(volume.volume_id, volume.access_type)
        message = "volume data present" if healthy else "volume data is missing"
        return VolumeStatus(volume, nodes, not healthy, message)

    def list_volumes(self, max_entries: int, starting_token: str) -> tuple[list[VolumeStatus], str]:
        """Invalid starting_token → ABORTED; max_entries 0 means all."""
        if max_entries < 0:
            raise InvalidArgument("max_entries must not be negative")
        after = decode_token(starting_token)
        limit = max_entries if max_entries else -1
        volumes = self.store.list_volumes(after, limit + 1 if limit > 0 else -1)
        next_token = ""
        if limit > 0 and len(volumes) > limit:
            volumes = volumes[:limit]
            next_token = encode_token(volumes[-1].seq)
        return [self.status(v) for v in volumes], next_token

    def get_volume(self, volume_id: str) -> VolumeStatus:
        return self.status(self.get(volume_id))

    # GetCapacity -------------------------------------------------------------

    def get_capacity(
        self, parameters: dict[str, str], topology: Topology | None
    ) -> Capacity:
        """Remaining bytes of the pool; a topology no registered node offers has none. The
        largest volume one can create now is the smaller of the remaining bytes and the
        size limit (as csi-driver-host-path answers; the scheduler compares it with a
        claim's request)."""
        pool = self.pool_of(parameters)
        total = self.cfg.pools[pool]
        available = max(0, total - self.store.pool_used(pool))
        if topology and self.cfg.topology and not any(
            matches(topology, n.topology) for n in self.store.list_nodes()
        ):
            available = 0
        return Capacity(available, min(self.cfg.max_volume_size, available), 0)

    # ControllerExpandVolume --------------------------------------------------

    def expand_volume(self, volume_id: str, capacity: CapacityRange,
                      cap: VolumeCapability | None = None) -> tuple[int, bool]:
        """Already ≥ the requested size → OK with the current size.  Published while
        only OFFLINE expansion is offered → FAILED_PRECONDITION.  Beyond the maximum
        volume size → OUT_OF_RANGE."""
        capacity.check()
        target = capacity.required_bytes or capacity.limit_bytes
        if target <= 0:
            raise InvalidArgument("capacity_range.required_bytes is required")
        if target > self.cfg.max_volume_size:
            raise OutOfRange(f"{target} bytes exceeds the maximum volume size")
        with self.store.transaction():
            volume = self.get(volume_id)
            if cap is not None and cap.access_type != volume.access_type:
                raise InvalidArgument(
                    f"volume is a {volume.access_type} volume, not {cap.access_type}"
                )
            node_needed = self.cfg.node_expansion and volume.access_type == "mount"
            if volume.capacity_bytes >= target:
                return volume.capacity_bytes, node_needed
            if self.cfg.expansion == "offline" and (
                self.store.attachments_of_volume(volume_id)
                or self.store.publishes_of_volume(volume_id)
            ):
                raise FailedPrecondition("volume is published; this plugin expands offline only")
            self._check_space(volume.pool, target - volume.capacity_bytes)
            self.data.resize_volume(volume.volume_id, volume.access_type, target)
            self.store.set_volume_capacity(volume, target)
        return target, node_needed

    # ControllerModifyVolume --------------------------------------------------

    def modify_volume(self, volume_id: str, mutable_parameters: dict[str, str]) -> None:
        """Idempotent.  An unsupported key → INVALID_ARGUMENT and nothing is applied."""
        self.check_mutable_parameters(mutable_parameters)
        with self.store.transaction():
            volume = self.get(volume_id)
            merged = dict(volume.mutable_parameters)
            merged.update(mutable_parameters)
            if merged != volume.mutable_parameters:
                self.store.set_mutable_parameters(volume_id, merged)
