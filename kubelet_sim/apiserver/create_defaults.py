"""Defaults kube-apiserver fills in that the simulator's components do not read but
every ``kubectl get -o yaml`` of a real cluster shows: a container's image pull policy
and termination message fields (core/v1 ``SetDefaults_Container``), a pod's empty
security context and its ServiceAccount under the deprecated ``serviceAccount`` name too
(the v1 conversion's), and a new Namespace's ``kubernetes`` finalizer in ``spec.finalizers``
(the namespace strategy's PrepareForCreate; an update keeps them, only the ``finalize``
subresource changes them: :mod:`kubelet_sim.apiserver.namespaces`)."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.model import JSON, Resource

__all__ = ["default_container", "default_pod_spec", "keep_deprecated_service_account",
           "keep_namespace_finalizers", "prepare_namespace"]

NAMESPACE_FINALIZER = "kubernetes"


def image_tag(image: str) -> str:
    """The tag of an image reference: "latest" when it names neither a tag nor a digest."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def default_container(container: JSON) -> None:
    image = container.get("image")
    if "imagePullPolicy" not in container:
        tag = image_tag(image) if isinstance(image, str) else ""
        container["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    for field in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(field), dict):
            default_probe(container[field])


# SetDefaults_Probe: a probe's unset (or zero) timing fields
PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                  "failureThreshold": 3}


def default_probe(probe: JSON) -> None:
    for name, value in PROBE_DEFAULTS.items():
        if not probe.get(name):
            probe[name] = value
    http = probe.get("httpGet")
    if isinstance(http, dict):  # SetDefaults_HTTPGetAction
        http["path"] = http.get("path") or "/"
        http["scheme"] = http.get("scheme") or "HTTP"


def default_pod_spec(spec: JSON) -> None:
    spec.setdefault("securityContext", {})
    keep_deprecated_service_account(spec)
    containers: list[Any] = [*(spec.get("initContainers") or []),
                             *(spec.get("containers") or [])]
    for container in containers:
        if isinstance(container, dict):
            default_container(container)


def keep_deprecated_service_account(spec: JSON) -> None:
    """core/v1's deprecated ``serviceAccount`` alias, as the v1 conversion keeps it: a pod
    sending only it names its ServiceAccount by it, and every stored pod that names one
    shows it under both names."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if name:
        spec["serviceAccountName"] = spec["serviceAccount"] = name
    else:
        spec.pop("serviceAccount", None)


def prepare_namespace(obj: Resource) -> None:
    """On create only: a namespace always starts with the ``kubernetes`` finalizer."""
    finalizers = obj.spec.setdefault("finalizers", [])
    if isinstance(finalizers, list) and NAMESPACE_FINALIZER not in finalizers:
        finalizers.append(NAMESPACE_FINALIZER)


def keep_namespace_finalizers(current: Resource, updated: Resource) -> None:
    """An update of a Namespace leaves ``spec.finalizers`` as they are."""
    if "finalizers" in current.spec:
        updated.spec["finalizers"] = list(current.spec["finalizers"])
    else:
        updated.spec.pop("finalizers", None)
