"""The ServiceAccount tokens the kubelet hands to CSI drivers (``tokenRequests`` on the
CSIDriver), as the kubelet's CSI volume plugin and token manager do.

At every NodePublishVolume of a filesystem volume whose CSIDriver lists
``tokenRequests``, the kubelet asks TokenRequest for each audience (an empty audience
means the API server's own) for the pod's ServiceAccount, bound to the pod (``v1`` Pod,
its name and uid), with the entry's ``expirationSeconds``; the answers' statuses go into
``volume_context["csi.storage.k8s.io/serviceAccount.tokens"]`` as JSON keyed by audience:
``{"<audience>": {"token": "...", "expirationTimestamp": "..."}}``. No CSIDriver object, or
no ``tokenRequests``, adds nothing.

The token manager keeps each answer and asks again only when it needs a refresh: past 80%
of its lifetime (within 20% of its expiry) or older than 24 h, less a jitter of 0 to 9
whole seconds drawn at each check, as the kubelet's token manager truncates
``rand.Float64() * 10 s`` (its random source is injectable: tests pass a fixed one).
"""

from __future__ import annotations

import json
import random as random_module
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, parse_time
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.csi.volume_spec import PodInfo
from kubelet_sim.utils.clock import Clock

TOKENS_KEY = "csi.storage.k8s.io/serviceAccount.tokens"
MAX_TTL = timedelta(hours=24)  # the token manager refreshes anything older
MAX_JITTER_SECONDS = 10  # a refresh comes up to this much earlier


@dataclass(frozen=True)
class _Key:
    namespace: str
    service_account: str
    audiences: tuple[str, ...]
    expiration_seconds: int | None
    pod_name: str
    pod_uid: str


class TokenManager:
    """The kubelet's token manager: TokenRequest answers, kept until due for refresh."""

    def __init__(self, client: KubeClient, clock: Clock,
                 random: Callable[[], float] = random_module.random) -> None:
        self.client = client
        self.clock = clock
        self.random = random  # uniform in [0, 1), as Go's rand.Float64
        self._cache: dict[_Key, JSON] = {}

    async def token(self, pod: PodInfo, audiences: list[str],
                    expiration_seconds: int | None) -> JSON:
        """The status (``token``, ``expirationTimestamp``) of a token for ``pod``'s
        ServiceAccount bound to ``pod``."""
        key = _Key(pod.namespace, pod.service_account, tuple(audiences), expiration_seconds,
                   pod.name, pod.uid)
        cached = self._cache.get(key)
        if cached is not None and not self.requires_refresh(cached):
            return dict(cached["status"])
        spec: JSON = {"audiences": list(audiences),
                      "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                                         "uid": pod.uid}}
        if expiration_seconds is not None:
            spec["expirationSeconds"] = expiration_seconds
        answered = await self.client.request_token(
            pod.namespace, pod.service_account,
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
        self._cache[key] = answered
        return dict(answered["status"])

    def requires_refresh(self, answered: JSON) -> bool:
        jitter = timedelta(seconds=int(self.random() * MAX_JITTER_SECONDS))
        return self.clock.now() > refresh_time(answered) - jitter

    def refresh_due(self, pod: PodInfo, audiences: list[str],
                    expiration_seconds: int | None) -> datetime | None:
        """When the kept token for these arguments needs a refresh at the latest, jitter
        aside (None: none kept)."""
        key = _Key(pod.namespace, pod.service_account, tuple(audiences), expiration_seconds,
                   pod.name, pod.uid)
        cached = self._cache.get(key)
        return refresh_time(cached) if cached is not None else None

    def forget_pod(self, pod_uid: str) -> None:
        """Drop the tokens bound to a pod that is gone."""
        for key in [k for k in self._cache if k.pod_uid == pod_uid]:
            del self._cache[key]


def refresh_time(answered: JSON) -> datetime:
    """Past 80% of a token's lifetime, or 24 h after it was issued, whichever is first."""
    seconds = int(answered["spec"]["expirationSeconds"])
    expires = parse_time(answered["status"]["expirationTimestamp"])
    issued = expires - timedelta(seconds=seconds)
    return min(issued + MAX_TTL, expires - timedelta(seconds=seconds * 20 // 100))


async def driver_spec(client: KubeClient, driver: str) -> JSON | None:
    try:
        return (await client.get("CSIDriver", driver)).spec
    except NotFound:
        return None


async def token_attributes(client: KubeClient, tokens: TokenManager, driver: str,
                           pod: PodInfo) -> dict[str, str]:
    """The volume_context entry the kubelet adds for ``driver``'s ``tokenRequests``
    (``{}`` without any); an error of TokenRequest fails the publish."""
    spec = await driver_spec(client, driver)
    requests = (spec or {}).get("tokenRequests") or []
    if not requests:
        return {}
    outputs: dict[str, JSON] = {}
    for request in requests:
        audience = str(request.get("audience") or "")
        status = await tokens.token(pod, [audience] if audience else [],
                                    request.get("expirationSeconds"))
        outputs[audience] = {"token": status["token"],
                             "expirationTimestamp": status["expirationTimestamp"]}
    # Go's json.Marshal: the map's keys sorted, a struct's fields in their order, no spaces
    ordered = {audience: outputs[audience] for audience in sorted(outputs)}
    return {TOKENS_KEY: json.dumps(ordered, separators=(",", ":"))}


async def requires_republish(client: KubeClient, driver: str) -> bool:
    """The CSIDriver's ``requiresRepublish`` (false without the object)."""
    return bool((await driver_spec(client, driver) or {}).get("requiresRepublish"))


class RepublishSchedule:
    """When each running pod is synced again (the kubelet's ``--sync-frequency``): a
    pod's volumes whose driver requires republish get NodePublishVolume again then."""

    def __init__(self, clock: Clock, period: float) -> None:
        self.clock = clock
        self.period = period
        self._synced: dict[str, datetime] = {}  # pod uid -> last sync

    def synced(self, pod_uid: str) -> None:
        self._synced[pod_uid] = self.clock.now()

    def due(self, pod_uid: str) -> bool:
        last = self._synced.get(pod_uid)
        if last is None:
            self.synced(pod_uid)  # a pod running when the kubelet started: from now
            return False
        return (self.clock.now() - last).total_seconds() >= self.period

    def forget(self, pod_uid: str) -> None:
        self._synced.pop(pod_uid, None)
