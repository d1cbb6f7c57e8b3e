"""The kubelet plugin watcher: registry sockets → GetInfo → NodeGetInfo → callback → verdict.

The registrar is the real `node_driver_registrar.server` server on a unix socket; NodeGetInfo is
answered by the in-memory fake driver (the real driver is in test_plugin_watcher_real.py).
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.csi.client import CsiClient, DriverNotRegistered
from kubelet_sim.kubelet.plugin_watcher import (
    CsiNodeRegistration,
    PluginWatcher,
    csinode_driver_entry,
    csinode_drivers_with,
    csinode_drivers_without,
    highest_supported_version,
    node_id_annotation,
)
from kubelet_sim.testing.fake_csi import FakeCsiClient, FakeCsiDriver
from kubelet_sim.utils.trace import Trace
from node_driver_registrar.server import (
    RegistrationServer,
    serve_registration,
    serve_registration_for_kubelet,
)

DRIVER = "csi-mini.example.com"
TOPOLOGY_KEY = "topology.csi-mini.example.com/node"


class Cluster:
    """What the caller of the watcher does with a registration (CSINode + annotation)."""

    def __init__(self) -> None:
        self.registered: list[CsiNodeRegistration] = []
        self.deregistered: list[str] = []
        self.fail_with: Exception | None = None

    async def on_register(self, reg: CsiNodeRegistration) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.registered.append(reg)

    async def on_deregister(self, driver: str) -> None:
        self.deregistered.append(driver)


class Harness:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.trace = Trace()
        self.fake = FakeCsiDriver(name=DRIVER, node_id="n1", max_volumes_per_node=16,
                                  topology={TOPOLOGY_KEY: "n1"})
        self.cluster = Cluster()
        self.endpoints: list[str] = []
        self.watcher = PluginWatcher(
            registry_dir=root / "plugins_registry", node_name="node-1", trace=self.trace,
            on_register=self.cluster.on_register, on_deregister=self.cluster.on_deregister,
            client_factory=self.client,
        )

    def client(self, endpoint: str) -> CsiClient:
        self.endpoints.append(endpoint)
        return FakeCsiClient(self.fake, trace=self.trace, node="node-1")

    async def registrar(self, endpoint: str = "/tmp/csi-mini/csi.sock") -> RegistrationServer:
        return await serve_registration_for_kubelet(self.root, driver_name=DRIVER,
                                                    csi_endpoint=endpoint)


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kpw", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def harness(root: Path) -> AsyncIterator[Harness]:
    h = Harness(root)
    yield h
    for registered in list(h.watcher.drivers.values()):
        await registered.client.close()


async def test_a_new_registration_socket_is_registered_in_the_kubelet_order(
    harness: Harness,
) -> None:
    registrar = await harness.registrar()
    try:
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    assert harness.trace.calls() == [
        "pluginregistration.Registration/GetInfo",
        "csi.Node/NodeGetInfo",
        "pluginregistration.Registration/NotifyRegistrationStatus",
    ]
    assert harness.endpoints == ["/tmp/csi-mini/csi.sock"]
    assert harness.cluster.registered == [CsiNodeRegistration(
        driver=DRIVER, endpoint="/tmp/csi-mini/csi.sock", versions=("1.0.0",), node_id="n1",
        topology={TOPOLOGY_KEY: "n1"}, max_volumes_per_node=16)]
    assert [(s.registered, s.error) for s in registrar.servicer.statuses] == [(True, "")]


async def test_a_registered_driver_is_not_registered_again_on_the_next_scan(
    harness: Harness,
) -> None:
    registrar = await harness.registrar()
    try:
        await harness.watcher.scan()
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    assert len(harness.cluster.registered) == 1
    assert len(registrar.servicer.statuses) == 1


async def test_the_registered_driver_client_is_handed_to_the_volume_manager(
    harness: Harness,
) -> None:
    with pytest.raises(DriverNotRegistered):
        harness.watcher.client_for(DRIVER)
    registrar = await harness.registrar()
    try:
        await harness.watcher.scan()
        client = harness.watcher.client_for(DRIVER)
        info = await client.call(csi_pb2.NodeGetInfoRequest(), csi_pb2.NodeGetInfoResponse)
        assert info.node_id == "n1"
    finally:
        await registrar.stop(None)


async def test_an_unsupported_csi_version_is_refused_with_notify_false(harness: Harness) -> None:
    registrar = await harness.registrar()
    registrar.servicer.supported_versions = ("0.3.0",)
    try:
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    assert harness.cluster.registered == []
    assert "csi.Node/NodeGetInfo" not in harness.trace.calls()
    (status,) = registrar.servicer.statuses
    assert status.registered is False
    assert "plugin validation failed" in status.error
    assert "none of the CSI versions" in status.error


async def test_a_plugin_type_without_a_handler_is_refused(harness: Harness) -> None:
    registrar = await harness.registrar()
    registrar.servicer.plugin_type = "DevicePlugin"
    try:
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    (status,) = registrar.servicer.statuses
    assert status.registered is False
    assert status.error.startswith("no handler registered for plugin type: DevicePlugin")


async def test_node_get_info_failure_is_reported_with_notify_false(harness: Harness) -> None:
    harness.fake.fail_next("NodeGetInfo", grpc.StatusCode.UNAVAILABLE, "driver down")
    registrar = await harness.registrar()
    try:
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    (status,) = registrar.servicer.statuses
    assert status.registered is False
    assert "plugin registration failed" in status.error and "driver down" in status.error
    assert harness.watcher.drivers == {}


async def test_a_failing_callback_leaves_the_driver_unregistered(harness: Harness) -> None:
    harness.cluster.fail_with = RuntimeError("CSINode update conflict")
    registrar = await harness.registrar()
    try:
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    (status,) = registrar.servicer.statuses
    assert status.registered is False and "CSINode update conflict" in status.error
    with pytest.raises(DriverNotRegistered):
        harness.watcher.client_for(DRIVER)


async def test_a_vanished_socket_deregisters_the_driver(harness: Harness) -> None:
    registrar = await harness.registrar()
    await harness.watcher.scan()
    await registrar.stop(None)

    await harness.watcher.scan()

    assert harness.cluster.deregistered == [DRIVER]
    assert harness.trace.calls()[-1] == "pluginmanager/DeRegisterPlugin"
    with pytest.raises(DriverNotRegistered):
        harness.watcher.client_for(DRIVER)


async def test_a_recreated_socket_registers_the_driver_again(harness: Harness) -> None:
    first = await harness.registrar("/tmp/one/csi.sock")
    await harness.watcher.scan()
    await first.stop(None)
    second = await harness.registrar("/tmp/two/csi.sock")
    try:
        await harness.watcher.scan()
    finally:
        await second.stop(None)

    assert [r.endpoint for r in harness.cluster.registered] == [
        "/tmp/one/csi.sock", "/tmp/two/csi.sock"]
    assert harness.cluster.deregistered == [DRIVER]
    assert [(s.registered, s.error) for s in second.servicer.statuses] == [(True, "")]


async def test_files_that_are_not_sockets_and_dot_files_are_ignored(
    harness: Harness, root: Path,
) -> None:
    registry = root / "plugins_registry"
    registry.mkdir()
    (registry / "notes-reg.sock").write_text("a regular file")
    with socket.socket(socket.AF_UNIX) as hidden:
        hidden.bind(str(registry / ".hidden-reg.sock"))

    await harness.watcher.scan()

    assert harness.trace.calls() == []


async def test_sockets_in_subdirectories_of_the_registry_are_registered(
    harness: Harness, root: Path,
) -> None:
    nested = root / "plugins_registry" / "vendor"
    nested.mkdir(parents=True)
    registrar = await serve_registration(nested / "csi-reg.sock", driver_name=DRIVER,
                                         csi_endpoint="/tmp/csi-mini/csi.sock")
    try:
        await harness.watcher.scan()
    finally:
        await registrar.stop(None)

    assert [r.driver for r in harness.cluster.registered] == [DRIVER]
    assert [(s.registered, s.error) for s in registrar.servicer.statuses] == [(True, "")]


async def test_an_unanswering_socket_is_retried_on_the_next_scan(
    harness: Harness, root: Path,
) -> None:
    registry = root / "plugins_registry"
    registry.mkdir()
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(registry / "dead-reg.sock"))

    await harness.watcher.scan()
    await harness.watcher.scan()

    results = [e.result for e in harness.trace if e.call.endswith("/GetInfo")]
    assert len(results) == 2 and all(r.startswith("UNAVAILABLE") for r in results)


async def test_run_polls_until_stopped(harness: Harness) -> None:
    harness.watcher.poll_interval = 0.0
    registrar = await harness.registrar()
    scans: list[int] = []

    def stopped() -> bool:
        scans.append(1)
        return bool(harness.cluster.registered)

    try:
        await harness.watcher.run(stopped)
    finally:
        await registrar.stop(None)
    assert len(harness.cluster.registered) == 1 and len(scans) == 2


# -- what the caller writes --------------------------------------------------------------------

REG = CsiNodeRegistration(driver=DRIVER, endpoint="/x.sock", versions=("1.0.0",), node_id="n1",
                          topology={TOPOLOGY_KEY: "n1", "topology.kubernetes.io/zone": "z1"},
                          max_volumes_per_node=64)


def test_csinode_driver_entry_has_name_node_id_sorted_topology_keys_and_allocatable() -> None:
    assert csinode_driver_entry(REG) == {
        "name": DRIVER, "nodeID": "n1",
        "topologyKeys": [TOPOLOGY_KEY, "topology.kubernetes.io/zone"],
        "allocatable": {"count": 64},
    }


def test_csinode_driver_entry_omits_allocatable_without_a_volume_limit() -> None:
    unlimited = CsiNodeRegistration(driver=DRIVER, endpoint="/x.sock", versions=("1.0.0",),
                                    node_id="n1", topology={}, max_volumes_per_node=0)
    assert csinode_driver_entry(unlimited) == {"name": DRIVER, "nodeID": "n1", "topologyKeys": []}


def test_registering_again_replaces_the_csinode_entry_and_keeps_other_drivers() -> None:
    other = {"name": "other.example.com", "nodeID": "x", "topologyKeys": []}
    stale = {"name": DRIVER, "nodeID": "old", "topologyKeys": []}

    drivers = csinode_drivers_with([stale, other], REG)

    assert drivers == [other, csinode_driver_entry(REG)]
    assert csinode_drivers_without(drivers, DRIVER) == [other]


def test_node_id_annotation_is_compact_sorted_json_keeping_other_drivers() -> None:
    first = node_id_annotation(None, "z.example.com", "node-z")
    both = node_id_annotation(first, DRIVER, "n1")

    assert both == '{"csi-mini.example.com":"n1","z.example.com":"node-z"}'
    assert json.loads(both) == {DRIVER: "n1", "z.example.com": "node-z"}
    assert node_id_annotation(both, "z.example.com", None) == '{"csi-mini.example.com":"n1"}'
    assert node_id_annotation('{"csi-mini.example.com":"n1"}', DRIVER, None) is None


@pytest.mark.parametrize(("versions", "expected"), [
    (("1.0.0",), (1, 0, 0)),
    (("0.3.0", "1.2.0", "1.10.1"), (1, 10, 1)),
    (("v1.5",), (1, 5, 0)),
    (("0.3.0", "2.0.0", "bogus"), None),
])
def test_highest_supported_version_accepts_major_version_1_only(
    versions: tuple[str, ...], expected: tuple[int, int, int] | None,
) -> None:
    assert highest_supported_version(versions) == expected
