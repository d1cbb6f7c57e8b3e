"""containerd's go-cni role: a pod's networks are the loopback network on ``lo``
plus the first config of the node's conf dir on ``eth0``.

The conf dir is read on every operation (containerd watches it; reading it each
time gives the same answers without a watcher), so a node whose config appears
later becomes ready without a restart. Setup runs the two networks one after
the other (containerd can also run them in parallel; the order of the execs is
then not defined, so we keep it serial). Teardown runs the pod network first,
then loopback. When the conf dir no longer yields a network, teardown falls
back to the network list cached at ADD time, so a pod can still be stopped.
A failing DEL does not stop the other network's DEL (go-cni stops at the first
error); the first error is raised after both ran.

The loopback network is containerd's (``type: loopback``) unless another is
given: a bin dir of our own plugins names it ``emu-loopback``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf
from kubelet_sim.runtime.libcni.conf import (
    NetworkConfigList,
    NetworkNotReady,
    conf_list_from_bytes,
    load_pod_network,
    loopback_network,
)
from kubelet_sim.runtime.libcni.results import PodIP, Result, pod_ips, to_current

LOOPBACK_IFNAME = "lo"
DEFAULT_IFNAME = "eth0"


@dataclass(frozen=True)
class Attachment:
    """Where one pod's networks go: the sandbox id, its netns and the CNI args."""

    sandbox_id: str
    netns: str
    args: tuple[tuple[str, str], ...] = ()
    capability_args: Mapping[str, Any] = field(default_factory=dict)

    def runtime_conf(self, ifname: str) -> RuntimeConf:
        return RuntimeConf(
            container_id=self.sandbox_id,
            netns=self.netns,
            ifname=ifname,
            args=self.args,
            capability_args=self.capability_args,
        )


@dataclass(frozen=True)
class PodNetworkResult:
    results: dict[str, Result]  # ifname → the result as the last plugin returned it
    ips: list[PodIP]  # first IP of eth0 per family, IPv4 first


class PodNetwork:
    """The CRI plugin's CNI side: the networks in ``conf_dir`` (the first, as containerd
    picks it, plus loopback) added to and deleted from a pod's namespace through libcni."""

    def __init__(
        self,
        libcni: LibCNI,
        conf_dir: str,
        *,
        skip_invalid: bool = False,
        ifname: str = DEFAULT_IFNAME,
        loopback: NetworkConfigList | None = None,
    ) -> None:
        self.libcni = libcni
        self.loopback = loopback or loopback_network()
        self.conf_dir = conf_dir
        self.skip_invalid = skip_invalid
        self.ifname = ifname

    def networks(self) -> list[tuple[NetworkConfigList, str]]:
        """``[(loopback, "lo"), (pod network, "eth0")]``; raises `NetworkNotReady`."""
        pod = load_pod_network(self.conf_dir, skip_invalid=self.skip_invalid)
        return [(self.loopback, LOOPBACK_IFNAME), (pod, self.ifname)]

    def setup(self, att: Attachment) -> PodNetworkResult:
        """ADD of every network. On failure the caller must call `teardown`."""
        results: dict[str, Result] = {}
        for net, ifname in self.networks():
            results[ifname] = self.libcni.add_network_list(net, att.runtime_conf(ifname))
        eth = results[self.ifname]
        return PodNetworkResult(results=results, ips=pod_ips(to_current(eth), self.ifname))

    def _teardown_networks(self, att: Attachment) -> list[tuple[NetworkConfigList, str]]:
        try:
            nets = self.networks()
        except NetworkNotReady:
            nets = [(self.loopback, LOOPBACK_IFNAME)]
            for cached in self.libcni.cached_attachments(att.sandbox_id):
                if cached.ifname == self.ifname:
                    nets.append((conf_list_from_bytes(cached.config), self.ifname))
        return list(reversed(nets))

    def teardown(self, att: Attachment) -> None:
        """DEL of the pod network, then loopback. Each DEL runs even if one fails."""
        errors = []
        for net, ifname in self._teardown_networks(att):
            try:
                self.libcni.del_network_list(net, att.runtime_conf(ifname))
            except CNIError as err:
                errors.append(err)
        if errors:
            raise errors[0]

    def check(self, att: Attachment) -> None:
        for net, ifname in self.networks():
            self.libcni.check_network_list(net, att.runtime_conf(ifname))

    def status(self) -> None:
        """Raises `NetworkNotReady` (no config) or `CNIError` (a STATUS failed)."""
        for net, _ in self.networks():
            self.libcni.status_network_list(net)

    def gc(self, valid_sandbox_ids: Iterable[str]) -> None:
        """GC every network, keeping the attachments of the given sandboxes."""
        ids = list(valid_sandbox_ids)
        errors = []
        for net, ifname in self.networks():
            try:
                self.libcni.gc_network_list(net, [(sid, ifname) for sid in ids])
            except CNIError as err:
                errors.append(str(err))
        if errors:
            raise CNIError(0, "\n".join(errors))
