"""Leader election as client libraries do it, against the simulated API server: the
official Python client's `kubernetes.leaderelection` with its LeaseLock (coordination.k8s.io
Leases: get, create — its body carries no kind or apiVersion, which the API server takes
from the URL — and replace with the read resourceVersion), two candidates. One wins,
the other waits while the lease is fresh, a replace from a stale read is refused (409),
and the follower takes over once the leader stops renewing for the lease duration."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from .conftest import Served

LEASE_SECONDS = 3


@pytest.fixture
def default_client(served: Served) -> Iterator[None]:
    """LeaseLock talks through the client's default configuration: point it at the server
    for the test and put the previous default back afterwards."""
    before = client.Configuration.get_default_copy()
    config.load_kube_config(config_file=str(served.handle.kubeconfig))
    try:
        yield
    finally:
        client.Configuration.set_default(before)


def candidate(identity: str) -> Any:
    lock = LeaseLock("controller-leader", "default", identity)
    cfg = electionconfig.Config(lock, lease_duration=LEASE_SECONDS, renew_deadline=2,
                                retry_period=1, onstarted_leading=lambda: None,
                                onstopped_leading=lambda: None)
    return leaderelection.LeaderElection(cfg)


def holder(served: Served) -> str:
    return str(served.api.get("Lease", "controller-leader", "default").spec["holderIdentity"])


def test_two_candidates_one_leader_conflicts_and_takeover(served: Served,
                                                          default_client: None) -> None:
    a, b = candidate("a"), candidate("b")
    assert a.try_acquire_or_renew()  # creates the Lease
    assert holder(served) == "a"
    assert not b.try_acquire_or_renew()  # held and fresh: b follows
    first = served.api.get("Lease", "controller-leader", "default")
    assert a.try_acquire_or_renew()  # a renews: renewTime moves, acquireTime stays
    renewed = served.api.get("Lease", "controller-leader", "default")
    assert renewed.spec["renewTime"] != first.spec["renewTime"]
    assert renewed.spec["acquireTime"] == first.spec["acquireTime"]
    assert renewed.spec["leaseDurationSeconds"] == LEASE_SECONDS

    # b read the lease, then a renewed: b's replace carries a stale resourceVersion
    stale_reader = b.election_config.lock
    assert stale_reader.get("controller-leader", "default")[0]
    assert a.try_acquire_or_renew()
    assert not stale_reader.update("controller-leader", "default", b.observed_record or
                                   a.observed_record)
    assert holder(served) == "a"
    with pytest.raises(ApiException) as refused:  # what the lock's False stands for
        client.CoordinationV1Api().replace_namespaced_lease(
            "controller-leader", "default", stale_reader.lease_reference)
    assert refused.value.status == 409

    assert not b.try_acquire_or_renew()  # b observes a's latest record: still fresh
    time.sleep(LEASE_SECONDS + 0.3)  # a stops renewing; b sees the same record that long
    assert b.try_acquire_or_renew()
    assert holder(served) == "b"
    assert not a.try_acquire_or_renew()  # a is a follower now
