"""The CSI conformance cases (see :mod:`kubelet_sim.conformance.csi`), each a coroutine
of (run, namespace)."""

from __future__ import annotations

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.selectors import node_selector_matches
from kubelet_sim.conformance.csi_run import (
    DATA_FILE,
    CsiRun,
    CtrlRpc,
    NodeRpc,
    fault_control,
    read_token,
    write_token,
)
from kubelet_sim.conformance.report import Skip


async def _provision_and_reread(run: CsiRun, ns: str, mode: str) -> None:
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "data", sc, volume_mode=mode)
    writer = await run.running_pod(ns, "writer", ["data"], run.nodes[0])
    token = write_token(run.published(writer, "data"))
    await run.delete("Pod", "writer", ns)
    # the next pod on another node, where the volume can be reached from there
    pv = run.api.get("PersistentVolume", str(
        run.api.get("PersistentVolumeClaim", "data", ns).spec["volumeName"]))
    node = run.nodes[0] if pv.spec.get("nodeAffinity") else run.nodes[-1]
    reader = await run.running_pod(ns, "reader", ["data"], node)
    got = read_token(run.published(reader, "data"))
    assert got == token, f"the next pod read {got!r}, the first wrote {token!r}"
    await run.delete("Pod", "reader", ns)
    await run.delete("PersistentVolumeClaim", "data", ns)
    await run.delete("StorageClass", sc)


async def provisioning_filesystem(run: CsiRun, ns: str) -> None:
    await _provision_and_reread(run, ns, "Filesystem")


async def provisioning_block(run: CsiRun, ns: str) -> None:
    await _provision_and_reread(run, ns, "Block")


async def expansion_online(run: CsiRun, ns: str) -> None:
    run.needs_controller(CtrlRpc.EXPAND_VOLUME, "volume expansion")
    sc = run.storage_class(f"{ns}-sc", allow_volume_expansion=True)
    run.claim(ns, "grow", sc, size="1Gi")
    await run.running_pod(ns, "user", ["grow"])
    claim = run.api.get("PersistentVolumeClaim", "grow", ns)
    claim.spec["resources"]["requests"]["storage"] = "2Gi"
    run.api.update(claim)
    await run.cluster.settle()
    claim = run.api.get("PersistentVolumeClaim", "grow", ns)
    pv = run.api.get("PersistentVolume", str(claim.spec.get("volumeName")))
    assert pv.spec["capacity"]["storage"] == "2Gi", f"PV capacity {pv.spec['capacity']}"
    assert claim.status.get("capacity", {}).get("storage") == "2Gi", \
        f"claim capacity {claim.status.get('capacity')} (conditions " \
        f"{claim.status.get('conditions')})"
    await run.delete("Pod", "user", ns)
    await run.delete("PersistentVolumeClaim", "grow", ns)
    await run.delete("StorageClass", sc)


async def snapshots_restore(run: CsiRun, ns: str) -> None:
    run.needs_controller(CtrlRpc.CREATE_DELETE_SNAPSHOT, "snapshots")
    sc = run.storage_class(f"{ns}-sc")
    run.api.create(builders.volume_snapshot_class(f"{ns}-snap", run.driver))
    run.claim(ns, "source", sc)
    writer = await run.running_pod(ns, "writer", ["source"])
    token = write_token(run.published(writer, "source"))
    run.api.create(builders.volume_snapshot("snap", ns, source_pvc="source",
                                            snapshot_class=f"{ns}-snap"))
    await run.cluster.settle()
    snap = run.api.get("VolumeSnapshot", "snap", ns)
    assert snap.status.get("readyToUse") is True, f"snapshot status {snap.status}"
    run.claim(ns, "restored", sc, data_source={
        "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"})
    reader = await run.running_pod(ns, "reader", ["restored"])
    assert read_token(run.published(reader, "restored")) == token, "the restore lost the data"
    content = str(snap.status.get("boundVolumeSnapshotContentName"))
    for kind, name in (("Pod", "reader"), ("Pod", "writer"),
                       ("PersistentVolumeClaim", "restored"), ("VolumeSnapshot", "snap"),
                       ("PersistentVolumeClaim", "source")):
        await run.delete(kind, name, ns)
    try:
        run.api.get("VolumeSnapshotContent", content)
        raise AssertionError(f"VolumeSnapshotContent {content} outlived its snapshot")
    except NotFound:
        pass
    await run.delete("VolumeSnapshotClass", f"{ns}-snap")
    await run.delete("StorageClass", sc)


async def two_volumes_one_pod(run: CsiRun, ns: str) -> None:
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "one", sc)
    run.claim(ns, "two", sc)
    pod = await run.running_pod(ns, "both", ["one", "two"])
    first, second = run.published(pod, "one"), run.published(pod, "two")
    assert first != second
    token = write_token(first)
    assert not (second / DATA_FILE).exists() or read_token(second) != token, \
        "two volumes of one pod share their data"
    await run.delete("Pod", "both", ns)
    for claim in ("one", "two"):
        await run.delete("PersistentVolumeClaim", claim, ns)
    await run.delete("StorageClass", sc)


async def rwo_two_pods_one_node(run: CsiRun, ns: str) -> None:
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "shared", sc)
    first = await run.running_pod(ns, "first", ["shared"], run.nodes[0])
    second = await run.running_pod(ns, "second", ["shared"], run.nodes[0])
    token = write_token(run.published(first, "shared"))
    assert read_token(run.published(second, "shared")) == token, \
        "two pods on one node do not see the same ReadWriteOnce volume"
    for pod in ("first", "second"):
        await run.delete("Pod", pod, ns)
    await run.delete("PersistentVolumeClaim", "shared", ns)
    await run.delete("StorageClass", sc)


async def wait_for_first_consumer(run: CsiRun, ns: str) -> None:
    if not run.topology:
        raise Skip("the driver reports no accessible topology "
                   "(VOLUME_ACCESSIBILITY_CONSTRAINTS)")
    sc = run.storage_class(f"{ns}-sc", volume_binding_mode="WaitForFirstConsumer")
    run.claim(ns, "late", sc)
    await run.cluster.settle()
    claim = run.api.get("PersistentVolumeClaim", "late", ns)
    assert not claim.spec.get("volumeName"), "provisioned before any pod used it"
    node = run.nodes[-1]
    pod = await run.running_pod(ns, "consumer", ["late"], node)
    assert pod.spec.get("nodeName") == node
    pv = run.api.get("PersistentVolume",
                     str(run.api.get("PersistentVolumeClaim", "late", ns).spec["volumeName"]))
    terms = (pv.spec.get("nodeAffinity") or {}).get("required", {}).get("nodeSelectorTerms", [])
    labels = run.api.get("Node", node).labels
    assert terms, "the volume of a topology-aware driver has no node affinity"
    assert node_selector_matches(terms, labels, {"metadata.name": node}), \
        f"the volume's node affinity {terms} excludes {node} ({labels})"
    await run.delete("Pod", "consumer", ns)
    await run.delete("PersistentVolumeClaim", "late", ns)
    await run.delete("StorageClass", sc)


async def ephemeral_inline(run: CsiRun, ns: str) -> None:
    if run.target.csidriver is not None and "Ephemeral" not in (
            run.target.csidriver.get("volumeLifecycleModes") or ["Persistent"]):
        raise Skip("the CSIDriver object does not list the Ephemeral lifecycle mode")
    pod = builders.pod("inline", ns, volumes=[builders.csi_inline_volume(
        "scratch", run.driver, dict(run.target.parameters))])
    run.api.create(pod)
    await run.cluster.settle()
    run.must_run(ns, "inline")
    await run.delete("Pod", "inline", ns)


async def node_stage_unavailable(run: CsiRun, ns: str) -> None:
    if not run.target.ours:
        raise Skip("needs the fault injection of our driver (started by the suite)")
    if NodeRpc.STAGE_UNSTAGE_VOLUME not in run.node_rpcs:
        raise Skip("the driver does not stage (STAGE_UNSTAGE_VOLUME)")
    node = run.nodes[0]
    control = run.cluster.node_plugins[node].socket.parent / "faults.sock"
    await fault_control(control, {"op": "add", "rules": [{
        "method": "NodeStageVolume", "code": "UNAVAILABLE", "message": "conformance",
        "times": 2}]})
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "flaky", sc)
    mark = len(run.cluster.trace.events)
    try:
        await run.running_pod(ns, "patient", ["flaky"], node)
    finally:
        await fault_control(control, {"op": "clear"})
    stages = [e for e in run.cluster.trace.events[mark:]
              if e.call == "csi.Node/NodeStageVolume"]
    assert [e.result.split(":")[0] for e in stages] == ["UNAVAILABLE", "UNAVAILABLE", "OK"], \
        [e.result for e in stages]
    assert stages[0].request == stages[2].request, "the retry changed its arguments"
    await run.delete("Pod", "patient", ns)
    await run.delete("PersistentVolumeClaim", "flaky", ns)
    await run.delete("StorageClass", sc)


async def teardown_after_node_plugin_restart(run: CsiRun, ns: str) -> None:
    if not run.target.ours:
        raise Skip("restarts the node plugin process, which only the suite's own driver is")
    node = run.nodes[0]
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "kept", sc)
    await run.running_pod(ns, "survivor", ["kept"], node)
    await run.cluster.node_plugins[node].restart()
    mark = len(run.cluster.trace.events)
    await run.delete("Pod", "survivor", ns)
    calls = {e.call: e.result for e in run.cluster.trace.events[mark:] if e.node == node}
    for call in ("csi.Node/NodeUnpublishVolume", "csi.Node/NodeUnstageVolume"):
        assert calls.get(call, "not called") == "OK", f"{call}: {calls.get(call, 'not called')}"
    assert not [va for va in run.api.list("VolumeAttachment").items
                if va.spec.get("nodeName") == node], "still attached after the pod went"
    await run.delete("PersistentVolumeClaim", "kept", ns)
    await run.delete("StorageClass", sc)

