"""What kube-controller-manager's endpointslice and endpoints controllers both read from a
Service and its pods: which pods stand behind it (the selector's, in its namespace, not
finished, with an IP), whether each is ready, serving or terminating, and the port each
service port reaches on that pod (a named ``targetPort`` resolved from the pod's
container ports; a port the pod does not have is left out for that pod)."""

from __future__ import annotations

from dataclasses import dataclass

from kubelet_sim.api.model import JSON, Resource, condition, pod_ips, resolve_named_port

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
HEADLESS_LABEL = "service.kubernetes.io/headless"
ZONE_LABEL = "topology.kubernetes.io/zone"


def selects(service: Resource, pod: Resource) -> bool:
    """A Service selects the pods of its namespace carrying every label of its selector
    (a Service without a selector selects none: its endpoints are someone else's)."""
    selector = service.spec.get("selector") or {}
    return bool(selector) and pod.namespace == service.namespace and all(
        pod.labels.get(k) == v for k, v in selector.items())


def pod_ready(pod: Resource) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def behind_service(pod: Resource, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: not Succeeded or Failed, has an IP, and not being
    deleted unless terminating pods are wanted."""
    if pod.status.get("phase") in ("Succeeded", "Failed") or not pod_ips(pod):
        return False
    return include_terminating or not pod.is_terminating


@dataclass(frozen=True)
class PodEndpoint:
    """One pod as an endpoint of a Service."""

    pod: Resource
    ip: str
    ready: bool
    serving: bool
    terminating: bool
    ports: tuple[tuple[str, str, int, str | None], ...]  # name, protocol, port, appProtocol
    hostname: str | None


def pod_ports(service: Resource, pod: Resource) -> tuple[tuple[str, str, int, str | None], ...]:
    found = []
    for port in service.spec.get("ports") or []:
        protocol = str(port.get("protocol") or "TCP")
        target = port.get("targetPort", port.get("port"))
        number = resolve_named_port(pod, target, protocol) if isinstance(target, str) \
            else target
        if number is None:
            continue
        found.append((str(port.get("name") or ""), protocol, int(number),
                      port.get("appProtocol")))
    return tuple(found)


def pod_endpoints(service: Resource, pods: list[Resource],
                  include_terminating: bool) -> list[PodEndpoint]:
    """The Service's endpoints among ``pods`` (those of its namespace), by pod name."""
    publish = bool(service.spec.get("publishNotReadyAddresses"))
    out = []
    for pod in sorted(pods, key=lambda p: p.name):
        if not selects(service, pod) or not behind_service(pod, include_terminating):
            continue
        serving = pod_ready(pod)
        terminating = pod.is_terminating
        hostname = pod.spec.get("hostname") if (pod.spec.get("hostname") and
                                                pod.spec.get("subdomain") == service.name) \
            else None
        out.append(PodEndpoint(pod, pod_ips(pod)[0], publish or (serving and not terminating),
                               serving, terminating, pod_ports(service, pod), hostname))
    return out


def target_ref(pod: Resource) -> JSON:
    return {"kind": "Pod", "namespace": pod.namespace, "name": pod.name,
            "uid": pod.metadata.uid}


def service_labels(service: Resource, reserved: tuple[str, ...]) -> dict[str, str]:
    """The Service's labels an endpoints object carries (the controller's own keys
    excepted), with the headless marker for a Service without a cluster IP."""
    labels = {k: v for k, v in service.labels.items() if k not in reserved}
    if service.spec.get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    return labels
