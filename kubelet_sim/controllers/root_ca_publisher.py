"""kube-controller-manager's ``root-ca-cert-publisher``: every namespace that is not
terminating holds the ConfigMap ``kube-root-ca.crt`` whose ``ca.crt`` is the API
server's CA (PEM), with the ``kubernetes.io/description`` annotation saying what it is
for. A deleted one is made again; one whose data or annotation was changed is put back
(other annotations and labels stay). Pods read it through their ``kube-api-access-*``
volume (:mod:`kubelet_sim.apiserver.service_account_admission`)."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import AlreadyExists, Forbidden, NotFound
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.service_account_admission import ROOT_CA_CONFIG_MAP
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.controllers.base import Controller

COMPONENT = "root-ca-cert-publisher"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using "
               "internal endpoints such as the internal service IP or kubernetes.default.svc. "
               "No other usage is guaranteed across distributions of Kubernetes clusters.")


class RootCACertPublisher(Controller):
    name = COMPONENT
    kinds = ("Namespace", "ConfigMap")

    def __init__(self, api: APIServer | KubeClient, root_ca: bytes, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.data = {"ca.crt": root_ca.decode()}

    async def reconcile(self) -> bool:
        changed = False
        for ns in self.cache.list("Namespace"):
            if ns.is_terminating or ns.status.get("phase") == "Terminating":
                continue
            found = self.cache.get("ConfigMap", ROOT_CA_CONFIG_MAP, ns.name)
            if found is not None and self._current(found):
                continue
            changed |= await self.step(f"namespace/{ns.name}", self._publish, ns.name, found)
        return changed

    def _current(self, cm: Resource) -> bool:
        return (cm.body.get("data") == self.data
                and bool(cm.metadata.annotations.get(DESCRIPTION_ANNOTATION)))

    async def _publish(self, namespace: str, found: Resource | None) -> bool:
        if found is None:
            try:
                await self.client.create(new("ConfigMap", ROOT_CA_CONFIG_MAP, namespace,
                                             annotations={DESCRIPTION_ANNOTATION: DESCRIPTION},
                                             data=dict(self.data)))
            except (AlreadyExists, Forbidden, NotFound):
                return False  # made meanwhile, or its namespace going or gone
            return True
        fixed = found.copy()
        fixed.body["data"] = dict(self.data)
        fixed.metadata.annotations[DESCRIPTION_ANNOTATION] = DESCRIPTION
        await self.client.update(fixed)  # a stale copy is a Conflict: backed off, looked at again
        return True
