"""Defaulting the API server applies on every write, as Kubernetes' registered defaulters do.

Only defaults the simulator's components read are applied; each is the value Kubernetes
itself fills in.
"""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.model import JSON, NAMESPACE_NAME_LABEL, Resource
from kubelet_sim.api.quantity import Quantity, QuantityError
from kubelet_sim.apiserver import job_rules, priority_classes, rbac, workloads
from kubelet_sim.apiserver.create_defaults import default_pod_spec
from kubelet_sim.apiserver.quota import rules as quota_rules
from kubelet_sim.apiserver.secret_rules import prepare_secret
from kubelet_sim.apiserver.services import endpoint_rules
from kubelet_sim.apiserver.services import rules as service_rules
from kubelet_sim.apiserver.volume_defaults import default_volumes


def apply_defaults(obj: Resource) -> None:
    """Fill in defaulted fields of ``obj`` in place."""
    handler = _DEFAULTERS.get(obj.kind)
    if handler is None:
        return
    try:
        handler(obj)
    except (AttributeError, TypeError):
        # A malformed shape (a string where an object belongs): validation, which runs
        # next, rejects it with the field's path.
        return


def _namespace(obj: Resource) -> None:
    # Kubernetes forces this label to the namespace's name on create and update.
    obj.metadata.labels[NAMESPACE_NAME_LABEL] = obj.metadata.name


def _ports(ports: list[JSON] | None) -> None:
    for port in ports or []:
        port.setdefault("protocol", "TCP")


def _pod(obj: Resource) -> None:
    spec = obj.spec
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        _ports(container.get("ports"))
    default_pod_spec(spec)
    for volume in spec.get("volumes") or []:
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict):
            claim.setdefault("readOnly", False)
    obj.status.setdefault("qosClass", qos_class(spec))
    default_volumes(spec.get("volumes") or [])  # their sources' defaults


def _same_quantity(a: object, b: object) -> bool:
    try:
        return Quantity.parse(a).canonical() == Quantity.parse(b).canonical()
    except QuantityError:
        return a == b


def qos_class(spec: JSON) -> str:
    """Kubernetes' QoS class of a pod spec: BestEffort without any cpu/memory request or
    limit; Guaranteed when every container limits both and requests (where given) equal
    the limits; Burstable otherwise."""
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    compute = ("cpu", "memory")
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if any(r in requests or r in limits for r in compute):
            any_set = True
        for r in compute:
            if r not in limits or (r in requests and not _same_quantity(requests[r], limits[r])):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _canonical_quantities(resources: object) -> None:
    """Rewrite quantities in their canonical spelling (``1.5Gi`` is stored as ``1536Mi``),
    as the API server does when it round-trips ``resource.Quantity``. Unparseable values
    are left for validation to reject."""
    if not isinstance(resources, dict):
        return
    for key, value in resources.items():
        try:
            resources[key] = Quantity.parse(value).canonical()
        except QuantityError:
            continue


def _pvc(obj: Resource) -> None:
    obj.spec.setdefault("volumeMode", "Filesystem")
    # KEP 1495: dataSource and dataSourceRef mirror each other when only one is given
    # (a dataSourceRef into another namespace has no dataSource twin).
    source, ref = obj.spec.get("dataSource"), obj.spec.get("dataSourceRef")
    if isinstance(source, dict) and ref is None:
        obj.spec["dataSourceRef"] = dict(source)
    elif isinstance(ref, dict) and source is None and not ref.get("namespace"):
        obj.spec["dataSource"] = {k: v for k, v in ref.items() if k != "namespace"}
    resources = obj.spec.get("resources")
    if isinstance(resources, dict):
        _canonical_quantities(resources.get("requests"))
        _canonical_quantities(resources.get("limits"))
    _canonical_quantities(obj.status.get("capacity"))
    _canonical_quantities(obj.status.get("allocatedResources"))


def _pv(obj: Resource) -> None:
    obj.spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    obj.spec.setdefault("volumeMode", "Filesystem")
    _canonical_quantities(obj.spec.get("capacity"))


def _storage_class(obj: Resource) -> None:
    obj.body.setdefault("reclaimPolicy", "Delete")
    obj.body.setdefault("volumeBindingMode", "Immediate")


def _csi_driver(obj: Resource) -> None:
    spec = obj.spec
    spec.setdefault("attachRequired", True)
    spec.setdefault("podInfoOnMount", False)
    spec.setdefault("requiresRepublish", False)
    spec.setdefault("storageCapacity", False)
    spec.setdefault("seLinuxMount", False)
    spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
    spec.setdefault("volumeLifecycleModes", ["Persistent"])


def _csi_storage_capacity(obj: Resource) -> None:
    sizes = {k: obj.body[k] for k in ("capacity", "maximumVolumeSize")
             if obj.body.get(k) is not None}
    _canonical_quantities(sizes)
    obj.body.update(sizes)


def _network_policy(obj: Resource) -> None:
    spec = obj.spec
    if not spec.get("policyTypes"):
        # Ingress always; Egress only when the policy has at least one egress rule
        # (an empty ``egress: []`` does not count), as Kubernetes' defaulter decides.
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    for rule in [*(spec.get("ingress") or []), *(spec.get("egress") or [])]:
        _ports(rule.get("ports"))


_DEFAULTERS: dict[str, Callable[[Resource], None]] = {
    "Namespace": _namespace,
    "Pod": _pod,
    "PersistentVolumeClaim": _pvc,
    "PersistentVolume": _pv,
    "StorageClass": _storage_class,
    "CSIDriver": _csi_driver,
    "CSIStorageCapacity": _csi_storage_capacity,
    "NetworkPolicy": _network_policy,
    "Secret": prepare_secret,
    # services and RBAC (issue 24)
    "Service": service_rules.default_service,
    "Endpoints": endpoint_rules.default_endpoints,
    "EndpointSlice": endpoint_rules.default_endpoint_slice,
    "RoleBinding": rbac.default_binding,
    "ClusterRoleBinding": rbac.default_binding,
    "ResourceQuota": quota_rules.default_resource_quota,
    "LimitRange": quota_rules.default_limit_range,
}

# the apps/v1 and batch/v1 workload kinds keep their rules apart
_DEFAULTERS.update(workloads.DEFAULTERS)
_DEFAULTERS["Job"] = job_rules.default_job
_DEFAULTERS[priority_classes.KIND] = priority_classes.default_priority_class
