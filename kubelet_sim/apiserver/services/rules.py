"""The Service kind's defaulting, validation and update rules, with kube-apiserver's
words (``SetDefaults_Service``, ``ValidateService``, ``ValidateServiceUpdate``): the subset
a manifest, ``kubectl expose`` and ``kubectl create service`` run into."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.label_rules import label_value_errors, qualified_name_errors
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.services.allocation import HEADLESS, service_type

TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PROTOCOLS = ("SCTP", "TCP", "UDP")
AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")
FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
FAMILIES = ("IPv4", "IPv6")
CLIENT_IP_SECONDS = 10800  # DefaultClientIPServiceAffinitySeconds: 3 hours
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
DNS1035_RULE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')")
DNS1123_LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                      "characters or '-', and must start and end with an alphanumeric "
                      "character (e.g. 'my-name',  or '123-abc', regex used for validation "
                      "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
IP_RULE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
PORT_RULE = "must be between 1 and 65535, inclusive"


# ------------------------------------------------------------------------------ defaults
def default_service(svc: Resource) -> None:
    """``SetDefaults_Service``: type, session affinity, each port's protocol and target
    port, the traffic policies, allocateLoadBalancerNodePorts."""
    spec = svc.spec
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client_ip = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": CLIENT_IP_SECONDS}}
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    externally = kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP"
                                                          and spec.get("externalIPs"))
    if externally:
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)


# ---------------------------------------------------------------------------- validation
def _quoted(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _supported(errors: list[FieldError], value: Any, allowed: tuple[str, ...],
               path: str) -> None:
    if value not in allowed:
        listed = ", ".join(json.dumps(v) for v in allowed)
        errors.append(FieldError("FieldValueNotSupported", path,
                                 f"Unsupported value: {_quoted(value)}: supported values: "
                                 f"{listed}"))


def _invalid(errors: list[FieldError], path: str, value: Any, why: str) -> None:
    errors.append(FieldError("FieldValueInvalid", path, f"Invalid value: {_quoted(value)}: {why}"))


def _required(errors: list[FieldError], path: str) -> None:
    errors.append(FieldError("FieldValueRequired", path, "Required value"))


def _forbidden(errors: list[FieldError], path: str, why: str) -> None:
    errors.append(FieldError("FieldValueForbidden", path, f"Forbidden: {why}"))


def _valid_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return isinstance(value, str)


def _port_number(errors: list[FieldError], value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        _invalid(errors, path, value, PORT_RULE)


def port_name_errors(name: str) -> list[str]:
    """``IsValidPortName`` (an IANA_SVC_NAME): what is wrong with a named port."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _target_port(errors: list[FieldError], value: Any, path: str) -> None:
    if isinstance(value, str):
        for why in port_name_errors(value):
            _invalid(errors, path, value, why)
    else:
        _port_number(errors, value, path)


def _ports(errors: list[FieldError], spec: JSON) -> None:
    ports = spec.get("ports") or []
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            _invalid(errors, path, port, "must be an object")
            continue
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            _required(errors, f"{path}.name")
        elif name:
            if len(name) > 63 or not _DNS1123_LABEL.fullmatch(name):
                _invalid(errors, f"{path}.name", name, DNS1123_LABEL_RULE)
            elif name in names:
                errors.append(FieldError("FieldValueDuplicate", f"{path}.name",
                                         f"Duplicate value: {json.dumps(name)}"))
            names.add(name)
        _port_number(errors, port.get("port"), f"{path}.port")
        _supported(errors, port.get("protocol"), PROTOCOLS, f"{path}.protocol")
        _target_port(errors, port.get("targetPort"), f"{path}.targetPort")
        node_port = port.get("nodePort")
        if node_port:
            if service_type(spec) == "ClusterIP":
                _forbidden(errors, f"{path}.nodePort",
                           "may not be used when `type` is 'ClusterIP'")
            else:
                _port_number(errors, node_port, f"{path}.nodePort")


def _cluster_ips(errors: list[FieldError], spec: JSON) -> None:
    kind = service_type(spec)
    cluster_ip, cluster_ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if cluster_ips and cluster_ip and cluster_ips[0] != cluster_ip:
        listed = "[]string{" + ", ".join(f'"{v}"' for v in cluster_ips) + "}"
        errors.append(FieldError("FieldValueInvalid", "spec.clusterIPs",
                                 f"Invalid value: {listed}: first value must match `clusterIP`"))
        return
    if kind == "ExternalName":
        if cluster_ip:
            _forbidden(errors, "spec.clusterIP", "may not be set for ExternalName services")
        return
    for i, ip in enumerate(cluster_ips or ([cluster_ip] if cluster_ip else [])):
        path = f"spec.clusterIPs[{i}]"
        if ip == HEADLESS:
            if kind in ("NodePort", "LoadBalancer"):
                _invalid(errors, path, ip, f"may not be set to 'None' for {kind} services")
        elif not _valid_ip(ip):
            _invalid(errors, path, ip, IP_RULE)


def _selector(errors: list[FieldError], spec: JSON) -> None:
    selector = spec.get("selector") or {}
    if not isinstance(selector, dict):
        _invalid(errors, "spec.selector", selector, "must be a map of strings")
        return
    for key, value in selector.items():
        for why in qualified_name_errors(str(key)):
            _invalid(errors, "spec.selector", key, why)
        for why in label_value_errors(str(value)):
            _invalid(errors, "spec.selector", value, why)


def validate_service(svc: Resource) -> None:
    """Raise :class:`InvalidObject` listing every problem found."""
    errors: list[FieldError] = []
    if not _DNS1035.fullmatch(svc.name) or len(svc.name) > 63:
        _invalid(errors, "metadata.name", svc.name, DNS1035_RULE)
    spec = svc.spec
    _supported(errors, spec.get("type"), TYPES, "spec.type")
    headless = spec.get("clusterIP") == HEADLESS
    if not spec.get("ports") and not headless and spec.get("type") != "ExternalName":
        _required(errors, "spec.ports")
    if spec.get("type") == "ExternalName" and not spec.get("externalName"):
        _required(errors, "spec.externalName")
    _ports(errors, spec)
    _cluster_ips(errors, spec)
    _selector(errors, spec)
    _supported(errors, spec.get("sessionAffinity"), AFFINITIES, "spec.sessionAffinity")
    for policy in ("externalTrafficPolicy", "internalTrafficPolicy"):
        if spec.get(policy) is not None:
            _supported(errors, spec[policy], TRAFFIC_POLICIES, f"spec.{policy}")
    if spec.get("externalTrafficPolicy") and spec.get("type") not in ("NodePort",
                                                                      "LoadBalancer") \
            and not spec.get("externalIPs"):
        _invalid(errors, "spec.externalTrafficPolicy", spec["externalTrafficPolicy"],
                 "may only be set for externally-accessible services")
    if spec.get("ipFamilyPolicy") is not None:
        _supported(errors, spec["ipFamilyPolicy"], FAMILY_POLICIES, "spec.ipFamilyPolicy")
    for i, family in enumerate(spec.get("ipFamilies") or []):
        _supported(errors, family, FAMILIES, f"spec.ipFamilies[{i}]")
    for i, ip in enumerate(spec.get("externalIPs") or []):
        if not _valid_ip(ip):
            _invalid(errors, f"spec.externalIPs[{i}]", ip, IP_RULE)
    if errors:
        raise InvalidObject("Service", svc.name, errors)


def validate_service_update(old: Resource, new: Resource) -> None:
    """The primary cluster IP may not change once set (unless either side is
    ExternalName)."""
    before, after = old.spec, new.spec
    if service_type(after) == "ExternalName" or service_type(before) == "ExternalName":
        return
    old_ips = before.get("clusterIPs") or ([before["clusterIP"]] if before.get("clusterIP")
                                           else [])
    new_ips = after.get("clusterIPs") or ([after["clusterIP"]] if after.get("clusterIP")
                                          else [])
    if old_ips and new_ips and old_ips[0] != new_ips[0]:
        listed = "[]string{" + ", ".join(f'"{ip}"' for ip in new_ips) + "}"
        raise InvalidObject("Service", new.name, [FieldError(
            "FieldValueInvalid", "spec.clusterIPs[0]",
            f"Invalid value: {listed}: may not change once set")])
