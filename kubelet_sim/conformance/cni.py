"""The CNI conformance suite: a plugin list, run the way a container runtime runs it
(the libcni role: cached results, reverse-order DEL, CHECK against the cached result,
STATUS and GC), in every cniVersion all its plugins claim.

Cases (suite ``cni``): ``version`` (each plugin answers VERSION and claims the list's
version); ``add-check-del/<v>`` for each claimed version (ADD gives interfaces and
addresses, the result is cached, CHECK passes from 0.4.0, DEL runs in reverse order and
drops the cache); ``del-idempotent`` (a second DEL, and a DEL of an attachment never
added, succeed); ``del-after-failed-add`` (ADD into a namespace that does not exist fails,
the runtime's DEL then succeeds); ``concurrent-adds`` (eight ADDs at once get eight
distinct addresses, then all DEL); ``container-restart`` (DEL then ADD of the same id and
interface works); ``status`` and ``gc`` (1.1.0: STATUS passes; GC with a valid list
releases only the attachments missing from it); ``reachability`` (``--dataplane linux``
only: two containers on one node, then one on each of two nodes joined by an underlay,
exchange TCP; see :mod:`kubelet_sim.conformance.cni_reach`). With ``--dataplane linux``
(root) every test container gets a real network namespace and the plugins run in a node
namespace of their own, so nothing they make on the host side touches the machine.

Every case also keeps a transcript (:mod:`kubelet_sim.conformance.cni_transcript`: the
plugin execs and their codes per attachment, the shape of each ADD result, the VERSION
claims), which ``--compare-to ours`` sets beside a run of our own plugins on the same
list and dataplane (:mod:`kubelet_sim.conformance.compare`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from cni_spec.errors import CNIError
from kubelet_sim.conformance.cni_reach import reachability
from kubelet_sim.conformance.cni_transcript import CniSteps, RecordingLibCNI
from kubelet_sim.conformance.report import Report, Skip
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf
from kubelet_sim.runtime.libcni.conf import NetworkConfigList, conf_list_from_bytes, load_conf_file
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.libcni.results import parse_version, pod_ips, to_current
from kubelet_sim.utils.trace import Trace

SUITE = "cni"
IFNAME = "eth0"
CONCURRENT = 8


@dataclass(frozen=True)
class CniTarget:
    bin_dir: Path
    conflist: Path
    dataplane: str = "emulated"  # "linux": real network namespaces (root)


class Namespaces:
    """Where each test container's network lives: a plain file the emulated dataplane
    records into, or a real network namespace (``ip netns add``)."""

    def __init__(self, dataplane: str, scratch: Path) -> None:
        self.dataplane, self.scratch = dataplane, scratch
        self._made: list[str] = []
        # linux: the plugins run in a namespace of their own (the node), so what they
        # make on the host side (bridges, routes, rules) never touches this machine's
        self.node = self.new() if dataplane == "linux" else None

    def new(self) -> str:
        name = f"cnitest-{uuid.uuid4().hex[:10]}"
        self._made.append(name)
        if self.dataplane == "linux":
            subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
            return f"/var/run/netns/{name}"
        path = self.scratch / name
        path.touch()
        return str(path)

    def missing(self) -> str:
        return str(self.scratch / "no-such-netns") if self.dataplane != "linux" \
            else "/var/run/netns/cnitest-no-such-netns"

    def cleanup(self) -> None:
        if self.dataplane == "linux":
            for name in self._made:
                subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def with_version(net: NetworkConfigList, version: str) -> NetworkConfigList:
    raw = json.loads(net.bytes)
    raw["cniVersion"] = version
    raw.pop("cniVersions", None)
    return conf_list_from_bytes(json.dumps(raw).encode(), source=net.source)


class CniRun:
    """One suite run: the list, a private libcni cache, the namespaces made for it."""

    def __init__(self, target: CniTarget, scratch: Path) -> None:
        self.target, self.scratch = target, scratch
        self.net = load_conf_file(str(target.conflist))
        self.steps = CniSteps()
        self.trace = Trace(listeners=[self.steps.on_event])
        self.namespaces = Namespaces(target.dataplane, scratch)
        self.exec = RealExec(netns=self.namespaces.node)
        self.libcni = self.new_libcni("cache", self.exec)

    def new_libcni(self, cache: str, plugin_exec: RealExec) -> LibCNI:
        """A libcni of this run (its trace and transcript) with a cache of its own."""
        return RecordingLibCNI([str(self.target.bin_dir)], str(self.scratch / cache),
                               plugin_exec, trace=self.trace, component="conformance",
                               steps=self.steps)

    def versions(self) -> list[str]:
        """The cniVersions every plugin of the list supports (VERSION), oldest first."""
        common: set[str] | None = None
        for plugin in self.net.plugins:
            path = self.exec.find_in_path(plugin.type, [str(self.target.bin_dir)])
            answer = json.loads(self.exec.exec_plugin(path, b"", {"CNI_COMMAND": "VERSION"}))
            claimed = set(answer.get("supportedVersions") or [])
            self.steps.add("", f"VERSION {plugin.type} → "
                               f"{' '.join(sorted(claimed, key=parse_version))}")
            common = claimed if common is None else common & claimed
        return sorted(common or set(), key=parse_version)

    def rt(self, netns: str, container_id: str = "") -> RuntimeConf:
        return RuntimeConf(container_id=container_id or uuid.uuid4().hex, netns=netns,
                           ifname=IFNAME)

    def addresses(self, net: NetworkConfigList, rt: RuntimeConf,
                  libcni: LibCNI | None = None) -> list[str]:
        """ADD (by this run's libcni unless another is given); the addresses it gave."""
        result = (libcni or self.libcni).add_network_list(net, rt)
        current = to_current(result)
        return [ip.address for ip in pod_ips(current, IFNAME)] or [
            str(ip.get("address", "")) for ip in current.get("ips", [])]

    def calls(self, since: int) -> list[str]:
        return [e.call for e in self.trace.events[since:]]


def run_cni_suite(target: CniTarget, report: Report) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="cni-conformance-"))
    run = CniRun(target, scratch)
    report.transcriber = run.steps
    try:
        _cases(run, report)
    finally:
        report.transcriber = None
        run.namespaces.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


def _cases(run: CniRun, report: Report) -> None:
    versions: list[str] = []

    def version() -> None:
        versions.extend(run.versions())
        assert run.net.cni_version in versions, (
            f"the list's cniVersion {run.net.cni_version} is not supported by every plugin "
            f"(all of them support {versions})")

    report.run(SUITE, "version", version)
    for v in versions or [run.net.cni_version]:
        report.run(SUITE, f"add-check-del/{v}", partial(_add_check_del, run, v))
    report.run(SUITE, "del-idempotent", lambda: _del_idempotent(run))
    report.run(SUITE, "del-after-failed-add", lambda: _del_after_failed_add(run))
    report.run(SUITE, "concurrent-adds", lambda: _concurrent_adds(run))
    report.run(SUITE, "container-restart", lambda: _container_restart(run))
    report.run(SUITE, "status", lambda: _status(run, versions))
    report.run(SUITE, "gc", lambda: _gc(run, versions))
    report.run(SUITE, "reachability", lambda: reachability(run))


def _add_check_del(run: CniRun, version: str) -> None:
    net = with_version(run.net, version)
    rt = run.rt(run.namespaces.new())
    mark = len(run.trace.events)
    result = run.libcni.add_network_list(net, rt)
    assert result.get("cniVersion") == version, \
        f"ADD answered cniVersion {result.get('cniVersion')!r}, the config says {version}"
    current = to_current(result)
    if any(p.type not in ("loopback", "emu-loopback") for p in net.plugins):
        assert current.get("ips"), f"ADD gave no address: {result}"
    assert run.libcni.cached_result(net, rt) is not None, "no cached result after ADD"
    if parse_version(version) >= (0, 4, 0):
        run.libcni.check_network_list(net, rt)
    run.libcni.del_network_list(net, rt)
    assert run.libcni.cached_result(net, rt) is None, "the cached result outlived DEL"
    adds = [c.split()[-1] for c in run.calls(mark) if c.startswith("cni ADD")]
    dels = [c.split()[-1] for c in run.calls(mark) if c.startswith("cni DEL")]
    assert dels == list(reversed(adds)), f"DEL order {dels} is not the reverse of ADD {adds}"


def _del_idempotent(run: CniRun) -> None:
    rt = run.rt(run.namespaces.new())
    run.libcni.add_network_list(run.net, rt)
    run.libcni.del_network_list(run.net, rt)
    run.libcni.del_network_list(run.net, rt)  # again: must succeed
    run.libcni.del_network_list(run.net, run.rt(run.namespaces.new()))  # never added


def _del_after_failed_add(run: CniRun) -> None:
    rt = run.rt(run.namespaces.missing())
    try:
        run.libcni.add_network_list(run.net, rt)
    except CNIError:
        pass
    else:
        run.libcni.del_network_list(run.net, rt)
        raise AssertionError("ADD into a network namespace that does not exist succeeded")
    run.libcni.del_network_list(run.net, rt)  # the runtime's cleanup must not fail


def _concurrent_adds(run: CniRun) -> None:
    rts = [run.rt(run.namespaces.new()) for _ in range(CONCURRENT)]
    with ThreadPoolExecutor(CONCURRENT) as pool:
        got = list(pool.map(lambda rt: run.addresses(run.net, rt), rts))
    try:
        flat = [a for addresses in got for a in addresses]
        assert len(flat) == len(set(flat)), f"concurrent ADDs shared addresses: {sorted(flat)}"
    finally:
        with ThreadPoolExecutor(CONCURRENT) as pool:
            list(pool.map(lambda rt: run.libcni.del_network_list(run.net, rt), rts))


def _container_restart(run: CniRun) -> None:
    rt = run.rt(run.namespaces.new())
    run.libcni.add_network_list(run.net, rt)
    run.libcni.del_network_list(run.net, rt)
    again = run.rt(run.namespaces.new(), rt.container_id)  # same id and interface
    run.libcni.add_network_list(run.net, again)
    run.libcni.del_network_list(run.net, again)


def _needs_1_1(run: CniRun, versions: list[str]) -> NetworkConfigList:
    if "1.1.0" not in versions:
        raise Skip(f"STATUS and GC are CNI 1.1.0; the plugins claim {versions}")
    return with_version(run.net, "1.1.0")


def _status(run: CniRun, versions: list[str]) -> None:
    run.libcni.status_network_list(_needs_1_1(run, versions))


def _gc(run: CniRun, versions: list[str]) -> None:
    net = _needs_1_1(run, versions)
    keep, drop = run.rt(run.namespaces.new()), run.rt(run.namespaces.new())
    run.libcni.add_network_list(net, keep)
    run.libcni.add_network_list(net, drop)
    mark = len(run.trace.events)
    run.libcni.gc_network_list(net, [(keep.container_id, IFNAME)])
    calls = run.calls(mark)
    assert any(c.startswith("cni DEL") for c in calls), f"GC released nothing: {calls}"
    assert run.libcni.cached_result(net, drop) is None, "the stale attachment is still cached"
    run.libcni.check_network_list(net, keep)  # the valid one is untouched
    run.libcni.del_network_list(net, keep)
