"""kube-controller-manager's service account controller (``serviceaccount-controller``):
every namespace that is not terminating has a ServiceAccount named ``default``; one
created later gets it, and a deleted ``default`` comes back on the next pass."""

from __future__ import annotations

from kubelet_sim.api.errors import AlreadyExists, Forbidden, NotFound
from kubelet_sim.api.model import Resource, new
from kubelet_sim.controllers.base import Controller

COMPONENT = "serviceaccount-controller"
DEFAULT_NAME = "default"  # --service-account-names: the one it keeps


class ServiceAccountController(Controller):
    name = COMPONENT
    kinds = ("Namespace", "ServiceAccount")

    async def reconcile(self) -> bool:
        have = {sa.namespace for sa in self.cache.list("ServiceAccount")
                if sa.name == DEFAULT_NAME}
        changed = False
        for ns in self.cache.list("Namespace"):
            if ns.is_terminating or ns.status.get("phase") == "Terminating" or ns.name in have:
                continue
            changed |= await self.step(f"namespace/{ns.name}", self._ensure, ns)
        return changed

    async def _ensure(self, ns: Resource) -> bool:
        try:
            await self.client.create(new("ServiceAccount", DEFAULT_NAME, ns.name))
        except (AlreadyExists, Forbidden, NotFound):
            return False  # there already, or its namespace going or gone
        return True
