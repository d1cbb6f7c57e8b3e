"""The kubelet's heartbeat Lease in kube-node-lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.node_lease import (
    LEASE_NAMESPACE,
    ensure_lease_namespace,
    renew_node_lease,
)


async def test_the_lease_is_created_owned_by_the_node_then_renewed() -> None:
    api = APIServer()
    node = api.create(builders.node("node-1", ready=True))
    ensure_lease_namespace(api)
    ensure_lease_namespace(api)  # idempotent
    first = datetime(2026, 12, 3, 12, 0, 0, 123456, tzinfo=UTC)
    lease = await renew_node_lease(as_client(api), "node-1", first)
    assert lease.namespace == LEASE_NAMESPACE and lease.name == "node-1"
    assert lease.spec == {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
                          "renewTime": "2026-12-03T12:00:00.123456Z"}
    assert lease.metadata.owner_references == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": node.metadata.uid}]
    renewed = await renew_node_lease(as_client(api), "node-1", first + timedelta(seconds=10))
    assert renewed.spec["renewTime"] == "2026-12-03T12:00:10.123456Z"
    assert renewed.metadata.uid == lease.metadata.uid
    assert int(renewed.metadata.resource_version or 0) > int(lease.metadata.resource_version
                                                           or 0)


def test_a_lease_with_a_non_positive_duration_is_invalid() -> None:
    api = APIServer()
    ensure_lease_namespace(api)
    with pytest.raises(Invalid, match="leaseDurationSeconds"):
        api.create(new("Lease", "x", LEASE_NAMESPACE, spec={"leaseDurationSeconds": 0}))
