"""The EndpointSlice (discovery.k8s.io/v1) and Endpoints (core/v1) kinds' validation, the
part of kube-apiserver's a controller or a hand-written manifest runs into: an address
type from the list (and immutable), each endpoint with 1 to 100 addresses of that type,
ports with a known protocol."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.model import Resource

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_ADDRESSES = 100
MAX_ENDPOINTS = 1000
SLICE_KIND = "EndpointSlice.discovery.k8s.io"


def _address_ok(address: Any, address_type: str) -> bool:
    if address_type == "FQDN":
        return isinstance(address, str) and 0 < len(address) <= 253
    try:
        parsed = ipaddress.ip_address(str(address))
    except ValueError:
        return False
    return parsed.version == (4 if address_type == "IPv4" else 6)


def _supported(value: Any, allowed: tuple[str, ...], path: str) -> FieldError:
    listed = ", ".join(json.dumps(v) for v in allowed)
    return FieldError("FieldValueNotSupported", path,
                      f"Unsupported value: {json.dumps(value)}: supported values: {listed}")


def validate_endpoint_slice(eps: Resource) -> None:
    errors: list[FieldError] = []
    address_type = eps.body.get("addressType")
    if not address_type:
        errors.append(FieldError("FieldValueRequired", "addressType", "Required value"))
    elif address_type not in ADDRESS_TYPES:
        errors.append(_supported(address_type, ADDRESS_TYPES, "addressType"))
    endpoints = eps.body.get("endpoints") or []
    if len(endpoints) > MAX_ENDPOINTS:
        errors.append(FieldError("FieldValueTooMany", "endpoints",
                                 f"Too many: {len(endpoints)}: must have at most "
                                 f"{MAX_ENDPOINTS} items"))
    for i, endpoint in enumerate(endpoints):
        addresses = (endpoint or {}).get("addresses") or []
        path = f"endpoints[{i}].addresses"
        if not addresses:
            errors.append(FieldError("FieldValueRequired", path,
                                     "Required value: must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errors.append(FieldError("FieldValueTooMany", path,
                                     f"Too many: {len(addresses)}: must have at most "
                                     f"{MAX_ADDRESSES} items"))
        for j, address in enumerate(addresses):
            if address_type in ADDRESS_TYPES and not _address_ok(address, address_type):
                errors.append(FieldError("FieldValueInvalid", f"{path}[{j}]",
                                         f"Invalid value: {json.dumps(address)}: must be a "
                                         f"valid {address_type} address"))
    for i, port in enumerate(eps.body.get("ports") or []):
        protocol = (port or {}).get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            errors.append(_supported(protocol, PROTOCOLS, f"ports[{i}].protocol"))
    if errors:
        raise InvalidObject(SLICE_KIND, eps.name, errors)


def validate_endpoint_slice_update(old: Resource, new: Resource) -> None:
    before, after = old.body.get("addressType"), new.body.get("addressType")
    if before != after:
        raise InvalidObject(SLICE_KIND, new.name, [FieldError(
            "FieldValueInvalid", "addressType",
            f"Invalid value: {json.dumps(after)}: field is immutable")])


def default_endpoint_slice(eps: Resource) -> None:
    for port in eps.body.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def validate_endpoints(ep: Resource) -> None:
    errors: list[FieldError] = []
    for i, subset in enumerate(ep.body.get("subsets") or []):
        for list_name in ("addresses", "notReadyAddresses"):
            for j, address in enumerate((subset or {}).get(list_name) or []):
                ip = (address or {}).get("ip")
                path = f"subsets[{i}].{list_name}[{j}].ip"
                if not ip:
                    errors.append(FieldError("FieldValueRequired", path, "Required value"))
                elif not _address_ok(ip, "IPv6" if ":" in str(ip) else "IPv4"):
                    errors.append(FieldError("FieldValueInvalid", path,
                                             f"Invalid value: {json.dumps(ip)}: must be a "
                                             "valid IP address"))
        for j, port in enumerate((subset or {}).get("ports") or []):
            protocol = (port or {}).get("protocol")
            if protocol is not None and protocol not in PROTOCOLS:
                errors.append(_supported(protocol, PROTOCOLS, f"subsets[{i}].ports[{j}].protocol"))
    if errors:
        raise InvalidObject("Endpoints", ep.name, errors)


def default_endpoints(ep: Resource) -> None:
    for subset in ep.body.get("subsets") or []:
        for port in (subset or {}).get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
