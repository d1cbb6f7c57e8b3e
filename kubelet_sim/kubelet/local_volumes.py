"""The volumes the kubelet makes itself, as real files on the node:
``pods/<uid>/volumes/<plugin dir>/<volume name>`` for

- ``emptyDir`` (``kubernetes.io~empty-dir``): an empty directory, 0777. ``medium:
  Memory`` is a plain directory too (no tmpfs: the simulator mounts nothing);
  ``sizeLimit`` is measured (`empty_dir_over_limit`; `empty_dir_eviction` evicts).
- ``configMap`` (``kubernetes.io~configmap``), ``secret`` (``kubernetes.io~secret``),
  ``downwardAPI`` (``kubernetes.io~downward-api``) and ``projected``
  (``kubernetes.io~projected``): the directory (0777) holds the files written by the
  atomic writer (`atomic_writer`: ``..data`` → timestamped directory, a link per key).
  A missing ConfigMap or Secret that is not ``optional`` fails the mount with the
  kubelet's ``configmap "x" not found`` / ``secret "x" not found``; an optional one gives
  an empty directory. A projected ``serviceAccountToken`` is minted by TokenRequest for
  the pod's ServiceAccount, bound to the pod (the kubelet's token manager: kept, and
  asked again past 80% of its life); its file has ``defaultMode``, or 0600 when the pod
  has an ``fsGroup``. ``clusterTrustBundle`` sources are skipped.
- with the pod's ``fsGroup``, each volume but hostPath gets the kubelet's
  SetVolumeOwnership (`volume_ownership`): the group, group read (and write for an
  emptyDir) and setgid directories; ``fsGroupChangePolicy: OnRootMismatch`` honoured.
- ``hostPath``: checked in the node's root directory (`host_path`); no pod directory.

ConfigMaps, Secrets and the node are read from the shared informer cache (kept by a
watch, as the kubelet's watch-based ConfigMap and Secret managers). A running pod is
`stale` once an object it mounts changed (its resourceVersion), a token is due for
refresh or its labels/annotations changed under a downwardAPI volume; the kubelet then
writes its files again (`set_up` is idempotent: an unchanged payload is not rewritten).
Everything goes with the pod's directory when the pod is torn down.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubelet_sim.api.errors import ApiError
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import Quantity, QuantityError
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import SharedCache, shared_cache
from kubelet_sim.kubelet.atomic_writer import FileProjection, Payload, write_payload
from kubelet_sim.kubelet.host_path import HostPathError, set_up_host_path
from kubelet_sim.kubelet.paths import (
    CSI_PLUGIN_NAME,
    KubeletPaths,
    escape_qualified_name,
    make_dirs,
    remove_pod_dir,
)
from kubelet_sim.kubelet.pod_volumes import pod_info
from kubelet_sim.kubelet.service_account_tokens import TokenManager
from kubelet_sim.kubelet.volume_ownership import set_volume_ownership
from kubelet_sim.kubelet.volume_payloads import (
    PayloadError,
    aggregate,
    config_map_payload,
    default_mode_of,
    downward_api_payload,
    secret_payload,
)
from kubelet_sim.utils.clock import Clock

# volume source field -> the plugin's directory under pods/<uid>/volumes
PLUGIN_DIRS = {
    "emptyDir": "kubernetes.io~empty-dir",
    "configMap": "kubernetes.io~configmap",
    "secret": "kubernetes.io~secret",
    "downwardAPI": "kubernetes.io~downward-api",
    "projected": "kubernetes.io~projected",
}
LOCAL_SOURCES = (*PLUGIN_DIRS, "hostPath")
VOLUME_DIR_MODE = 0o777
DEFAULT_TOKEN_SECONDS = 3600

SourceKey = tuple[str, str, str]  # (kind, namespace, name)


def local_source(volume: JSON) -> str | None:
    """The volume's source field when the kubelet makes it itself, else None."""
    return next((key for key in LOCAL_SOURCES if key in volume), None)


@dataclass
class _Seen:
    """What a pod's files were last written from."""

    sources: dict[SourceKey, str | None] = field(default_factory=dict)  # resourceVersions
    refresh_at: datetime | None = None  # the first projected token due for refresh
    downward: tuple[Any, ...] | None = None  # labels and annotations, when they are used


class LocalVolumes:
    """The node's emptyDir, configMap, secret, downwardAPI, projected and hostPath
    volumes (see the module's text)."""

    def __init__(self, client: KubeClient, paths: KubeletPaths, node_name: str,
                 node_root: Path, clock: Clock, tokens: TokenManager) -> None:
        self.client = client
        # ConfigMaps, Secrets and the Node read from the informer cache, as the kubelet's
        # watch-based managers do
        self.cache: SharedCache = shared_cache(feed_source(client))
        self.paths = paths
        self.node_name = node_name
        self.node_root = node_root
        self.clock = clock
        self.tokens = tokens
        self._seen: dict[str, _Seen] = {}  # pod uid -> what its files came from

    def volume_dir(self, pod_uid: str, source: str, name: str) -> Path:
        return self.paths.pods_dir / pod_uid / "volumes" / PLUGIN_DIRS[source] / name

    # -- set up ------------------------------------------------------------------------

    async def set_up(self, pod: Resource) -> list[str]:
        """Make (or bring up to date) every local volume of ``pod``; the kubelet's
        FailedMount messages of those that failed (empty when all are set up)."""
        seen = _Seen()
        failures: list[str] = []
        for volume in pod.spec.get("volumes") or []:
            source = local_source(volume)
            if source is None:
                continue
            name = str(volume.get("name", ""))
            try:
                await self._set_up_one(pod, source, name, volume.get(source) or {}, seen)
            except (PayloadError, HostPathError, ApiError, OSError, ValueError) as err:
                failures.append(f'MountVolume.SetUp failed for volume "{name}" : {err}')
        self._seen[pod.metadata.uid] = seen
        return failures

    async def _set_up_one(self, pod: Resource, source: str, name: str, spec: JSON,
                          seen: _Seen) -> None:
        if source == "hostPath":
            set_up_host_path(self.node_root, spec)
            return
        payload: Payload | None = None
        if source == "configMap":
            payload = self._object_payload(pod, "ConfigMap", spec, spec.get("items") or [],
                                           default_mode_of(spec), seen)
        elif source == "secret":
            secret_spec = {**spec, "name": spec.get("secretName", "")}
            payload = self._object_payload(pod, "Secret", secret_spec,
                                           spec.get("items") or [], default_mode_of(spec), seen)
        elif source == "downwardAPI":
            seen.downward = _downward_fields(pod)
            payload = downward_api_payload(spec.get("items") or [], pod, self._allocatable(),
                                           default_mode_of(spec))
        elif source == "projected":
            payload = await self._projected_payload(pod, spec, seen)
        directory = self.volume_dir(pod.metadata.uid, source, name)
        if not directory.is_dir():
            make_dirs(directory.parent)
            directory.mkdir(mode=VOLUME_DIR_MODE, exist_ok=True)
            os.chmod(directory, VOLUME_DIR_MODE)
        if payload is not None:
            write_payload(directory, payload, self.clock.now())
        context = pod.spec.get("securityContext") or {}
        if context.get("fsGroup") is not None:  # SetVolumeOwnership; only emptyDir is writable
            set_volume_ownership(directory, int(context["fsGroup"]),
                                 change_policy=str(context.get("fsGroupChangePolicy") or ""),
                                 read_only=source != "emptyDir")

    def _object_payload(self, pod: Resource, kind: str, spec: JSON, items: list[JSON],
                        default_mode: int, seen: _Seen) -> Payload:
        name = str(spec.get("name", ""))
        optional = bool(spec.get("optional"))
        found = self.cache.get(kind, name, pod.namespace)
        seen.sources[(kind, pod.namespace, name)] = (
            found.metadata.resource_version if found is not None else None)
        if found is None and not optional:
            raise PayloadError(f'{kind.lower()} "{name}" not found')
        if kind == "ConfigMap":
            return config_map_payload(items, found, default_mode, optional)
        return secret_payload(items, found, default_mode, optional)

    async def _projected_payload(self, pod: Resource, spec: JSON, seen: _Seen) -> Payload:
        default_mode = default_mode_of(spec)
        payload: Payload = {}
        errors: list[str] = []
        for source in spec.get("sources") or []:
            try:
                if "configMap" in source:
                    cm = source["configMap"] or {}
                    payload.update(self._object_payload(pod, "ConfigMap", cm,
                                                        cm.get("items") or [], default_mode,
                                                        seen))
                elif "secret" in source:
                    sec = source["secret"] or {}
                    payload.update(self._object_payload(pod, "Secret", sec,
                                                        sec.get("items") or [], default_mode,
                                                        seen))
                elif "downwardAPI" in source:
                    seen.downward = _downward_fields(pod)
                    payload.update(downward_api_payload(
                        (source["downwardAPI"] or {}).get("items") or [], pod,
                        self._allocatable(), default_mode))
                elif "serviceAccountToken" in source:
                    path, projection = await self._token_file(
                        pod, source["serviceAccountToken"] or {}, default_mode, seen)
                    payload[path] = projection
                # clusterTrustBundle: not served here; skipped
            except (PayloadError, ApiError) as err:
                errors.append(str(err))
        if errors:
            raise PayloadError(aggregate(errors))
        return payload

    async def _token_file(self, pod: Resource, spec: JSON, default_mode: int,
                          seen: _Seen) -> tuple[str, FileProjection]:
        audience = str(spec.get("audience") or "")
        audiences = [audience] if audience else []
        seconds = int(spec.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
        info = pod_info(pod)
        try:
            status = await self.tokens.token(info, audiences, seconds)
        except ApiError as err:  # the kubelet's token manager's wording
            raise PayloadError(f"failed to fetch token: {err}") from None
        due = self.tokens.refresh_due(info, audiences, seconds)
        if due is not None and (seen.refresh_at is None or due < seen.refresh_at):
            seen.refresh_at = due
        has_fs_group = (pod.spec.get("securityContext") or {}).get("fsGroup") is not None
        mode = 0o600 if has_fs_group else default_mode
        return str(spec.get("path", "")), FileProjection(str(status["token"]).encode(), mode)

    def _allocatable(self) -> dict[str, Any]:
        node = self.cache.get("Node", self.node_name)
        return dict((node.status.get("allocatable") if node is not None else None) or {})

    # -- keeping them current ------------------------------------------------------------

    def stale(self, pod: Resource) -> bool:
        """Whether ``pod``'s files need writing again (an object it mounts changed, a
        token is due, its labels/annotations changed; or the kubelet has not written
        them since it started)."""
        seen = self._seen.get(pod.metadata.uid)
        if seen is None:
            return any(local_source(v) for v in pod.spec.get("volumes") or [])
        cache = self.cache
        for (kind, namespace, name), version in seen.sources.items():
            found = cache.get(kind, name, namespace)
            if (found.metadata.resource_version if found is not None else None) != version:
                return True
        if seen.refresh_at is not None and self.clock.now() > seen.refresh_at:
            return True
        return seen.downward is not None and seen.downward != _downward_fields(pod)

    def forget(self, pod_uid: str) -> None:
        self._seen.pop(pod_uid, None)

    # -- emptyDir sizeLimit --------------------------------------------------------------

    def empty_dir_over_limit(self, pod: Resource) -> list[str]:
        """The kubelet's eviction messages for each emptyDir of ``pod`` using more than
        its ``sizeLimit`` (bytes of the files in it)."""
        over: list[str] = []
        for volume in pod.spec.get("volumes") or []:
            spec = volume.get("emptyDir")
            if spec is None or not (spec or {}).get("sizeLimit"):
                continue
            try:
                limit = Quantity.parse(spec["sizeLimit"]).value()
            except QuantityError:
                continue
            name = str(volume.get("name", ""))
            used = directory_usage(self.volume_dir(pod.metadata.uid, "emptyDir", name))
            if used > limit:
                over.append(f'Usage of EmptyDir volume "{name}" exceeds the limit '
                            f'"{spec["sizeLimit"]}". ')
        return over


def remove_orphaned_pod_dirs(paths: KubeletPaths, known: set[str]) -> list[str]:
    """The kubelet's cleanup of orphaned pod directories, at start: ``pods/<uid>`` of a pod
    it does not run any more (``known``: the uids bound here) goes when it holds only
    volumes the kubelet made itself (a CSI volume there is left to the volume manager).
    Returns the uids removed."""
    removed: list[str] = []
    csi_dir = escape_qualified_name(CSI_PLUGIN_NAME)
    if not paths.pods_dir.is_dir():
        return removed
    for pod_dir in sorted(paths.pods_dir.iterdir()):
        if pod_dir.name in known or not pod_dir.is_dir():
            continue
        if (pod_dir / "volumes" / csi_dir).exists() or (pod_dir / "volumeDevices").exists():
            continue
        if remove_pod_dir(pod_dir):
            removed.append(pod_dir.name)
    return removed


def directory_usage(directory: Path) -> int:
    """Bytes of the regular files under ``directory`` (0 when it is not there)."""
    total = 0
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / name).lstat().st_size
    return total


def _downward_fields(pod: Resource) -> tuple[Any, ...]:
    meta = pod.metadata
    return (tuple(sorted((meta.labels or {}).items())),
            tuple(sorted((meta.annotations or {}).items())))
