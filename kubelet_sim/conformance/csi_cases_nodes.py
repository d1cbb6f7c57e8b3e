"""CSI conformance cases about volumes and nodes (see :mod:`kubelet_sim.conformance.csi`):
one volume written and read from two nodes, the per-node volume limit, and an attach that
hangs past the attacher's timeout."""

from __future__ import annotations

import grpc

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON
from kubelet_sim.api.selectors import node_selector_matches
from kubelet_sim.conformance.csi_run import (
    CsiRun,
    CtrlRpc,
    fault_control,
    read_token,
    write_token,
)
from kubelet_sim.conformance.report import Skip
from kubelet_sim.controllers.volume_limits import EXCEEDED
from kubelet_sim.csi.client import CsiError
from kubelet_sim.sidecars.attacher import ExternalAttacher

Mode = csi_pb2.VolumeCapability.AccessMode
MOST_PODS = 16  # volume-limits tries limit + 1 pods; a larger limit is skipped, not tried
ATTACH_TIMEOUT = 1.0  # the attacher's --timeout while ControllerPublishVolume hangs


def _node_affinity(topology: list[dict[str, str]]) -> JSON | None:
    """A PV's node affinity for a volume's accessible_topology (none: every node)."""
    if not topology:
        return None
    return {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}
                              for k, v in sorted(segments.items())]}
        for segments in topology]}}


async def _create_rwx_volume(run: CsiRun, name: str) -> csi_pb2.Volume:
    """CreateVolume for a MULTI_NODE_MULTI_WRITER file system, with no topology asked
    for; a driver refusing the access mode (INVALID_ARGUMENT naming it) skips the case."""
    request = csi_pb2.CreateVolumeRequest(
        name=name, capacity_range=csi_pb2.CapacityRange(required_bytes=1 << 30),
        parameters=run.target.parameters,
        volume_capabilities=[csi_pb2.VolumeCapability(
            mount=csi_pb2.VolumeCapability.MountVolume(),
            access_mode=Mode(mode=Mode.MULTI_NODE_MULTI_WRITER))])
    try:
        made = await run.controller_call(request, csi_pb2.CreateVolumeResponse)
    except CsiError as err:
        if err.code == grpc.StatusCode.INVALID_ARGUMENT and "access mode" in err.message.lower():
            raise Skip(f"the driver does not offer ReadWriteMany volumes: {err}") from None
        raise
    return made.volume


async def rwx_across_nodes(run: CsiRun, ns: str) -> None:
    """A ReadWriteMany volume used by pods on two nodes at once: what one writes the other
    reads (e2e multivolume, different nodes). The volume is made with CreateVolume and no
    topology requirement and handed over as a pre-provisioned PV (an e2e pattern too): a
    claim provisioned for one pod's node may be confined to that node."""
    if len(run.nodes) < 2:
        raise Skip("needs two nodes")
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    volume = await _create_rwx_volume(run, f"{ns}-rwx")
    pv_name = f"{ns}-rwx"
    try:
        await _share_across_nodes(run, ns, volume, pv_name)
    except BaseException:
        await _remove_rwx(run, ns, pv_name, volume.volume_id, quiet=True)
        raise
    await _remove_rwx(run, ns, pv_name, volume.volume_id, quiet=False)


async def _share_across_nodes(run: CsiRun, ns: str, volume: csi_pb2.Volume,
                              pv_name: str) -> None:
    topology = [dict(t.segments) for t in volume.accessible_topology]
    affinity = _node_affinity(topology)
    reach = [n for n in run.nodes if affinity is None or node_selector_matches(
        affinity["required"]["nodeSelectorTerms"], run.api.get("Node", n).labels,
        {"metadata.name": n})]
    if len(reach) < 2:
        raise Skip(f"the driver's volume is reachable from {reach or 'no node'} only "
                   f"(accessible_topology {topology})")
    run.api.create(builders.csi_persistent_volume(
        pv_name, driver=run.driver, volume_handle=volume.volume_id, storage="1Gi",
        access_modes=["ReadWriteMany"], volume_attributes=dict(volume.volume_context),
        reclaim_policy="Retain", storage_class="", node_affinity=affinity,
        claim_ref={"namespace": ns, "name": "shared"}))
    claim = builders.persistent_volume_claim("shared", ns, storage="1Gi", storage_class="",
                                             access_modes=["ReadWriteMany"])
    claim.spec["volumeName"] = pv_name
    run.api.create(claim)
    first = await run.running_pod(ns, "first", ["shared"], reach[0])
    second = await run.running_pod(ns, "second", ["shared"], reach[1])
    for writer, reader in ((first, second), (second, first)):
        token = write_token(run.published(writer, "shared"))
        got = read_token(run.published(reader, "shared"))
        assert got == token, f"the pod on {reader.spec.get('nodeName')} read {got!r}; " \
            f"the one on {writer.spec.get('nodeName')} wrote {token!r}"


async def _remove_rwx(run: CsiRun, ns: str, pv_name: str, volume_id: str, quiet: bool) -> None:
    """Pods, claim and PV go first (the volume is unpublished), then DeleteVolume; after
    a failure (``quiet``) an error of DeleteVolume does not hide the first one."""
    await run.delete_together("Pod", ["first", "second"], ns)
    await run.delete("PersistentVolumeClaim", "shared", ns)
    await run.delete("PersistentVolume", pv_name)
    try:
        await run.controller_call(csi_pb2.DeleteVolumeRequest(volume_id=volume_id),
                                  csi_pb2.DeleteVolumeResponse)
    except CsiError:
        if not quiet:
            raise


async def volume_limits(run: CsiRun, ns: str) -> None:
    """The node plugin's max_volumes_per_node reaches CSINode; ``limit`` pods with a claim
    each, pinned to that node, run, and one more stays Pending for the volume limit (e2e
    volumelimits)."""
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    node = run.nodes[0]
    info = await run.node_call(node, csi_pb2.NodeGetInfoRequest(), csi_pb2.NodeGetInfoResponse)
    limit = info.max_volumes_per_node
    if limit <= 0:
        raise Skip("the driver reports no volume limit (NodeGetInfo max_volumes_per_node 0)")
    if limit >= MOST_PODS:
        raise Skip(f"the driver's volume limit {limit} is too many volumes to try here "
                   f"(fewer than {MOST_PODS})")
    entries = run.api.get("CSINode", node).spec.get("drivers") or []
    counts = [(e.get("allocatable") or {}).get("count") for e in entries
              if e.get("name") == run.driver]
    assert counts == [limit], f"CSINode {node} allocatable count {counts}, NodeGetInfo {limit}"
    # volumes an earlier case left attached there take their share of the limit
    room = limit - len([va for va in run.api.list("VolumeAttachment").items
                        if va.spec.get("nodeName") == node
                        and va.spec.get("attacher") == run.driver])
    sc = run.storage_class(f"{ns}-sc")
    # As e2e volumelimits: fill the node, see every pod run, and only then add the one
    # over the limit. (Creating all of them at once and expecting the last-named one to
    # wait assumed the scheduler's queue order; kube-scheduler does not promise it.)
    names = [f"vol-{i}" for i in range(max(room, 0) + 1)]
    for name in names[:-1]:
        run.claim(ns, name, sc)
        run.pod(ns, name, [name], node)
    await run.cluster.settle()
    pods = {name: run.api.get("Pod", name, ns) for name in names[:-1]}
    running = [n for n, p in pods.items() if p.status.get("phase") == "Running"]
    assert len(running) == len(pods), \
        f"{len(running)} of {len(pods)} pods run on {node} with a limit of {limit}: " + \
        "; ".join(f"{n}: {p.status.get('phase')} {_why(p.status)}" for n, p in pods.items())
    run.claim(ns, names[-1], sc)
    run.pod(ns, names[-1], [names[-1]], node)
    await run.cluster.settle()
    last = run.api.get("Pod", names[-1], ns)
    assert not last.spec.get("nodeName"), f"the pod over the limit was bound to " \
        f"{last.spec.get('nodeName')} (running: {running})"
    why = _why(last.status)
    assert EXCEEDED in why, f"the pod over the limit waits for {why!r}, not the volume limit"
    await run.delete_together("Pod", names, ns)
    await run.delete_together("PersistentVolumeClaim", names, ns)
    await run.delete("StorageClass", sc)


def _why(status: JSON) -> str:
    return "; ".join(str(c.get("message")) for c in status.get("conditions", [])
                     if c.get("status") == "False" and c.get("message"))


async def controller_publish_timeout(run: CsiRun, ns: str) -> None:
    """ControllerPublishVolume hanging once past the attacher's timeout: the attacher
    calls again with the same request and the pod runs (ours only: fault injection)."""
    if not run.target.ours or run.cluster.controller_plugin is None:
        raise Skip("needs the fault injection of our driver (started by the suite)")
    run.needs_controller(CtrlRpc.PUBLISH_UNPUBLISH_VOLUME, "attach (ControllerPublishVolume)")
    assert run.cluster.manager is not None
    [attacher] = [c for c in run.cluster.manager.controllers if isinstance(c, ExternalAttacher)]
    control = run.cluster.controller_plugin.socket.parent / "faults.sock"
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "slow", sc)
    usual = attacher.csi
    attacher.csi = usual.with_component(attacher.name, timeout=ATTACH_TIMEOUT)
    await fault_control(control, {"op": "add", "rules": [{
        "method": "ControllerPublishVolume", "hang": True, "times": 1}]})
    mark = len(run.cluster.trace.events)
    try:
        await run.running_pod(ns, "patient", ["slow"], run.nodes[0])
    finally:
        attacher.csi = usual
        await fault_control(control, {"op": "clear"})
    publishes = run.calls("csi.Controller/ControllerPublishVolume", mark)
    assert [e.result.split(":")[0] for e in publishes] == ["DEADLINE_EXCEEDED", "OK"], \
        [e.result for e in publishes]
    assert publishes[0].request == publishes[1].request, "the retry changed its arguments"
    await run.delete("Pod", "patient", ns)
    await run.delete("PersistentVolumeClaim", "slow", ns)
    await run.delete("StorageClass", sc)
