"""CSI conformance case about capacity-aware scheduling (see
:mod:`kubelet_sim.conformance.csi`), after e2e's csistoragecapacity and capacity tests:
``capacity/scheduling``."""

from __future__ import annotations

from csi_protos import csi_pb2
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import format_storage, parse_storage
from kubelet_sim.client.in_process import as_client
from kubelet_sim.client.writes import write_object
from kubelet_sim.conformance.csi_run import CsiRun, CtrlRpc
from kubelet_sim.conformance.report import Skip
from kubelet_sim.controllers.storage_capacity_check import NOT_ENOUGH_SPACE

GiB = 1 << 30
LARGEST_CLAIM = 1 << 60  # a driver reporting more room than this is not tried over it

Segment = tuple[tuple[str, str], ...]


async def capacity_scheduling(run: CsiRun, ns: str) -> None:
    """With ``storageCapacity: true`` on the driver's CSIDriver (set for the case, then
    put back), the provisioner role publishes one CSIStorageCapacity per node segment for
    a WaitForFirstConsumer class, each holding what GetCapacity answers for that segment;
    a claim bigger than every segment's limit keeps its pod Pending for the storage, and
    a 1Gi claim's pod runs (when some segment has room for it)."""
    run.needs_controller(CtrlRpc.GET_CAPACITY, "capacity reporting")
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    before = await _set_storage_capacity(run, True)
    sc = run.storage_class(f"{ns}-sc", volume_binding_mode="WaitForFirstConsumer")
    try:
        await run.cluster.settle()
        published = _published(run, sc)
        segments = {tuple(sorted(run.node_topology(n).items())) for n in run.nodes}
        assert set(published) == segments, \
            f"CSIStorageCapacity objects for segments {sorted(published)}, the nodes have " \
            f"{sorted(segments)}"
        for segment, obj in published.items():
            answer = await _get_capacity(run, segment)
            assert parse_storage(obj.body.get("capacity", "0")) == answer.available_capacity, \
                f"{obj.name} holds {obj.body.get('capacity')} for {dict(segment)}, " \
                f"GetCapacity answers {answer.available_capacity}"
        biggest = max(_limit(obj) for obj in published.values())
        if biggest + GiB > LARGEST_CLAIM:
            raise Skip(f"the driver reports {biggest} bytes of room: no claim is bigger")
        run.claim(ns, "too-big", sc, size=format_storage(biggest + GiB))
        run.pod(ns, "too-big", ["too-big"])
        await run.cluster.settle()
        waiting = run.api.get("Pod", "too-big", ns)
        assert not waiting.spec.get("nodeName"), \
            f"the pod of a claim bigger than every segment's room ({biggest} bytes) was " \
            f"bound to {waiting.spec.get('nodeName')}"
        why = _why(waiting.status)
        assert NOT_ENOUGH_SPACE in why, f"the pod of a claim too big waits for {why!r}"
        if biggest >= GiB:
            run.claim(ns, "fits", sc, size="1Gi")
            await run.running_pod(ns, "fits", ["fits"])
    finally:
        await run.delete_together("Pod", ["too-big", "fits"], ns)
        await run.delete_together("PersistentVolumeClaim", ["too-big", "fits"], ns)
        await run.delete("StorageClass", sc)
        await _set_storage_capacity(run, before)
        await run.cluster.settle()


async def _set_storage_capacity(run: CsiRun, value: bool) -> bool:
    """Set the CSIDriver's ``storageCapacity``; what it was before."""
    before = run.api.get("CSIDriver", run.driver).spec.get("storageCapacity") is True

    def mutate(obj: Resource) -> bool:
        if obj.spec.get("storageCapacity") is value:
            return False
        obj.spec["storageCapacity"] = value
        return True

    await write_object(as_client(run.api), "CSIDriver", run.driver, "", mutate)
    return before


def _published(run: CsiRun, sc: str) -> dict[Segment, Resource]:
    found: dict[Segment, Resource] = {}
    for obj in run.api.list("CSIStorageCapacity").items:
        if obj.body.get("storageClassName") != sc:
            continue
        topology: JSON = obj.body.get("nodeTopology") or {}
        segment = tuple(sorted((topology.get("matchLabels") or {}).items()))
        assert segment not in found, f"two CSIStorageCapacity objects for {dict(segment)}"
        found[segment] = obj
    return found


async def _get_capacity(run: CsiRun, segment: Segment) -> csi_pb2.GetCapacityResponse:
    request = csi_pb2.GetCapacityRequest(parameters=run.target.parameters)
    request.accessible_topology.segments.update(dict(segment))
    return await run.controller_call(request, csi_pb2.GetCapacityResponse)


def _limit(obj: Resource) -> int:
    value = obj.body.get("maximumVolumeSize")
    if value is None:
        value = obj.body.get("capacity")
    return parse_storage(value) if value is not None else 0


def _why(status: JSON) -> str:
    return "; ".join(str(c.get("message")) for c in status.get("conditions", [])
                     if c.get("status") == "False" and c.get("message"))
