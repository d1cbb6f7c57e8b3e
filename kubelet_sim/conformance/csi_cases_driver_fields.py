"""CSI conformance cases about the fields of the driver's CSIDriver object (see
:mod:`kubelet_sim.conformance.csi`), run when the user passes the object (``--csidriver
FILE``), each gated on the field it is about and on the driver's capabilities:

- ``csidriver/fs-group-policy``: a pod with ``fsGroup`` on a claim; a driver with
  VOLUME_MOUNT_GROUP gets the group as ``volume_mount_group`` in NodeStage/NodePublish,
  otherwise the published directory has the group exactly when the policy lets the kubelet
  apply it;
- ``csidriver/selinux-mount`` (``seLinuxMount: true``): a ReadWriteOncePod claim of a pod
  with SELinux options is staged and published with ``context="…"`` last in its flags;
- ``csidriver/no-attach`` (``attachRequired: false``): no VolumeAttachment, no
  ControllerPublishVolume, an empty publish context, and the pod runs;
- ``csidriver/lifecycle-mode-refusal``: an inline volume of a driver that does not list
  Ephemeral (or a claim of one that does not list Persistent) keeps the pod Pending with
  the kubelet's FailedMount message and no NodePublishVolume.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.conformance.csi_run import CsiRun, CsiTarget, NodeRpc
from kubelet_sim.conformance.report import Skip
from kubelet_sim.csi.driver_policy import (
    EPHEMERAL,
    PERSISTENT,
    DriverPolicy,
    kubelet_applies_fs_group,
    lifecycle_mode_error,
    selinux_file_label,
    selinux_mount_option,
)

GROUP = 4321
LEVEL = "s0:c1,c2"


def attach_required(target: CsiTarget) -> bool:
    """Whether the suite starts our driver with ControllerPublish: as the user's CSIDriver
    says (a driver that publishes would refuse a NodeStage the CO never attached)."""
    return (target.csidriver or {}).get("attachRequired", True) is not False


def install_csidriver(run: CsiRun) -> None:
    """Replace the suite's CSIDriver object by the user's (``--csidriver``), named after
    the driver under test."""
    spec = run.target.csidriver
    if spec is None:
        return
    with contextlib.suppress(NotFound):
        run.api.delete("CSIDriver", run.driver)
    run.api.create({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                    "metadata": {"name": run.driver}, "spec": dict(spec)})


def policy_of(run: CsiRun) -> DriverPolicy:
    """The CSIDriver the cluster has for the driver under test."""
    try:
        return DriverPolicy.from_spec(run.api.get("CSIDriver", run.driver).spec)
    except NotFound:
        return DriverPolicy()


def _user_field(run: CsiRun, name: str) -> Any:
    spec = run.target.csidriver
    if spec is None:
        raise Skip("no CSIDriver object given (--csidriver FILE)")
    if name not in spec:
        raise Skip(f"the CSIDriver object does not set {name}")
    return spec[name]


def _claim_pod(run: CsiRun, ns: str, name: str, claim: str, security: JSON) -> Resource:
    pod = builders.pod(name, ns, volumes=[builders.pvc_volume("data", claim)],
                       containers=[builders.container(
                           "app", volume_mounts=[{"name": "data", "mountPath": "/data"}])])
    pod.spec["securityContext"] = security
    pod.spec["nodeSelector"] = {"kubernetes.io/hostname": run.nodes[0]}
    return run.api.create(pod)


def _requests(run: CsiRun, method: str, since: int, about: str = "") -> list[JSON]:
    return [e.request for e in run.cluster.trace.events[since:]
            if e.call == f"csi.Node/{method}" and about in str(e.request)]


async def fs_group_policy(run: CsiRun, ns: str) -> None:
    policy_name = _user_field(run, "fsGroupPolicy")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "owned", sc)
    mark = len(run.cluster.trace.events)
    _claim_pod(run, ns, "owner", "owned", {"fsGroup": GROUP})
    await run.cluster.settle()
    pod = run.must_run(ns, "owner")
    [publish] = _requests(run, "NodePublishVolume", mark, pod.metadata.uid)
    mount = publish["volume_capability"].get("mount", {})
    if NodeRpc.VOLUME_MOUNT_GROUP in run.node_rpcs:
        assert mount.get("volume_mount_group") == str(GROUP), \
            f"NodePublishVolume volume_mount_group {mount.get('volume_mount_group')!r}"
        for stage in _requests(run, "NodeStageVolume", mark):
            assert stage["volume_capability"]["mount"].get("volume_mount_group") == str(GROUP)
    else:
        assert not mount.get("volume_mount_group"), "volume_mount_group without the capability"
        pv = run.claim_pv(ns, "owned")
        expected = kubelet_applies_fs_group(
            fs_group=GROUP, policy=str(policy_name), read_only=False,
            fs_type=str((pv.spec.get("csi") or {}).get("fsType", "")),
            access_modes=pv.spec.get("accessModes") or (), inline=False)
        gid = Path(str(publish["target_path"])).stat().st_gid
        assert (gid == GROUP) is expected, (
            f"fsGroupPolicy {policy_name}: the published directory has group {gid}, "
            f"the kubelet {'should' if expected else 'should not'} have applied {GROUP}")
    await run.delete("Pod", "owner", ns)
    await run.delete("PersistentVolumeClaim", "owned", ns)
    await run.delete("StorageClass", sc)


async def selinux_mount(run: CsiRun, ns: str) -> None:
    if _user_field(run, "seLinuxMount") is not True:
        raise Skip("the CSIDriver object does not set seLinuxMount: true")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "labelled", sc, access_modes=["ReadWriteOncePod"])
    mark = len(run.cluster.trace.events)
    _claim_pod(run, ns, "confined", "labelled", {"seLinuxOptions": {"level": LEVEL}})
    await run.cluster.settle()
    pod = run.must_run(ns, "confined")
    option = selinux_mount_option(selinux_file_label({"level": LEVEL}))
    [publish] = _requests(run, "NodePublishVolume", mark, pod.metadata.uid)
    flags = publish["volume_capability"]["mount"].get("mount_flags", [])
    assert flags and flags[-1] == option, f"NodePublishVolume mount_flags {flags}"
    for stage in _requests(run, "NodeStageVolume", mark):
        flags = stage["volume_capability"]["mount"].get("mount_flags", [])
        assert flags and flags[-1] == option, f"NodeStageVolume mount_flags {flags}"
    await run.delete("Pod", "confined", ns)
    await run.delete("PersistentVolumeClaim", "labelled", ns)
    await run.delete("StorageClass", sc)


async def no_attach(run: CsiRun, ns: str) -> None:
    if _user_field(run, "attachRequired") is not False:
        raise Skip("the CSIDriver object does not set attachRequired: false")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "direct", sc)
    mark = len(run.cluster.trace.events)
    pod = await run.running_pod(ns, "direct", ["direct"], run.nodes[0])
    assert not run.api.list("VolumeAttachment").items, "a VolumeAttachment was made"
    assert not run.calls("csi.Controller/ControllerPublishVolume", mark), \
        "ControllerPublishVolume was called"
    for request in [*_requests(run, "NodeStageVolume", mark),
                    *_requests(run, "NodePublishVolume", mark, pod.metadata.uid)]:
        assert not request.get("publish_context"), f"publish_context {request['publish_context']}"
    await run.delete("Pod", "direct", ns)
    await run.delete("PersistentVolumeClaim", "direct", ns)
    await run.delete("StorageClass", sc)


async def lifecycle_mode_refusal(run: CsiRun, ns: str) -> None:
    _user_field(run, "volumeLifecycleModes")
    policy = policy_of(run)
    mark = len(run.cluster.trace.events)
    if EPHEMERAL not in policy.lifecycle_modes:
        mode, volume, sc = EPHEMERAL, "scratch", ""
        run.api.create(builders.pod("refused", ns, node_name=run.nodes[0], volumes=[
            builders.csi_inline_volume("scratch", run.driver)]))
    elif PERSISTENT not in policy.lifecycle_modes:
        mode, sc = PERSISTENT, run.storage_class(f"{ns}-sc")
        run.claim(ns, "kept", sc)
        run.api.create(builders.pod("refused", ns, volumes=[builders.pvc_volume("data", "kept")]))
        await run.cluster.settle()
        volume = str(run.api.get("PersistentVolumeClaim", "kept", ns).spec.get("volumeName"))
    else:
        raise Skip("the driver lists both volume lifecycle modes")
    await run.cluster.settle()
    pod = run.api.get("Pod", "refused", ns)
    assert pod.status.get("phase") == "Pending", f"the pod is {pod.status.get('phase')}"
    assert not _requests(run, "NodePublishVolume", mark, pod.metadata.uid), \
        "NodePublishVolume was called"
    why = lifecycle_mode_error(run.driver, policy, mode)
    message = (f'FailedMount: MountVolume.SetUp failed for volume "{volume}" : '
               f"kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: {why}")
    events = run.events("Pod", "refused", ns)
    assert message in events, f"no {message!r} among the pod's events {events}"
    await run.delete("Pod", "refused", ns)
    if sc:
        await run.delete("PersistentVolumeClaim", "kept", ns)
        await run.delete("StorageClass", sc)


CASES: list[tuple[str, Callable[[CsiRun, str], Awaitable[None]]]] = [
    ("csidriver/fs-group-policy", fs_group_policy),
    ("csidriver/selinux-mount", selinux_mount),
    ("csidriver/no-attach", no_attach),
    ("csidriver/lifecycle-mode-refusal", lifecycle_mode_refusal),
]
