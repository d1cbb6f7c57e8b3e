"""The fields each kind defines: one source for the OpenAPI document ``kubectl explain``
reads and for the API server's ``fieldValidation`` (unknown fields).

A schema is a tree. :class:`Obj` lists an object's fields (closed: any other field is
unknown); :class:`Arr` is a list of one schema; :class:`Map` is an object with free keys
(labels, parameters); :class:`Leaf` is a scalar; :data:`OPEN` is a sub-tree whose fields
are not enumerated here and are not checked (a volume source's own fields, affinity,
status). The names are Kubernetes' (``k8s.io/api``, the snapshot CRDs).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubelet_sim.api.model import KINDS


@dataclass(frozen=True)
class Leaf:
    type: str  # string, integer, boolean, number


@dataclass(frozen=True)
class Open:
    """Fields not enumerated: anything goes, nothing is checked."""


@dataclass(frozen=True)
class Map:
    values: Node = Leaf("string")


@dataclass(frozen=True)
class Arr:
    items: Node


@dataclass(frozen=True)
class Obj:
    fields: dict[str, Node]


Node = Leaf | Open | Map | Arr | Obj

STR, INT, BOOL = Leaf("string"), Leaf("integer"), Leaf("boolean")
OPEN = Open()
STRS = Arr(STR)


def _open(*names: str) -> dict[str, Node]:
    return dict.fromkeys(names, OPEN)


OWNER_REFERENCE = Obj({"apiVersion": STR, "kind": STR, "name": STR, "uid": STR,
                       "controller": BOOL, "blockOwnerDeletion": BOOL})
OBJECT_META = Obj({
    "name": STR, "generateName": STR, "namespace": STR, "selfLink": STR, "uid": STR,
    "resourceVersion": STR, "generation": INT, "creationTimestamp": STR,
    "deletionTimestamp": STR, "deletionGracePeriodSeconds": INT, "labels": Map(),
    "annotations": Map(), "ownerReferences": Arr(OWNER_REFERENCE), "finalizers": STRS,
    "managedFields": Arr(OPEN),
})
LABEL_SELECTOR = Obj({"matchLabels": Map(), "matchExpressions": Arr(Obj(
    {"key": STR, "operator": STR, "values": STRS}))})

CONTAINER = Obj({
    "name": STR, "image": STR, "command": STRS, "args": STRS, "workingDir": STR,
    "ports": Arr(Obj({"name": STR, "hostPort": INT, "containerPort": INT, "protocol": STR,
                      "hostIP": STR})),
    "volumeMounts": Arr(Obj({"name": STR, "readOnly": BOOL, "recursiveReadOnly": STR,
                             "mountPath": STR, "subPath": STR, "mountPropagation": STR,
                             "subPathExpr": STR})),
    "imagePullPolicy": STR, "terminationMessagePath": STR, "terminationMessagePolicy": STR,
    "stdin": BOOL, "stdinOnce": BOOL, "tty": BOOL,
    **_open("envFrom", "env", "resources", "resizePolicy", "restartPolicy",
            "restartPolicyRules", "volumeDevices", "livenessProbe", "readinessProbe",
            "startupProbe", "lifecycle", "securityContext"),
})
# The volume sources a Pod's volume (and, below, a PersistentVolume) may name.
_POD_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
    "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos",
    "ephemeral", "image")
VOLUME = Obj({
    "name": STR,
    "persistentVolumeClaim": Obj({"claimName": STR, "readOnly": BOOL}),
    "csi": Obj({"driver": STR, "readOnly": BOOL, "fsType": STR, "volumeAttributes": Map(),
                "nodePublishSecretRef": OPEN}),
    **_open(*_POD_VOLUME_SOURCES),
})
POD_SPEC = Obj({
    "containers": Arr(CONTAINER), "initContainers": Arr(CONTAINER),
    "volumes": Arr(VOLUME), "restartPolicy": STR, "terminationGracePeriodSeconds": INT,
    "activeDeadlineSeconds": INT, "dnsPolicy": STR, "nodeSelector": Map(),
    "serviceAccountName": STR, "serviceAccount": STR, "automountServiceAccountToken": BOOL,
    "nodeName": STR, "hostNetwork": BOOL, "hostPID": BOOL, "hostIPC": BOOL,
    "shareProcessNamespace": BOOL, "hostname": STR, "subdomain": STR, "schedulerName": STR,
    "priorityClassName": STR, "priority": INT, "runtimeClassName": STR,
    "enableServiceLinks": BOOL, "preemptionPolicy": STR, "setHostnameAsFQDN": BOOL,
    "hostUsers": BOOL, "hostnameOverride": STR,
    **_open("ephemeralContainers", "securityContext", "imagePullSecrets", "affinity",
            "tolerations", "hostAliases", "dnsConfig", "readinessGates", "overhead",
            "topologySpreadConstraints", "os", "schedulingGates", "resourceClaims",
            "resources"),
})
PVC_SPEC = Obj({
    "accessModes": STRS, "selector": LABEL_SELECTOR,
    "resources": Obj({"requests": Map(), "limits": Map()}), "volumeName": STR,
    "storageClassName": STR, "volumeMode": STR, "volumeAttributesClassName": STR,
    **_open("dataSource", "dataSourceRef"),
})
PV_SPEC = Obj({
    "capacity": Map(), "accessModes": STRS, "persistentVolumeReclaimPolicy": STR,
    "storageClassName": STR, "mountOptions": STRS, "volumeMode": STR,
    "volumeAttributesClassName": STR,
    "csi": Obj({"driver": STR, "volumeHandle": STR, "readOnly": BOOL, "fsType": STR,
                "volumeAttributes": Map(),
                **_open("controllerPublishSecretRef", "nodeStageSecretRef",
                        "nodePublishSecretRef", "controllerExpandSecretRef",
                        "nodeExpandSecretRef")}),
    **_open("claimRef", "nodeAffinity", "local",
            *(s for s in _POD_VOLUME_SOURCES if s not in (
                "emptyDir", "gitRepo", "secret", "downwardAPI", "configMap", "projected",
                "ephemeral", "image"))),
})
SPECS: dict[str, Node] = {
    "Namespace": Obj({"finalizers": STRS}),
    "Node": Obj({"podCIDR": STR, "podCIDRs": STRS, "providerID": STR, "unschedulable": BOOL,
                 "externalID": STR, **_open("taints", "configSource")}),
    "Pod": POD_SPEC,
    "PersistentVolumeClaim": PVC_SPEC,
    "PersistentVolume": PV_SPEC,
    "CSIDriver": Obj({"attachRequired": BOOL, "podInfoOnMount": BOOL,
                      "volumeLifecycleModes": STRS, "storageCapacity": BOOL,
                      "fsGroupPolicy": STR, "requiresRepublish": BOOL, "seLinuxMount": BOOL,
                      "nodeAllocatableUpdatePeriodSeconds": INT,
                      "serviceAccountTokenInSecrets": BOOL, **_open("tokenRequests")}),
    "CSINode": Obj({"drivers": Arr(Obj({"name": STR, "nodeID": STR, "topologyKeys": STRS,
                                        "allocatable": Obj({"count": INT})}))}),
    "VolumeAttachment": Obj({"attacher": STR, "nodeName": STR, "source": Obj(
        {"persistentVolumeName": STR, "inlineVolumeSpec": OPEN})}),
    "VolumeSnapshot": Obj({"volumeSnapshotClassName": STR, "source": Obj(
        {"persistentVolumeClaimName": STR, "volumeSnapshotContentName": STR})}),
    "VolumeSnapshotContent": Obj({
        "deletionPolicy": STR, "driver": STR, "volumeSnapshotClassName": STR,
        "sourceVolumeMode": STR, "volumeSnapshotRef": OPEN,
        "source": Obj({"volumeHandle": STR, "snapshotHandle": STR})}),
    "NetworkPolicy": Obj({
        "podSelector": LABEL_SELECTOR, "policyTypes": STRS,
        "ingress": Arr(Obj({"from": Arr(OPEN), "ports": Arr(OPEN)})),
        "egress": Arr(Obj({"to": Arr(OPEN), "ports": Arr(OPEN)}))}),
    # apiextensions.k8s.io/v1: the schema itself (openAPIV3Schema) is free-form here
    "CustomResourceDefinition": Obj({
        "group": STR, "scope": STR, "preserveUnknownFields": BOOL,
        "names": Obj({"plural": STR, "singular": STR, "kind": STR, "listKind": STR,
                      "shortNames": STRS, "categories": STRS}),
        "conversion": Obj({"strategy": STR, "webhook": OPEN}),
        "versions": Arr(Obj({
            "name": STR, "served": BOOL, "storage": BOOL, "deprecated": BOOL,
            "deprecationWarning": STR, "schema": Obj({"openAPIV3Schema": OPEN}),
            "subresources": Obj({"status": OPEN, "scale": Obj({
                "specReplicasPath": STR, "statusReplicasPath": STR,
                "labelSelectorPath": STR})}),
            "additionalPrinterColumns": Arr(Obj({
                "name": STR, "type": STR, "format": STR, "description": STR,
                "priority": INT, "jsonPath": STR})),
            "selectableFields": Arr(Obj({"jsonPath": STR}))}))}),
    "Lease": Obj({"holderIdentity": STR, "leaseDurationSeconds": INT, "acquireTime": STR,
                  "renewTime": STR, "leaseTransitions": INT, "strategy": STR,
                  "preferredHolder": STR}),
}
# Top-level fields of the kinds without spec (their names are in the kind registry).
_TOP_LEVEL_TYPES: dict[str, Node] = {
    "parameters": Map(), "mountOptions": STRS, "allowVolumeExpansion": BOOL,
    "allowedTopologies": Arr(OPEN)}


def kind_schema(kind: str) -> Obj | None:
    """The whole object's schema; None for a kind this module does not describe."""
    info = KINDS.get(kind)
    if info is None:
        return None
    fields: dict[str, Node] = {"apiVersion": STR, "kind": STR, "metadata": OBJECT_META}
    if info.has_spec:
        spec = SPECS.get(kind)
        if spec is None:
            return None
        fields["spec"] = spec
    fields.update({name: _TOP_LEVEL_TYPES.get(name, STR) for name in sorted(info.top_level)})
    if info.status_subresource:
        fields["status"] = OPEN
    return Obj(fields)
