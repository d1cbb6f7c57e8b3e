"""kube-apiserver's ServiceAccount admission plugin, on a Pod create:

* a pod without ``spec.serviceAccountName`` gets ``default``; the ServiceAccount it
  names must exist, else the create is refused (403: ``error looking up service account
  <ns>/<name>: serviceaccount "<name>" not found``);
* unless ``automountServiceAccountToken`` is false (the pod's word first, then the
  ServiceAccount's), a projected volume ``kube-api-access-<5 characters>`` (a bound
  token at ``token``, ``ca.crt`` from the ``kube-root-ca.crt`` ConfigMap, the pod's
  ``namespace``) is added and mounted read-only at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` in every init and regular container
  that has nothing mounted there (ephemeral containers never get it);
* a pod without ``imagePullSecrets`` takes the ServiceAccount's;
* a ServiceAccount annotated ``kubernetes.io/enforce-mountable-secrets: "true"`` limits
  the Secrets the pod may use to the ones it lists;
* a mirror pod (``kubernetes.io/config.mirror``) is left as it is, and refused when it
  names a ServiceAccount, uses a Secret or projects a token.

Updates pass untouched: the plugin only mutates and checks creates.

The plugin looks the ServiceAccount up in its informer and, when it is not there yet,
asks the API again: ten times for ``default`` (the service account controller makes it
shortly after the namespace), once for any other. :func:`wait_for_service_account` is
that retry, run before the create takes the API server's lock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.api.model import JSON, Resource

__all__ = ["MOUNT_PATH", "ROOT_CA_CONFIG_MAP", "VOLUME_PREFIX", "admit_pod",
           "token_volume_source", "wait_for_service_account"]

DEFAULT_SERVICE_ACCOUNT = "default"
VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
# the bound token's lifetime the plugin asks for: an hour and 7 s (the 7 s mark tokens
# whose expiry the API server only warns about, serviceaccount.WarnOnlyBoundTokenExpirationSeconds)
TOKEN_EXPIRATION_SECONDS = 3607
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"
DEFAULT_LOOKUPS = 10  # look-ups of a missing ``default`` before the create is refused

ServiceAccountLookup = Callable[[str, str], Resource | None]


def token_volume_source() -> JSON:
    """The projected source of the ``kube-api-access-*`` volume."""
    return {
        "defaultMode": 0o644,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                                     "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIG_MAP,
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    }


def admit_pod(pod: Resource, lookup: ServiceAccountLookup,
              volume_name: Callable[[str], str], requested_name: str = "") -> None:
    """Mutate and check a new Pod as the plugin does (``lookup(namespace, name)``: the
    stored ServiceAccount or None; ``volume_name(prefix)``: a generated name;
    ``requested_name``: the pod's name as sent, its ``generateName`` when the server
    makes one — admission runs before that, and a refusal names what it saw)."""
    shown = requested_name or pod.metadata.name
    try:
        _admit(pod, lookup, volume_name)
    except _Refused as refused:
        raise ObjectForbidden(str(refused), "pods", shown) from None


class _Refused(Exception):
    """Why the plugin refuses the pod (worded into a 403 by :func:`admit_pod`)."""


def _admit(pod: Resource, lookup: ServiceAccountLookup,
           volume_name: Callable[[str], str]) -> None:
    if MIRROR_POD_ANNOTATION in pod.metadata.annotations:
        _check_mirror_pod(pod)
        return
    spec = pod.spec
    if not spec.get("serviceAccountName"):  # the deprecated alias counts, as conversion has it
        spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
    account = _existing(pod, lookup)
    if _automount(account, pod):
        _mount_token(spec, volume_name)
    if not spec.get("imagePullSecrets") and account.body.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": ref.get("name", "")}
                                    for ref in account.body["imagePullSecrets"]
                                    if isinstance(ref, dict)]
    if _enforces_mountable_secrets(account):
        _limit_secret_references(pod, account)


def wait_for_service_account(lookup: ServiceAccountLookup, pod: Resource,
                             sleep: Callable[[float], None] = time.sleep,
                             rng: random.Random | None = None) -> None:
    """The plugin's second look before it refuses: while the pod's ServiceAccount (or
    ``default``) is missing, look again every 100 to 200 ms, ten times for ``default`` and
    not at all for another. Returns either way: the create then decides."""
    if pod.kind != "Pod" or MIRROR_POD_ANNOTATION in pod.metadata.annotations:
        return
    name = str(pod.spec.get("serviceAccountName") or pod.spec.get("serviceAccount")
               or DEFAULT_SERVICE_ACCOUNT)
    namespace = pod.metadata.namespace or "default"
    if name != DEFAULT_SERVICE_ACCOUNT:
        return
    interval = (rng or random.Random()).uniform(0.1, 0.2)
    for _ in range(DEFAULT_LOOKUPS - 1):
        if lookup(namespace, name) is not None:
            return
        sleep(interval)


def _existing(pod: Resource, lookup: ServiceAccountLookup) -> Resource:
    namespace = pod.metadata.namespace or "default"
    name = str(pod.spec["serviceAccountName"])
    account = lookup(namespace, name)
    if account is None:
        raise _Refused(f"error looking up service account {namespace}/{name}: "
                           f'serviceaccount "{name}" not found')
    return account


def _automount(account: Resource, pod: Resource) -> bool:
    """The pod's ``automountServiceAccountToken`` wins, then the ServiceAccount's; true
    when neither says."""
    for said in (pod.spec.get("automountServiceAccountToken"),
                 account.body.get("automountServiceAccountToken")):
        if isinstance(said, bool):
            return said
    return True


def _mount_token(spec: JSON, volume_name: Callable[[str], str]) -> None:
    volumes: list[Any] = spec.get("volumes") or []
    existing = next((v.get("name") for v in volumes if isinstance(v, dict)
                     and str(v.get("name", "")).startswith(VOLUME_PREFIX)), None)
    name = str(existing) if existing else volume_name(VOLUME_PREFIX)
    needed = False
    for container in _containers(spec, "initContainers", "containers"):
        mounts = container.setdefault("volumeMounts", [])
        if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
            continue
        mounts.append({"name": name, "readOnly": True, "mountPath": MOUNT_PATH})
        needed = True
    if needed and not existing:
        spec["volumes"] = [*volumes, {"name": name, "projected": token_volume_source()}]


def _containers(spec: JSON, *fields: str) -> Iterator[JSON]:
    for field in fields:
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                yield container


def _check_mirror_pod(pod: Resource) -> None:
    """A mirror pod may name no ServiceAccount, use no Secret, project no token."""
    spec = pod.spec
    if spec.get("serviceAccountName"):
        raise _Refused("a mirror pod may not reference service accounts")
    if next(_secret_names(spec), None) is not None:
        raise _Refused("a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or []:
        for source in ((volume or {}).get("projected") or {}).get("sources") or []:
            if isinstance(source, dict) and "serviceAccountToken" in source:
                raise _Refused("a mirror pod may not use ServiceAccountToken volume "
                                   "projections")


def _secret_names(spec: JSON) -> Iterator[str]:
    """Every Secret a pod spec uses (pull secrets, volumes, env of any container)."""
    for ref in spec.get("imagePullSecrets") or []:
        yield str((ref or {}).get("name", ""))
    for volume in spec.get("volumes") or []:
        volume = volume or {}
        if isinstance(volume.get("secret"), dict):
            yield str(volume["secret"].get("secretName", ""))
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance((source or {}).get("secret"), dict):
                yield str(source["secret"].get("name", ""))
        for key in ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "csi",
                    "azureFile", "storageos"):
            source = volume.get(key)
            if isinstance(source, dict):
                ref = source.get("secretRef") or source.get("nodePublishSecretRef") or {}
                if isinstance(ref, dict) and ref.get("name"):
                    yield str(ref["name"])
                if key == "azureFile" and source.get("secretName"):
                    yield str(source["secretName"])
    for container in _containers(spec, "initContainers", "containers", "ephemeralContainers"):
        for source in container.get("envFrom") or []:
            if isinstance((source or {}).get("secretRef"), dict):
                yield str(source["secretRef"].get("name", ""))
        for env in container.get("env") or []:
            ref = ((env or {}).get("valueFrom") or {}).get("secretKeyRef")
            if isinstance(ref, dict):
                yield str(ref.get("name", ""))


def _enforces_mountable_secrets(account: Resource) -> bool:
    value = account.metadata.annotations.get(ENFORCE_MOUNTABLE_SECRETS)
    return value is not None and value.lower() in ("1", "t", "true")


def _limit_secret_references(pod: Resource, account: Resource) -> None:
    """With the ServiceAccount enforcing mountable secrets: the pod's secret volumes and
    its containers' secret env must be among its ``secrets``, its pull secrets among
    its ``imagePullSecrets``."""
    spec, sa = pod.spec, account.name
    mountable = {str((s or {}).get("name", "")) for s in account.body.get("secrets") or []}
    for volume in spec.get("volumes") or []:
        secret = (volume or {}).get("secret")
        if isinstance(secret, dict) and secret.get("secretName") not in mountable:
            raise _Refused(f'volume with secret.secretName="{secret.get("secretName", "")}" '
                               f"is not allowed because service account {sa} does not "
                               "reference that secret")
    for field, what in (("initContainers", "init container"), ("containers", "container")):
        for container in _containers(spec, field):
            cname = container.get("name", "")
            for env in container.get("env") or []:
                ref = ((env or {}).get("valueFrom") or {}).get("secretKeyRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    raise _Refused(f"{what} {cname} with envVar {env.get('name', '')} "
                                       f'referencing secret.secretName="{ref.get("name", "")}" '
                                       f"is not allowed because service account {sa} does not "
                                       "reference that secret")
            for source in container.get("envFrom") or []:
                ref = (source or {}).get("secretRef")
                if isinstance(ref, dict) and ref.get("name") not in mountable:
                    raise _Refused(f"{what} {cname} with envFrom referencing "
                                       f'secret.secretName="{ref.get("name", "")}" is not '
                                       f"allowed because service account {sa} does not "
                                       "reference that secret")
    pullable = {str((s or {}).get("name", ""))
                for s in account.body.get("imagePullSecrets") or []}
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        name = str((ref or {}).get("name", ""))
        if name not in pullable:
            raise _Refused(f'imagePullSecrets[{i}].name="{name}" is not allowed because '
                               f"service account {sa} does not reference that imagePullSecret")
