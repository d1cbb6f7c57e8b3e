"""The admission plugins an API server may be started with (kube-apiserver's
``--enable-admission-plugins``, here by name): ``ServiceAccount``
(:mod:`.service_account_admission`) and ``Priority`` (:mod:`.priority_admission`).
``up`` turns both on, as a default kube-apiserver has them; an in-process API server
has none unless asked (its tests and components make pods with no ServiceAccount
controller or CA around).

With ``Priority`` on, the built-in PriorityClasses exist from the start, as the
scheduling storage's start-up hook makes them in kube-apiserver.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver import priority_admission, service_account_admission
from kubelet_sim.apiserver.admission import generated_name
from kubelet_sim.apiserver.priority_classes import KIND as PRIORITY_CLASS
from kubelet_sim.apiserver.priority_classes import system_priority_classes

__all__ = ["DEFAULT_PLUGINS", "PRIORITY", "SERVICE_ACCOUNT", "AdmissionPlugins"]

SERVICE_ACCOUNT = "ServiceAccount"
PRIORITY = "Priority"
DEFAULT_PLUGINS = frozenset({SERVICE_ACCOUNT, PRIORITY})

Lookup = Callable[[str, str, str], Resource | None]  # kind, namespace, name


class AdmissionPlugins:
    """The enabled plugins, reading the store through ``lookup`` and ``listed``."""

    def __init__(self, enabled: Iterable[str], lookup: Lookup,
                 listed: Callable[[str], Iterable[Resource]], rng: random.Random) -> None:
        self.enabled = frozenset(enabled)
        unknown = self.enabled - DEFAULT_PLUGINS
        if unknown:
            raise ValueError(f"unknown admission plugins: {sorted(unknown)}")
        self._lookup, self._listed, self._rng = lookup, listed, rng

    def bootstrap_objects(self) -> list[Resource]:
        """What the enabled plugins need stored from the start."""
        return system_priority_classes() if PRIORITY in self.enabled else []

    def admit_create(self, obj: Resource, requested_name: str) -> None:
        """The plugins on a create (``requested_name``: the name as sent, or the
        ``generateName``)."""
        if obj.kind == "Pod":
            if SERVICE_ACCOUNT in self.enabled:
                service_account_admission.admit_pod(
                    obj, self._service_account, lambda p: generated_name(self._rng, p),
                    requested_name)
            if PRIORITY in self.enabled:
                priority_admission.admit_pod(obj, self._classes, self._class, requested_name)
        elif obj.kind == PRIORITY_CLASS and PRIORITY in self.enabled:
            priority_admission.admit_priority_class(obj, self._classes, creating=True)

    def admit_update(self, current: Resource, updated: Resource) -> None:
        """The plugins on an update (not of a subresource)."""
        if PRIORITY not in self.enabled:
            return
        if updated.kind == "Pod":
            priority_admission.admit_pod_update(current, updated)
        elif updated.kind == PRIORITY_CLASS:
            priority_admission.admit_priority_class(updated, self._classes, creating=False)

    def await_create(self, obj: Resource) -> None:
        """Before a client's create takes the lock: the ServiceAccount plugin's second
        looks for a missing ``default`` ServiceAccount (it sleeps)."""
        if SERVICE_ACCOUNT in self.enabled:
            service_account_admission.wait_for_service_account(self._service_account, obj)

    def _service_account(self, namespace: str, name: str) -> Resource | None:
        return self._lookup("ServiceAccount", namespace, name)

    def _class(self, name: str) -> Resource | None:
        return self._lookup(PRIORITY_CLASS, "", name)

    def _classes(self) -> Iterable[Resource]:
        return self._listed(PRIORITY_CLASS)
