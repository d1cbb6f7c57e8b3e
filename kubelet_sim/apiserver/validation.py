"""Validation the API server runs on every write; errors are :class:`Invalid` naming the
JSON path of the field (``spec.containers[0].ports[1].containerPort``).

The rules are the subset of Kubernetes' validation that the simulator's components rely
on: names, labels, required fields, enumerations, exactly-one-of volume sources, CIDRs,
port numbers and names, quantities.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from typing import Any

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.label_rules import (
    dns_label_errors,
    dns_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import Quantity, QuantityError, parse_storage
from kubelet_sim.api.selectors import LabelSelector
from kubelet_sim.apiserver import (
    configmaps,
    job_rules,
    namespaces,
    priority_classes,
    rbac,
    secret_rules,
    workloads,
)
from kubelet_sim.apiserver.probe_rules import validate_probes
from kubelet_sim.apiserver.quota import rules as quota_rules
from kubelet_sim.apiserver.services import endpoint_rules
from kubelet_sim.apiserver.services import rules as service_rules
from kubelet_sim.apiserver.token_request import validate_token_requests

_PORT_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
PROTOCOLS = ("TCP", "UDP", "SCTP")
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")


def _check(ok: bool, path: str, message: str) -> None:
    if not ok:
        raise Invalid(path, message)


def _supported(value: Any, allowed: tuple[str, ...], path: str) -> None:
    """field.NotSupported as kube-apiserver words it: the values quoted, in its order."""
    listed = ", ".join(json.dumps(v) for v in allowed)
    _check(value in allowed, path,
           f"Unsupported value: {json.dumps(value)}: supported values: {listed}")


TOTAL_ANNOTATION_SIZE = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB
RESTART_POLICIES = ("Always", "OnFailure", "Never")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _tolerations(tolerations: list[Any], path: str) -> None:
    for i, toleration in enumerate(tolerations):
        item = f"{path}[{i}]"
        if toleration.get("key"):
            label_key(toleration["key"], f"{item}.key")
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            _check(not toleration.get("value"), f"{item}.operator",
                   f"Invalid value: {json.dumps(toleration.get('value'))}: value must be "
                   "empty when `operator` is 'Exists'")
        else:
            _supported(operator, ("Equal", "Exists"), f"{item}.operator")
        if toleration.get("effect"):
            _supported(toleration["effect"], TAINT_EFFECTS, f"{item}.effect")
        if toleration.get("tolerationSeconds") is not None:
            _check(toleration.get("effect") == "NoExecute", f"{item}.effect",
                   f"Invalid value: {json.dumps(toleration.get('effect', ''))}: effect must be "
                   "'NoExecute' when `tolerationSeconds` is set")


def _taints(taints: list[Any], path: str) -> None:
    for i, taint in enumerate(taints):
        item = f"{path}[{i}]"
        _check(bool(taint.get("key")), f"{item}.key", "Required value")
        label_key(taint["key"], f"{item}.key")
        _check(bool(taint.get("effect")), f"{item}.effect", "Required value")
        _supported(taint["effect"], TAINT_EFFECTS, f"{item}.effect")


def _one_of(value: Any, allowed: tuple[str, ...], path: str) -> None:
    _supported(value, allowed, path)


_DNS_RULES = {"subdomain": dns_subdomain_errors, "label": dns_label_errors}


def _dns_name(kind: str, value: Any, path: str) -> None:
    _check(isinstance(value, str) and bool(value), path, "Required value")
    for message in _DNS_RULES[kind](value):
        raise Invalid(path, f"Invalid value: {json.dumps(value)}: {message}")


def dns_subdomain(value: Any, path: str) -> None:
    _dns_name("subdomain", value, path)


def dns_label(value: Any, path: str) -> None:
    _dns_name("label", value, path)


def label_key(key: str, path: str) -> None:
    """A label or annotation key: a qualified name; the error names the map, as
    apimachinery's ``ValidateLabelName`` does."""
    for message in qualified_name_errors(key):
        raise Invalid(path, f"Invalid value: {json.dumps(key)}: {message}")


def port_name(value: Any, path: str) -> None:
    """IANA_SVC_NAME: at most 15 lowercase alphanumerics or '-', one letter at least, no
    leading, trailing or doubled '-'."""
    ok = (
        isinstance(value, str)
        and 0 < len(value) <= 15
        and bool(_PORT_NAME.fullmatch(value))
        and "--" not in value
        and any(c.isalpha() for c in value)
    )
    _check(ok, path, f"Invalid value: {json.dumps(value)}: must be an IANA_SVC_NAME")


def port_number(value: Any, path: str) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535
    _check(ok, path, f"Invalid value: {json.dumps(value)}: must be between 1 and 65535, inclusive")


def cidr(value: Any, path: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise Invalid(path, f"Invalid value: {json.dumps(value)}: must be a valid CIDR") from None


def storage(value: Any, path: str) -> int:
    try:
        return parse_storage(value)
    except QuantityError as exc:
        raise Invalid(path, str(exc)) from None


def validate(obj: Resource) -> None:
    """Validate metadata and the kind-specific fields of ``obj``."""
    meta = obj.metadata
    if obj.kind == "Namespace":
        dns_label(meta.name, "metadata.name")
    elif obj.kind in rbac.KINDS:  # RBAC names are path segments: "system:node" is one
        rbac.validate_name(meta.name)
    else:
        dns_subdomain(meta.name, "metadata.name")
    for key, value in meta.labels.items():
        label_key(key, "metadata.labels")
        for message in label_value_errors(value):
            raise Invalid(f"metadata.labels[{key}]",
                          f"Invalid value: {json.dumps(value)}: {message}")
    for key in meta.annotations:
        for message in qualified_name_errors(key.lower()):
            raise Invalid("metadata.annotations", f"Invalid value: {json.dumps(key)}: {message}")
    size = sum(len(k) + len(v) for k, v in meta.annotations.items())
    _check(size <= TOTAL_ANNOTATION_SIZE, "metadata.annotations",
           f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes")
    validator = _VALIDATORS.get(obj.kind)
    if validator is None:
        return
    try:
        validator(obj)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        # A list where an object belongs, or similar: still a 422, never a crash.
        raise Invalid("spec" if obj.spec else "<root>", f"malformed object: {exc}") from None


def _pod(obj: Resource) -> None:
    containers = obj.spec.get("containers") or []
    _check(isinstance(containers, list) and bool(containers), "spec.containers", "Required value")
    seen: set[str] = set()
    for i, c in enumerate(containers):
        path = f"spec.containers[{i}]"
        _check(isinstance(c, dict), path, "must be an object")
        dns_label(c.get("name"), f"{path}.name")
        _check(c["name"] not in seen, f"{path}.name", f"Duplicate value: {json.dumps(c['name'])}")
        seen.add(c["name"])
        _check(bool(c.get("image")), f"{path}.image", "Required value")
        # only init containers (sidecars) may set their own restartPolicy
        _check(c.get("restartPolicy") is None, f"{path}.restartPolicy",
               "Forbidden: may not be set for non-init containers")
        validate_probes(c, path)
        names: set[str] = set()
        for j, port in enumerate(c.get("ports") or []):
            ppath = f"{path}.ports[{j}]"
            port_number(port.get("containerPort"), f"{ppath}.containerPort")
            _one_of(port.get("protocol", "TCP"), PROTOCOLS, f"{ppath}.protocol")
            if port.get("name") is not None:
                port_name(port["name"], f"{ppath}.name")
                _check(port["name"] not in names, f"{ppath}.name", "Duplicate value")
                names.add(port["name"])
    for i, c in enumerate(obj.spec.get("initContainers") or []):
        if isinstance(c, dict) and c.get("restartPolicy") is not None:  # a sidecar
            _supported(c["restartPolicy"], ("Always",), f"spec.initContainers[{i}].restartPolicy")
    vol_names: set[str] = set()
    for i, vol in enumerate(obj.spec.get("volumes") or []):
        path = f"spec.volumes[{i}]"
        dns_label(vol.get("name"), f"{path}.name")
        _check(vol["name"] not in vol_names, f"{path}.name",
               f"Duplicate value: {json.dumps(vol['name'])}")
        vol_names.add(vol["name"])
        sources = [k for k in vol if k != "name"]
        # (a volume without any source was defaulted to an emptyDir before this)
        _check(bool(sources), path, "Required value: must specify a volume type")
        _check(len(sources) == 1, f"{path}.{sources[-1]}",
               "Forbidden: may not specify more than 1 volume type")
        if "persistentVolumeClaim" in vol:
            dns_subdomain(
                (vol["persistentVolumeClaim"] or {}).get("claimName"),
                f"{path}.persistentVolumeClaim.claimName",
            )
        if "csi" in vol:
            _check(bool((vol["csi"] or {}).get("driver")), f"{path}.csi.driver", "Required value")
        _projected_paths(vol, path)
    if obj.spec.get("nodeName"):
        dns_subdomain(obj.spec["nodeName"], "spec.nodeName")
    if obj.spec.get("restartPolicy"):
        _supported(obj.spec["restartPolicy"], RESTART_POLICIES, "spec.restartPolicy")
    _tolerations(obj.spec.get("tolerations") or [], "spec.tolerations")
    quota_rules.validate_container_resources(obj)


def _projected_paths(vol: JSON, path: str) -> None:
    """The file paths a kubelet-made volume names stay below the volume's directory:
    relative, without a ``..`` element, not starting with ``..`` (kube-apiserver's
    validateLocalDescendingPath and validateLocalNonReservedPath)."""
    def items(source: Any, where: str) -> None:
        for k, item in enumerate((source or {}).get("items") or []):
            if isinstance(item, dict):
                _local_path(item.get("path"), f"{where}.items[{k}].path")

    for kind in ("configMap", "secret", "downwardAPI"):
        if kind in vol:
            items(vol[kind], f"{path}.{kind}")
    for j, source in enumerate((vol.get("projected") or {}).get("sources") or []):
        where = f"{path}.projected.sources[{j}]"
        for kind in ("configMap", "secret", "downwardAPI"):
            if isinstance(source, dict) and kind in source:
                items(source[kind], f"{where}.{kind}")
        token = source.get("serviceAccountToken") if isinstance(source, dict) else None
        if isinstance(token, dict):
            _local_path(token.get("path"), f"{where}.serviceAccountToken.path")


def _local_path(value: Any, path: str) -> None:
    _check(isinstance(value, str) and bool(value), path, "Required value")
    quoted = json.dumps(value)
    _check(not value.startswith("/"), path, f"Invalid value: {quoted}: must be a relative path")
    _check(".." not in value.split("/"), path, f"Invalid value: {quoted}: must not contain '..'")
    _check(not value.startswith(".."), path, f"Invalid value: {quoted}: must not start with '..'")


def _access_modes(spec: JSON, path: str) -> None:
    modes = spec.get("accessModes") or []
    _check(isinstance(modes, list) and bool(modes), path, "Required value")
    for i, mode in enumerate(modes):
        _one_of(mode, ACCESS_MODES, f"{path}[{i}]")


def _pvc(obj: Resource) -> None:
    _access_modes(obj.spec, "spec.accessModes")
    requests = (obj.spec.get("resources") or {}).get("requests") or {}
    _check("storage" in requests, "spec.resources.requests.storage", "Required value")
    size = storage(requests["storage"], "spec.resources.requests.storage")
    _check(size > 0, "spec.resources.requests.storage", "must be greater than zero")
    _one_of(obj.spec.get("volumeMode", "Filesystem"), ("Filesystem", "Block"), "spec.volumeMode")
    volume_attributes_class_name(obj.spec, "spec.volumeAttributesClassName")


def _pv(obj: Resource) -> None:
    spec = obj.spec
    _access_modes(spec, "spec.accessModes")
    _check("storage" in (spec.get("capacity") or {}), "spec.capacity.storage", "Required value")
    storage(spec["capacity"]["storage"], "spec.capacity.storage")
    known = ("csi", "hostPath", "local", "nfs")
    sources = [k for k in known if k in spec]
    _check(len(sources) == 1, "spec", "must specify exactly one volume source")
    if "csi" in spec:
        csi = spec["csi"] or {}
        _check(bool(csi.get("driver")), "spec.csi.driver", "Required value")
        _check(bool(csi.get("volumeHandle")), "spec.csi.volumeHandle", "Required value")
    _one_of(
        spec.get("persistentVolumeReclaimPolicy", "Retain"),
        ("Retain", "Delete", "Recycle"),
        "spec.persistentVolumeReclaimPolicy",
    )
    volume_attributes_class_name(spec, "spec.volumeAttributesClassName")


def _storage_class(obj: Resource) -> None:
    dns_subdomain(obj.body.get("provisioner"), "provisioner")
    _one_of(obj.body.get("reclaimPolicy", "Delete"), ("Delete", "Retain"), "reclaimPolicy")
    _one_of(
        obj.body.get("volumeBindingMode", "Immediate"),
        ("Immediate", "WaitForFirstConsumer"),
        "volumeBindingMode",
    )
    _class_parameters(obj.body.get("parameters") or {}, "parameters", allow_empty=True)


# The limits kube-apiserver puts on a class's parameters (StorageClass, VolumeAttributesClass).
MAX_PARAMETERS = 512
MAX_PARAMETERS_BYTES = 256 << 10


def _class_parameters(params: Any, path: str, *, allow_empty: bool) -> None:
    _check(isinstance(params, dict), path, "must be a map of strings")
    _check(len(params) <= MAX_PARAMETERS, path,
           f"Too long: may not be more than {MAX_PARAMETERS} bytes")  # sic, as upstream
    size = 0
    for key, value in params.items():
        _check(key != "", path, "Invalid value: \"\": field can not be empty.")
        _check(isinstance(value, str), f"{path}.{key}", "must be a string")
        size += len(key) + len(value)
    _check(size <= MAX_PARAMETERS_BYTES, path,
           f"Too long: may not be more than {MAX_PARAMETERS_BYTES} bytes")
    _check(allow_empty or bool(params), path,
           "Required value: must contain at least one key/value pair")


def _volume_attributes_class(obj: Resource) -> None:
    """driverName a qualified name (checked lowercased, as for a provisioner); parameters
    required, non-empty keys, within the size limits."""
    driver = obj.body.get("driverName")
    if not isinstance(driver, str) or not driver:
        raise Invalid("driverName", "Required value")
    label_key(driver.lower(), "driverName")
    _class_parameters(obj.body.get("parameters") or {}, "parameters", allow_empty=False)


def volume_attributes_class_name(spec: JSON, path: str) -> None:
    """A claim's or volume's ``volumeAttributesClassName``: a class name when not empty."""
    name = spec.get("volumeAttributesClassName")
    if name:
        dns_subdomain(name, path)


def _csi_driver(obj: Resource) -> None:
    validate_token_requests(obj.spec.get("tokenRequests"))
    for i, mode in enumerate(obj.spec.get("volumeLifecycleModes") or []):
        _one_of(mode, ("Persistent", "Ephemeral"), f"spec.volumeLifecycleModes[{i}]")
    _one_of(
        obj.spec.get("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("ReadWriteOnceWithFSType", "File", "None"),
        "spec.fsGroupPolicy",
    )


def _csi_node(obj: Resource) -> None:
    for i, drv in enumerate(obj.spec.get("drivers") or []):
        _check(bool(drv.get("name")), f"spec.drivers[{i}].name", "Required value")
        _check(bool(drv.get("nodeID")), f"spec.drivers[{i}].nodeID", "Required value")


def _csi_storage_capacity(obj: Resource) -> None:
    """nodeTopology a label selector; storageClassName a class name (required); capacity a
    quantity not below zero. maximumVolumeSize is only decoded as a quantity, as upstream."""
    topology = obj.body.get("nodeTopology")
    if topology is not None:
        LabelSelector.from_dict(topology, "nodeTopology")
    name = obj.body.get("storageClassName")
    if not name:
        raise Invalid("storageClassName",
                      f"Invalid value: {json.dumps(name or '')}: {dns_subdomain_errors('')[-1]}")
    dns_subdomain(name, "storageClassName")
    for key in ("capacity", "maximumVolumeSize"):
        value = obj.body.get(key)
        if value is None:
            continue
        try:
            amount = Quantity.parse(value).amount
        except QuantityError as exc:
            raise Invalid(key, str(exc)) from None
        _check(key != "capacity" or amount >= 0, key,
               f"Invalid value: {json.dumps(value)}: must be greater than or equal to 0")


def _node(obj: Resource) -> None:
    _taints(obj.spec.get("taints") or [], "spec.taints")
    if obj.spec.get("podCIDR"):
        cidr(obj.spec["podCIDR"], "spec.podCIDR")
    for i, c in enumerate(obj.spec.get("podCIDRs") or []):
        cidr(c, f"spec.podCIDRs[{i}]")


def _volume_attachment(obj: Resource) -> None:
    _check(bool(obj.spec.get("attacher")), "spec.attacher", "Required value")
    dns_subdomain(obj.spec.get("nodeName"), "spec.nodeName")
    source = obj.spec.get("source") or {}
    count = sum(1 for k in ("persistentVolumeName", "inlineVolumeSpec") if source.get(k))
    _check(count == 1, "spec.source", "must specify exactly one of persistentVolumeName, "
           "inlineVolumeSpec")


def _volume_snapshot(obj: Resource) -> None:
    source = obj.spec.get("source") or {}
    count = sum(
        1 for k in ("persistentVolumeClaimName", "volumeSnapshotContentName") if source.get(k)
    )
    _check(count == 1, "spec.source", "exactly one of persistentVolumeClaimName and "
           "volumeSnapshotContentName should be specified")


def _volume_snapshot_content(obj: Resource) -> None:
    spec = obj.spec
    _check(bool(spec.get("driver")), "spec.driver", "Required value")
    _one_of(spec.get("deletionPolicy"), ("Delete", "Retain"), "spec.deletionPolicy")
    source = spec.get("source") or {}
    count = sum(1 for k in ("volumeHandle", "snapshotHandle") if source.get(k))
    _check(count == 1, "spec.source", "exactly one of volumeHandle and snapshotHandle")
    ref = spec.get("volumeSnapshotRef") or {}
    _check(bool(ref.get("name")), "spec.volumeSnapshotRef.name", "Required value")


def _volume_snapshot_class(obj: Resource) -> None:
    _check(bool(obj.body.get("driver")), "driver", "Required value")
    _one_of(obj.body.get("deletionPolicy"), ("Delete", "Retain"), "deletionPolicy")


def _network_policy(obj: Resource) -> None:
    spec = obj.spec
    _check(isinstance(spec.get("podSelector"), dict), "spec.podSelector", "Required value")
    LabelSelector.from_dict(spec["podSelector"], "spec.podSelector")
    for i, ptype in enumerate(spec.get("policyTypes") or []):
        _one_of(ptype, ("Ingress", "Egress"), f"spec.policyTypes[{i}]")
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            path = f"spec.{direction}[{i}]"
            for j, peer in enumerate(rule.get(peers_key) or []):
                _peer(peer, f"{path}.{peers_key}[{j}]")
            for j, port in enumerate(rule.get("ports") or []):
                _policy_port(port, f"{path}.ports[{j}]")


def _peer(peer: JSON, path: str) -> None:
    kinds = ("podSelector", "namespaceSelector", "ipBlock")
    present = [k for k in kinds if peer.get(k) is not None]
    _check(bool(present), path, "must specify a peer")
    if "ipBlock" in present:
        _check(len(present) == 1, path, "may not specify more than 1 peer when ipBlock is set")
        block = peer["ipBlock"]
        net = cidr(block.get("cidr"), f"{path}.ipBlock.cidr")
        for k, exc in enumerate(block.get("except") or []):
            sub = cidr(exc, f"{path}.ipBlock.except[{k}]")
            _check(
                sub.version == net.version and sub.subnet_of(net) and sub != net,  # type: ignore[arg-type]
                f"{path}.ipBlock.except[{k}]",
                f"Invalid value: {json.dumps(exc)}: must be a strict subset of `cidr`",
            )
    for key in ("podSelector", "namespaceSelector"):
        if key in present:
            LabelSelector.from_dict(peer[key], f"{path}.{key}")


def _policy_port(port: JSON, path: str) -> None:
    _one_of(port.get("protocol", "TCP"), PROTOCOLS, f"{path}.protocol")
    value = port.get("port")
    if isinstance(value, str):  # IntOrString: a string is always a port name
        port_name(value, f"{path}.port")
        _check("endPort" not in port, f"{path}.endPort", "may not be specified when `port` "
               "is non-numeric")
    elif value is not None:
        port_number(value, f"{path}.port")
    if "endPort" in port:
        _check(isinstance(value, int), f"{path}.endPort",
               "may not be specified when `port` is not a number")
        port_number(port["endPort"], f"{path}.endPort")
        _check(port["endPort"] >= int(value or 0), f"{path}.endPort",
               "must be greater than or equal to `port`")


def _lease(lease: Resource) -> None:
    duration = lease.spec.get("leaseDurationSeconds")
    if duration is not None:
        _check(isinstance(duration, int) and duration > 0, "spec.leaseDurationSeconds",
               f"Invalid value: {json.dumps(duration)}: must be greater than 0")
    transitions = lease.spec.get("leaseTransitions")
    if transitions is not None:
        _check(isinstance(transitions, int) and transitions >= 0, "spec.leaseTransitions",
               f"Invalid value: {json.dumps(transitions)}: must be greater than or equal to 0")


def _event(event: Resource) -> None:
    involved = event.body.get("involvedObject") or {}
    _check(isinstance(involved, dict), "involvedObject", "must be an object")
    namespace = involved.get("namespace") or ""
    if namespace:
        _check(namespace == event.namespace, "involvedObject.namespace",
               f"Invalid value: {json.dumps(namespace)}: does not match event.namespace")
    else:  # a cluster-scoped object's events live in "default"
        _check(event.namespace in ("", "default"), "involvedObject.namespace",
               f"Invalid value: {json.dumps(namespace)}: does not match event.namespace")
    kind = event.body.get("type") or ""
    _check(kind in ("", "Normal", "Warning"), "type",
           f'Unsupported value: {json.dumps(kind)}: supported values: "Normal", "Warning"')
    reason = event.body.get("reason") or ""
    _check(isinstance(reason, str) and len(reason) <= 128, "reason",
           "Too long: may not be more than 128 bytes")
    count = event.body.get("count")
    if count is not None:
        _check(isinstance(count, int) and not isinstance(count, bool) and count >= 0,
               "count", f"Invalid value: {json.dumps(count)}: must be greater than or equal to 0")


def _int_or_percent(value: Any, path: str) -> None:
    """An IntOrString of a budget: a count >= 0 or a percentage up to 100%."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Invalid(path, f"Invalid value: {json.dumps(value)}: must be an integer or percentage "
                            "(e.g '5%')")
    if isinstance(value, str):
        digits = value.removesuffix("%")
        _check(value.endswith("%") and digits.isdigit(), path,
               f"Invalid value: {json.dumps(value)}: must be an integer or percentage (e.g '5%')")
        _check(int(digits) <= 100, path,
               f"Invalid value: {json.dumps(value)}: must not be greater than 100%")
    else:
        _check(value >= 0, path,
               f"Invalid value: {value}: must be greater than or equal to 0")


def _pod_disruption_budget(pdb: Resource) -> None:
    spec = pdb.spec
    _check(not ("minAvailable" in spec and "maxUnavailable" in spec), "spec",
           "Invalid value: minAvailable and maxUnavailable cannot be both set")
    for name in ("minAvailable", "maxUnavailable"):
        if spec.get(name) is not None:
            _int_or_percent(spec[name], f"spec.{name}")
    _one_of(spec.get("unhealthyPodEvictionPolicy", "IfHealthyBudget"),
            ("IfHealthyBudget", "AlwaysAllow"), "spec.unhealthyPodEvictionPolicy")


_VALIDATORS: dict[str, Callable[[Resource], None]] = {
    "Pod": _pod,
    "PersistentVolumeClaim": _pvc,
    "PersistentVolume": _pv,
    "StorageClass": _storage_class,
    "VolumeAttributesClass": _volume_attributes_class,
    "CSIDriver": _csi_driver,
    "CSINode": _csi_node,
    "CSIStorageCapacity": _csi_storage_capacity,
    "Node": _node,
    "VolumeAttachment": _volume_attachment,
    "VolumeSnapshot": _volume_snapshot,
    "VolumeSnapshotContent": _volume_snapshot_content,
    "VolumeSnapshotClass": _volume_snapshot_class,
    "NetworkPolicy": _network_policy,
    "Lease": _lease,
    "PodDisruptionBudget": _pod_disruption_budget,
    "Event": _event,
    "Secret": secret_rules.validate_secret,
    "ServiceAccount": secret_rules.validate_service_account,
    # configuration, services and RBAC (issue 24)
    "ConfigMap": configmaps.validate_config_map,
    "Service": service_rules.validate_service,
    "Endpoints": endpoint_rules.validate_endpoints,
    "EndpointSlice": endpoint_rules.validate_endpoint_slice,
    **dict.fromkeys(("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"),
                    rbac.validate_rbac),
    "ResourceQuota": quota_rules.validate_resource_quota,
    "LimitRange": quota_rules.validate_limit_range,
}

# the apps/v1 and batch/v1 workload kinds keep their rules apart
_VALIDATORS.update(workloads.VALIDATORS)
_VALIDATORS["Job"] = job_rules.validate_job
_VALIDATORS[priority_classes.KIND] = priority_classes.validate_priority_class
_VALIDATORS["Namespace"] = namespaces.validate_namespace
