"""CSI conformance cases about what the kubelet and the sidecars hand the driver from other
API objects (see :mod:`kubelet_sim.conformance.csi`): ServiceAccount tokens and Secrets.
Like the other CSIDriver cases they run when the user passes the driver's CSIDriver object
(``--csidriver FILE``), each gated on its fields and on the driver's capabilities:

- ``csidriver/token-requests`` (``tokenRequests``): NodePublishVolume's volume_context
  carries ``csi.storage.k8s.io/serviceAccount.tokens``, one entry per audience, each a JWT
  the API server signed for that audience, bound to the pod and its ServiceAccount, expiring
  when the entry says;
- ``csidriver/requires-republish`` (``requiresRepublish: true``): with the kubelet syncing
  the running pod every half second for the case, NodePublishVolume is called again on
  the same target path (with fresh tokens when the object asks for them) and succeeds;
- ``secrets/every-operation``: a StorageClass naming a Secret for each operation with
  ``${pvc.name}``, ``${pvc.namespace}`` and ``${pv.name}`` templates; CreateVolume and
  DeleteVolume get the provisioner Secret's data, Controller(Un)PublishVolume the
  controller-publish one's (when the driver is attached), NodeStageVolume,
  NodePublishVolume, ControllerExpandVolume and NodeExpandVolume their own, each exactly
  (the calls the driver's capabilities allow);
- ``secrets/missing-secret``: a claim whose provisioner Secret does not exist yet is not
  provisioned (no CreateVolume; a ProvisioningFailed event naming the Secret) until it is
  created; a pod whose node-publish Secret does not exist is not published (no
  NodePublishVolume; a FailedMount event naming it) until it is created, then runs.

What the driver received is read on the CO side: the whole requests the cluster's CSI
clients sent (the trace's request observers), never the driver's own log, so the cases
hold for any driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets as random
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import jwt

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, parse_time
from kubelet_sim.apiserver.token_request import API_AUDIENCES, ISSUER
from kubelet_sim.conformance.csi_cases_driver_fields import policy_of
from kubelet_sim.conformance.csi_run import CsiRun, CtrlRpc, NodeRpc
from kubelet_sim.conformance.report import Skip
from kubelet_sim.kubelet.service_account_tokens import TOKENS_KEY
from kubelet_sim.utils.trace import TraceEvent

REPUBLISH_PERIOD = 0.5  # the kubelet's --sync-frequency during the republish case (seconds)
REPUBLISH_WAIT = 10.0  # how long the case waits for the second NodePublishVolume
RETRY_WAIT = 10.0  # how long a missing-secret case waits for the retry after the Secret

# family (the StorageClass key's infix) -> its Secret's name template, and the CSI calls
# that carry it
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "provisioner": ("${pvc.name}-provisioner",
                    ("Controller/CreateVolume", "Controller/DeleteVolume")),
    "controller-publish": ("${pv.name}-controller-publish",
                           ("Controller/ControllerPublishVolume",
                            "Controller/ControllerUnpublishVolume")),
    "node-stage": ("${pvc.name}-node-stage", ("Node/NodeStageVolume",)),
    "node-publish": ("${pv.name}-node-publish", ("Node/NodePublishVolume",)),
    "controller-expand": ("${pvc.name}-controller-expand", ("Controller/ControllerExpandVolume",)),
    "node-expand": ("${pv.name}-node-expand", ("Node/NodeExpandVolume",)),
}


# -- what the CO sent ------------------------------------------------------------------------

class SentSecrets:
    """The ``secrets`` of every CSI request the cluster sends while it is open (the
    trace's request observers: the CO's side of the call)."""

    def __init__(self) -> None:
        self.sent: list[tuple[TraceEvent, dict[str, str]]] = []

    def __call__(self, event: TraceEvent, request: object) -> None:
        secrets = getattr(request, "secrets", None)
        if isinstance(secrets, Mapping):
            self.sent.append((event, dict(secrets)))

    def of(self, call: str) -> list[tuple[TraceEvent, dict[str, str]]]:
        return [(e, s) for e, s in self.sent if e.call == f"csi.{call}"]


@contextlib.contextmanager
def observed(run: CsiRun) -> Iterator[SentSecrets]:
    seen = SentSecrets()
    run.cluster.trace.request_observers.append(seen)
    try:
        yield seen
    finally:
        run.cluster.trace.request_observers.remove(seen)


# -- shared ----------------------------------------------------------------------------------

def _csidriver(run: CsiRun) -> dict[str, Any]:
    if run.target.csidriver is None:
        raise Skip("no CSIDriver object given (--csidriver FILE)")
    return run.target.csidriver


def _secret_class(run: CsiRun, name: str, families: Mapping[str, str],
                  expansion: bool = False) -> str:
    """A class for the driver whose parameters name each family's Secret (``name`` templates
    given, namespace ``${pvc.namespace}``)."""
    parameters = dict(run.target.parameters)
    for family, template in families.items():
        parameters[f"csi.storage.k8s.io/{family}-secret-name"] = template
        parameters[f"csi.storage.k8s.io/{family}-secret-namespace"] = "${pvc.namespace}"
    binding = "WaitForFirstConsumer" if run.topology else "Immediate"
    run.api.create(builders.storage_class(name, run.driver, parameters=parameters,
                                          volume_binding_mode=binding,
                                          allow_volume_expansion=expansion))
    return name


def _resolve(template: str, claim: Resource) -> str:
    return (template.replace("${pvc.name}", claim.name)
            .replace("${pvc.namespace}", claim.namespace)
            .replace("${pv.name}", f"pvc-{claim.metadata.uid}"))


def _create_secret(run: CsiRun, ns: str, name: str, family: str) -> dict[str, str]:
    data = {"family": family, "value": random.token_hex(8)}
    run.api.create(builders.secret(name, ns, data))
    return data


async def _settle_until(run: CsiRun, done: Callable[[], bool], seconds: float) -> bool:
    """Settle the cluster again (a retry waits out its backoff) until ``done``."""
    deadline = time.monotonic() + seconds
    while True:
        await run.cluster.settle()
        if done() or time.monotonic() >= deadline:
            return done()
        await asyncio.sleep(0.2)


def _pod(run: CsiRun, ns: str, name: str, claim: str) -> Resource:
    pod = builders.pod(name, ns, volumes=[builders.pvc_volume("data", claim)])
    pod.spec["nodeSelector"] = {"kubernetes.io/hostname": run.nodes[0]}
    return run.api.create(pod)


def _publishes(run: CsiRun, pod: Resource, since: int) -> list[TraceEvent]:
    return [e for e in run.calls("csi.Node/NodePublishVolume", since)
            if pod.metadata.uid in str(e.request.get("target_path", ""))]


async def _clean_up(run: CsiRun, ns: str, pod: str, claim: str, sc: str) -> None:
    await run.delete("Pod", pod, ns)
    await run.delete("PersistentVolumeClaim", claim, ns)
    await run.delete("StorageClass", sc)


# -- tokens ----------------------------------------------------------------------------------

def check_tokens(volume_context: Mapping[str, str], token_requests: list[JSON],
                 pod: Resource, jwks: JSON) -> None:
    """NodePublishVolume's ``volume_context`` carries one token per requested audience,
    each signed by the API server (``jwks``) for that audience (the API server's own for
    an empty one), bound to ``pod`` and its ServiceAccount, and expiring as requested."""
    assert TOKENS_KEY in volume_context, \
        f"no {TOKENS_KEY} in NodePublishVolume's volume_context {sorted(volume_context)}"
    tokens = json.loads(volume_context[TOKENS_KEY])
    wanted = sorted(str(r.get("audience") or "") for r in token_requests)
    assert sorted(tokens) == wanted, f"tokens for audiences {sorted(tokens)}, not {wanted}"
    key = jwt.PyJWK(jwks["keys"][0])
    account = str(pod.spec.get("serviceAccountName") or "default")
    for request in token_requests:
        audience = str(request.get("audience") or "")
        entry = tokens[audience]
        try:
            claims = jwt.decode(entry["token"], key, algorithms=["RS256"],
                                audience=audience or API_AUDIENCES[0], issuer=ISSUER)
        except jwt.PyJWTError as err:
            raise AssertionError(f"the token for audience {audience!r} is not one the API "
                                 f"server issued for it: {err}") from None
        bound = claims.get("kubernetes.io") or {}
        assert bound.get("namespace") == pod.namespace and \
            bound.get("pod") == {"name": pod.name, "uid": pod.metadata.uid} and \
            (bound.get("serviceaccount") or {}).get("name") == account, \
            f"the token for audience {audience!r} binds {bound}, not pod {pod.name}"
        assert claims["sub"] == f"system:serviceaccount:{pod.namespace}:{account}", \
            f"the token's subject is {claims['sub']}"
        expires = parse_time(str(entry["expirationTimestamp"])).timestamp()
        assert int(expires) == claims["exp"], \
            f"expirationTimestamp {entry['expirationTimestamp']} is not the token's exp"
        if request.get("expirationSeconds") is not None:
            assert claims["exp"] - claims["iat"] == int(request["expirationSeconds"]), \
                f"the token lives {claims['exp'] - claims['iat']} s, not " \
                f"{request['expirationSeconds']}"


def _jwks(run: CsiRun) -> JSON:
    signer = run.api.token_signer
    assert signer is not None, "the API server issues no tokens"
    return signer.jwks()


async def token_requests(run: CsiRun, ns: str) -> None:
    requests = _csidriver(run).get("tokenRequests")
    if not requests:
        raise Skip("the CSIDriver object does not set tokenRequests")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "tokens", sc)
    mark = len(run.cluster.trace.events)
    _pod(run, ns, "holder", "tokens")
    await run.cluster.settle()
    pod = run.must_run(ns, "holder")
    publishes = _publishes(run, pod, mark)
    assert publishes, "no NodePublishVolume for the pod"
    check_tokens(publishes[-1].request.get("volume_context") or {}, list(requests), pod,
                 _jwks(run))
    await _clean_up(run, ns, "holder", "tokens", sc)


async def requires_republish(run: CsiRun, ns: str) -> None:
    spec = _csidriver(run)
    if spec.get("requiresRepublish") is not True:
        raise Skip("the CSIDriver object does not set requiresRepublish: true")
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "republished", sc)
    mark = len(run.cluster.trace.events)
    _pod(run, ns, "holder", "republished")
    await run.cluster.settle()
    pod = run.must_run(ns, "holder")
    kubelet = run.cluster.kubelets[run.nodes[0]]
    period, kubelet.republish.period = kubelet.republish.period, REPUBLISH_PERIOD
    try:
        again = await _settle_until(run, lambda: len(_publishes(run, pod, mark)) >= 2,
                                    REPUBLISH_WAIT)
    finally:
        kubelet.republish.period = period
    publishes = _publishes(run, pod, mark)
    assert again, f"NodePublishVolume was called {len(publishes)} time(s) in " \
        f"{REPUBLISH_WAIT:.0f} s of syncs every {REPUBLISH_PERIOD} s"
    first, second = publishes[0], publishes[1]
    assert second.request["target_path"] == first.request["target_path"], \
        "the republish went to another target path"
    assert second.result == "OK", f"the republish answered {second.result}"
    if spec.get("tokenRequests"):
        check_tokens(second.request.get("volume_context") or {},
                     list(spec["tokenRequests"]), pod, _jwks(run))
    await _clean_up(run, ns, "holder", "republished", sc)


# -- secrets ---------------------------------------------------------------------------------

def _expected_calls(run: CsiRun) -> dict[str, tuple[str, ...]]:
    """The families whose calls the driver's capabilities (and its CSIDriver) lead to."""
    families = dict(FAMILIES)
    if CtrlRpc.PUBLISH_UNPUBLISH_VOLUME not in run.controller_rpcs \
            or not policy_of(run).attach_required:
        del families["controller-publish"]
    if NodeRpc.STAGE_UNSTAGE_VOLUME not in run.node_rpcs:
        del families["node-stage"]
    if CtrlRpc.EXPAND_VOLUME not in run.controller_rpcs:
        del families["controller-expand"]
    if CtrlRpc.EXPAND_VOLUME not in run.controller_rpcs \
            or NodeRpc.EXPAND_VOLUME not in run.node_rpcs:
        del families["node-expand"]
    return {family: calls for family, (_, calls) in families.items()}


async def every_operation(run: CsiRun, ns: str) -> None:
    _csidriver(run)
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    expected = _expected_calls(run)
    expansion = "controller-expand" in expected
    sc = _secret_class(run, f"{ns}-sc", {f: t for f, (t, _) in FAMILIES.items()}, expansion)
    with observed(run) as seen:
        run.claim(ns, "secured", sc)
        claim = run.api.get("PersistentVolumeClaim", "secured", ns)
        data = {family: _create_secret(run, ns, _resolve(template, claim), family)
                for family, (template, _) in FAMILIES.items()}
        _pod(run, ns, "user", "secured")
        await run.cluster.settle()
        run.must_run(ns, "user")
        if expansion:
            claim = run.api.get("PersistentVolumeClaim", "secured", ns)
            claim.spec["resources"]["requests"]["storage"] = "2Gi"
            run.api.update(claim)
            await run.cluster.settle()
            grown = run.api.get("PersistentVolumeClaim", "secured", ns)
            assert grown.status.get("capacity", {}).get("storage") == "2Gi", \
                f"claim capacity {grown.status.get('capacity')} " \
                f"(conditions {grown.status.get('conditions')})"
        await _clean_up(run, ns, "user", "secured", sc)
    for family, calls in expected.items():
        secret = _resolve(FAMILIES[family][0], claim)
        for call in calls:
            sent = seen.of(call)
            assert sent, f"{call} was not called"
            for event, got in sent:
                assert got == data[family], (
                    f"{call} received secrets {sorted(got)} "
                    f"{'(its values differ) ' if sorted(got) == sorted(data[family]) else ''}"
                    f"instead of the data of Secret {ns}/{secret} ({family})")
                assert event.result == "OK", f"{call} answered {event.result}"


def _events_naming(run: CsiRun, kind: str, name: str, ns: str, reason: str,
                   secret: str) -> list[str]:
    return [e for e in run.events(kind, name, ns)
            if e.startswith(f"{reason}: ") and f'"{secret}" not found' in e]


async def missing_secret(run: CsiRun, ns: str) -> None:
    _csidriver(run)
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    sc = _secret_class(run, f"{ns}-sc", {"provisioner": FAMILIES["provisioner"][0],
                                         "node-publish": FAMILIES["node-publish"][0]})
    with observed(run) as seen:
        run.claim(ns, "late", sc)
        claim = run.api.get("PersistentVolumeClaim", "late", ns)
        provisioner, publisher = (_resolve(FAMILIES[f][0], claim)
                                  for f in ("provisioner", "node-publish"))
        _pod(run, ns, "waiting", "late")
        await run.cluster.settle()
        # the sidecar: no CreateVolume without its Secret, an event, a retry once it exists
        assert not seen.of("Controller/CreateVolume"), \
            "CreateVolume was called while its Secret was missing"
        claim = run.api.get("PersistentVolumeClaim", "late", ns)
        assert claim.status.get("phase") == "Pending", f"the claim is {claim.status.get('phase')}"
        events = run.events("PersistentVolumeClaim", "late", ns)
        assert _events_naming(run, "PersistentVolumeClaim", "late", ns, "ProvisioningFailed",
                              provisioner), f"no ProvisioningFailed event naming Secret " \
            f"{provisioner} among the claim's events {events}"
        provisioned = _create_secret(run, ns, provisioner, "provisioner")
        bound = await _settle_until(run, lambda: run.api.get(
            "PersistentVolumeClaim", "late", ns).status.get("phase") == "Bound", RETRY_WAIT)
        assert bound, "the claim was not provisioned once its Secret existed"
        assert [s for _, s in seen.of("Controller/CreateVolume")] == [provisioned], \
            "CreateVolume did not get the Secret created late"
        # the kubelet: no NodePublishVolume without its Secret, an event, then the pod runs
        pod = run.api.get("Pod", "waiting", ns)
        await _settle_until(run, lambda: bool(_events_naming(
            run, "Pod", "waiting", ns, "FailedMount", publisher)), RETRY_WAIT)
        assert run.api.get("Pod", "waiting", ns).status.get("phase") != "Running", \
            "the pod runs without its Secret"
        assert not _publishes(run, pod, 0), \
            "NodePublishVolume was called while its Secret was missing"
        events = run.events("Pod", "waiting", ns)
        assert _events_naming(run, "Pod", "waiting", ns, "FailedMount", publisher), \
            f"no FailedMount event naming Secret {publisher} among the pod's events {events}"
        published = _create_secret(run, ns, publisher, "node-publish")
        await _settle_until(run, lambda: run.api.get("Pod", "waiting", ns).status.get(
            "phase") == "Running", RETRY_WAIT)
        run.must_run(ns, "waiting")
        sent = [s for e, s in seen.of("Node/NodePublishVolume")
                if pod.metadata.uid in str(e.request.get("target_path", ""))]
        assert sent == [published], "NodePublishVolume did not get the Secret created late"
        await _clean_up(run, ns, "waiting", "late", sc)


CASES: list[tuple[str, Callable[[CsiRun, str], Awaitable[None]]]] = [
    ("csidriver/token-requests", token_requests),
    ("csidriver/requires-republish", requires_republish),
    ("secrets/every-operation", every_operation),
    ("secrets/missing-secret", missing_secret),
]
