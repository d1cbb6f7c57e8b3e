"""kube-controller-manager's root-ca-cert-publisher: every namespace that is not
terminating holds ``kube-root-ca.crt`` with the API server's CA, made again when
deleted and put back when its data or description is changed."""

from __future__ import annotations

from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.root_ca_publisher import (
    DESCRIPTION,
    DESCRIPTION_ANNOTATION,
    RootCACertPublisher,
)
from kubelet_sim.testing.fake_clock import FakeClock

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def published(api: APIServer, namespace: str) -> Resource:
    return api.get("ConfigMap", "kube-root-ca.crt", namespace)


async def test_every_namespace_gets_the_ca_even_one_created_later() -> None:
    api = APIServer(clock=FakeClock())
    publisher = RootCACertPublisher(api, CA)
    assert await publisher.sync_once()
    for namespace in ("default", "kube-system"):
        cm = published(api, namespace)
        assert cm.body["data"] == {"ca.crt": CA.decode()}
        assert cm.metadata.annotations == {DESCRIPTION_ANNOTATION: DESCRIPTION}
    api.create(new("Namespace", "team-a"))
    assert await publisher.sync_once()
    assert published(api, "team-a").body["data"] == {"ca.crt": CA.decode()}
    assert not await publisher.sync_once()  # nothing left to do


async def test_a_deleted_or_changed_config_map_is_put_back() -> None:
    api = APIServer(clock=FakeClock())
    publisher = RootCACertPublisher(api, CA)
    await publisher.sync_once()
    api.delete("ConfigMap", "kube-root-ca.crt", "default")
    changed = published(api, "kube-system")
    changed.body["data"] = {"ca.crt": "forged", "extra": "x"}
    changed.metadata.annotations = {"team": "a"}
    api.update(changed)
    assert await publisher.sync_once()
    assert published(api, "default").body["data"] == {"ca.crt": CA.decode()}
    fixed = published(api, "kube-system")
    assert fixed.body["data"] == {"ca.crt": CA.decode()}
    assert fixed.metadata.annotations == {"team": "a", DESCRIPTION_ANNOTATION: DESCRIPTION}


async def test_a_terminating_namespace_gets_none() -> None:
    api = APIServer(clock=FakeClock())
    api.create(new("Namespace", "going", finalizers=["example.com/hold"]))
    api.delete("Namespace", "going")
    await RootCACertPublisher(api, CA).sync_once()
    assert not api.list("ConfigMap", "going").items
