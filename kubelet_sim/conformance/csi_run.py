"""What the CSI conformance cases share: the target (our driver, or endpoints), the run
(the cluster, the driver's capabilities, a namespace per case, claims and pods made and
checked the way the e2e storage testsuites make them), and the data a pod "writes"."""


from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf.message import Message

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.cluster import Cluster
from kubelet_sim.conformance.report import Skip
from kubelet_sim.csi.client import GrpcCsiClient
from kubelet_sim.utils.trace import TraceEvent

SUITE = "csi"
DATA_FILE = "conformance.txt"
CtrlRpc = csi_pb2.ControllerServiceCapability.RPC
NodeRpc = csi_pb2.NodeServiceCapability.RPC
PluginCap = csi_pb2.PluginCapability.Service
R = TypeVar("R", bound=Message)


@dataclass(frozen=True)
class CsiTarget:
    controller_endpoint: str = ""  # "" = start our driver
    node_endpoints: dict[str, str] = field(default_factory=dict)  # node -> endpoint
    parameters: dict[str, str] = field(default_factory=dict)  # StorageClass parameters
    # our driver on these nodes (--compare-to ours: the target's nodes); () = two nodes
    node_names: tuple[str, ...] = ()
    driver_args: tuple[str, ...] = ()  # extra flags for our driver, when the suite starts it
    driver_name: str = ""  # the name the driver at the endpoints must answer GetPluginInfo
    # the user's CSIDriver spec (--csidriver FILE): installed for the driver, and the cases
    # about its fields run (None: the suite's own object, those cases skip)
    csidriver: dict[str, Any] | None = None

    @property
    def ours(self) -> bool:
        return not self.controller_endpoint


class WrongDriver(Exception):
    """The driver at the endpoints is not the one ``--driver-name`` names."""


class CsiRun:
    def __init__(self, cluster: Cluster, target: CsiTarget) -> None:
        self.cluster, self.target, self.api = cluster, target, cluster.api
        self.driver = cluster.driver_name
        self.controller_rpcs: set[int] = set()
        self.node_rpcs: set[int] = set()
        self.plugin_services: set[int] = set()
        self.nodes = sorted(cluster.kubelets)
        self._count = 0

    async def controller_call(self, request: Message, response_type: type[R]) -> R:
        """One call of the suite's own to the controller plugin (traced as "conformance")."""
        controller = GrpcCsiClient(self.cluster.controller_endpoint, trace=self.cluster.trace,
                                   node="control-plane", component="conformance")
        try:
            return await controller.call(request, response_type)
        finally:
            await controller.close()

    async def node_call(self, node: str, request: Message, response_type: type[R]) -> R:
        """One call to ``node``'s node plugin, through that node's kubelet."""
        return await self.cluster.kubelets[node].client_for(self.driver).call(
            request, response_type)

    async def learn_capabilities(self) -> None:
        ctrl = await self.controller_call(csi_pb2.ControllerGetCapabilitiesRequest(),
                                          csi_pb2.ControllerGetCapabilitiesResponse)
        plugin = await self.controller_call(csi_pb2.GetPluginCapabilitiesRequest(),
                                            csi_pb2.GetPluginCapabilitiesResponse)
        self.controller_rpcs = {c.rpc.type for c in ctrl.capabilities}
        self.plugin_services = {c.service.type for c in plugin.capabilities
                                if c.HasField("service")}
        node = await self.node_call(self.nodes[0], csi_pb2.NodeGetCapabilitiesRequest(),
                                    csi_pb2.NodeGetCapabilitiesResponse)
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

    def node_topology(self, node: str) -> dict[str, str]:
        """The driver's topology segments of ``node``: its CSINode topology keys, with the
        values the kubelet put on the Node's labels."""
        entries = self.api.get("CSINode", node).spec.get("drivers") or []
        keys = next((e.get("topologyKeys") or [] for e in entries if e.get("name") == self.driver),
                    [])
        labels = self.api.get("Node", node).labels
        return {str(k): labels[k] for k in keys if k in labels}

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

    def pod(self, ns: str, name: str, claims: list[str], node: str | None = None,
            **options: object) -> Resource:
        """Create (not wait for) a pod using ``claims``, pinned to ``node`` when given."""
        pod = builders.pod(name, ns, volumes=[builders.pvc_volume(c, c) for c in claims],
                           **options)  # type: ignore[arg-type]
        if node:
            pod.spec["nodeSelector"] = {"kubernetes.io/hostname": node}
        return self.api.create(pod)

    async def running_pod(self, ns: str, name: str, claims: list[str],
                          node: str | None = None) -> Resource:
        self.pod(ns, name, claims, node)
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

    def claim_pv(self, ns: str, claim: str) -> Resource:
        """The PersistentVolume bound to ``claim``."""
        name = self.api.get("PersistentVolumeClaim", claim, ns).spec.get("volumeName")
        assert name, f"claim {ns}/{claim} is not bound"
        return self.api.get("PersistentVolume", str(name))

    def events(self, kind: str, name: str, ns: str) -> list[str]:
        """"reason: message" of each event about one object, oldest first."""
        return [f"{e.reason}: {e.message}"
                for e in self.cluster.events.for_object(kind, name, ns)]

    def calls(self, call: str, since: int = 0) -> list[TraceEvent]:
        """The traced calls of ``call`` (``csi.Controller/DeleteSnapshot``) from ``since``."""
        return [e for e in self.cluster.trace.events[since:] if e.call == call]

    async def delete(self, kind: str, name: str, ns: str = "") -> None:
        try:
            self.api.delete(kind, name, ns)
        except NotFound:
            return
        await self.cluster.settle()

    async def delete_together(self, kind: str, names: list[str], ns: str = "") -> None:
        """Delete several objects at once, then settle: a pod still failing to mount is not
        retried (with a growing backoff) while the others go one by one."""
        for name in names:
            with contextlib.suppress(NotFound):
                self.api.delete(kind, name, ns)
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


async def fault_control(path: Path, message: dict[str, object]) -> dict[str, object]:
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
