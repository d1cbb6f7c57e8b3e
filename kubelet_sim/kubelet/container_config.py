"""The ConfigMaps and Secrets a container's environment names (``env[].valueFrom`` and
``envFrom``), checked before it is created as the kubelet does: a missing object (or
key) that is not ``optional`` fails the container with ``CreateContainerConfigError`` and
the kubelet's message — ``configmap "x" not found``, ``couldn't find key k in ConfigMap
default/x`` (and the same for ``secret``/``Secret``) — until it exists."""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.model import JSON, Resource

CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"

# (kind, namespace, name) -> the object, or None when it does not exist
Lookup = Callable[[str, str, str], Resource | None]

_REFS = (("configMapRef", "configMapKeyRef", "ConfigMap", "configmap"),
         ("secretRef", "secretKeyRef", "Secret", "secret"))


def _has_key(obj: Resource, key: str) -> bool:
    return any(key in (obj.body.get(part) or {}) for part in ("data", "binaryData"))


def container_config_error(pod: Resource, container: JSON, lookup: Lookup) -> str | None:
    """Why the container cannot be created (the kubelet's message), or None."""
    ns = pod.namespace
    for source in container.get("envFrom") or []:
        for ref_field, _, kind, lower in _REFS:
            ref = source.get(ref_field)
            if ref is None:
                continue
            name = str(ref.get("name", ""))
            if lookup(kind, ns, name) is None and not ref.get("optional"):
                return f'{lower} "{name}" not found'
    for var in container.get("env") or []:
        for _, key_field, kind, lower in _REFS:
            ref = (var.get("valueFrom") or {}).get(key_field)
            if ref is None:
                continue
            name, key = str(ref.get("name", "")), str(ref.get("key", ""))
            obj = lookup(kind, ns, name)
            if ref.get("optional"):
                continue
            if obj is None:
                return f'{lower} "{name}" not found'
            if not _has_key(obj, key):
                return f"couldn't find key {key} in {kind} {ns}/{name}"
    return None


def referenced(pod: Resource) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every ConfigMap and Secret the init and app containers'
    env names."""
    found = set()
    for container in [*(pod.spec.get("initContainers") or []),
                      *(pod.spec.get("containers") or [])]:
        for source in container.get("envFrom") or []:
            for ref_field, _, kind, _ in _REFS:
                if source.get(ref_field) is not None:
                    found.add((kind, pod.namespace, str(source[ref_field].get("name", ""))))
        for var in container.get("env") or []:
            for _, key_field, kind, _ in _REFS:
                ref = (var.get("valueFrom") or {}).get(key_field)
                if ref is not None:
                    found.add((kind, pod.namespace, str(ref.get("name", ""))))
    return found


def config_errors(pod: Resource, lookup: Lookup) -> dict[str, str]:
    """Container name -> its CreateContainerConfigError message, for those failing."""
    errors = {}
    for container in pod.spec.get("containers") or []:
        message = container_config_error(pod, container, lookup)
        if message is not None:
            errors[str(container.get("name", ""))] = message
    return errors
