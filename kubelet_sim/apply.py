"""``python -m kubelet_sim apply FILE...``: manifests onto a fresh cluster, then a report.

The cluster starts with the driver's CSIDriver object; a StorageClass, a
VolumeSnapshotClass, pods, claims and policies come from the files. After applying
them the controllers and kubelets run until nothing changes, then the pods and claims are
printed — under each one not Running or not Bound, the reasons the components recorded
(:mod:`kubelet_sim.describe`) — and the calls the manifests caused, numbered from 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from kubelet_sim.api.errors import ApiError
from kubelet_sim.client.manifests import ManifestError, apply_manifests, load_file
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.describe import claim_reasons, pod_reasons
from kubelet_sim.utils.trace import START_UP, Trace, trace_lines

APPLY = "apply"  # the trace phase of what the manifests caused


def _status_lines(cluster: Cluster) -> list[str]:
    api = cluster.api
    lines = ["PODS"]
    for pod in api.list("Pod").items:
        st = pod.status
        phase = st.get("phase", "Pending")
        lines.append(f"  {pod.namespace}/{pod.name:<24} {phase:<9} "
                     f"node={pod.spec.get('nodeName', '-')} ip={st.get('podIP', '-')}")
        if phase != "Running":
            lines += _reason_lines(pod_reasons(api, cluster.events, pod))
    lines.append("PERSISTENTVOLUMECLAIMS")
    for pvc in api.list("PersistentVolumeClaim").items:
        st = pvc.status
        phase = st.get("phase", "Pending")
        lines.append(f"  {pvc.namespace}/{pvc.name:<24} {phase:<9} "
                     f"volume={pvc.spec.get('volumeName', '-')} "
                     f"capacity={st.get('capacity', {}).get('storage', '-')}")
        if phase != "Bound":
            lines += _reason_lines(claim_reasons(cluster.events, pvc))
    return lines


def _reason_lines(reasons: list[str]) -> list[str]:
    return [f"      {reason}" for reason in reasons or ["(no component recorded a reason)"]]


async def apply_files(files: list[Path], *, nodes: int = 1, dataplane: str = "emulated",
                      trace_file: Path | None = None, out: TextIO | None = None,
                      cluster_options: dict[str, Any] | None = None) -> int:
    try:
        objects = [obj for path in files for obj in load_file(path)]
    except (ManifestError, OSError) as err:
        print(f"kubelet_sim apply: {err}", file=out or sys.stderr)
        return 1
    trace = Trace.to_file(trace_file, phase=START_UP) if trace_file else Trace(phase=START_UP)
    cluster = Cluster(ClusterConfig(nodes=default_nodes(nodes), dataplane=dataplane,
                                    **(cluster_options or {})), trace)
    try:
        await cluster.start()
        trace.begin(APPLY)
        for obj in objects:
            try:
                [stored] = apply_manifests(cluster.api, [obj])
            except ApiError as err:
                where = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
                print(f"kubelet_sim apply: {obj.kind} {where}: {err}", file=out or sys.stderr)
                return 1
            print(f"{stored.kind.lower()}/{stored.name} applied", file=out)
        await cluster.settle()
        for line in _status_lines(cluster):
            print(line, file=out)
        print("TRACE", file=out)
        for line in trace_lines(trace, APPLY, aliases={str(cluster.work_dir): "<work>"}):
            print(line, file=out)
    finally:
        await cluster.stop()
        trace.close()
    return 0
