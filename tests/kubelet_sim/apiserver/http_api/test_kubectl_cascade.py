"""`kubectl delete --cascade=background|foreground|orphan` against the HTTP API, with the
garbage collector settled in between (the `up` test runs it as a live loop)."""

from __future__ import annotations

import asyncio
import json
import threading

from kubelet_sim.controllers import ControllerManager
from kubelet_sim.controllers.garbage_collector import GarbageCollector

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl


def lease(name: str, owner_uid: str = "", block: bool = False) -> str:
    doc: dict = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name}, "spec": {"holderIdentity": name}}
    if owner_uid:
        doc["metadata"]["ownerReferences"] = [{
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "owner",
            "uid": owner_uid, "blockOwnerDeletion": block}]
    return json.dumps(doc)


def family(served: Served, block: bool = False) -> None:
    served.kubectl("apply", "-f", "-", stdin=lease("owner"))
    uid = served.kubectl("get", "lease", "owner", "-o", "jsonpath={.metadata.uid}").stdout
    for name in ("child-a", "child-b"):
        served.kubectl("apply", "-f", "-", stdin=lease(name, uid, block))


def names(served: Served) -> list[str]:
    return sorted(i["metadata"]["name"] for i in served.kubectl_json("get", "leases")["items"])


def collect_until_done(served: Served, done: threading.Event) -> threading.Thread:
    """The garbage collector, settling over and over until ``done``, in its own thread."""
    gc = ControllerManager([GarbageCollector(served.api)])

    async def loop() -> None:
        while not done.is_set():
            await gc.settle()
            await asyncio.sleep(0.05)

    thread = threading.Thread(target=asyncio.run, args=(loop(),), daemon=True)
    thread.start()
    return thread


def test_background_cascade_deletes_the_dependents(served: Served) -> None:
    family(served)
    done = threading.Event()
    thread = collect_until_done(served, done)
    try:
        served.kubectl("delete", "lease", "owner", "--cascade=background")
        served.kubectl("wait", "--for=delete", "lease/child-a", "lease/child-b",
                       "--timeout=20s")
    finally:
        done.set()
        thread.join()
    assert names(served) == []


def test_foreground_cascade_returns_once_the_owner_went_last(served: Served) -> None:
    family(served, block=True)
    done = threading.Event()
    thread = collect_until_done(served, done)
    try:
        # kubectl delete waits until the owner is gone: after its blocking dependents
        served.kubectl("delete", "lease", "owner", "--cascade=foreground", "--timeout=20s")
        assert names(served) == []
    finally:
        done.set()
        thread.join()


def test_foreground_owner_waits_with_its_finalizer(served: Served) -> None:
    family(served, block=True)
    served.kubectl("delete", "lease", "owner", "--cascade=foreground", "--wait=false")
    owner = served.kubectl_json("get", "lease", "owner")
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert owner["metadata"]["deletionTimestamp"]


def test_orphan_cascade_keeps_the_dependents_unowned(served: Served) -> None:
    family(served)
    done = threading.Event()
    thread = collect_until_done(served, done)
    try:
        served.kubectl("delete", "lease", "owner", "--cascade=orphan", "--timeout=20s")
    finally:
        done.set()
        thread.join()
    assert names(served) == ["child-a", "child-b"]
    for name in ("child-a", "child-b"):
        assert "ownerReferences" not in served.kubectl_json("get", "lease",
                                                            name)["metadata"]


def test_an_unknown_policy_is_a_422(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=lease("owner"))
    done = served.kubectl("delete", "--raw",
                          "/apis/coordination.k8s.io/v1/namespaces/default/leases/owner"
                          "?propagationPolicy=Sideways", check=False)
    assert done.returncode != 0
    assert 'Unsupported value: "Sideways"' in done.stderr
