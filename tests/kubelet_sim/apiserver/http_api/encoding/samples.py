"""Objects of every built-in kind the API server serves, as the simulator itself makes them
(builders written through the API server core, so defaulted and stamped), and a rich Pod."""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.bootstrap_policy import ensure_bootstrap_policy
from kubelet_sim.apiserver.http import reviews
from kubelet_sim.apiserver.http.component_statuses import Components, component_statuses
from kubelet_sim.apiserver.http.events import shown
from kubelet_sim.apiserver.http.resources import (
    EVENTS_V1,
    LOCAL_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
    SUBJECT_ACCESS_REVIEWS,
)
from kubelet_sim.apiserver.rbac_authorizer import RbacAuthorizer
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder

from .crd_samples import gadgets_crd

DRIVER = "hostpath.csi.k8s.io"

RICH_POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
        "name": "web", "namespace": "default", "uid": "0b7c6a1e-1111-4c5e-9d7e-3f0a2b4c5d6e",
        "resourceVersion": "12", "generation": 1,
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "deletionTimestamp": "2024-05-01T11:00:00Z", "deletionGracePeriodSeconds": 0,
        "labels": {"app": "web"}, "annotations": {"note": "x"}, "finalizers": ["example.com/f"],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                             "uid": "9a9a", "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                           "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}],
    },
    "spec": {
        "containers": [{
            "name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 1d"],
            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                          "limits": {"cpu": "1", "memory": "128Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http",
                                          "scheme": "HTTP"}, "periodSeconds": 10},
            "readinessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5},
            "volumeMounts": [{"name": "data", "mountPath": "/data"},
                             {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True}],
            "env": [{"name": "A", "value": "1"},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k",
                                                                 "optional": False}}},
                    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "c"}}}],
            "securityContext": {"runAsUser": 0, "privileged": False},
        }],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web"}},
            {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "tmp", "emptyDir": {}},
            {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420,
                                          "items": [{"key": "a", "path": "a.conf"}]}},
            {"name": "inline", "csi": {"driver": DRIVER, "volumeAttributes": {"size": "1Gi"}}},
            {"name": "token", "projected": {"sources": [{"serviceAccountToken": {
                "path": "token", "expirationSeconds": 3607}}]}},
        ],
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300},
                        {"key": "dedicated", "operator": "Equal", "value": "db",
                         "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In",
                     "values": ["a", "b"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100, "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname"}}]},
        },
        "nodeName": "node-1", "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler",
        "enableServiceLinks": True, "priority": 0, "overhead": {"cpu": "250m"},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                       "whenUnsatisfiable": "DoNotSchedule",
                                       "labelSelector": {"matchLabels": {"app": "web"}}}],
    },
    "status": {
        "phase": "Running", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}],
        "hostIP": "192.168.0.1", "startTime": "2024-05-01T10:00:00Z", "qosClass": "Burstable",
        "conditions": [{"type": "Ready", "status": "True",
                        "lastTransitionTime": "2024-05-01T10:00:01Z"}],
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                               "image": "busybox", "imageID": "", "started": True,
                               "state": {"running": {"startedAt": "2024-05-01T10:00:01Z"}}}],
    },
}


def simulator_objects() -> list[dict[str, Any]]:
    """One or more objects of each built-in kind, as the simulator writes them."""
    api = APIServer(history_limit=50)
    made = [
        builders.namespace("team", labels={"tier": "db"}),
        builders.namespace("kube-node-lease"),
        builders.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=True,
                      labels={"topology.kubernetes.io/zone": "a"}),
        builders.storage_class("fast", DRIVER, parameters={"type": "ssd"},
                               volume_binding_mode="WaitForFirstConsumer",
                               allow_volume_expansion=True),
        builders.persistent_volume_claim("data", storage="1Gi", storage_class="fast"),
        builders.csi_persistent_volume("pv-1", driver=DRIVER, volume_handle="vol-1",
                                       storage="1Gi", volume_attributes={"a": "b"},
                                       fs_type="ext4"),
        builders.csi_driver(DRIVER, pod_info_on_mount=True,
                            volume_lifecycle_modes=["Persistent", "Ephemeral"]),
        builders.csi_node("node-1", [{"name": DRIVER, "nodeID": "node-1",
                                      "topologyKeys": ["topology.hostpath.csi/node"],
                                      "allocatable": {"count": 10}}]),
        builders.volume_attachment("csi-1234", DRIVER, "node-1", "pv-1"),
        builders.pod("app", containers=[builders.container(
            "main", ports=[builders.container_port(8080, "http")],
            volume_mounts=[{"name": "data", "mountPath": "/data"}])],
            volumes=[builders.pvc_volume("data", "data"),
                     builders.csi_inline_volume("eph", DRIVER, {"size": "1Gi"}, "ext4")],
            node_name="node-1"),
        builders.network_policy("deny", pod_selector={"matchLabels": {"app": "db"}},
                                ingress=[{"from": [{"podSelector": {}}],
                                          "ports": [{"protocol": "TCP", "port": 5432},
                                                    {"port": "metrics"}]}],
                                policy_types=["Ingress"]),
        builders.lease("node-1", "kube-node-lease", "node-1", 40,
                       "2024-05-01T10:00:00.123456Z"),
        builders.volume_attributes_class("gold", DRIVER, {"iops": "3000"}),
        builders.csi_storage_capacity("csisc-x7k2p", "kube-system", "fast",
                                      {"matchLabels": {"topology.hostpath.csi/node": "node-1"}},
                                      "1023Gi", "100Gi"),
        Resource.from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": "web", "namespace": "default"},
                            "spec": {"selector": {"matchLabels": {"app": "web"}},
                                     "maxUnavailable": "25%"}}),
        builders.secret("creds", "default", {"token": "s3cret"}),
        Resource.from_dict({"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": "robot", "namespace": "default"},
                            "imagePullSecrets": [{"name": "creds"}]}),
    ]
    for obj in made:
        api.create(obj)
    api.create(gadgets_crd())  # established: its status set by the server
    EventRecorder(api).record("Pod", "default", "app", "Normal", "Scheduled",
                              "Successfully assigned default/app to node-1",
                              "default-scheduler")
    out = [o.to_dict() for kind in ("Namespace", "Node", "StorageClass",
                                     "PersistentVolumeClaim", "PersistentVolume", "CSIDriver",
                                     "CSINode", "VolumeAttachment", "Pod", "NetworkPolicy",
                                     "Lease", "Event", "VolumeAttributesClass",
                                     "CSIStorageCapacity", "PodDisruptionBudget",
                                     "CustomResourceDefinition", "Secret", "ServiceAccount")
           for o in api.list(kind).items]
    events = [o for o in out if o["kind"] == "Event"]
    out.extend(shown(EVENTS_V1, copy.deepcopy(e)) for e in events)
    return out + _requests(api) + _config_services_and_rbac(api) + _workloads() + _quota(api)


def _quota(api: APIServer) -> list[dict[str, Any]]:
    """A ResourceQuota with the status its controller writes, and a LimitRange with its
    defaulted items."""
    quota = api.create({"apiVersion": "v1", "kind": "ResourceQuota",
                        "metadata": {"name": "compute"},
                        "spec": {"hard": {"pods": "10", "requests.cpu": "4"},
                                 "scopeSelector": {"matchExpressions": [
                                     {"scopeName": "PriorityClass", "operator": "In",
                                      "values": ["high"]}]}}})
    quota.status = {"hard": {"pods": "10", "requests.cpu": "4"},
                    "used": {"pods": "1", "requests.cpu": "500m"}}
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
              "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"},
                                   "min": {"cpu": "100m"}, "maxLimitRequestRatio": {"cpu": "4"}},
                                  {"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}}]}}
    return [api.update_status(quota).to_dict(), api.create(limits).to_dict()]


def _config_services_and_rbac(api: APIServer) -> list[dict[str, Any]]:
    """ConfigMaps, Services (allocated), endpoints, RBAC objects and a PriorityClass as the
    API server stores them (issue 24)."""
    rbac = "rbac.authorization.k8s.io/v1"
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
    made = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
         "data": {"mode": "fast"}, "binaryData": {"blob": "aGk="}, "immutable": True},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
         "spec": {"type": "NodePort", "selector": {"app": "web"},
                  "ports": [{"name": "http", "port": 80, "targetPort": "http"},
                            {"name": "metrics", "port": 9090, "protocol": "UDP"}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
         "spec": {"clusterIP": "None", "selector": {"app": "db"}}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
         "subsets": [{"addresses": [{"ip": "10.244.1.5", "nodeName": "node-1",
                                     "targetRef": {"kind": "Pod", "name": "web-1",
                                                   "namespace": "default"}}],
                      "notReadyAddresses": [{"ip": "10.244.1.6"}],
                      "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-abcde", "labels": {"kubernetes.io/service-name": "web"}},
         "addressType": "IPv4",
         "endpoints": [{"addresses": ["10.244.1.5"], "nodeName": "node-1", "zone": "a",
                        "conditions": {"ready": True, "serving": True, "terminating": False},
                        "targetRef": {"kind": "Pod", "name": "web-1",
                                      "namespace": "default"}}],
         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "reader"}, "rules": [rule]},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "reader"},
         "rules": [rule, {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"kind": "Role", "name": "reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"kind": "ClusterRole", "name": "reader"},
         "subjects": [{"kind": "User", "name": "jane"}, {"kind": "Group", "name": "devs"}]},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "batch"}, "value": -5, "globalDefault": True,
         "description": "for batch jobs", "preemptionPolicy": "Never"},
    ]
    return [api.create(raw).to_dict() for raw in made]


def _workloads() -> list[dict[str, Any]]:
    """The apps/v1 and batch/v1 kinds with the statuses their controllers write, a
    ControllerRevision and a Scale."""
    api = APIServer(history_limit=50)
    template: dict[str, Any] = {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    selector = {"matchLabels": {"app": "web"}}
    condition = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                 "message": "Deployment has minimum availability.",
                 "lastUpdateTime": "2024-05-01T10:00:00Z",
                 "lastTransitionTime": "2024-05-01T10:00:00Z"}
    statuses: dict[str, dict[str, Any]] = {
        "Deployment": {"replicas": 3, "availableReplicas": 3, "conditions": [condition],
                       "observedGeneration": 1},
        "ReplicaSet": {"replicas": 3, "readyReplicas": 3, "fullyLabeledReplicas": 3},
        "StatefulSet": {"replicas": 3, "currentRevision": "web-6c9d5b",
                        "updateRevision": "web-6c9d5b", "collisionCount": 0},
        "DaemonSet": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                      "numberMisscheduled": 0, "numberReady": 3}}
    out = []
    for kind, status in statuses.items():
        spec: dict[str, Any] = {"selector": selector, "template": template}
        if kind == "StatefulSet":
            spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        made = api.create({"apiVersion": "apps/v1", "kind": kind,
                           "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
        made.status = status
        out.append(api.update_status(made).to_dict())
    job = api.create({"apiVersion": "batch/v1", "kind": "Job",
                      "metadata": {"name": "batch", "namespace": "default"},
                      "spec": {"completions": 5, "template": {**template, "spec": {
                          **template["spec"], "restartPolicy": "Never"}}}})
    job.status = {"succeeded": 5, "startTime": "2024-05-01T10:00:00Z", "ready": 0,
                  "uncountedTerminatedPods": {}, "conditions": [{
                      "type": "Complete", "status": "True", "reason": "CompletionsReached",
                      "lastProbeTime": "2024-05-01T10:00:05Z",
                      "lastTransitionTime": "2024-05-01T10:00:05Z"}]}
    out.append(api.update_status(job).to_dict())
    out.append(api.create({"apiVersion": "apps/v1", "kind": "ControllerRevision",
                           "metadata": {"name": "web-6c9d5b", "namespace": "default"},
                           "data": {"spec": {"template": {**template, "$patch": "replace"}}},
                           "revision": 1}).to_dict())
    out.append({"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 3}, "status": {"replicas": 3, "selector": "app=web"}})
    return out


def _requests(api: APIServer) -> list[dict[str, Any]]:
    """The request kinds (never stored): a Binding, and each self-subject review as the
    server answers it; and the computed ComponentStatuses."""
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "app", "namespace": "default"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    asked = {"resourceAttributes": {"verb": "create", "resource": "pods",
                                    "namespace": "default"}}
    ensure_bootstrap_policy(api)  # the rules the reviews answer from
    authorizer = RbacAuthorizer(api)
    answered = [
        reviews.review(SELF_SUBJECT_REVIEWS, {"apiVersion": "authentication.k8s.io/v1",
                                              "kind": "SelfSubjectReview", "metadata": {}},
                       authorizer),
        reviews.review(SELF_SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {}, "spec": asked}, authorizer),
        reviews.review(SELF_SUBJECT_RULES_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "metadata": {}, "spec": {"namespace": "default"}}, authorizer),
        reviews.review(SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "metadata": {}, "spec": {**asked, "user": "jane", "groups": ["dev"],
                                     "extra": {"scopes": ["a"]}}}, authorizer),
        reviews.review(LOCAL_SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
            "metadata": {}, "spec": {**asked, "groups": ["system:masters"]}}, authorizer,
            namespace="default"),
    ]
    # the component statuses an API server alone answers (an error) and `up`'s (a message)
    statuses = [*component_statuses(Components())[:1],
                *component_statuses(Components(scheduler=True, controller_manager=True))]
    return [binding, *answered, *statuses]
