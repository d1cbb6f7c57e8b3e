"""The six scenarios of ``make demo``, each on a fresh simulated cluster.

Every scenario prints what it observed (read back from the API server, the node's
directories and the plugins' answers, never restated from its inputs), the reasons the
components recorded for every pod not Running at its end, and the ordered trace of the
gRPC calls and CNI execs it caused, numbered from 1 (``--trace-file`` keeps them all,
the clusters' start-up calls included, as JSON lines).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import get_or_none
from kubelet_sim.csi.naming import attachment_name
from kubelet_sim.demo_view import (
    Condition,
    ScenarioCluster,
    UpDidNotStart,
    in_process_cluster,
)
from kubelet_sim.utils.trace import Trace, trace_lines

STORAGE_CLASS = "mini"


@dataclass
class Report:
    """What a scenario saw: named checks with the observed value, plus free notes."""

    title: str
    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(self, what: str, ok: bool, observed: object) -> None:
        self.checks.append((what, ok, str(observed)))

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.checks)


@dataclass
class DemoOptions:
    dataplane: str = "emulated"
    show_trace: bool = True
    out: TextIO | None = None
    trace_sink: TextIO | None = None  # every scenario's calls as JSON lines
    cluster: dict[str, Any] = field(default_factory=dict)  # more ClusterConfig fields
    processes: bool = False  # each scenario on `up --processes` (demo_processes)
    up_flags: list[str] = field(default_factory=list)  # more `up --processes` flags


Scenario = Callable[[ScenarioCluster, Report], Awaitable[None]]


def _pod(api_pod: Resource) -> str:
    st = api_pod.status
    return (f"{api_pod.name}: phase={st.get('phase')} podIP={st.get('podIP')} "
            f"node={api_pod.spec.get('nodeName')}")


def _rel(cluster: ScenarioCluster, path: os.PathLike[str]) -> str:
    return "<work>/" + os.path.relpath(path, cluster.work_dir)


def _gateway(cluster: ScenarioCluster, node: str) -> str:
    """The gateway the pod network handed out, read from the libcni result cache."""
    for att in cluster.attachments(node):
        if att.ifname == "eth0" and att.result:
            for ip in att.result.get("ips", []):
                if ip.get("gateway"):
                    return str(ip["gateway"])
    return ""


# -- what the scenarios wait for ----------------------------------------------------------

def _running(*names: str) -> Condition:
    async def reached(client: KubeClient) -> bool:
        for name in names:
            pod = await get_or_none(client, "Pod", name, "default")
            if pod is None or pod.status.get("phase") != "Running":
                return False
        return True
    return reached


def _gone(kind: str, name: str = "", namespace: str = "") -> Condition:
    """No ``kind`` object left (or none named ``name``)."""
    async def reached(client: KubeClient) -> bool:
        if name:
            return await get_or_none(client, kind, name, namespace) is None
        return not (await client.list(kind)).items
    return reached


def _all(*conditions: Condition) -> Condition:
    async def reached(client: KubeClient) -> bool:
        return all([await c(client) for c in conditions])
    return reached


def _claim(name: str, phase: str = "Bound", capacity: str = "") -> Condition:
    async def reached(client: KubeClient) -> bool:
        pvc = await get_or_none(client, "PersistentVolumeClaim", name, "default")
        return pvc is not None and pvc.status.get("phase") == phase and (
            not capacity or pvc.status.get("capacity", {}).get("storage") == capacity)
    return reached


def _snapshot_ready(name: str) -> Condition:
    async def reached(client: KubeClient) -> bool:
        snap = await get_or_none(client, "VolumeSnapshot", name, "default")
        return snap is not None and bool(snap.status.get("readyToUse"))
    return reached


# -- the scenarios ------------------------------------------------------------------------

async def scenario_pod_ip(cluster: ScenarioCluster, report: Report) -> None:
    api = cluster.client
    await api.create(builders.pod("web", labels={"app": "web"}))
    await cluster.settle("web Running", _running("web"))
    web = await api.get("Pod", "web", "default")
    report.notes.append(_pod(web))
    report.check("web scheduled to node-1", web.spec.get("nodeName") == "node-1",
                 web.spec.get("nodeName"))
    report.check("web's IP from node-1's podCIDR 10.244.1.0/24",
                 web.status.get("podIP") == "10.244.1.2", web.status.get("podIP"))
    gw = _gateway(cluster, "node-1")
    report.check("gateway 10.244.1.1", gw == "10.244.1.1", gw)
    report.check("phase Running", web.status.get("phase") == "Running", web.status.get("phase"))


async def scenario_cross_node(cluster: ScenarioCluster, report: Report) -> None:
    api = cluster.client
    await api.create(builders.pod("app-a", labels={"app": "a"}, node_name="node-1"))
    await api.create(builders.pod("app-b", labels={"app": "b"}, node_name="node-2"))
    await cluster.settle("app-a and app-b Running", _running("app-a", "app-b"))
    a, b = await api.get("Pod", "app-a", "default"), await api.get("Pod", "app-b", "default")
    report.notes += [_pod(a), _pod(b)]
    report.check("app-a on node-1 has 10.244.1.2", a.status.get("podIP") == "10.244.1.2",
                 a.status.get("podIP"))
    report.check("app-b on node-2 has 10.244.2.2", b.status.get("podIP") == "10.244.2.2",
                 b.status.get("podIP"))
    net = await cluster.network()
    report.notes.append("node-1 routes: " + "; ".join(str(r) for r in net.route_table("node-1")))
    reach = net.reach(a, b, 80)
    hop = reach.route.next_hop
    report.check("node-1 reaches app-b via next hop 192.168.0.2",
                 reach.reachable and hop == "192.168.0.2", f"reachable={reach.reachable} via {hop}")
    probe = await cluster.probe(a, b)  # and a real packet between the pods' namespaces
    if probe is not None:
        report.notes += probe.notes
        for what, ok, observed in probe.checks:
            report.check(what, ok, observed)


async def scenario_network_policy(cluster: ScenarioCluster, report: Report) -> None:
    api = cluster.client
    await api.create(builders.pod("web", labels={"app": "web"}))
    await api.create(builders.pod("db", labels={"app": "db"}, containers=[
        builders.container("mysql", ports=[builders.container_port(3306, "mysql")])]))
    await api.create(builders.pod("db-replica", labels={"app": "db"}))
    await api.create(builders.network_policy(
        "db-allow-web", "default", pod_selector={"matchLabels": {"app": "db"}},
        ingress=[{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                  "ports": [{"protocol": "TCP", "port": 3306}]}],
        policy_types=["Ingress"]))
    await cluster.settle("web, db and db-replica Running", _running("web", "db", "db-replica"))
    net = await cluster.network()
    web, db = await api.get("Pod", "web", "default"), await api.get("Pod", "db", "default")
    replica = await api.get("Pod", "db-replica", "default")
    for src, dst, port, want, label in (
        (web, db, 3306, True, "web→db:3306 allowed"),
        (web, db, 8080, False, "web→db:8080 denied"),
        (replica, db, 3306, False, "db→db:3306 denied"),
    ):
        verdict = net.reach(src, dst, port)
        report.check(label, verdict.allowed == want,
                     "allowed" if verdict.allowed else "denied")
        report.notes.append(f"{label}: " + " | ".join(verdict.reasons[-2:]))


async def _pvc_pod(cluster: ScenarioCluster, pvc: str, pod: str, storage: str = "1Gi") -> None:
    api = cluster.client
    await api.create(builders.persistent_volume_claim(pvc, storage=storage,
                                                      storage_class=STORAGE_CLASS))
    await api.create(builders.pod(pod, volumes=[builders.pvc_volume("data", pvc)], containers=[
        builders.container("app", volume_mounts=[{"name": "data", "mountPath": "/data"}])]))
    await cluster.settle(f"{pod} Running with {pvc}", _running(pod))


async def scenario_provisioning(cluster: ScenarioCluster, report: Report) -> None:
    api = cluster.client
    await _pvc_pod(cluster, "data", "writer")
    pvc = await api.get("PersistentVolumeClaim", "data", "default")
    pv_name = pvc.spec.get("volumeName", "")
    pv = await api.get("PersistentVolume", pv_name)
    handle = pv.spec["csi"]["volumeHandle"]
    report.check("PVC Bound to its PV", pvc.status.get("phase") == "Bound",
                 f"{pvc.status.get('phase')} → {pv_name}")
    va = await api.get("VolumeAttachment", attachment_name(handle, cluster.driver_name, "node-1"))
    report.check("attached to node-1", bool(va.status.get("attached")),
                 f"{va.name} attached={va.status.get('attached')}")
    paths = cluster.kubelet_paths("node-1")
    pod = await api.get("Pod", "writer", "default")
    staging = paths.device_mount_path(cluster.driver_name, handle)
    target = paths.pod_mount_path(pod.metadata.uid, pv_name)
    report.check("staged at the global mount", os.path.exists(staging), _rel(cluster, staging))
    report.check("published at the pod's mount", os.path.exists(target), _rel(cluster, target))
    (target / "hello.txt").write_text("written through the publish path\n")
    report.check("pod Running", pod.status.get("phase") == "Running", pod.status.get("phase"))
    await api.delete("Pod", "writer", "default")
    await cluster.settle("writer gone and its volume detached",
                         _all(_gone("Pod", "writer", "default"), _gone("VolumeAttachment")))
    report.check("unpublished (target removed)", not os.path.exists(target), _rel(cluster, target))
    report.check("unstaged", not any(staging.iterdir()) if staging.exists() else True,
                 _rel(cluster, staging))
    gone = not (await api.list("VolumeAttachment")).items
    report.check("detached (VolumeAttachment gone)", gone, "gone" if gone else "still there")
    await api.delete("PersistentVolumeClaim", "data", "default")
    await cluster.settle("the claim's PV deleted", _gone("PersistentVolume"))
    pv_left = [pv.name for pv in (await api.list("PersistentVolume")).items]
    deleted = [e for e in cluster.calls()
               if e.call.endswith("/DeleteVolume") and e.result == "OK"]
    report.check("claim deleted: DeleteVolume (reclaim Delete) and the PV removed",
                 bool(deleted) and not pv_left, f"DeleteVolume calls={len(deleted)} PVs={pv_left}")


async def scenario_snapshot_expand(cluster: ScenarioCluster, report: Report) -> None:
    api = cluster.client
    await _pvc_pod(cluster, "db-data", "db", storage="10Gi")
    pvc = await api.get("PersistentVolumeClaim", "db-data", "default")
    report.check("10Gi volume bound", pvc.status.get("capacity", {}).get("storage") == "10Gi",
                 pvc.status.get("capacity"))
    await api.create(builders.volume_snapshot("db-snap", "default", source_pvc="db-data",
                                              snapshot_class="mini-snapclass"))
    await cluster.settle("db-snap ready to use", _snapshot_ready("db-snap"))
    snap = await api.get("VolumeSnapshot", "db-snap", "default")
    report.check("snapshot created and ready", bool(snap.status.get("readyToUse")),
                 f"readyToUse={snap.status.get('readyToUse')} "
                 f"restoreSize={snap.status.get('restoreSize')}")
    await api.patch("PersistentVolumeClaim", "db-data",
                    {"spec": {"resources": {"requests": {"storage": "20Gi"}}}}, "default")
    await cluster.settle("db-data expanded to 20Gi", _claim("db-data", capacity="20Gi"))
    pvc = await api.get("PersistentVolumeClaim", "db-data", "default")
    pv = await api.get("PersistentVolume", pvc.spec["volumeName"])
    report.check("expanded to 20Gi (controller)", pv.spec["capacity"]["storage"] == "20Gi",
                 pv.spec["capacity"]["storage"])
    report.check("expanded to 20Gi (node: PVC status)",
                 pvc.status.get("capacity", {}).get("storage") == "20Gi",
                 pvc.status.get("capacity"))
    node_expands = [e for e in cluster.calls() if e.call.endswith("NodeExpandVolume")]
    report.check("NodeExpandVolume called by the kubelet", bool(node_expands), len(node_expands))
    await api.create(builders.persistent_volume_claim(
        "db-restore", storage="10Gi", storage_class=STORAGE_CLASS,
        data_source={"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                     "name": "db-snap"}))
    await cluster.settle("db-restore bound", _claim("db-restore"))
    restored = await api.get("PersistentVolumeClaim", "db-restore", "default")
    rpv = await api.get("PersistentVolume", restored.spec.get("volumeName", ""))
    report.check("restored volume bound at 10Gi",
                 restored.status.get("capacity", {}).get("storage") == "10Gi",
                 restored.status.get("capacity"))
    source = restored.spec.get("dataSource")
    report.check("restore records its source", (source or {}).get("name") == "db-snap", source)
    report.notes.append(f"restored PV {rpv.name} handle {rpv.spec['csi']['volumeHandle']}")


async def scenario_network_and_storage(cluster: ScenarioCluster, report: Report) -> None:
    api = cluster.client
    await _pvc_pod(cluster, "shop-data", "shop")
    pod = await api.get("Pod", "shop", "default")
    pvc = await api.get("PersistentVolumeClaim", "shop-data", "default")
    report.notes.append(_pod(pod))
    report.check("an IP", bool(pod.status.get("podIP")), pod.status.get("podIP"))
    target = cluster.kubelet_paths("node-1").pod_mount_path(pod.metadata.uid,
                                                             pvc.spec.get("volumeName", ""))
    report.check("a mounted, bound PVC", pvc.status.get("phase") == "Bound" and target.exists(),
                 f"{pvc.status.get('phase')} at {_rel(cluster, target)}")
    report.check("Running", pod.status.get("phase") == "Running", pod.status.get("phase"))
    order = [e.call for e in cluster.calls()
             if e.call.endswith(("NodeStageVolume", "NodePublishVolume"))
             or e.call.startswith("cni ADD")]
    first_cni = next((i for i, c in enumerate(order) if c.startswith("cni ADD")), -1)
    report.check("volumes mounted before the sandbox's CNI ADD",
                 first_cni > 0 and all(not c.startswith("cni") for c in order[:first_cni]),
                 " → ".join(order))


SCENARIOS: list[tuple[str, int, Scenario]] = [
    ("1. CNI ADD + IPAM: a pod gets an IP", 1, scenario_pod_ip),
    ("2. Two nodes: pods on each, routed between nodes", 2, scenario_cross_node),
    ("3. NetworkPolicy: only app=web may reach app=db on 3306/TCP", 1, scenario_network_policy),
    ("4. Dynamic provisioning: provision, attach, stage, publish, then tear down", 1,
     scenario_provisioning),
    ("5. Snapshot and expand", 1, scenario_snapshot_expand),
    ("6. A pod with both network and storage", 1, scenario_network_and_storage),
]


async def _storage_objects(cluster: ScenarioCluster) -> None:
    await cluster.client.create(builders.storage_class(STORAGE_CLASS, cluster.driver_name,
                                                       allow_volume_expansion=True))
    await cluster.client.create(builders.volume_snapshot_class("mini-snapclass",
                                                               cluster.driver_name))


def open_cluster(nodes: int, opts: DemoOptions, trace: Trace
                 ) -> AbstractAsyncContextManager[ScenarioCluster]:
    """A fresh cluster for one scenario: in this process, or `up --processes`."""
    if opts.processes:
        from kubelet_sim.demo_processes import processes_cluster

        return processes_cluster(nodes, trace, opts.up_flags)
    return in_process_cluster(nodes, opts.dataplane, opts.cluster, trace)


async def run_scenario(index: int, title: str, nodes: int, body: Scenario,
                       opts: DemoOptions) -> Report:
    out = opts.out
    phase = f"scenario {index}"
    start_up = f"{phase} start-up"
    trace = Trace(sink=opts.trace_sink, phase=start_up)
    report = Report(title)
    stuck: list[str] = []
    work = ""
    async with open_cluster(nodes, opts, trace) as cluster:
        work = str(cluster.work_dir)
        await _storage_objects(cluster)
        cluster.begin(phase)
        try:
            await body(cluster, report)
        except Exception as err:  # a scenario that stops early still shows what it saw
            report.check("scenario ran to its end", False, f"{type(err).__name__}: {err}")
        stuck = await cluster.not_running()
    print(f"\n=== {title}", file=out)
    for note in report.notes:
        print(f"  · {note}", file=out)
    for what, ok, observed in report.checks:
        print(f"  [{'ok' if ok else 'FAIL'}] {what}: {observed}", file=out)
    for line in stuck:
        print(line, file=out)
    if opts.show_trace:
        print("  call trace:", file=out)
        for line in trace_lines(trace, phase, start_up=start_up, aliases={work: "<work>"}):
            print(line, file=out)
    return report


async def run_demo(opts: DemoOptions, only: list[int] | None = None) -> bool:
    started = time.monotonic()
    reports = []
    for index, (title, nodes, body) in enumerate(SCENARIOS, start=1):
        if only and index not in only:
            continue
        reports.append(await run_scenario(index, title, nodes, body, opts))
    passed = sum(r.passed for r in reports)
    where = ", up --processes" if opts.processes else ""
    print(f"\n{passed} of {len(reports)} scenarios passed in {time.monotonic() - started:.1f}s "
          f"({opts.dataplane} dataplane{where})", file=opts.out)
    return passed == len(reports)


def main_demo(opts: DemoOptions, only: list[int] | None = None,
              trace_file: Path | None = None) -> int:
    try:
        if trace_file is None:
            return 0 if asyncio.run(run_demo(opts, only)) else 1
        with trace_file.open("w", encoding="utf-8") as sink:
            return 0 if asyncio.run(run_demo(replace(opts, trace_sink=sink), only)) else 1
    except UpDidNotStart as err:
        print(f"kubelet_sim: {err}", file=sys.stderr)
        return 2
