"""The NetworkPolicy engine: may this endpoint open a connection to that one?

Semantics (Kubernetes ``networking.k8s.io/v1``):

* A pod is *isolated* for a direction only when some policy in its namespace selects it
  (``spec.podSelector``) and lists that direction in ``policyTypes``. ``policyTypes``
  defaults to ``[Ingress]`` plus ``Egress`` when the policy has at least one egress rule.
* Policies only add allows: a connection is allowed in a direction when the pod is not
  isolated for it, or when any rule of any policy isolating it matches.
* A connection needs egress allowed at the source AND ingress allowed at the
  destination. Replies of an allowed connection are implicit: this engine answers for
  new connections only.
* A rule matches when one of its peers matches (no ``from``/``to`` list, or an empty
  one, matches every endpoint) and one of its ports matches (none listed: all ports).
* Peers: ``podSelector`` alone selects pods in the *policy's* namespace;
  ``namespaceSelector`` alone selects all pods of matching namespaces; both in one
  peer means pods matching the pod selector inside matching namespaces (AND);
  ``ipBlock`` matches the endpoint's IP inside ``cidr`` and outside every ``except``.
  As in most CNI implementations (Calico, Cilium, kube-router), ipBlock is evaluated
  on pod IPs too, not only on addresses outside the cluster.
* Ports: ``protocol`` (TCP when omitted, UDP, SCTP); ``port`` a number, a range with
  ``endPort``, or a name resolved against the *destination* pod's container ports
  (for egress rules too); a named port cannot match a destination that is not a pod.
* Exemptions Kubernetes documents: a pod may always reach itself, and traffic between a
  pod and the node it runs on is always allowed. Policies do not apply to hostNetwork
  pods, and pod/namespace selectors never match them (they are seen by node IP).

The objects are read from the shared informer cache over the API (the in-process server's,
current at every commit; over a client to another process, as its watches deliver them),
as a policy agent (Calico, Cilium, kube-router) reads its informers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubelet_sim.api.model import Resource, node_addresses, pod_ips, resolve_named_port
from kubelet_sim.api.selectors import LabelSelector
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.in_process import as_client
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import SharedCache, shared_cache

PROTOCOLS = ("TCP", "UDP", "SCTP")
POD_IPS = "pod-ips"  # the cache index of pods by each of their IPs
INGRESS, EGRESS = "Ingress", "Egress"


@dataclass(frozen=True)
class Endpoint:
    """One side of a connection: an IP and, when a (non-hostNetwork) pod holds it, the pod."""

    ip: str
    pod: Resource | None = None

    def describe(self) -> str:
        if self.pod is None:
            return self.ip
        return f"pod {self.pod.namespace}/{self.pod.name} ({self.ip})"


@dataclass(frozen=True)
class DirectionVerdict:
    """The answer for one direction (egress at the source, ingress at the destination)."""

    direction: str
    allowed: bool
    isolated: bool = False
    isolating: tuple[str, ...] = ()  # "ns/name" of the policies selecting the pod
    allowing: tuple[str, ...] = ()  # the isolating policies with a matching rule
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    """``allowed`` is egress AND ingress; ``reasons`` explains both sides."""

    allowed: bool
    egress: DirectionVerdict
    ingress: DirectionVerdict
    reasons: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.allowed


def network_cache(api: APIServer | KubeClient) -> SharedCache:
    """The shared informer cache of ``api``'s objects, with pods indexed by IP."""
    cache = shared_cache(feed_source(as_client(api)))
    cache.add_index("Pod", POD_IPS, pod_ips)
    return cache


class NetworkPolicyEngine:
    """Answers :meth:`may_connect` from the cached objects (NetworkPolicy, Pod,
    Namespace, Node) at the time of the call."""

    def __init__(self, api: APIServer | KubeClient) -> None:
        self.cache = network_cache(api)

    # ------------------------------------------------------------------ public API
    def endpoint(self, who: Resource | str, family: int | None = None) -> Endpoint:
        """A pod becomes (its first IP — of IP ``family`` 4 or 6 when it has one —, pod);
        an IP string becomes (ip, the pod holding it)."""
        if isinstance(who, Resource):
            ips = pod_ips(who)
            same = [ip for ip in ips if ipaddress.ip_address(ip).version == family]
            ip = (same or ips or [""])[0]
            return Endpoint(ip) if who.spec.get("hostNetwork") else Endpoint(ip, who)
        ip = str(ipaddress.ip_address(who))
        return Endpoint(ip, pod_holding_ip(self.cache, ip))

    def may_connect(
        self, src: Resource | str, dst: Resource | str, port: int, protocol: str = "TCP"
    ) -> Verdict:
        """May ``src`` open a ``protocol`` connection to ``dst`` on ``port``?"""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
        if not 0 < port <= 65535:
            raise ValueError(f"port out of range: {port}")
        source = self.endpoint(src)
        family = ipaddress.ip_address(source.ip).version if source.ip else None
        dest = self.endpoint(dst, family)  # a dual-stack peer answers in the source's family
        policies = self.cache.list("NetworkPolicy")
        egress = self._direction(EGRESS, source, dest, port, protocol, policies)
        ingress = self._direction(INGRESS, dest, source, port, protocol, policies)
        flow = f"{source.describe()} -> {dest.describe()} {port}/{protocol}"
        verdict = "allowed" if egress.allowed and ingress.allowed else "denied"
        reasons = (f"{flow}: {verdict}", f"egress: {egress.reason}", f"ingress: {ingress.reason}")
        return Verdict(egress.allowed and ingress.allowed, egress, ingress, reasons)

    def isolating_policies(self, pod: Resource, direction: str) -> list[Resource]:
        """Policies in ``pod``'s namespace that select it for ``direction``."""
        policies = self.cache.list("NetworkPolicy", pod.namespace)
        return [p for p in policies if selects(p, pod, direction)]

    # ------------------------------------------------------------------ one direction
    def _direction(
        self,
        direction: str,
        subject: Endpoint,
        peer: Endpoint,
        port: int,
        protocol: str,
        policies: Sequence[Resource],
    ) -> DirectionVerdict:
        """Is traffic allowed at ``subject`` (the source for egress, the destination for
        ingress) to/from ``peer``? The port is always the destination's."""
        pod = subject.pod
        if pod is None:
            return DirectionVerdict(direction, True, reason=f"{subject.ip} is not a pod: "
                                    "no policy applies")
        if peer.pod is not None and peer.pod.metadata.uid == pod.metadata.uid:
            return DirectionVerdict(direction, True, reason="a pod may always reach itself")
        if peer.ip and peer.ip in self._node_ips(pod):
            return DirectionVerdict(direction, True, reason="traffic between a pod and its "
                                    "own node is always allowed")
        selecting = [p for p in policies if selects(p, pod, direction)]
        who = f"{pod.namespace}/{pod.name}"
        if not selecting:
            return DirectionVerdict(direction, True, reason=f"{who} is not isolated for "
                                    f"{direction} (no policy selects it)")
        destination = peer if direction == EGRESS else subject
        names = tuple(f"{p.namespace}/{p.name}" for p in selecting)
        allowing = tuple(
            f"{p.namespace}/{p.name}" for p in selecting
            if self._policy_allows(p, direction, peer, destination, port, protocol)
        )
        if allowing:
            reason = f"{who} isolated by {', '.join(names)}; allowed by {', '.join(allowing)}"
        else:
            reason = f"{who} isolated by {', '.join(names)}; no rule allows it"
        return DirectionVerdict(direction, bool(allowing), True, names, allowing, reason)

    def _policy_allows(
        self,
        policy: Resource,
        direction: str,
        peer: Endpoint,
        destination: Endpoint,
        port: int,
        protocol: str,
    ) -> bool:
        rules_key, peers_key = ("egress", "to") if direction == EGRESS else ("ingress", "from")
        for rule in policy.spec.get(rules_key) or []:
            peers = rule.get(peers_key) or []
            if peers and not any(self._peer_matches(policy, p, peer) for p in peers):
                continue
            ports = rule.get("ports") or []
            if ports and not any(_port_matches(p, port, protocol, destination) for p in ports):
                continue
            return True
        return False

    def _peer_matches(self, policy: Resource, peer_spec: dict[str, Any], peer: Endpoint) -> bool:
        block = peer_spec.get("ipBlock")
        if block is not None:
            return bool(peer.ip) and ip_in_block(peer.ip, block)
        pod = peer.pod
        if pod is None:
            return False
        ns_selector = peer_spec.get("namespaceSelector")
        if ns_selector is None:
            if pod.namespace != policy.namespace:
                return False
        elif not LabelSelector.from_dict(ns_selector).matches(self._namespace_labels(pod)):
            return False
        pod_selector = peer_spec.get("podSelector")
        return pod_selector is None or LabelSelector.from_dict(pod_selector).matches(pod.labels)

    # ------------------------------------------------------------------ lookups
    def _namespace_labels(self, pod: Resource) -> dict[str, str]:
        namespace = self.cache.get("Namespace", pod.namespace)
        if namespace is None:  # already gone: only its name label is known
            return {"kubernetes.io/metadata.name": pod.namespace}
        return namespace.labels

    def _node_ips(self, pod: Resource) -> set[str]:
        node_name = pod.spec.get("nodeName")
        if not node_name:
            return set()
        node = self.cache.get("Node", str(node_name))
        return set() if node is None else set(node_addresses(node))


def pod_holding_ip(cache: SharedCache, ip: str) -> Resource | None:
    """The (non-hostNetwork) pod whose ``status.podIPs`` include ``ip``, or None (a
    :func:`network_cache`)."""
    found = [p for p in cache.by_index("Pod", POD_IPS, ip) if not p.spec.get("hostNetwork")]
    return found[0] if found else None


def selects(policy: Resource, pod: Resource, direction: str) -> bool:
    """Does ``policy`` isolate ``pod`` for ``direction``? Same namespace, pod selector
    matches, and ``direction`` among the (defaulted) policy types."""
    return (
        policy.namespace == pod.namespace
        and direction in policy_types(policy)
        and LabelSelector.from_dict(policy.spec.get("podSelector") or {}).matches(pod.labels)
    )


def policy_types(policy: Resource) -> list[str]:
    """``spec.policyTypes``, or its Kubernetes default when the field is empty."""
    listed = policy.spec.get("policyTypes")
    if listed:
        return [str(t) for t in listed]
    return [INGRESS] + ([EGRESS] if policy.spec.get("egress") else [])


def ip_in_block(ip: str, block: dict[str, Any]) -> bool:
    """``ip`` inside ``block.cidr`` and outside every ``block.except`` entry."""
    addr = ipaddress.ip_address(ip)
    net = ipaddress.ip_network(str(block["cidr"]), strict=False)
    if addr.version != net.version or addr not in net:
        return False
    for excluded in block.get("except") or []:
        sub = ipaddress.ip_network(str(excluded), strict=False)
        if addr.version == sub.version and addr in sub:
            return False
    return True


def _port_matches(spec: dict[str, Any], port: int, protocol: str, destination: Endpoint) -> bool:
    if spec.get("protocol", "TCP") != protocol:
        return False
    wanted = spec.get("port")
    if wanted is None:
        return True
    if isinstance(wanted, str):
        if destination.pod is None:
            return False
        return resolve_named_port(destination.pod, wanted, protocol) == port
    end = spec.get("endPort")
    return int(wanted) <= port <= int(end) if end is not None else int(wanted) == port
