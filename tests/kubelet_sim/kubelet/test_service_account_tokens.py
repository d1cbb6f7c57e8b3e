"""The CSIDriver's tokenRequests and requiresRepublish, at the arguments of the CSI calls:
NodePublishVolume's volume_context carries ``csi.storage.k8s.io/serviceAccount.tokens``,
JSON keyed by audience with each token's ``token`` and ``expirationTimestamp``, minted
by TokenRequest for the pod's ServiceAccount and bound to the pod; a republish calls
NodePublishVolume again and mints a new token once the old one is past 80% of its life
(fake clock throughout)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.http.token_signer import TokenSigner
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.token_request import ISSUER
from kubelet_sim.client.in_process import as_client
from kubelet_sim.csi.volume_spec import CsiVolume, PodInfo
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.service_account_tokens import (
    TOKENS_KEY,
    RepublishSchedule,
    TokenManager,
    token_attributes,
)
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.testing.fake_csi import FakeCsiClient, FakeCsiDriver
from kubelet_sim.utils.trace import Trace

DRIVER = "tokens.csi.example.com"
TOKEN_REQUESTS = [{"audience": "vault", "expirationSeconds": 3600}, {"audience": ""}]


@dataclass
class Node:
    api: APIServer
    clock: FakeClock
    driver: FakeCsiDriver
    signer: TokenSigner
    manager: VolumeManager
    pod: PodInfo

    def contexts(self) -> list[dict[str, str]]:
        return [dict(r.volume_context) for r in self.driver.requests_of("NodePublishVolume")]

    def tokens(self, index: int = -1) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.contexts()[index][TOKENS_KEY])
        return found

    def claims(self, token: str, audience: str) -> dict[str, Any]:
        public = jwt.PyJWK(self.signer.jwks()["keys"][0])
        found: dict[str, Any] = jwt.decode(
            token, public, algorithms=["RS256"], audience=audience,
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False})
        return found


def csi_driver(**spec: Any) -> Resource:
    return new("CSIDriver", DRIVER, spec=spec)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    clock = FakeClock()
    api = APIServer(clock=clock)
    signer = TokenSigner()
    api.token_signer = signer
    api.create(new("ServiceAccount", "app", "default"))
    pod = builders.pod("web", node_name="node-1")
    pod.spec["serviceAccountName"] = "app"
    pod = api.create(pod)
    api.create(csi_driver(tokenRequests=TOKEN_REQUESTS, requiresRepublish=True))
    driver = FakeCsiDriver(name=DRIVER)
    driver.add_volume("vol-1")
    client = FakeCsiClient(driver, trace=Trace(), node="node-1")
    tokens = TokenManager(as_client(api), clock)
    manager = VolumeManager(
        node_name="node-1", paths=KubeletPaths(tmp_path / "kubelet"),
        client_for=lambda _name: client, clock=clock,
        publish_attributes=lambda info, volume: token_attributes(as_client(api), tokens,
                                                                  volume.driver, info))
    info = PodInfo(name="web", namespace="default", uid=pod.metadata.uid,
                   service_account="app")
    yield Node(api, clock, driver, signer, manager, info)


VOLUME = CsiVolume(driver=DRIVER, spec_name="pvc-1", volume_handle="vol-1",
                   volume_attributes={"a": "b"}, fs_type="ext4")


async def test_node_publish_carries_one_token_per_audience_bound_to_the_pod(node: Node) -> None:
    await node.manager.mount(node.pod, VOLUME)

    context = node.contexts()[0]
    assert set(context) == {"a", TOKENS_KEY}
    tokens = node.tokens()
    assert list(tokens) == ["", "vault"]  # Go marshals a map with its keys sorted
    assert context[TOKENS_KEY].startswith('{"":{"token":"')  # no spaces, token first
    for audience, entry in tokens.items():
        assert list(entry) == ["token", "expirationTimestamp"]
        claims = node.claims(entry["token"], audience or ISSUER)
        assert claims["aud"] == [audience or ISSUER]
        assert claims["sub"] == "system:serviceaccount:default:app"
        assert claims["kubernetes.io"]["pod"] == {"name": "web", "uid": node.pod.uid}
        assert claims["exp"] - claims["iat"] == 3600
        assert entry["expirationTimestamp"] == "2025-01-01T01:00:00Z"


async def test_a_driver_without_token_requests_gets_no_tokens_key(node: Node) -> None:
    node.api.delete("CSIDriver", DRIVER)
    node.api.create(csi_driver(requiresRepublish=True))

    await node.manager.mount(node.pod, VOLUME)

    assert node.contexts()[0] == {"a": "b"}


async def test_no_csidriver_object_means_no_tokens(node: Node) -> None:
    node.api.delete("CSIDriver", DRIVER)

    await node.manager.mount(node.pod, VOLUME)

    assert TOKENS_KEY not in node.contexts()[0]


async def test_a_block_volume_gets_no_tokens(node: Node) -> None:
    block = CsiVolume(driver=DRIVER, spec_name="pvc-2", volume_handle="vol-1", block=True)

    await node.manager.mount(node.pod, block)

    assert TOKENS_KEY not in node.contexts()[0]


async def test_republish_keeps_the_token_until_80_percent_of_its_life_then_mints_anew(
        node: Node) -> None:
    await node.manager.mount(node.pod, VOLUME)
    first = node.tokens()["vault"]

    node.clock.advance(60)
    await node.manager.republish(node.pod, VOLUME)
    assert len(node.contexts()) == 2
    assert node.tokens()["vault"] == first  # the token manager's cached token

    node.clock.advance(0.8 * 3600 - 60 + 1)  # within 20% of the expiry
    await node.manager.republish(node.pod, VOLUME)
    renewed = node.tokens()["vault"]
    assert renewed["token"] != first["token"]
    assert renewed["expirationTimestamp"] == "2025-01-01T01:48:01Z"
    publish = node.driver.requests_of("NodePublishVolume")
    assert publish[2].target_path == publish[0].target_path
    assert publish[2].volume_id == "vol-1"


async def test_republish_of_a_volume_the_pod_does_not_have_calls_nothing(node: Node) -> None:
    await node.manager.republish(node.pod, VOLUME)

    assert node.driver.requests_of("NodePublishVolume") == []


async def test_a_token_request_that_fails_fails_set_up_without_a_publish(node: Node) -> None:
    node.api.delete("ServiceAccount", "app", "default")
    node.manager.max_attempts = 1

    with pytest.raises(RuntimeError, match=re.escape(
            'mounter.SetUpAt failed to get service account token attributes: '
            'serviceaccounts "app" not found')):
        await node.manager.mount(node.pod, VOLUME)

    assert node.driver.requests_of("NodePublishVolume") == []


def test_a_running_pod_is_due_for_resync_once_per_sync_period() -> None:
    clock = FakeClock()
    schedule = RepublishSchedule(clock, period=60)
    schedule.synced("uid-1")

    clock.advance(59)
    assert not schedule.due("uid-1")
    clock.advance(1)
    assert schedule.due("uid-1")
    schedule.synced("uid-1")
    assert not schedule.due("uid-1")


async def test_a_failed_republish_is_reported_once_and_not_retried_with_a_backoff(
        node: Node) -> None:
    await node.manager.mount(node.pod, VOLUME)
    node.api.delete("ServiceAccount", "app", "default")
    node.clock.advance(3000)  # the cached token is due for refresh
    reported: list[str] = []

    with pytest.raises(RuntimeError):
        await node.manager.republish(node.pod, VOLUME, failed=reported.append)

    assert reported == ['MountVolume.SetUp failed for volume "pvc-1" : mounter.SetUpAt failed '
                        'to get service account token attributes: serviceaccounts "app" not '
                        "found"]
    assert node.clock.sleeps == []
    assert len(node.driver.requests_of("NodePublishVolume")) == 1


async def token_of(tokens: TokenManager, pod: PodInfo, seconds: int) -> str:
    return str((await tokens.token(pod, ["vault"], seconds))["token"])


@pytest.mark.parametrize(("draw", "jitter"), [(0.0, 0), (0.5, 5), (0.999, 9)])
async def test_a_token_is_refreshed_up_to_a_whole_second_jitter_before_80_percent_of_its_life(
        node: Node, draw: float, jitter: int) -> None:
    tokens = TokenManager(as_client(node.api), node.clock, random=lambda: draw)
    first = await token_of(tokens, node.pod, 3600)

    node.clock.advance(2880 - jitter)  # the 80% point less the jitter: not past it
    assert await token_of(tokens, node.pod, 3600) == first
    node.clock.advance(0.5)
    assert await token_of(tokens, node.pod, 3600) != first


async def test_a_long_lived_token_is_refreshed_a_jitter_before_it_is_24_hours_old(
        node: Node) -> None:
    tokens = TokenManager(as_client(node.api), node.clock, random=lambda: 0.75)  # 7 s
    week = 7 * 24 * 3600
    first = await token_of(tokens, node.pod, week)

    node.clock.advance(24 * 3600 - 7)
    assert await token_of(tokens, node.pod, week) == first
    node.clock.advance(0.5)
    assert await token_of(tokens, node.pod, week) != first
