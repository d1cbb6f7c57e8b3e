"""The attach/detach controller (kube-controller-manager) for CSI volumes.

Desired state: every (PV, node) pair where a scheduled pod that has not terminated uses a
claim bound to a CSI PV whose driver requires attach (no CSIDriver object means attach is
required, as the kubelet's CSI plugin decides). For each pair it creates the
VolumeAttachment ``csi-<sha256(volumeHandle + driver + nodeName)>`` (``spec.attacher``,
``nodeName``, ``source.persistentVolumeName``); once the attacher reports it attached, the
volume is listed in the node's ``status.volumesAttached`` (the kubelet waits for that).

Detach is the same handshake as in Kubernetes: when no pod on the node needs the volume any
more AND the kubelet no longer lists it in ``status.volumesInUse`` (it has unmounted it),
the volume leaves ``volumesAttached`` and the VolumeAttachment is deleted; external-attacher
then unpublishes it and drops its finalizer.

While the attacher reports an ``attachError``, every pod waiting for the volume gets a
``FailedAttachVolume`` warning carrying it, as ``kubectl describe pod`` shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.client.events import NORMAL, WARNING
from kubelet_sim.client.indexes import POD_CLAIMS
from kubelet_sim.client.writes import write_status
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.common import (
    csi_driver_attach_required,
    unique_volume_name,
)
from kubelet_sim.csi.naming import attachment_name


@dataclass(frozen=True)
class WantedAttachment:
    pv_name: str
    node_name: str
    driver: str
    volume_handle: str
    pods: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # (namespace, name)

    @property
    def va_name(self) -> str:
        return attachment_name(self.volume_handle, self.driver, self.node_name)

    @property
    def unique_name(self) -> str:
        return unique_volume_name(self.driver, self.volume_handle)


def pod_terminated(pod: Resource) -> bool:
    """The ADC's test: phase Succeeded/Failed, or deleted with no container still running."""
    if pod.status.get("phase") in ("Succeeded", "Failed"):
        return True
    if not pod.is_terminating:
        return False
    statuses = [*(pod.status.get("initContainerStatuses") or []),
                *(pod.status.get("containerStatuses") or [])]
    return not any("running" in (s.get("state") or {}) for s in statuses)


class AttachDetachController(Controller):
    name = "attachdetach-controller"
    kinds = ("Pod", "PersistentVolumeClaim", "PersistentVolume", "VolumeAttachment", "Node",
             "CSIDriver")
    # kube-controller-manager's reconcilerLoopPeriod: the whole desired state is compared
    # with the actual one at most every 100 ms, however many changes come in between
    min_pass_seconds = 0.1

    async def reconcile(self) -> bool:
        wanted = self._desired()
        reported = {node.name: {str(e.get("name")) for e in
                                node.status.get("volumesAttached") or []}
                    for node in self.cache.list("Node")}
        changed = False
        for want in sorted(wanted.values(), key=lambda w: w.va_name):
            changed = await self.step(f"attach/{want.va_name}", self._attach, want,
                                      reported.get(want.node_name)) or changed
        for va in self.cache.list("VolumeAttachment"):
            if va.name not in wanted and not va.is_terminating:
                changed = await self.step(f"detach/{va.name}",
                                          self._detach, va) or changed
        attached = self._attached_by_node()
        for node in self.cache.list("Node"):
            changed = await self.step(f"node/{node.name}", self._prune_reported, node,
                                      attached.get(node.name, set())) or changed
        return changed

    def _desired(self) -> dict[str, WantedAttachment]:
        wanted: dict[str, WantedAttachment] = {}
        users: dict[tuple[str, str], Resource] = {}  # every pod that uses a claim
        for key in self.cache.index_values("Pod", POD_CLAIMS):
            for pod in self.cache.by_index("Pod", POD_CLAIMS, key):
                users[(pod.namespace, pod.name)] = pod
        for _, pod in sorted(users.items()):
            node_name = pod.spec.get("nodeName")
            if not node_name or pod_terminated(pod):
                continue
            for volume in pod.spec.get("volumes") or []:
                claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if not claim_name:
                    continue
                pvc = self.cache.get("PersistentVolumeClaim", claim_name, pod.namespace)
                pv_name = pvc.spec.get("volumeName") if pvc else None
                pv = self.cache.get("PersistentVolume", pv_name) if pv_name else None
                csi = (pv.spec.get("csi") or {}) if pv else {}
                if pv is None or not csi:
                    continue
                driver = str(csi["driver"])
                if not csi_driver_attach_required(self.cache, driver):
                    continue
                want = WantedAttachment(pv.name, str(node_name), driver,
                                        str(csi["volumeHandle"]))
                seen = wanted.get(want.va_name, want)
                wanted[want.va_name] = replace(seen, pods=(*seen.pods,
                                                           (pod.namespace, pod.name)))
        return wanted

    async def _attach(self, want: WantedAttachment, reported: set[str] | None) -> bool:
        """``reported``: the volumes the cached node listed in ``volumesAttached`` when
        the pass began (None: no such node)."""
        va = self.cache.get("VolumeAttachment", want.va_name)
        if va is None:
            obj = new("VolumeAttachment", want.va_name, spec={
                "attacher": want.driver, "nodeName": want.node_name,
                "source": {"persistentVolumeName": want.pv_name}})
            try:
                await self.client.create(obj)
            except AlreadyExists:
                return False
            return True
        if va.is_terminating:
            return False
        if va.status.get("attached") is not True:
            self._report_attach_error(want, va)
            return False
        if reported is None or want.unique_name in reported:
            return False  # already reported (read from the cache: no write to consider)
        if not await self._report_attached(want.node_name, want.unique_name, True):
            return False
        for namespace, name in want.pods:  # the volume's trailing space is Kubernetes'
            self.event("Pod", namespace, name, NORMAL, "SuccessfulAttachVolume",
                       f'AttachVolume.Attach succeeded for volume "{want.pv_name}" ')
        return True

    def _report_attach_error(self, want: WantedAttachment, va: Resource) -> None:
        error = (va.status.get("attachError") or {}).get("message")
        if not error:
            return
        for namespace, name in want.pods:
            self.event("Pod", namespace, name, WARNING, "FailedAttachVolume",
                       f'AttachVolume.Attach failed for volume "{want.pv_name}" : {error}')

    async def _detach(self, va: Resource) -> bool:
        node_name = str(va.spec.get("nodeName"))
        node = self.cache.get("Node", node_name)
        pv = self.cache.get("PersistentVolume",
                            str((va.spec.get("source") or {}).get("persistentVolumeName")))
        if node is not None and pv is not None:
            unique = unique_volume_name(str(va.spec.get("attacher")),
                                        str((pv.spec.get("csi") or {}).get("volumeHandle")))
            if unique in (node.status.get("volumesInUse") or []):
                return False  # the kubelet still has it mounted
            await self._report_attached(node_name, unique, False)
        try:
            await self.client.delete("VolumeAttachment", va.name)
        except NotFound:
            return False
        return True

    async def _report_attached(self, node_name: str, unique: str, attached: bool) -> bool:
        def mutate(node: Resource) -> bool:
            entries: list[JSON] = list(node.status.get("volumesAttached") or [])
            present = any(e.get("name") == unique for e in entries)
            if present == attached:
                return False
            if attached:
                entries.append({"name": unique, "devicePath": ""})
            else:
                entries = [e for e in entries if e.get("name") != unique]
            node.status["volumesAttached"] = sorted(entries, key=lambda e: str(e["name"]))
            return True

        try:
            return await write_status(self.client, "Node", node_name, "", mutate,
                                      cached=self.cache.get("Node", node_name)) is not None
        except NotFound:
            return False

    def _attached_by_node(self) -> dict[str, set[str]]:
        """The unique volume names each node has a VolumeAttachment for."""
        out: dict[str, set[str]] = {}
        for va in self.cache.list("VolumeAttachment"):
            pv = self.cache.get("PersistentVolume",
                                str((va.spec.get("source") or {}).get("persistentVolumeName")))
            if pv is not None:
                out.setdefault(str(va.spec.get("nodeName")), set()).add(unique_volume_name(
                    str(va.spec.get("attacher")),
                    str((pv.spec.get("csi") or {}).get("volumeHandle"))))
        return out

    async def _prune_reported(self, node: Resource, attached: set[str]) -> bool:
        """Drop ``volumesAttached`` entries whose VolumeAttachment is gone."""
        stale = [e["name"] for e in node.status.get("volumesAttached") or []
                 if e.get("name") not in attached]
        changed = False
        for name in stale:
            changed = await self._report_attached(node.name, name, False) or changed
        return changed
