"""What kube-apiserver's service REST storage does around a Service write: take its cluster
IP and node ports on create (those asked for, or free ones), take and give back what an
update adds and drops, give everything back on delete, and rebuild the taken sets from
the stored Services when the API server starts again (its repair loop's role).

A write that fails after the allocation gives its values back (:class:`Allocation`
``revert``), as kube's transaction does; values an update drops go only once it is
stored (``commit``). A dry run allocates through :meth:`ServiceAllocations.dry_run`,
which answers as kube's dry-run allocators do and takes nothing (:mod:`.dry_run`).
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubelet_sim.api.errors import ApiError, FieldError, InvalidObject
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.services.dry_run import DryRunClusterIPs, DryRunNodePorts
from kubelet_sim.apiserver.services.ranges import (
    DEFAULT_NODE_PORTS,
    DEFAULT_SERVICE_CIDR,
    AllocationError,
    ClusterIPRange,
    NodePortRange,
    RangeFull,
)

HEADLESS = "None"


def service_type(spec: JSON) -> str:
    return str(spec.get("type") or "ClusterIP")


def needs_cluster_ip(spec: JSON) -> bool:
    return service_type(spec) != "ExternalName" and spec.get("clusterIP") != HEADLESS


def needs_node_ports(spec: JSON) -> bool:
    kind = service_type(spec)
    return kind == "NodePort" or (kind == "LoadBalancer"
                                  and spec.get("allocateLoadBalancerNodePorts") is not False)


def needs_health_check_port(spec: JSON) -> bool:
    return service_type(spec) == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _go_strings(values: list[Any]) -> str:
    """A []string as Go's %#v prints it in a field error."""
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


@dataclass
class Allocation:
    """The values one write took (``revert`` gives them back) and those it let go (given
    back on ``commit``)."""

    revert_steps: list[Callable[[], None]] = field(default_factory=list)
    commit_steps: list[Callable[[], None]] = field(default_factory=list)

    def revert(self) -> None:
        for step in reversed(self.revert_steps):
            step()
        self.revert_steps.clear()

    def commit(self) -> None:
        for step in self.commit_steps:
            step()
        self.commit_steps.clear()


class ServiceAllocations:
    """The cluster IPs and node ports of one API server."""

    def __init__(self, cluster_ip_range: str = DEFAULT_SERVICE_CIDR,
                 node_port_range: str = DEFAULT_NODE_PORTS,
                 rng: random.Random | None = None) -> None:
        rng = rng or random.Random()
        self.ips = ClusterIPRange(cluster_ip_range, rng)
        self.ports = NodePortRange(node_port_range, rng)

    # -- start -----------------------------------------------------------------------
    def rebuild(self, services: Iterable[Resource]) -> None:
        """Mark what the stored Services hold (values outside the ranges stay theirs)."""
        for svc in services:
            for ip in svc.spec.get("clusterIPs") or [svc.spec.get("clusterIP")]:
                if ip and ip != HEADLESS and self.ips.contains(str(ip)):
                    self.ips.release(str(ip))
                    self.ips.allocate(str(ip))
            for port in _node_ports(svc.spec):
                self.ports.release(port)
                self.ports.allocate(port)

    def dry_run(self) -> ServiceAllocations:
        """These allocations as a dry run sees them (:mod:`.dry_run`): the same answers
        and refusals, nothing taken or given back."""
        view = copy.copy(self)
        view.ips, view.ports = DryRunClusterIPs(self.ips), DryRunNodePorts(self.ports)
        return view

    # -- create ----------------------------------------------------------------------
    def allocate_create(self, svc: Resource) -> Allocation:
        """Give a new Service its cluster IP and node ports (:class:`InvalidObject` when
        one asked for is taken or outside the range)."""
        self._ip_families(svc)
        done = Allocation()
        try:
            if needs_cluster_ip(svc.spec):
                self._cluster_ip(svc, done)
            elif svc.spec.get("clusterIP") == HEADLESS:
                svc.spec["clusterIPs"] = [HEADLESS]
                self._families(svc.spec)
            if needs_node_ports(svc.spec):
                self._node_ports(svc, {}, done)
            if needs_health_check_port(svc.spec):
                self._health_check_port(svc, 0, done)
        except Exception:
            done.revert()
            raise
        return done

    # -- update ----------------------------------------------------------------------
    def keep_allocated(self, old: Resource, new: Resource) -> None:
        """Before an update is defaulted and validated: what the client left out stays
        as allocated (a PUT of the manifest without ``clusterIP`` keeps it), and what the
        new type has no use for goes unless the client changed it (kube's
        patchAllocatedValues and dropTypeDependentFields)."""
        before, after = old.spec, new.spec
        if after.get("clusterIP") and after.get("clusterIP") != before.get("clusterIP") \
                and after.get("clusterIPs") == before.get("clusterIPs"):
            after["clusterIPs"] = [after["clusterIP"]]  # only clusterIP was changed
        if needs_cluster_ip(before) and needs_cluster_ip(after) and not after.get("clusterIP"):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if key in before and key not in after:
                    after[key] = before[key]
        if needs_node_ports(before) and needs_node_ports(after):
            for port in after.get("ports") or []:
                if isinstance(port, dict) and not port.get("nodePort"):
                    kept = _matching_port(before, port)
                    if kept:
                        port["nodePort"] = kept
        if needs_health_check_port(before) and needs_health_check_port(after) \
                and not after.get("healthCheckNodePort") and before.get("healthCheckNodePort"):
            after["healthCheckNodePort"] = before["healthCheckNodePort"]
        to_external_name = (service_type(after) == "ExternalName"
                            and service_type(before) != "ExternalName")
        if to_external_name and after.get("clusterIP") == before.get("clusterIP"):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                after.pop(key, None)
        if not needs_node_ports(after) and needs_node_ports(before):
            old_ports = {p.get("nodePort") for p in before.get("ports") or []}
            for port in after.get("ports") or []:
                if isinstance(port, dict) and port.get("nodePort") in old_ports:
                    port.pop("nodePort", None)
        externally = service_type(after) in ("NodePort", "LoadBalancer") or \
            bool(after.get("externalIPs"))
        if not externally and after.get("externalTrafficPolicy") == \
                before.get("externalTrafficPolicy"):
            after.pop("externalTrafficPolicy", None)
        if service_type(after) != "LoadBalancer" and after.get(
                "allocateLoadBalancerNodePorts") == before.get("allocateLoadBalancerNodePorts"):
            after.pop("allocateLoadBalancerNodePorts", None)
        if not needs_health_check_port(after) and \
                after.get("healthCheckNodePort") == before.get("healthCheckNodePort"):
            after.pop("healthCheckNodePort", None)

    def allocate_update(self, old: Resource, new: Resource) -> Allocation:
        """Take what the updated Service needs and the stored one did not hold; what it
        held and no longer does is given back on ``commit``."""
        done = Allocation()
        try:
            if needs_cluster_ip(new.spec) and not needs_cluster_ip(old.spec):
                self._cluster_ip(new, done)
            elif not needs_cluster_ip(new.spec) and needs_cluster_ip(old.spec):
                for ip in _cluster_ips(old.spec):
                    done.commit_steps.append(functools.partial(self.ips.release, ip))
            if needs_node_ports(new.spec):
                self._node_ports(new, {p: True for p in _port_numbers(old.spec)}, done)
            if needs_health_check_port(new.spec):
                self._health_check_port(new, int(old.spec.get("healthCheckNodePort") or 0),
                                        done)
            kept = set(_node_ports(new.spec))
            for port in _node_ports(old.spec):
                if port not in kept:
                    done.commit_steps.append(functools.partial(self.ports.release, port))
        except Exception:
            done.revert()
            raise
        return done

    # -- delete ----------------------------------------------------------------------
    def release(self, svc: Resource) -> None:
        for ip in _cluster_ips(svc.spec):
            self.ips.release(ip)
        for port in _node_ports(svc.spec):
            self.ports.release(port)

    # -- the steps -------------------------------------------------------------------
    def _cluster_ip(self, svc: Resource, done: Allocation) -> None:
        spec = svc.spec
        asked = spec.get("clusterIP") or next(iter(spec.get("clusterIPs") or []), "")
        if asked:
            asked = str(ipaddress.ip_address(str(asked)))  # validation made sure it parses
            try:
                self.ips.allocate(asked)
            except AllocationError as err:
                raise InvalidObject("Service", svc.name, [FieldError(
                    "FieldValueInvalid", "spec.clusterIPs",
                    f"Invalid value: {_go_strings(spec.get('clusterIPs') or [asked])}: "
                    f"failed to allocate IP {asked}: {err}")]) from None
            ip = asked
        else:
            try:
                ip = self.ips.allocate_next()
            except RangeFull as err:
                raise ApiError("Internal error occurred: failed to allocate a serviceIP: "
                               f"{err}") from None
        done.revert_steps.append(lambda: self.ips.release(ip))
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        self._families(spec)

    def _families(self, spec: JSON) -> None:
        spec.setdefault("ipFamilies", [self.ips.family])
        spec.setdefault("ipFamilyPolicy", "SingleStack")

    def _ip_families(self, svc: Resource) -> None:
        """kube's initIPFamilyFields on a single-stack cluster: a headless Service
        without a selector asks for both families (its endpoints are anyone's); any
        other may not require dual-stack nor name the other family or an IP of it."""
        spec = svc.spec
        if service_type(spec) == "ExternalName":
            return
        other = "IPv6" if self.ips.family == "IPv4" else "IPv4"
        if spec.get("clusterIP") == HEADLESS and not spec.get("selector"):
            spec.setdefault("ipFamilyPolicy", "RequireDualStack")
            spec.setdefault("ipFamilies", [self.ips.family, other])
            return
        errors = []
        if spec.get("ipFamilyPolicy") == "RequireDualStack":
            errors.append(FieldError("FieldValueInvalid", "spec.ipFamilyPolicy",
                                     'Invalid value: "RequireDualStack": this cluster is not '
                                     "configured for dual-stack services"))
        for i, family in enumerate(spec.get("ipFamilies") or []):
            if family == other:
                errors.append(FieldError("FieldValueInvalid", f"spec.ipFamilies[{i}]",
                                         f'Invalid value: "{family}": not configured on this '
                                         "cluster"))
        ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
        for ip in ips:
            if ip and ip != HEADLESS and \
                    ipaddress.ip_address(str(ip)).version != self.ips.network.version:
                errors.append(FieldError("FieldValueInvalid", "spec.clusterIPs[0]",
                                         f"Invalid value: {_go_strings(ips)}: {other} is not "
                                         "configured on this cluster"))
                break
        if errors:
            raise InvalidObject("Service", svc.name, errors)

    def _node_ports(self, svc: Resource, held: dict[int, bool], done: Allocation) -> None:
        for i, port in enumerate(svc.spec.get("ports") or []):
            asked = int(port.get("nodePort") or 0)
            if asked and asked in held:
                continue  # the stored Service holds it already
            if asked:
                self._take_port(svc.name, asked, f"spec.ports[{i}].nodePort", done)
            else:
                port["nodePort"] = self._next_port(done)

    def _health_check_port(self, svc: Resource, held: int, done: Allocation) -> None:
        asked = int(svc.spec.get("healthCheckNodePort") or 0)
        if asked and asked == held:
            return
        if asked:
            self._take_port(svc.name, asked, "spec.healthCheckNodePort", done)
        else:
            svc.spec["healthCheckNodePort"] = self._next_port(done)

    def _take_port(self, name: str, port: int, path: str, done: Allocation) -> None:
        try:
            self.ports.allocate(port)
        except AllocationError as err:
            raise InvalidObject("Service", name, [FieldError(
                "FieldValueInvalid", path, f"Invalid value: {port}: {err}")]) from None
        done.revert_steps.append(lambda: self.ports.release(port))

    def _next_port(self, done: Allocation) -> int:
        try:
            port = self.ports.allocate_next()
        except RangeFull as err:
            raise ApiError("Internal error occurred: failed to allocate a nodePort: "
                           f"{err}") from None
        done.revert_steps.append(lambda: self.ports.release(port))
        return port


def _cluster_ips(spec: JSON) -> list[str]:
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [str(ip) for ip in ips if ip and ip != HEADLESS]


def _port_numbers(spec: JSON) -> list[int]:
    return [int(p["nodePort"]) for p in spec.get("ports") or []
            if isinstance(p, dict) and p.get("nodePort")]


def _node_ports(spec: JSON) -> list[int]:
    ports = _port_numbers(spec)
    if spec.get("healthCheckNodePort"):
        ports.append(int(spec["healthCheckNodePort"]))
    return ports


def _matching_port(spec: JSON, port: JSON) -> int:
    """The node port the stored Service gave the same port number and protocol."""
    for old in spec.get("ports") or []:
        if old.get("port") == port.get("port") and \
                old.get("protocol", "TCP") == port.get("protocol", "TCP"):
            return int(old.get("nodePort") or 0)
    return 0
