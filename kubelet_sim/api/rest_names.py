"""The REST names of the built-in kinds (kind -> plural, short names, categories), as a
real API server lists them in discovery: the HTTP front serves its paths by them and the
HTTP client builds its request paths from them."""

from __future__ import annotations

REST_NAMES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "Namespace": ("namespaces", ("ns",), ()),
    "Node": ("nodes", ("no",), ()),
    "Pod": ("pods", ("po",), ("all",)),
    "PersistentVolumeClaim": ("persistentvolumeclaims", ("pvc",), ()),
    "PersistentVolume": ("persistentvolumes", ("pv",), ()),
    "StorageClass": ("storageclasses", ("sc",), ()),
    "VolumeAttributesClass": ("volumeattributesclasses", ("vac",), ()),
    "CSIDriver": ("csidrivers", (), ()),
    "CSINode": ("csinodes", (), ()),
    "CSIStorageCapacity": ("csistoragecapacities", (), ()),
    "VolumeAttachment": ("volumeattachments", (), ()),
    "VolumeSnapshot": ("volumesnapshots", ("vs",), ()),
    "VolumeSnapshotContent": ("volumesnapshotcontents", ("vsc", "vscs"), ()),
    "VolumeSnapshotClass": ("volumesnapshotclasses", ("vsclass", "vsclasses"), ()),
    "NetworkPolicy": ("networkpolicies", ("netpol",), ()),
    "Lease": ("leases", (), ()),
    "PodDisruptionBudget": ("poddisruptionbudgets", ("pdb",), ()),
    "Event": ("events", ("ev",), ()),
    "Secret": ("secrets", (), ()),
    "ServiceAccount": ("serviceaccounts", ("sa",), ()),
    "Deployment": ("deployments", ("deploy",), ("all",)),
    "ReplicaSet": ("replicasets", ("rs",), ("all",)),
    "StatefulSet": ("statefulsets", ("sts",), ("all",)),
    "DaemonSet": ("daemonsets", ("ds",), ("all",)),
    "ControllerRevision": ("controllerrevisions", (), ()),
    "Job": ("jobs", (), ("all",)),
    "CustomResourceDefinition": ("customresourcedefinitions", ("crd", "crds"), ("api-extensions",)),
    # configuration, services and RBAC (issue 24)
    "ConfigMap": ("configmaps", ("cm",), ()),
    "Service": ("services", ("svc",), ("all",)),
    "Endpoints": ("endpoints", ("ep",), ()),
    "EndpointSlice": ("endpointslices", (), ()),
    "Role": ("roles", (), ()),
    "ClusterRole": ("clusterroles", (), ()),
    "RoleBinding": ("rolebindings", (), ()),
    "ClusterRoleBinding": ("clusterrolebindings", (), ()),
    "ResourceQuota": ("resourcequotas", ("quota",), ()),
    "LimitRange": ("limitranges", ("limits",), ()),
    "PriorityClass": ("priorityclasses", ("pc",), ()),
}


def plural(kind: str) -> str | None:
    """The resource name of a built-in ``kind`` (``storageclasses``), None if unknown."""
    names = REST_NAMES.get(kind)
    return names[0] if names else None
