"""The container runtime (containerd's CRI plugin role): pod sandboxes and their netns.

RunPodSandbox creates a network namespace — a real ``ip netns add cni-<uuid>``
(``/var/run/netns/cni-<uuid>``) for the Linux dataplane, or an empty file under
the state dir for the emulated one (our plugins accept any path) — then runs CNI
ADD for the loopback network on ``lo`` and the pod network on ``eth0``. If
either ADD fails, the runtime does what containerd does: it DELs the networks
(libcni itself undoes nothing), removes the netns and forgets the sandbox.

Idempotency, as the CRI states it: StopPodSandbox of a stopped sandbox is OK,
of an unknown one is NotFound; RemovePodSandbox of an unknown sandbox is OK and
stops a ready one first. Every sandbox is a JSON file in ``<state>/sandboxes``
written atomically before the first ADD, so a runtime restarted after a crash
knows every netns it made and can GC the attachments of sandboxes that are gone
or never became ready.

Assembly for one node (the kubelet calls these from a thread, e.g. via
``asyncio.to_thread``; each call blocks on plugin execs)::

    libcni = LibCNI(bin_dirs, cache_dir, RealExec(), trace=trace, node="node-1")
    network = PodNetwork(libcni, conf_dir)  # + loopback=loopback_network("emu-loopback", ...)
    runtime = ContainerRuntime(state_dir, network, linux_netns=as_root)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.api import containerd_cni_args
from kubelet_sim.runtime.libcni.cache import write_atomically
from kubelet_sim.runtime.libcni.conf import NetworkNotReady
from kubelet_sim.runtime.pod_network import Attachment, PodNetwork
from kubelet_sim.utils.trace import Trace

SANDBOX_READY = "SANDBOX_READY"
SANDBOX_NOTREADY = "SANDBOX_NOTREADY"
LINUX_NETNS_DIR = "/var/run/netns"


class SandboxNotFound(KeyError):
    pass


class SandboxError(RuntimeError):
    """RunPodSandbox failed; the message says which step (CNI errors keep their text)."""


@dataclass(frozen=True)
class PortMapping:
    """A CRI port mapping; the runtime passes it to CNI in the ``portMappings`` runtime
    config when a plugin declares that capability."""

    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True)
class PodSandboxConfig:
    """What RunPodSandbox gets: the pod's name, namespace, uid and annotations, its host
    ports, and the DNS settings the runtime passes to CNI as the ``dns`` runtime config."""

    name: str
    namespace: str
    uid: str
    annotations: Mapping[str, str] = field(default_factory=dict)
    port_mappings: Sequence[PortMapping] = ()
    dns_servers: Sequence[str] = ()
    dns_searches: Sequence[str] = ()
    dns_options: Sequence[str] = ()
    bandwidth: Mapping[str, int] | None = None


@dataclass
class Sandbox:
    id: str
    name: str
    namespace: str
    uid: str
    netns: str
    state: str = SANDBOX_NOTREADY
    ips: list[str] = field(default_factory=list)
    # True from just before the first ADD until a teardown succeeded: there may be
    # plugin state (leases, interfaces) that only a DEL releases.
    network_attached: bool = False
    cni_args: list[list[str]] = field(default_factory=list)
    capability_args: dict[str, Any] = field(default_factory=dict)

    def attachment(self) -> Attachment:
        return Attachment(
            sandbox_id=self.id,
            netns=self.netns,
            args=tuple((k, v) for k, v in self.cni_args),
            capability_args=self.capability_args,
        )


@dataclass(frozen=True)
class NetworkCondition:
    ready: bool
    reason: str = ""
    message: str = ""


def capability_args(config: PodSandboxConfig) -> dict[str, Any]:
    """The capability args containerd passes for a sandbox."""
    args: dict[str, Any] = {
        "portMappings": [
            {
                "hostPort": p.host_port,
                "containerPort": p.container_port,
                "protocol": p.protocol.lower(),
                **({"hostIP": p.host_ip} if p.host_ip else {}),
            }
            for p in config.port_mappings
            if p.host_port > 0
        ],
        "io.kubernetes.cri.pod-annotations": dict(config.annotations),
    }
    if config.dns_servers or config.dns_searches or config.dns_options:
        dns = {
            "servers": list(config.dns_servers),
            "searches": list(config.dns_searches),
            "options": list(config.dns_options),
        }
        args["dns"] = {k: v for k, v in dns.items() if v}
    if config.bandwidth:
        args["bandwidth"] = dict(config.bandwidth)
    return args


class ContainerRuntime:
    """containerd's part for pod sandboxes: a network namespace per pod, set up and torn
    down through the pod network (CNI), sandbox records kept under ``state_dir``."""

    def __init__(self, state_dir: str, network: PodNetwork, *, linux_netns: bool = False,
                 netns_dir: str = LINUX_NETNS_DIR, cri_trace: Trace | None = None,
                 node: str = "") -> None:
        self.state_dir = state_dir
        # When given, every CRI call is traced as the kubelet's gRPC call to containerd.
        self.cri_trace = cri_trace
        self.node = node
        self.network = network
        self.linux_netns = linux_netns
        self.netns_dir = netns_dir if linux_netns else os.path.join(state_dir, "netns")
        os.makedirs(os.path.join(state_dir, "sandboxes"), exist_ok=True)

    # -- persistence -----------------------------------------------------------------

    def _record_path(self, sandbox_id: str) -> str:
        return os.path.join(self.state_dir, "sandboxes", f"{sandbox_id}.json")

    def _save(self, sandbox: Sandbox) -> None:
        write_atomically(self._record_path(sandbox.id), json.dumps(asdict(sandbox)).encode())

    def _forget(self, sandbox_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._record_path(sandbox_id))

    def pod_sandbox_status(self, sandbox_id: str) -> Sandbox:
        try:
            with open(self._record_path(sandbox_id), "rb") as f:
                return Sandbox(**json.load(f))
        except FileNotFoundError:
            raise SandboxNotFound(sandbox_id) from None

    def list_pod_sandboxes(self) -> list[Sandbox]:
        out = []
        for name in sorted(os.listdir(os.path.join(self.state_dir, "sandboxes"))):
            if name.endswith(".json"):
                try:
                    out.append(self.pod_sandbox_status(name[: -len(".json")]))
                except (SandboxNotFound, ValueError, TypeError):
                    continue
        return out

    # -- network namespaces ----------------------------------------------------------

    def _create_netns(self, path: str) -> None:
        if self.linux_netns:
            name = os.path.basename(path)
            proc = subprocess.run(["ip", "netns", "add", name], capture_output=True, check=False)
            if proc.returncode != 0:
                raise SandboxError(
                    f"failed to create network namespace {name}: {proc.stderr.decode().strip()}"
                )
            return
        os.makedirs(self.netns_dir, exist_ok=True)
        write_atomically(path, b"", mode=0o644)

    def _remove_netns(self, path: str) -> None:
        if not path or not os.path.lexists(path):
            return
        if self.linux_netns:
            name = os.path.basename(path)
            proc = subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
            if proc.returncode != 0 and os.path.lexists(path):
                raise SandboxError(
                    f"failed to remove network namespace {name}: {proc.stderr.decode().strip()}"
                )
            return
        os.unlink(path)

    # -- CRI ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _cri_call(self, method: str, request: dict[str, Any]) -> Iterator[None]:
        start = time.monotonic()
        outcome = "OK"
        try:
            yield
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if self.cri_trace is not None:
                self.cri_trace.record(
                    node=self.node,
                    component="kubelet",
                    call=f"runtime.v1.RuntimeService/{method}",
                    request=request,
                    result=outcome,
                    duration_ms=(time.monotonic() - start) * 1000.0,
                )

    def run_pod_sandbox(self, config: PodSandboxConfig) -> Sandbox:
        with self._cri_call("RunPodSandbox", {"pod": f"{config.namespace}/{config.name}"}):
            return self._run_pod_sandbox(config)

    def _run_pod_sandbox(self, config: PodSandboxConfig) -> Sandbox:
        sandbox_id = secrets.token_hex(32)
        sandbox = Sandbox(
            id=sandbox_id,
            name=config.name,
            namespace=config.namespace,
            uid=config.uid,
            netns=os.path.join(self.netns_dir, f"cni-{uuid.uuid4()}"),
            cni_args=[
                [k, v]
                for k, v in containerd_cni_args(
                    namespace=config.namespace,
                    name=config.name,
                    sandbox_id=sandbox_id,
                    uid=config.uid,
                )
            ],
            capability_args=capability_args(config),
        )
        # The record is durable before the netns exists and before the first ADD, so a
        # runtime killed from here on finds both again (`garbage_collect`).
        sandbox.network_attached = True
        self._save(sandbox)
        try:
            self._create_netns(sandbox.netns)
        except SandboxError:
            self._forget(sandbox.id)
            raise
        try:
            setup = self.network.setup(sandbox.attachment())
        except (CNIError, NetworkNotReady) as err:
            # Without a network config nothing ran (go-cni refuses before any exec).
            self._undo_failed_setup(sandbox, teardown=isinstance(err, CNIError))
            raise SandboxError(
                f"failed to setup network for sandbox {sandbox_id!r}: {err}"
            ) from err
        sandbox.ips = [ip.ip for ip in setup.ips]
        sandbox.state = SANDBOX_READY
        self._save(sandbox)
        return sandbox

    def _undo_failed_setup(self, sandbox: Sandbox, *, teardown: bool) -> None:
        """containerd's deferred cleanup: tear the network down, drop the netns and the record."""
        if teardown:
            # If a DEL fails its cached attachment stays on disk; a later GC retries it.
            with contextlib.suppress(CNIError, NetworkNotReady):
                self.network.teardown(sandbox.attachment())
        self._remove_netns(sandbox.netns)
        self._forget(sandbox.id)

    def stop_pod_sandbox(self, sandbox_id: str) -> Sandbox:
        with self._cri_call("StopPodSandbox", {"pod_sandbox_id": sandbox_id}):
            return self._stop_pod_sandbox(sandbox_id)

    def _stop_pod_sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = self.pod_sandbox_status(sandbox_id)
        if sandbox.network_attached:
            self.network.teardown(sandbox.attachment())
            sandbox.network_attached = False
        sandbox.state = SANDBOX_NOTREADY
        self._save(sandbox)
        return sandbox

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        with self._cri_call("RemovePodSandbox", {"pod_sandbox_id": sandbox_id}):
            self._remove_pod_sandbox(sandbox_id)

    def _remove_pod_sandbox(self, sandbox_id: str) -> None:
        try:
            sandbox = self._stop_pod_sandbox(sandbox_id)
        except SandboxNotFound:
            return
        self._remove_netns(sandbox.netns)
        self._forget(sandbox_id)

    def check_pod_network(self, sandbox_id: str) -> None:
        """CNI CHECK of the sandbox's networks (raises the plugin's error)."""
        self.network.check(self.pod_sandbox_status(sandbox_id).attachment())

    def network_status(self) -> NetworkCondition:
        """The NetworkReady condition as containerd reports it to the kubelet."""
        try:
            self.network.status()
        except (NetworkNotReady, CNIError) as err:
            return NetworkCondition(
                ready=False,
                reason="NetworkPluginNotReady",
                message=f"Network plugin returns error: {err}",
            )
        return NetworkCondition(ready=True)

    def garbage_collect(self) -> None:
        """After a restart: release what no ready sandbox owns.

        A sandbox left not ready with its network still attached (the runtime
        died during RunPodSandbox) is torn down, which also covers a network
        whose ADD never reached the cache. Then libcni's GC DELs every cached
        attachment that belongs to no ready sandbox and sends GC to the plugins.
        """
        for sandbox in self.list_pod_sandboxes():
            if sandbox.state != SANDBOX_READY and sandbox.network_attached:
                try:
                    self.network.teardown(sandbox.attachment())
                except (CNIError, NetworkNotReady):
                    continue
                sandbox.network_attached = False
                self._save(sandbox)
        ready = [s.id for s in self.list_pod_sandboxes() if s.state == SANDBOX_READY]
        self.network.gc(ready)
