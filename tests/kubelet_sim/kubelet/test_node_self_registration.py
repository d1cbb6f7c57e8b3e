"""The kubelet registering its own Node (registerWithAPIServer)."""

from __future__ import annotations

from kubelet_sim.api import builders
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.node_info import default_labels
from kubelet_sim.kubelet.node_self_registration import register_node


async def test_a_missing_node_is_created_with_the_kubelets_default_labels() -> None:
    api = APIServer()
    node = builders.node("n1", "10.244.1.0/24", "192.168.0.1", labels={"team": "a"})

    registered = await register_node(as_client(api), node)

    stored = api.get("Node", "n1")
    assert stored.metadata.uid == registered.metadata.uid
    assert stored.metadata.labels == {**default_labels("n1"), "team": "a"}
    assert stored.spec["podCIDR"] == "10.244.1.0/24"


async def test_an_existing_node_is_kept_and_only_its_stale_default_labels_are_written() -> None:
    api = APIServer()
    first = api.create(builders.node("n1", labels={**default_labels("n1"),
                                                   "kubernetes.io/os": "windows", "team": "a"}))

    registered = await register_node(as_client(api), builders.node("n1"))

    assert registered.metadata.uid == first.metadata.uid
    assert registered.metadata.labels == {**default_labels("n1"), "team": "a"}
    again = await register_node(as_client(api), builders.node("n1"))
    assert again.metadata.resource_version == registered.metadata.resource_version  # no write
