"""The kubelet of one simulated node: plugin registration, volumes, sandboxes, status.

Order is the real kubelet's. Start of a pod: its volumes are attached (the attach/detach
controller's VolumeAttachment reports attached) and mounted — NodeStage once per node,
NodePublish per pod — before the sandbox is created and CNI ADD runs; then the pod is
Running with its IP. Delete: the sandbox stops (CNI DEL), then NodeUnpublish, then
NodeUnstage when no other pod on the node uses the volume, then the volume leaves
``node.status.volumesInUse`` so the attach/detach controller may detach it, and the pod
object is removed (grace period 0, as the kubelet's final delete).

The node's ``Ready`` condition follows the runtime's NetworkReady (CNI STATUS and the
presence of a network config); while it is false no pod sandbox is started.

Why a pod waits is written to its ``Ready`` condition and recorded as a Warning event on
the pod, with the kubelet's event reasons: ``FailedMount`` (a volume not yet attached or
bound, a failed NodeStage/NodePublish), ``NetworkNotReady``, ``FailedCreatePodSandBox``
(the CNI error). A new event is recorded only when the reason changes. A failed sandbox
is retried after a per-pod exponential backoff (500 ms doubling), as the kubelet's pod
workers back off a failed sync, not on every pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubelet_sim.api.errors import Conflict, NotFound
from kubelet_sim.api.model import Resource, format_time, parse_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.events import NORMAL, WARNING, EventRecorder
from kubelet_sim.client.in_process import as_client, server_or_client
from kubelet_sim.client.indexes import POD_NODE, add_indexes
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.client.secrets import ApiSecrets
from kubelet_sim.client.shared_cache import shared_cache
from kubelet_sim.csi.client import CsiClient, CsiError
from kubelet_sim.csi.volume_spec import CsiVolume, SecretLookup
from kubelet_sim.kubelet.active_deadline import (
    DEADLINE_EXCEEDED,
    DEADLINE_MESSAGE,
    fail_past_deadline,
    past_deadline,
)
from kubelet_sim.kubelet.container_config import config_errors, referenced
from kubelet_sim.kubelet.container_events import (
    ContainerEvent,
    config_error_events,
    containers_killed,
    containers_started,
    record_events,
)
from kubelet_sim.kubelet.container_exit import exit_due_containers
from kubelet_sim.kubelet.crash_loop_backoff import CrashLoopBackOff
from kubelet_sim.kubelet.csi_node_updater import CsiNodeUpdater
from kubelet_sim.kubelet.empty_dir_eviction import EmptyDirEviction
from kubelet_sim.kubelet.image_change import restart_changed
from kubelet_sim.kubelet.init_containers import InitStep, run_init_step
from kubelet_sim.kubelet.local_volumes import LocalVolumes, remove_orphaned_pod_dirs
from kubelet_sim.kubelet.node_expansion import finish_expansions
from kubelet_sim.kubelet.node_lease import LEASE_DURATION_SECONDS
from kubelet_sim.kubelet.node_registration import forget_registration, record_registration
from kubelet_sim.kubelet.node_self_registration import register_node
from kubelet_sim.kubelet.node_status import (
    node_event_message,
    node_status_writer,
    status_is_current,
)
from kubelet_sim.kubelet.observed_generation import observe, stale
from kubelet_sim.kubelet.partial_start import write_started
from kubelet_sim.kubelet.paths import KubeletPaths, remove_pod_dir
from kubelet_sim.kubelet.plugin_watcher import CsiNodeRegistration, PluginWatcher
from kubelet_sim.kubelet.pod_recovery import recover
from kubelet_sim.kubelet.pod_status import write_waiting
from kubelet_sim.kubelet.pod_termination import terminate_deleted_pod
from kubelet_sim.kubelet.pod_volumes import pod_info, resolve, unique_volume_name
from kubelet_sim.kubelet.pod_workers import DEFAULT_PARALLEL_PODS, PodWorkers
from kubelet_sim.kubelet.probe_events import ProbeEvents
from kubelet_sim.kubelet.probe_kills import kill_failed_containers
from kubelet_sim.kubelet.readiness import refresh_readiness
from kubelet_sim.kubelet.sandbox_config import sandbox_config
from kubelet_sim.kubelet.service_account_tokens import (
    RepublishSchedule,
    TokenManager,
    requires_republish,
    token_attributes,
)
from kubelet_sim.kubelet.sync_loop import run_loop
from kubelet_sim.kubelet.sync_triggers import RESYNC, RETRY, SETTLE
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.runtime.containerd import (
    ContainerRuntime,
    NetworkCondition,
    SandboxError,
)
from kubelet_sim.utils.clock import Clock, ExponentialBackoff, RealClock
from kubelet_sim.utils.trace import Trace

log = logging.getLogger(__name__)

SYNC_FREQUENCY_SECONDS = 60.0  # the kubelet's --sync-frequency: a running pod's resync

# what the kubelet reads from the informer cache besides pods and its Node: its pods'
# ConfigMaps and Secrets, CSIDrivers, claims, volumes and attachments
CACHED_KINDS = ("ConfigMap", "Secret", "CSIDriver", "PersistentVolumeClaim",
                "PersistentVolume", "VolumeAttachment")

ClientFactory = Any  # Callable[[str], CsiClient]; kept loose to accept the watcher's type


@dataclass
class PodRecord:
    """What this kubelet set up for one pod (kept in memory, like the kubelet's caches)."""

    sandbox_id: str = ""
    volumes: list[CsiVolume] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)
    pod: Resource | None = None  # the pod as last seen: what a teardown needs once it is gone
    containers_created: bool = False  # past CreateContainerConfigError: Created/Started
    started: set[str] = field(default_factory=set)  # containers created while others wait


class Kubelet:
    def __init__(
        self,
        *,
        api: APIServer | KubeClient,
        node_name: str,
        root_dir: Path,
        runtime: ContainerRuntime,
        trace: Trace,
        client_factory: ClientFactory | None = None,
        clock: Clock | None = None,
        runtime_status_period: float = 5.0,
        recorder: EventRecorder | None = None,
        secrets: SecretLookup | None = None,  # where Secrets are read: the API server's
        lease_duration_seconds: int = LEASE_DURATION_SECONDS,  # nodeLeaseDurationSeconds
        parallel_pods: int = DEFAULT_PARALLEL_PODS,  # pod workers syncing at once
        sync_frequency: float = SYNC_FREQUENCY_SECONDS,  # --sync-frequency: running pods
        # the Node it registers at start (podCIDR, addresses); None: made by whoever runs it
        register_node: Resource | None = None,
    ) -> None:
        # every call to the API server goes through this client: the in-process server
        # wrapped, or a client over HTTPS to an API server in another process
        self.client: KubeClient = as_client(api)
        self._node_to_register = register_node
        # the pods bound here, read (never modified) from the shared informer cache
        self.cache = add_indexes(shared_cache(feed_source(self.client)))
        self.parallel_pods = parallel_pods
        self.lease_duration_seconds = lease_duration_seconds
        # told (creation, now) when a pod's containers run: the pod start SLI
        self.on_pod_started: Callable[[datetime, datetime], None] | None = None
        # the pods this kubelet set Running, by what triggered the sync that did it
        # (sync_triggers: their own event, a periodic pass, ...)
        self.pod_starts: Counter[str] = Counter()
        self.recorder = recorder or EventRecorder(server_or_client(api))
        self._announced = False  # the Starting event recorded (once per process)
        self.node_name = node_name
        self.paths = KubeletPaths(root_dir)
        self.runtime = runtime
        self.trace = trace
        self.clock: Clock = clock or RealClock()
        self.watcher = PluginWatcher(
            registry_dir=self.paths.plugins_registry_dir,
            node_name=node_name,
            trace=trace,
            on_register=self._on_register,
            on_deregister=self._on_deregister,
            client_factory=client_factory,
            clock=self.clock,
        )
        self.csi_node_updater = CsiNodeUpdater(client=self.client, node_name=node_name,
                                               clock=self.clock,
                                               drivers=lambda: self.watcher.drivers)
        # the pods' ServiceAccount tokens for drivers that ask for them (tokenRequests),
        # and when running pods are synced again (volumes of requiresRepublish drivers)
        self.tokens = TokenManager(self.client, self.clock)
        self.republish = RepublishSchedule(self.clock, sync_frequency)
        self.volumes = VolumeManager(
            node_name=node_name, paths=self.paths, client_for=self.watcher.client_for,
            clock=self.clock, secrets=secrets or ApiSecrets(self.client),
            publish_attributes=lambda pod, volume: token_attributes(
                self.client, self.tokens, volume.driver, pod),
        )
        # emptyDir, configMap, secret, downwardAPI, projected and hostPath volumes
        self.local_volumes = LocalVolumes(self.client, self.paths, node_name,
                                          root_dir.parent / "rootfs", self.clock, self.tokens)
        self.empty_dir_eviction = EmptyDirEviction(self.client, self.recorder, node_name,
                                                   self.local_volumes, self.clock)
        self.pods: dict[str, PodRecord] = {}
        self.waiting: dict[str, str] = {}  # pod uid -> why it is not running yet
        self.sandbox_backoff = ExponentialBackoff(self.clock)
        # the back-off of restarting failed containers (CrashLoopBackOff)
        self.crash_backoff = CrashLoopBackOff()
        self.probe_events = ProbeEvents(self.recorder, node_name)  # Unhealthy, once each
        # (kind, namespace, name) of a missing ConfigMap or Secret -> the uids of the pods
        # whose containers wait for it (CreateContainerConfigError); values are replaced,
        # never changed in place (read from the committing thread, config_news.py)
        self.config_waits: dict[tuple[str, str, str], frozenset[str]] = {}
        self._sandbox_failed: set[str] = set()  # pod uids backing off a failed sandbox
        self.network_ready = False
        # The kubelet asks the runtime for its status (CNI STATUS) every few seconds,
        # not on every pass.
        self.runtime_status_period = runtime_status_period
        self._status_checked_at: float | None = None
        self._network_condition: NetworkCondition | None = None
        self._status_asking = asyncio.Lock()  # one CNI STATUS exec at a time
        # set while the run loop's own task asks every period (runtime_status.py): a
        # pass or a pod's sync then reads the last answer and never waits for an exec
        self.runtime_status_in_background = False
        self._host_ip = ""  # the node's InternalIP, as last read from its Node
        self._node_missing_logged_at = -math.inf

    # -- start-up --------------------------------------------------------------------------

    async def start(self) -> None:
        """What the kubelet does once at start: dirs, the pods it ran before a restart
        (their sandboxes and volumes), runtime GC, first status."""
        for d in (self.paths.plugins_registry_dir, self.paths.pods_dir):
            d.mkdir(parents=True, exist_ok=True)
        if self._node_to_register is not None:  # registerWithAPIServer
            await register_node(self.client, self._node_to_register)
        await self._wait_for_cache()
        found = await recover(self.client, self.runtime, self.volumes, self.node_name)
        for pod in found.pods:
            self.pods[pod.uid] = PodRecord(pod.sandbox_id, list(pod.volumes), list(pod.ips))
        bound = {p.metadata.uid for p in self.cache.by_index("Pod", POD_NODE, self.node_name)}
        remove_orphaned_pod_dirs(self.paths, bound)  # pods gone while the kubelet was down
        for sandbox_id in found.orphaned_sandboxes:  # their pods were deleted meanwhile
            with contextlib.suppress(Exception):  # GC below retries the network part
                await asyncio.to_thread(self.runtime.remove_pod_sandbox, sandbox_id)
        await asyncio.to_thread(self._runtime_gc)
        announce = not self._announced  # `up` starts a started kubelet's loops again
        self._announced = True
        if announce:
            self._node_events(["Starting"])
        await self.sync_node_status()
        if announce:
            self._node_events(["NodeAllocatableEnforced"])

    async def _wait_for_cache(self) -> None:
        """client-go's WaitForCacheSync: over a client to another process the pods and
        nodes reach the cache by list and watch, so start-up waits for the first lists
        before it acts on what the cache says (the pod dirs of pods not bound here are
        removed); in-process the cache is filled inside the first read."""
        self.cache.by_index("Pod", POD_NODE, self.node_name)
        self.cache.get("Node", self.node_name)
        feed = feed_source(self.client)
        if isinstance(feed, ClientFeed):
            for kind in CACHED_KINDS:  # listed now, not at a pod's first look
                self.cache.list(kind)
            await feed.wait_synced()

    def _runtime_gc(self) -> None:
        with contextlib.suppress(Exception):  # a broken network config must not stop start-up
            self.runtime.garbage_collect()

    # -- plugin registration ---------------------------------------------------------------

    async def _on_register(self, reg: CsiNodeRegistration) -> None:
        await record_registration(self.client, self.node_name, reg)

    async def _on_deregister(self, driver: str) -> None:
        try:
            await forget_registration(self.client, self.node_name, driver)
        except Conflict as err:  # the driver is gone either way; a new registration rewrites
            log.warning("cleanup after deregistering %s failed: %s", driver, err)

    def client_for(self, driver: str) -> CsiClient:
        return self.watcher.client_for(driver)

    # -- the sync loop ---------------------------------------------------------------------

    async def sync_once(self, workers: PodWorkers | None = None,
                        only: set[str] | None = None,
                        triggers: Mapping[str, str] | None = None) -> bool:
        """One pass: registration, node status, every pod bound to this node (or those
        of them whose uid is in ``only``). Without ``workers`` the pods are synced one
        after another and the pass waits for them (settle: the same order every time);
        with them, each pod that needs work gets a worker of its own, and the pass
        returns at once. ``triggers`` names why a pod is synced (sync_triggers: its own
        event, ...); a pod it does not name is synced by this periodic pass."""
        changed = False
        before = set(self.watcher.drivers)
        await self.watcher.scan()
        changed |= set(self.watcher.drivers) != before
        changed |= await self.csi_node_updater.sync()
        changed |= await self.sync_node_status()
        pods = self.cache.by_index("Pod", POD_NODE, self.node_name)
        for pod in pods:
            record = self.pods.get(pod.metadata.uid)
            if record is not None:
                record.pod = pod
            if only is not None and pod.metadata.uid not in only:
                continue
            why = (triggers or {}).get(pod.metadata.uid)
            if workers is not None and workers.busy(pod.metadata.uid):
                if why is not None:  # its news is kept for when the worker is done
                    workers.sync_again(pod.metadata.uid, why)
                continue  # its worker is still at it
            if why is None:
                why = SETTLE if workers is None else RESYNC if only is None else RETRY
            if pod.is_terminating:
                sync = functools.partial(self._kill_pod, pod)
            elif pod.metadata.uid in self.pods and past_deadline(pod, self.clock.now()):
                sync = functools.partial(self._fail_past_deadline, pod)
            elif pod.status.get("phase") in (None, "", "Pending"):
                sync = functools.partial(self._start_pod, pod, why)
            elif pod.status.get("phase") in ("Succeeded", "Failed"):
                record = self.pods.get(pod.metadata.uid)
                if record is None or not (record.sandbox_id or record.volumes):
                    continue
                sync = functools.partial(self._stop_finished_pod, pod)
            else:
                await self._refresh_local_volumes(pod)  # a ConfigMap, Secret or token changed
                changed |= await self._follow_spec(pod)
                if pod.metadata.uid not in self.pods or \
                        not self.republish.due(pod.metadata.uid):
                    continue
                sync = functools.partial(self._republish, pod)
            if workers is None:
                changed |= await sync()
            else:
                workers.dispatch(pod.metadata.uid, sync)
        if only is None:
            changed |= await self._clean_up_vanished(pods, workers)
            changed |= await self.empty_dir_eviction.check(pods)  # emptyDir sizeLimit
            changed |= await finish_expansions(self.client, self.volumes, self.pods, pods,
                                               self.recorder, self.node_name)
        return changed

    async def _clean_up_vanished(self, pods: list[Resource], workers: PodWorkers | None) -> bool:
        """Tear down the pods this kubelet ran that are no longer bound here in the API
        (force-deleted, or removed by the pod garbage collector): the kubelet's
        HandlePodCleanups kills such pods (sandbox, CNI DEL, volumes) as if deleted."""
        present = {p.metadata.uid for p in pods}
        changed = False
        for uid, record in list(self.pods.items()):
            if uid in present or record.pod is None:
                continue
            if workers is not None:
                if not workers.busy(uid):
                    workers.dispatch(uid, functools.partial(self._kill_pod, record.pod))
            else:
                changed |= await self._kill_pod(record.pod)
        return changed

    async def run(self, stop: asyncio.Event, period: float = 0.2,
                  resync: float = 1.0) -> None:
        """The kubelet's loops until ``stop`` (see :func:`sync_loop.run_loop`)."""
        await run_loop(self, stop, period, resync)

    # -- node status -----------------------------------------------------------------------

    def _node_events(self, reasons: list[str]) -> None:
        """The kubelet's events about its Node (``kubectl describe node``)."""
        for reason in reasons:
            self.recorder.record("Node", "", self.node_name, NORMAL, reason,
                                 node_event_message(self.node_name, reason), "kubelet",
                                 host=self.node_name)


    async def _runtime_network_status(self) -> NetworkCondition:
        """The runtime's network status as last asked; asked now when it is due and no
        task of the run loop asks in the background (settle)."""
        condition = self._network_condition
        if condition is not None and (
                (self.runtime_status_in_background and self.runtime_status_period > 0)
                or not self._runtime_status_due()):
            return condition
        return await self.check_runtime_status()

    def _runtime_status_due(self) -> bool:
        return (self._status_checked_at is None or self.clock.monotonic()
                - self._status_checked_at >= self.runtime_status_period)

    async def check_runtime_status(self, force: bool = False) -> NetworkCondition:
        """Ask the runtime (CNI STATUS) unless an answer came meanwhile that is not due
        yet (``force``: ask anyway): one ask at a time, a second caller waits for the
        first one's answer instead of starting an exec of its own."""
        async with self._status_asking:
            if force or self._network_condition is None or self._runtime_status_due():
                now = self.clock.monotonic()
                self._network_condition = await asyncio.to_thread(self.runtime.network_status)
                self._status_checked_at = now
            return self._network_condition

    async def sync_node_status(self) -> bool:
        network = await self._runtime_network_status()
        self.network_ready = network.ready
        in_use = sorted({
            unique_volume_name(v.driver, v.volume_handle)
            for rec in self.pods.values() for v in rec.volumes if not v.ephemeral
        })
        cached = self.cache.get("Node", self.node_name)
        if cached is not None and status_is_current(cached, network, in_use):
            return False  # nothing to say: no read of the Node, no write
        write = node_status_writer(self.client, self.node_name, network, in_use,
                                   format_time(self.clock.now()), self._node_events)
        try:
            return await retry_on_conflict_async(write)
        except Conflict as err:  # as tryUpdateNodeStatus: give up now, try on the next pass
            log.warning("node %s status update failed: %s", self.node_name, err)
            return True
        except NotFound as err:
            # Its Node was deleted: like the kubelet (which registers once) it keeps
            # running its pods and says why the status is not written, at most once a
            # minute; the pod garbage collector removes the pods of a missing node.
            now = self.clock.monotonic()
            if now - self._node_missing_logged_at >= 60.0:
                self._node_missing_logged_at = now
                log.error("Unable to update node status: error getting node %r: %s",
                          self.node_name, err)
            return False

    # -- pod start -------------------------------------------------------------------------

    async def _start_pod(self, pod: Resource, why: str = SETTLE) -> bool:
        uid = pod.metadata.uid
        record = self.pods.setdefault(uid, PodRecord())
        record.pod = pod
        resolved = await resolve(self.client, pod, self.node_name)
        if resolved.waiting:
            await self.csi_node_updater.verify_exhausted(pod)
            return await self._wait(pod, "FailedMount", "Unable to attach or mount volumes: "
                              + "; ".join(resolved.waiting))
        info = pod_info(pod)
        # Report the volumes in use before mounting, so they are not detached under us.
        record.volumes = resolved.volumes
        await self.sync_node_status()
        for volume in resolved.volumes:
            try:
                await self.volumes.mount(info, volume, failed=lambda message: self.recorder.record(
                    "Pod", pod.namespace, pod.name, WARNING, "FailedMount", message, "kubelet",
                    host=self.node_name))
            except (CsiError, Exception) as err:  # FailedMount: retried on the next pass
                return await self._wait(
                    pod, "FailedMount",
                    f"MountVolume.SetUp failed for volume {volume.spec_name!r}: {err}")
        failures = await self.local_volumes.set_up(pod)
        if failures:  # FailedMount: retried on the next pass
            return await self._wait(pod, "FailedMount", failures[0])
        if not self.network_ready:
            cond = self._network_condition or NetworkCondition(ready=False)
            return await self._wait(pod, "NetworkNotReady",
                              "network is not ready: container runtime network not ready: "
                              f"NetworkReady=false reason:{cond.reason} message:{cond.message}")
        if not record.sandbox_id:
            if not self.sandbox_backoff.ready(uid):
                return False
            try:
                sandbox = await asyncio.to_thread(self.runtime.run_pod_sandbox, sandbox_config(pod))
            except SandboxError as err:
                self.sandbox_backoff.failed(uid)
                self._sandbox_failed.add(uid)
                return await self._wait(pod, "FailedCreatePodSandBox",
                                  f"Failed to create pod sandbox: {err}")
            self._forget_sandbox_failures(uid)
            record.sandbox_id, record.ips = sandbox.id, list(sandbox.ips)
        if not record.containers_created:
            if pod.spec.get("initContainers"):  # they run first, one at a time
                step = await self._run_init(pod, record)
                if not step.done:
                    self.waiting.pop(uid, None)
                    return step.changed
            if self._config_missing(pod):
                return await self._wait_for_config(pod, record)
            record.containers_created = True
            containers_started(self.recorder, pod, self.node_name, skip=record.started)
        self._stop_waiting_for_config(uid)
        self.waiting.pop(uid, None)
        self.republish.synced(uid)
        try:
            await self._set_running(pod, record)
        except (Conflict, NotFound) as err:  # still Pending (or gone): the next pass sees
            log.warning("status of pod %s not written: %s", pod.name, err)
        else:
            self.pod_starts[why] += 1
        return True

    async def _republish(self, pod: Resource) -> bool:
        """A running pod's periodic sync: its volumes whose CSIDriver has
        ``requiresRepublish`` get NodePublishVolume again (fresh tokens); a failure is a
        FailedMount event and the next sync tries again."""
        uid = pod.metadata.uid
        self.republish.synced(uid)
        record = self.pods.get(uid)
        info = pod_info(pod)
        for volume in list(record.volumes if record else []):
            if not await requires_republish(self.client, volume.driver):
                continue
            try:
                await self.volumes.republish(info, volume, failed=lambda message: (
                    self.recorder.record("Pod", pod.namespace, pod.name, WARNING,
                                         "FailedMount", message, "kubelet",
                                         host=self.node_name)))
            except Exception as err:  # reported above; the next sync retries
                log.info("republish of %s for pod %s failed: %s", volume.spec_name,
                         pod.name, err)
        return False

    async def _refresh_local_volumes(self, pod: Resource) -> None:
        """A running pod's configMap, secret, downwardAPI and projected files written
        again when an object they come from changed, a token is due for refresh or its
        labels changed (small local writes: done in the pass, not by a pod worker)."""
        if pod.metadata.uid not in self.pods or not self.local_volumes.stale(pod):
            return
        for message in await self.local_volumes.set_up(pod):
            self.recorder.record("Pod", pod.namespace, pod.name, WARNING, "FailedMount",
                                 message, "kubelet", host=self.node_name)

    @property
    def backing_off(self) -> frozenset[str]:
        """The uids of pods waiting out the backoff after a failed sandbox."""
        return frozenset(self._sandbox_failed)

    @property
    def retries_pending(self) -> bool:
        """True while a pod waits out the backoff after a failed sandbox."""
        return bool(self._sandbox_failed)

    def retry_due(self) -> bool:
        return any(self.sandbox_backoff.ready(uid) for uid in self._sandbox_failed)

    def _forget_sandbox_failures(self, uid: str) -> None:
        self.sandbox_backoff.succeeded(uid)
        self._sandbox_failed.discard(uid)

    async def _wait(self, pod: Resource, reason: str, message: str) -> bool:
        """The pod stays Pending (ContainerCreating) for ``reason`` (an event reason)."""
        uid = pod.metadata.uid
        if self.waiting.get(uid) == message:
            return False
        self.waiting[uid] = message
        self.recorder.record("Pod", pod.namespace, pod.name, WARNING, reason, message,
                             "kubelet", host=self.node_name)

        async def write() -> None:
            current = await self.client.get("Pod", pod.name, pod.namespace)
            write_waiting(current, reason=reason, message=message, now=self._now())
            observe(current)
            await self.client.update_status(current)
        try:
            await retry_on_conflict_async(write)
        except NotFound:
            pass
        except Conflict as err:  # the status manager writes it again on the next pass
            log.warning("status of pod %s not written: %s", pod.name, err)
            self.waiting.pop(uid, None)
        return True

    def _config_missing(self, pod: Resource) -> dict[str, str]:
        """The containers' CreateContainerConfigError messages (container_config.py),
        read from the informer cache as the kubelet's watch-based managers do."""
        def lookup(kind: str, namespace: str, name: str) -> Resource | None:
            return self.cache.get(kind, name, namespace)
        return config_errors(pod, lookup)

    async def _wait_for_config(self, pod: Resource, record: PodRecord) -> bool:
        """The pod's sandbox runs but a container's ConfigMap or Secret is missing: the
        other containers start, that one waits (CreateContainerConfigError, a ``Failed``
        event) until the object appears (config_news.py wakes the pod then;
        partial_start.py)."""
        uid = pod.metadata.uid
        errors = self._config_missing(pod)
        record.started |= containers_started(self.recorder, pod, self.node_name,
                                             skip=record.started | set(errors))
        for key in referenced(pod):
            self.config_waits[key] = self.config_waits.get(key, frozenset()) | {uid}
        message = "; ".join(f"{c}: {m}" for c, m in sorted(errors.items()))
        if self.waiting.get(uid) == message:
            return False
        self.waiting[uid] = message
        record_events(self.recorder, pod, self.node_name, [
            e for c, m in errors.items() for e in config_error_events(pod, c, m)])
        now = self._now()
        host_ip = await self._node_ip()

        async def write() -> None:
            current = await self.client.get("Pod", pod.name, pod.namespace)
            write_started(current, errors=errors, sandbox_id=record.sandbox_id,
                          host_ip=host_ip, ips=record.ips, now=now)
            observe(current)
            await self.client.update_status(current)
        try:
            await retry_on_conflict_async(write)
        except NotFound:
            pass
        except Conflict as err:  # written again on the next pass
            log.warning("status of pod %s not written: %s", pod.name, err)
            self.waiting.pop(uid, None)
        return True

    def _stop_waiting_for_config(self, uid: str) -> None:
        for key, uids in list(self.config_waits.items()):
            if uid in uids:
                rest = uids - {uid}
                if rest:
                    self.config_waits[key] = rest
                else:
                    self.config_waits.pop(key, None)

    async def _node_ip(self) -> str:
        """The node's InternalIP (the one it had, when its Node was deleted)."""
        node = self.cache.get("Node", self.node_name)  # the kubelet's node lister
        if node is not None:
            self._host_ip = next((a["address"] for a in node.status.get("addresses", [])
                                  if a.get("type") == "InternalIP"), "")
        return self._host_ip

    async def _run_init(self, pod: Resource, record: PodRecord) -> InitStep:
        """The pod's init containers one step on (init_containers.py); its events
        recorded, and the pod woken when a ConfigMap or Secret it waits for appears."""
        try:
            step = await run_init_step(
                self.client, pod, sandbox_id=record.sandbox_id, host_ip=await self._node_ip(),
                ips=record.ips, now=self.clock.now(), backoff=self.crash_backoff,
                lookup=lambda kind, ns, name: self.cache.get(kind, name, ns))
        except Conflict as err:  # the next pass tries again
            log.warning("status of pod %s not written: %s", pod.name, err)
            return InitStep()
        if step.config_wait:  # config_news.py wakes the pod when the object appears
            for key in referenced(pod):
                self.config_waits[key] = self.config_waits.get(key, frozenset()) | \
                    {pod.metadata.uid}
        record_events(self.recorder, pod, self.node_name, step.events)
        return step

    async def _set_running(self, pod: Resource, record: PodRecord) -> None:
        host_ip = await self._node_ip()
        now = self._now()

        async def write() -> None:
            current = await self.client.get("Pod", pod.name, pod.namespace)
            write_started(current, errors={}, sandbox_id=record.sandbox_id, host_ip=host_ip,
                          ips=record.ips, now=now)
            refresh_readiness(current, self.clock.now())
            observe(current)
            await self.client.update_status(current)
        await retry_on_conflict_async(write)
        if self.on_pod_started is not None and pod.metadata.creation_timestamp:
            self.on_pod_started(parse_time(pod.metadata.creation_timestamp), self.clock.now())

    async def _follow_spec(self, pod: Resource) -> bool:
        """A running pod this kubelet runs follows its spec: changed images restart
        their containers (image_change.py), due exits and restarts happen
        (container_exit.py), and readiness is what its containers and readiness gates
        say (readiness.py) — which also makes a pod the node lifecycle controller marked
        not ready while this node was unreachable ready again."""
        record = self.pods.get(pod.metadata.uid)
        if record is None or not record.sandbox_id:
            return False
        now = self.clock.now()
        changed = await exit_due_containers(self.client, pod, now, self.crash_backoff,
                                            self.recorder, self.node_name)
        # the prober (prober.py): failed probes reported, failed liveness/startup kills
        self.probe_events.record(pod, now)
        changed |= await kill_failed_containers(self.client, pod, now, self.crash_backoff,
                                                self.recorder, self.node_name)
        # both only touch the status: a copy of it is enough to ask (never the cached pod's)
        probe = Resource(kind="Pod", metadata=pod.metadata, spec=pod.spec,
                         status=copy.deepcopy(pod.status))
        if not restart_changed(probe, now) and not refresh_readiness(probe, now) and \
                not stale(probe):
            return changed  # (the common case, read for every running pod on every pass)
        events: list[ContainerEvent] = []

        async def write() -> bool:
            events.clear()
            try:
                current = await self.client.get("Pod", pod.name, pod.namespace)
            except NotFound:
                return False
            if current.metadata.uid != pod.metadata.uid:
                return False
            events.extend(restart_changed(current, now))
            if not refresh_readiness(current, now) and not events and not stale(current):
                return False
            observe(current)
            await self.client.update_status(current)
            return True
        try:
            written = bool(await retry_on_conflict_async(write))
        except Conflict as err:  # the next pass tries again
            log.warning("status of pod %s not written: %s", pod.name, err)
            return changed
        record_events(self.recorder, pod, self.node_name, events if written else [])
        return changed or written

    async def _fail_past_deadline(self, pod: Resource) -> bool:
        """``activeDeadlineSeconds`` passed (active_deadline.py): the pod fails, its
        containers are killed, its sandbox stopped and its volumes unmounted."""
        now = self.clock.now()

        async def write() -> bool:
            current = await self.client.get("Pod", pod.name, pod.namespace)
            if current.metadata.uid != pod.metadata.uid or \
                    not fail_past_deadline(current, now):
                return False
            observe(current)
            await self.client.update_status(current)
            return True
        try:
            if not await retry_on_conflict_async(write):
                return False
        except NotFound:
            return False
        self.recorder.record("Pod", pod.namespace, pod.name, NORMAL, DEADLINE_EXCEEDED,
                             DEADLINE_MESSAGE, "kubelet", host=self.node_name)
        self.waiting.pop(pod.metadata.uid, None)
        self._stop_waiting_for_config(pod.metadata.uid)
        record = self.pods.get(pod.metadata.uid)
        if record is not None:
            await self._tear_down(pod, record, killed=bool(
                record.containers_created or record.started or pod.spec.get("initContainers")))
        return True

    # -- pod teardown ----------------------------------------------------------------------

    async def _stop_finished_pod(self, pod: Resource) -> bool:
        """A pod whose containers all ended (Succeeded or Failed) stays in the API until
        deleted, but its sandbox stops (CNI DEL) and its volumes are unmounted, as the
        kubelet's pod worker does for a terminated pod."""
        record = self.pods.get(pod.metadata.uid)
        if record is None:
            return False
        await self._tear_down(pod, record, killed=False)
        return True

    async def _tear_down(self, pod: Resource, record: PodRecord, *, killed: bool) -> bool:
        """Stop the sandbox and unmount the volumes; True when some unmount must be
        retried."""
        if record.sandbox_id:
            if killed:
                containers_killed(self.recorder, pod, self.node_name)
            await asyncio.to_thread(self.runtime.remove_pod_sandbox, record.sandbox_id)
            record.sandbox_id = ""
        info = pod_info(pod)
        remaining: list[CsiVolume] = []
        for volume in record.volumes:
            try:
                await self.volumes.unmount(info, volume)
            except Exception as err:  # UnmountVolume failed: keep it, retry next pass
                log.warning("unmount of %s for pod %s failed: %s", volume.spec_name, pod.name, err)
                remaining.append(volume)
        record.volumes = remaining
        return bool(remaining)

    async def _kill_pod(self, pod: Resource) -> bool:
        uid = pod.metadata.uid
        record = self.pods.get(uid, PodRecord())
        retry = await self._tear_down(pod, record, killed=True)
        await self._write_terminal_status(pod)  # its containers are killed: Completed or Error
        if retry:
            return True
        self.pods.pop(uid, None)
        self.waiting.pop(uid, None)
        self.republish.forget(uid)
        self.tokens.forget_pod(uid)
        self.local_volumes.forget(uid)
        self.crash_backoff.forget_pod(uid)
        self.probe_events.forget_pod(uid)
        self._stop_waiting_for_config(uid)
        self._forget_sandbox_failures(uid)
        try:  # its volumes are unmounted: nothing of the pod stays on the node
            await asyncio.to_thread(remove_pod_dir, self.paths.pods_dir / uid)
        except OSError as err:
            log.warning("removing the directory of pod %s failed: %s", pod.name, err)
        await self.sync_node_status()
        with contextlib.suppress(NotFound):
            await self.client.delete("Pod", pod.name, pod.namespace, grace_period_seconds=0,
                                     uid=uid)
        return True

    async def _write_terminal_status(self, pod: Resource) -> None:
        """The status a pod being deleted ends with (pod_termination.py), written before
        the final delete; nothing when it is gone already or was not running."""
        now = self.clock.now()

        async def write() -> None:
            current = await self.client.get("Pod", pod.name, pod.namespace)
            if current.metadata.uid == pod.metadata.uid and terminate_deleted_pod(current, now):
                observe(current)
                await self.client.update_status(current)
        try:
            await retry_on_conflict_async(write)
        except (NotFound, Conflict) as err:  # gone, or the final delete follows anyway
            log.debug("terminal status of pod %s not written: %s", pod.name, err)

    def _now(self) -> str:
        return format_time(self.clock.now())

