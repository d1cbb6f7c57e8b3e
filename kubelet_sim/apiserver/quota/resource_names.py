"""Which resource names mean what, as ``pkg/apis/core/helper`` sorts them: the standard
names, those quota tracks, integer ones, extended and huge-page resources, and the quota
scopes with the resources each may apply to."""

from __future__ import annotations

from kubelet_sim.api.label_rules import qualified_name_errors

HUGE_PAGES = "hugepages-"
REQUESTS = "requests."
STANDARD_QUOTA = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers",
})
STANDARD = STANDARD_QUOTA | {"storage"}
STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
INTEGER = frozenset({
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
})
LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")

SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity", "VolumeAttributesClass")
_POD_COUNT = frozenset({"pods"})
_POD_COMPUTE = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                          "requests.memory"})
_PVC_RESOURCES = frozenset({"persistentvolumeclaims", "requests.storage"})


def is_quota_huge_pages(name: str) -> bool:
    return name.startswith((HUGE_PAGES, REQUESTS + HUGE_PAGES))


def is_standard(name: str) -> bool:
    return name in STANDARD or is_quota_huge_pages(name)


def is_standard_quota(name: str) -> bool:
    return name in STANDARD_QUOTA or is_quota_huge_pages(name)


def is_native(name: str) -> bool:
    """In the ``kubernetes.io/`` namespace (an unprefixed name is)."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """A resource outside ``kubernetes.io/``, never prefixed ``requests.``, whose quota
    name ``requests.<name>`` is a qualified name."""
    if is_native(name) or name.startswith(REQUESTS):
        return False
    return not qualified_name_errors(REQUESTS + name)


def is_integer(name: str) -> bool:
    return name in INTEGER or is_extended(name)


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not name.startswith(HUGE_PAGES)


def scope_applies_to(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):
        return resource in _POD_COUNT or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource in _POD_COUNT
    if scope == "VolumeAttributesClass":
        return resource in _PVC_RESOURCES or resource.endswith(
            (".storageclass.storage.k8s.io/persistentvolumeclaims",
             ".storageclass.storage.k8s.io/requests.storage"))
    return True
