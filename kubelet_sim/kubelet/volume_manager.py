"""The kubelet's volume manager for one node: CSI stage/publish/unpublish/unstage, expand, stats.

It follows the kubelet's CSI volume plugin step by step:

- `mount_device` (csi_attacher MountDevice): NodeGetCapabilities; the staging directory
  (0750) with ``vol_data.json`` {driverName, volumeHandle} one level up; NodeStageVolume only
  when STAGE_UNSTAGE_VOLUME is advertised, with the secret of ``nodeStageSecretRef`` read
  then. Done once per volume on the node: a second pod using a volume that is already
  staged does not stage it again.
- `set_up` (csi_mounter SetUpAt): NodeGetCapabilities; the secret of
  ``nodePublishSecretRef``; the parent of the target path (the driver makes the target
  itself) with ``vol_data.json``; podInfoOnMount keys merged into volume_context;
  the CSIDriver's ``tokenRequests`` tokens (``publish_attributes``) merged too;
  NodePublishVolume with the staging path when staged. Inline ephemeral volumes get the
  handle ``csi-<sha256(podUID+volumeName)>`` and are never staged.
- the CSIDriver fields (`csi.driver_policy`): SetUp first refuses a volume whose lifecycle
  mode the driver does not list (no CSI call); a driver with VOLUME_MOUNT_GROUP gets the
  pod's fsGroup as ``volume_mount_group`` in NodeStage and NodePublish, otherwise the
  kubelet applies it after NodePublish as its fsGroupPolicy says (`volume_ownership`);
  a volume with a SELinux label is staged and published with ``context="<label>"`` last
  in its mount flags.
- `republish`: NodePublishVolume again for a set-up volume (``requiresRepublish``).
- `tear_down`: NodeUnpublishVolume, then the pod's volume directory is removed.
- `unmount_device`: NodeUnstageVolume only once no pod on the node uses the volume.
- `expand` (NodeExpandVolume when EXPAND_VOLUME is advertised) and `stats`.

Block volumes use the kubelet's ``volumeDevices`` layout (see `paths`). Every node call has
the kubelet's 2-minute timeout; failed operations are retried with the kubelet's exponential
backoff (500 ms doubling, capped at 2 min 2 s) on an injectable clock. A secret that does
not exist fails the operation at once (LookupError, no CSI call): the kubelet retries it on
its next pass, as it treats a failed secret fetch as a transient failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from csi_protos import csi_pb2
from kubelet_sim.api.errors import ApiError
from kubelet_sim.csi.client import CsiClient, CsiError
from kubelet_sim.csi.driver_policy import VolumeOperationError, check_lifecycle_mode
from kubelet_sim.csi.naming import attachment_name
from kubelet_sim.csi.volume_spec import (
    CsiVolume,
    NodeCapabilities,
    PodInfo,
    SecretLookup,
    SecretRef,
    VolumeStats,
    pod_info_attributes,
    volume_capability,
)
from kubelet_sim.kubelet.operation_retry import FailureReport, OperationRetry, failure_report
from kubelet_sim.kubelet.paths import (
    VOL_DATA_FILE,
    KubeletPaths,
    link_block_device,
    make_dirs,
    remove_mount_dir,
    save_volume_data,
    unlink_block_device,
)
from kubelet_sim.kubelet.volume_ownership import apply_fs_group
from kubelet_sim.kubelet.volume_reconstruction import VolumeKey, reconstruct_from_disk
from kubelet_sim.utils.clock import Clock, RealClock

ClientFor = Callable[[str], CsiClient]
PublishAttributes = Callable[[PodInfo, CsiVolume], Awaitable[dict[str, str]]]


class VolumeManager:
    def __init__(
        self,
        *,
        node_name: str,
        paths: KubeletPaths,
        client_for: ClientFor,
        clock: Clock | None = None,
        max_attempts: int = 6,
        secrets: SecretLookup | None = None,
        publish_attributes: PublishAttributes | None = None,
    ) -> None:
        self.node_name = node_name
        self.paths = paths
        self._client_for = client_for
        self._secrets = secrets
        # volume_context the kubelet adds at each NodePublishVolume of a filesystem volume
        # (the CSIDriver's tokenRequests: kubelet_sim.kubelet.service_account_tokens)
        self._publish_attributes = publish_attributes
        self.clock: Clock = clock or RealClock()
        self.retry = OperationRetry(self.clock, max_attempts)
        self._device_mounts: dict[VolumeKey, Path | None] = {}  # None: driver does not stage
        self._users: dict[VolumeKey, set[str]] = {}
        self._uncertain: set[tuple[str, str]] = set()  # (pod uid, spec name)
        # One operation at a time per volume on this node (the kubelet keys its pending
        # operations by volume; it lets SetUps of different pods overlap, we do not).
        self._locks: dict[VolumeKey, asyncio.Lock] = {}

    @property
    def max_attempts(self) -> int:
        return self.retry.max_attempts

    @max_attempts.setter
    def max_attempts(self, value: int) -> None:
        self.retry.max_attempts = value

    # -- bookkeeping --------------------------------------------------------------------

    def users(self, volume: CsiVolume) -> frozenset[str]:
        """UIDs of the pods on this node that have the volume set up."""
        return frozenset(self._users.get(_key(volume), set()))

    def is_device_mounted(self, volume: CsiVolume) -> bool:
        return _key(volume) in self._device_mounts

    def staging_path(self, volume: CsiVolume) -> Path:
        if volume.block:
            return self.paths.block_staging_path(volume.spec_name)
        return self.paths.device_mount_path(volume.driver, volume.volume_handle)

    def target_path(self, pod: PodInfo, volume: CsiVolume) -> Path:
        if volume.block:
            return self.paths.block_publish_path(volume.spec_name, pod.uid)
        return self.paths.pod_mount_path(pod.uid, volume.spec_name)

    # -- whole-pod convenience ------------------------------------------------------------

    async def mount(self, pod: PodInfo, volume: CsiVolume,
                    failed: FailureReport | None = None) -> Path:
        """What the reconciler does for a new pod volume: mount_device (once), then set_up.
        ``failed`` hears of every failed attempt (the kubelet's FailedMount events)."""
        if not volume.ephemeral:
            await self.mount_device(volume, failed)
        return await self.set_up(pod, volume, failed)

    async def unmount(self, pod: PodInfo, volume: CsiVolume) -> bool:
        """tear_down, then unmount_device when no other pod uses it; True when unstaged."""
        await self.tear_down(pod, volume)
        if volume.ephemeral:
            return False
        return await self.unmount_device(volume)

    # -- MountDevice / UnmountDevice --------------------------------------------------------

    async def mount_device(self, volume: CsiVolume,
                           failed: FailureReport | None = None) -> Path | None:
        """Stage the volume on the node; returns the staging path, or None when the driver
        does not stage. A no-op when the volume is already staged here."""
        if volume.ephemeral:
            raise ValueError("inline ephemeral volumes are not staged")
        key = _key(volume)
        async with self._lock(key):
            if key in self._device_mounts:
                return self._device_mounts[key]
            staged = await self.retry.run(
                f"mount_device/{key}", lambda: self._mount_device(volume),
                failure_report(failed, "MountVolume.MountDevice", volume))
            self._device_mounts[key] = staged
            return staged

    async def _mount_device(self, volume: CsiVolume) -> Path | None:
        client = self._client_for(volume.driver)
        caps = await self._capabilities(client)
        staging = self.staging_path(volume)
        make_dirs(staging)
        data_dir = self.paths.block_data_dir(volume.spec_name) if volume.block else staging.parent
        make_dirs(data_dir)
        save_volume_data(data_dir, {"driverName": volume.driver,
                                    "volumeHandle": volume.volume_handle})
        if not caps.stage_unstage:
            return None
        secrets = await self._secret(volume.node_stage_secret_ref, "NodeStageSecretRef")
        request = csi_pb2.NodeStageVolumeRequest(
            volume_id=volume.volume_handle,
            publish_context=dict(volume.publish_context),
            staging_target_path=str(staging),
            volume_capability=volume_capability(
                volume, single_node_multi_writer=caps.single_node_multi_writer,
                mount_group=caps.volume_mount_group, selinux=True),
            secrets=secrets,
            volume_context=dict(volume.volume_attributes),
        )
        try:
            await client.call(request, csi_pb2.NodeStageVolumeResponse)
        except CsiError as err:
            if err.final:
                remove_mount_dir(staging)
            raise
        return staging

    async def unmount_device(self, volume: CsiVolume) -> bool:
        """Unstage the volume unless a pod on this node still uses it; True when done."""
        key = _key(volume)
        async with self._lock(key):
            if self._users.get(key):
                return False
            await self.retry.run(f"unmount_device/{key}", lambda: self._unmount_device(volume))
            self._device_mounts.pop(key, None)
            return True

    async def _unmount_device(self, volume: CsiVolume) -> None:
        client = self._client_for(volume.driver)
        staging = self.staging_path(volume)
        data_dir = self.paths.block_data_dir(volume.spec_name) if volume.block else staging.parent
        if not (data_dir / VOL_DATA_FILE).exists() and _key(volume) not in self._device_mounts:
            return  # never staged here (the kubelet skips without vol_data.json)
        caps = await self._capabilities(client)
        if caps.stage_unstage:
            await client.call(csi_pb2.NodeUnstageVolumeRequest(
                volume_id=volume.volume_handle, staging_target_path=str(staging)),
                csi_pb2.NodeUnstageVolumeResponse)
        if not volume.block:
            remove_mount_dir(staging)
            return
        with contextlib.suppress(FileNotFoundError):
            (data_dir / VOL_DATA_FILE).unlink()
        for directory in (staging, data_dir, self.paths.block_global_map_path(volume.spec_name),
                          data_dir.parent):
            with contextlib.suppress(OSError):
                directory.rmdir()

    # -- SetUp / TearDown ---------------------------------------------------------------------

    async def set_up(self, pod: PodInfo, volume: CsiVolume,
                     failed: FailureReport | None = None) -> Path:
        """Publish the volume for the pod; returns the path the container sees. A no-op
        when the pod already has it (the kubelet's actual state says mounted)."""
        name = f"set_up/{pod.uid}/{volume.spec_name}"
        key = _key(volume, pod)
        async with self._lock(key):
            if pod.uid in self._users.get(key, set()):
                target = self.target_path(pod, volume)
            else:
                target = await self.retry.run(name, lambda: self._set_up(pod, volume),
                                              failure_report(failed, "MountVolume.SetUp", volume))
                self._users.setdefault(key, set()).add(pod.uid)
        if volume.block:
            return link_block_device(self.paths, pod.uid, volume.spec_name, target)
        return target

    async def _set_up(self, pod: PodInfo, volume: CsiVolume) -> Path:
        check_lifecycle_mode(volume.driver, volume.policy, volume.lifecycle_mode)
        client = self._client_for(volume.driver)
        handle = volume.handle_for(pod.uid)
        caps = await self._capabilities(client)
        secrets = await self._secret(volume.node_publish_secret_ref, "NodePublishSecretRef")
        staging = ""
        if not volume.ephemeral and caps.stage_unstage:
            staging = str(self.staging_path(volume))
        target = self.target_path(pod, volume)
        make_dirs(target.parent)
        context = dict(volume.volume_attributes)
        if volume.pod_info_on_mount and not volume.block:  # the block mapper sends the PV's only
            context.update(pod_info_attributes(pod, ephemeral=volume.ephemeral))
        if self._publish_attributes is not None and not volume.block:
            try:
                context.update(await self._publish_attributes(pod, volume))
            except ApiError as err:  # transient: the next attempt asks again
                raise RuntimeError("mounter.SetUpAt failed to get service account token "
                                   f"attributes: {err}") from None
        data_dir = self.paths.block_data_dir(volume.spec_name) if volume.block else target.parent
        make_dirs(data_dir)
        save_volume_data(data_dir, {
            "specVolumeID": volume.spec_name,
            "volumeHandle": handle,
            "driverName": volume.driver,
            "nodeName": self.node_name,
            "attachmentID": attachment_name(handle, volume.driver, self.node_name),
            "volumeLifecycleMode": volume.lifecycle_mode,
        })
        request = csi_pb2.NodePublishVolumeRequest(
            volume_id=handle,
            publish_context=dict(volume.publish_context),
            staging_target_path=staging,
            target_path=str(target),
            volume_capability=volume_capability(
                volume, access_mode="ReadWriteOnce" if volume.ephemeral else None,
                single_node_multi_writer=caps.single_node_multi_writer,
                mount_group=caps.volume_mount_group, selinux=True),
            readonly=volume.read_only,
            secrets=secrets,
            volume_context=context,
        )
        try:
            await client.call(request, csi_pb2.NodePublishVolumeResponse)
        except CsiError as err:
            if err.final:
                if not volume.block:
                    remove_mount_dir(target)
            else:
                self._uncertain.add((pod.uid, volume.spec_name))
            raise
        if not volume.block and not caps.volume_mount_group:
            self._apply_fs_group(pod, volume, target)
        self._uncertain.discard((pod.uid, volume.spec_name))
        return target

    def _apply_fs_group(self, pod: PodInfo, volume: CsiVolume, target: Path) -> None:
        """The kubelet's own fsGroup step after a publish (see `apply_fs_group`); a failure
        leaves the volume mounted but uncertain, so a teardown still unpublishes it."""
        try:
            apply_fs_group(volume, target)
        except VolumeOperationError:
            self._uncertain.add((pod.uid, volume.spec_name))
            raise

    async def republish(self, pod: PodInfo, volume: CsiVolume,
                        failed: FailureReport | None = None) -> None:
        """NodePublishVolume again for a volume the pod has set up (the reconciler's
        remount of a volume whose CSIDriver has ``requiresRepublish``); nothing when the
        pod does not have it. One attempt: a failure is reported and raised, and the
        pod's next sync tries again (the pod's worker is not held by a backoff)."""
        key = _key(volume, pod)
        async with self._lock(key):
            if pod.uid not in self._users.get(key, set()):
                return
            try:
                await self._set_up(pod, volume)
            except Exception as err:
                report = failure_report(failed, "MountVolume.SetUp", volume)
                if report is not None:
                    report(err)
                raise

    async def tear_down(self, pod: PodInfo, volume: CsiVolume) -> None:
        """Unpublish the volume from the pod and remove the pod's volume directory."""
        name = f"tear_down/{pod.uid}/{volume.spec_name}"
        key = _key(volume, pod)
        async with self._lock(key):
            if volume.block:
                unlink_block_device(self.paths, pod.uid, volume.spec_name)
            await self.retry.run(name, lambda: self._tear_down(pod, volume))
            users = self._users.get(key)
            if users is not None:
                users.discard(pod.uid)
                if not users:
                    del self._users[key]

    async def _tear_down(self, pod: PodInfo, volume: CsiVolume) -> None:
        client = self._client_for(volume.driver)
        target = self.target_path(pod, volume)
        known = pod.uid in self._users.get(_key(volume, pod), set())
        uncertain = (pod.uid, volume.spec_name) in self._uncertain
        if known or uncertain or os.path.lexists(target):
            await client.call(csi_pb2.NodeUnpublishVolumeRequest(
                volume_id=volume.handle_for(pod.uid), target_path=str(target)),
                csi_pb2.NodeUnpublishVolumeResponse)
        self._uncertain.discard((pod.uid, volume.spec_name))
        if volume.block:
            with contextlib.suppress(OSError):
                target.parent.rmdir()
        else:
            remove_mount_dir(target)

    # -- kubelet restart ------------------------------------------------------------------------

    def reconstruct(self) -> int:
        """Rebuild what is staged and which pods use what from the ``vol_data.json`` files on
        disk, as a restarted kubelet does; returns how many pod volumes were found."""
        found = reconstruct_from_disk(self.paths)
        for key, path in found.device_mounts.items():
            self._device_mounts.setdefault(key, path)
        for key, pods in found.users.items():
            self._users.setdefault(key, set()).update(pods)
        return found.pod_volumes

    # -- expand and stats ---------------------------------------------------------------------

    async def expand(self, volume: CsiVolume, new_size_bytes: int,
                     pod: PodInfo | None = None) -> int | None:
        """NodeExpandVolume when the driver advertises EXPAND_VOLUME (online when `pod` has the
        volume published: volume_path is its target). None when the driver does not expand."""
        client = self._client_for(volume.driver)

        async def expand_once() -> int | None:
            caps = await self._capabilities(client)
            if not caps.expand:
                return None
            volume_path = self.target_path(pod, volume) if pod else self.staging_path(volume)
            staged = caps.stage_unstage and not volume.ephemeral
            response = await client.call(csi_pb2.NodeExpandVolumeRequest(
                volume_id=volume.handle_for(pod.uid) if pod else volume.volume_handle,
                volume_path=str(volume_path),
                capacity_range=csi_pb2.CapacityRange(required_bytes=new_size_bytes),
                staging_target_path=str(self.staging_path(volume)) if staged else "",
                volume_capability=volume_capability(
                    volume, single_node_multi_writer=caps.single_node_multi_writer),
                secrets=await self._secret(volume.node_expand_secret_ref, "NodeExpandSecretRef"),
            ), csi_pb2.NodeExpandVolumeResponse)
            return response.capacity_bytes

        async with self._lock(_key(volume, pod)):  # not beside a (un)publish of it
            return await self.retry.run(f"expand/{volume.driver}/{volume.spec_name}",
                                        expand_once)

    async def stats(self, pod: PodInfo, volume: CsiVolume) -> VolumeStats | None:
        """NodeGetVolumeStats for the pod's publish path; None when not advertised."""
        client = self._client_for(volume.driver)

        async def stats_once() -> VolumeStats | None:
            caps = await self._capabilities(client)
            if not caps.volume_stats:
                return None
            staged = caps.stage_unstage and not volume.ephemeral
            response = await client.call(csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=volume.handle_for(pod.uid),
                volume_path=str(self.target_path(pod, volume)),
                staging_target_path=str(self.staging_path(volume)) if staged else "",
            ), csi_pb2.NodeGetVolumeStatsResponse)
            return VolumeStats.from_response(response)

        return await self.retry.run(f"stats/{pod.uid}/{volume.spec_name}", stats_once)

    # -- helpers --------------------------------------------------------------------------------

    async def _secret(self, ref: SecretRef | None, field_name: str) -> dict[str, str]:
        """The data of a secret reference ({} without one), read now, as the kubelet reads
        it for each call; LookupError with the kubelet's sentence when it does not exist."""
        if not ref:
            return {}
        try:
            if self._secrets is None:
                raise LookupError("no secrets are configured on this node")
            return dict(await self._secrets.get(ref))
        except LookupError as err:
            raise LookupError(f"fetching {field_name} {ref.get('namespace', '')}/"
                              f"{ref.get('name', '')} failed: {err}") from None

    def _lock(self, key: VolumeKey) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    @staticmethod
    async def _capabilities(client: CsiClient) -> NodeCapabilities:
        return NodeCapabilities.from_response(await client.call(
            csi_pb2.NodeGetCapabilitiesRequest(),
            csi_pb2.NodeGetCapabilitiesResponse))


def _key(volume: CsiVolume, pod: PodInfo | None = None) -> VolumeKey:
    handle = volume.handle_for(pod.uid) if (volume.ephemeral and pod) else volume.volume_handle
    return (volume.driver, handle)
