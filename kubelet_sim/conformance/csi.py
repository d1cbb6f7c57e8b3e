"""The CSI conformance suite: a CSI driver (ours, or the one at the given endpoints) under
the simulated cluster, driven through the whole lifecycle as Kubernetes drives it
(provisioner, attacher, kubelet, snapshotter, resizer), after the Kubernetes e2e
storage testsuites. Each case works in a namespace of its own and removes what it made;
a case the driver's capabilities rule out is skipped with the reason.

Cases (suite ``csi``): ``provisioning/filesystem`` (data a pod wrote is read by the next
pod, on another node when there is one); ``provisioning/block`` (the same on a raw block
volume); ``expansion/online`` (a claim grown under a running pod: the volume and the
claim's capacity follow); ``snapshots/restore`` (a claim restored from a snapshot has
the data; snapshot and claims are then deleted); ``multivolume/two-volumes-one-pod``;
``multivolume/rwo-two-pods-one-node``; ``topology/wait-for-first-consumer`` (the volume
is made where the pod was scheduled); ``ephemeral/inline``; and, against our own driver
(they need its fault injection and its process), ``co-retries/node-stage-unavailable``
(NodeStageVolume failing twice is retried with the same arguments until the pod runs)
and ``restart/teardown-after-node-plugin-restart``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.api.selectors import node_selector_matches
from kubelet_sim.cluster import Cluster, ClusterConfig, NodeSpec, default_nodes
from kubelet_sim.conformance.report import Report, Skip
from kubelet_sim.csi.client import GrpcCsiClient

SUITE = "csi"
DATA_FILE = "conformance.txt"
CtrlRpc = csi_pb2.ControllerServiceCapability.RPC
NodeRpc = csi_pb2.NodeServiceCapability.RPC
PluginCap = csi_pb2.PluginCapability.Service


@dataclass(frozen=True)
class CsiTarget:
    controller_endpoint: str = ""  # "" = start our driver
    node_endpoints: dict[str, str] = field(default_factory=dict)  # node -> endpoint
    parameters: dict[str, str] = field(default_factory=dict)  # StorageClass parameters

    @property
    def ours(self) -> bool:
        return not self.controller_endpoint


class CsiRun:
    def __init__(self, cluster: Cluster, target: CsiTarget) -> None:
        self.cluster, self.target, self.api = cluster, target, cluster.api
        self.driver = cluster.driver_name
        self.controller_rpcs: set[int] = set()
        self.node_rpcs: set[int] = set()
        self.plugin_services: set[int] = set()
        self.nodes = sorted(cluster.kubelets)
        self._count = 0

    async def learn_capabilities(self) -> None:
        controller = GrpcCsiClient(self.cluster.controller_endpoint, trace=self.cluster.trace,
                                   node="control-plane", component="conformance")
        try:
            ctrl = await controller.call(csi_pb2.ControllerGetCapabilitiesRequest(),
                                         csi_pb2.ControllerGetCapabilitiesResponse)
            plugin = await controller.call(csi_pb2.GetPluginCapabilitiesRequest(),
                                           csi_pb2.GetPluginCapabilitiesResponse)
        finally:
            await controller.close()
        self.controller_rpcs = {c.rpc.type for c in ctrl.capabilities}
        self.plugin_services = {c.service.type for c in plugin.capabilities
                                if c.HasField("service")}
        node = await self.cluster.kubelets[self.nodes[0]].client_for(self.driver).call(
            csi_pb2.NodeGetCapabilitiesRequest(), csi_pb2.NodeGetCapabilitiesResponse)
        self.node_rpcs = {c.rpc.type for c in node.capabilities}

    def needs_controller(self, rpc: int, what: str) -> None:
        if rpc not in self.controller_rpcs:
            raise Skip(f"the driver does not offer {what} ({CtrlRpc.Type.Name(rpc)})")

    def namespace(self) -> str:
        self._count += 1
        name = f"csi-conformance-{self._count}"
        self.api.create(builders.namespace(name))
        return name

    @property
    def topology(self) -> bool:
        return PluginCap.VOLUME_ACCESSIBILITY_CONSTRAINTS in self.plugin_services

    def storage_class(self, name: str, **options: object) -> str:
        """A class for the driver; with accessible topology, WaitForFirstConsumer (a
        pod chosen for a node gets a volume that node can reach, as e2e configures)."""
        if self.topology:
            options.setdefault("volume_binding_mode", "WaitForFirstConsumer")
        self.api.create(builders.storage_class(name, self.driver,
                                               parameters=self.target.parameters,
                                               **options))  # type: ignore[arg-type]
        return name

    def claim(self, ns: str, name: str, sc: str, size: str = "1Gi", **options: object) -> None:
        self.api.create(builders.persistent_volume_claim(name, ns, storage=size,
                                                         storage_class=sc,
                                                         **options))  # type: ignore[arg-type]

    async def running_pod(self, ns: str, name: str, claims: list[str],
                          node: str | None = None) -> Resource:
        pod = builders.pod(name, ns, volumes=[builders.pvc_volume(c, c) for c in claims])
        if node:
            pod.spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        self.api.create(pod)
        await self.cluster.settle()
        return self.must_run(ns, name)

    def must_run(self, ns: str, name: str) -> Resource:
        got = self.api.get("Pod", name, ns)
        why = sorted({str(c["message"]) for c in got.status.get("conditions", [])
                      if c.get("message")})
        assert got.status.get("phase") == "Running", \
            f"pod {ns}/{name} is {got.status.get('phase')}: {'; '.join(why)}"
        return got

    def published(self, pod: Resource, claim: str) -> Path:
        """Where the kubelet had the driver publish ``claim`` for ``pod``."""
        pv = str(self.api.get("PersistentVolumeClaim", claim, pod.namespace)
                 .spec.get("volumeName"))
        for event in reversed(self.cluster.trace.events):
            path = str(event.request.get("target_path", ""))
            if event.call == "csi.Node/NodePublishVolume" and pod.metadata.uid in path \
                    and f"/{pv}/" in path + "/":
                return Path(path)
        raise AssertionError(f"no NodePublishVolume of {pv} for pod {pod.name}")

    async def delete(self, kind: str, name: str, ns: str = "") -> None:
        try:
            self.api.delete(kind, name, ns)
        except NotFound:
            return
        await self.cluster.settle()

    async def remove_namespace(self, ns: str) -> None:
        await self.delete("Namespace", ns)


def write_token(path: Path) -> str:
    token = secrets.token_hex(16)
    if path.is_dir():
        (path / DATA_FILE).write_text(token)
    else:  # a raw block device (or the file standing for one)
        with path.open("r+b") as device:
            device.write(token.encode())
    return token


def read_token(path: Path) -> str:
    if path.is_dir():
        return (path / DATA_FILE).read_text()
    with path.open("rb") as device:
        return device.read(32).decode(errors="replace")


async def run_csi_suite(target: CsiTarget, report: Report) -> None:
    nodes = [NodeSpec(name, f"10.244.{i}.0/24", f"192.168.0.{i}")
             for i, name in enumerate(sorted(target.node_endpoints), start=1)] \
        if target.node_endpoints else default_nodes(2)
    config = ClusterConfig(nodes=nodes, csi_controller_endpoint=target.controller_endpoint or None,
                           csi_node_endpoints=dict(target.node_endpoints))
    cluster = Cluster(config)
    try:
        await cluster.start()
        for kubelet in cluster.kubelets.values():
            # 3 tries of a failing volume operation per pass, not 6: enough for the
            # co-retries case, and a broken driver fails its case in seconds
            kubelet.volumes.max_attempts = 3
        run = CsiRun(cluster, target)
        await run.learn_capabilities()
        for case, body in CASES:
            await report.arun(SUITE, case, partial(_in_namespace, run, body))
    finally:
        await cluster.stop()


async def _in_namespace(run: CsiRun, body: Callable[[CsiRun, str], Awaitable[None]]) -> None:
    ns = run.namespace()
    try:
        await body(run, ns)
    finally:
        await run.remove_namespace(ns)


# -- the cases ---------------------------------------------------------------------------


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
    await _fault_control(control, {"op": "add", "rules": [{
        "method": "NodeStageVolume", "code": "UNAVAILABLE", "message": "conformance",
        "times": 2}]})
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "flaky", sc)
    mark = len(run.cluster.trace.events)
    try:
        await run.running_pod(ns, "patient", ["flaky"], node)
    finally:
        await _fault_control(control, {"op": "clear"})
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


async def _fault_control(path: Path, message: dict[str, object]) -> dict[str, object]:
    """One request to a driver's fault control socket (JSON lines)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(json.dumps(message).encode() + b"\n")
        await writer.drain()
        answer: dict[str, object] = json.loads(await reader.readline())
    finally:
        writer.close()
    if not answer.get("ok"):
        raise AssertionError(f"the fault control socket refused {message}: {answer}")
    return answer


CASES: list[tuple[str, Callable[[CsiRun, str], Awaitable[None]]]] = [
    ("provisioning/filesystem", provisioning_filesystem),
    ("provisioning/block", provisioning_block),
    ("expansion/online", expansion_online),
    ("snapshots/restore", snapshots_restore),
    ("multivolume/two-volumes-one-pod", two_volumes_one_pod),
    ("multivolume/rwo-two-pods-one-node", rwo_two_pods_one_node),
    ("topology/wait-for-first-consumer", wait_for_first_consumer),
    ("ephemeral/inline", ephemeral_inline),
    ("co-retries/node-stage-unavailable", node_stage_unavailable),
    ("restart/teardown-after-node-plugin-restart", teardown_after_node_plugin_restart),
]
