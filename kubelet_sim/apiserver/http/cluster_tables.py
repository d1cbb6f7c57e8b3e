"""``kubectl get`` columns of the cluster-scoped kinds a new user lists first, as
kube-apiserver's printers write them: Namespace (NAME STATUS AGE) and CSIDriver (NAME
ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE;
booleans as booleans, the token audiences joined or ``<unset>``, the lifecycle modes
joined or ``<none>``)."""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.http.service_tables import AGE, NAME, Column


def _flag(field: str, unset: bool) -> Callable[[Resource], bool]:
    def cell(driver: Resource) -> bool:
        value = driver.spec.get(field)
        return unset if value is None else bool(value)
    return cell


def _token_audiences(driver: Resource) -> str:
    audiences = [str(t.get("audience", "")) for t in driver.spec.get("tokenRequests") or []]
    return ",".join(audiences) if audiences else "<unset>"


def _modes(driver: Resource) -> str:
    return ",".join(str(m) for m in driver.spec.get("volumeLifecycleModes") or []) or "<none>"


COLUMNS: dict[str, list[Column]] = {
    "Namespace": [NAME, ("Status", "string", 0, lambda o: o.status.get("phase", "")), AGE],
    "CSIDriver": [NAME, ("AttachRequired", "boolean", 0, _flag("attachRequired", True)),
                  ("PodInfoOnMount", "boolean", 0, _flag("podInfoOnMount", False)),
                  ("StorageCapacity", "boolean", 0, _flag("storageCapacity", False)),
                  ("TokenRequests", "string", 0, _token_audiences),
                  ("RequiresRepublish", "boolean", 0, _flag("requiresRepublish", False)),
                  ("Modes", "string", 0, _modes), AGE],
}
