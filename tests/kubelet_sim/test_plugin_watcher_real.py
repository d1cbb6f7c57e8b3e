"""Registration end to end: our registrar on a temp plugins_registry, the kubelet's watcher,
NodeGetInfo answered by the real driver process."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from csi_driver.registration import serve_registration_for_kubelet
from kubelet_sim.plugin_watcher import (
    CsiNodeRegistration,
    PluginWatcher,
    csinode_driver_entry,
    node_id_annotation,
)
from kubelet_sim.trace import Trace
from tests.csi.driver_process import DriverProcess

DRIVER = "csi-mini.example.com"
TOPOLOGY_KEY = "topology.csi-mini.example.com/node"


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id="n1", args=["--mode", "node", "--max-volumes-per-node", "7"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def kubelet_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="kpr", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def test_registration_get_info_node_get_info_callback_notify(
    driver: DriverProcess, kubelet_root: Path,
) -> None:
    trace = Trace()
    written: dict[str, object] = {}

    async def write_csinode(reg: CsiNodeRegistration) -> None:
        written["csinode"] = csinode_driver_entry(reg)
        written["annotation"] = node_id_annotation(None, reg.driver, reg.node_id)

    watcher = PluginWatcher(registry_dir=kubelet_root / "plugins_registry", node_name="node-1",
                            trace=trace, on_register=write_csinode)
    registrar = await serve_registration_for_kubelet(
        kubelet_root, driver_name=DRIVER, csi_endpoint=driver.endpoint)
    try:
        await watcher.scan()
        info = await watcher.client_for(DRIVER).get_plugin_info()
        assert info.name == DRIVER
    finally:
        await registrar.stop(None)
        await watcher.scan()  # the socket is gone: deregistered, client closed

    assert trace.calls()[:3] == [
        "pluginregistration.Registration/GetInfo",
        "csi.Node/NodeGetInfo",
        "pluginregistration.Registration/NotifyRegistrationStatus",
    ]
    assert written["csinode"] == {
        "name": DRIVER, "nodeID": "n1", "topologyKeys": [TOPOLOGY_KEY],
        "allocatable": {"count": 7},
    }
    assert written["annotation"] == '{"csi-mini.example.com":"n1"}'
    assert [(s.registered, s.error) for s in registrar.servicer.statuses] == [(True, "")]
    assert watcher.drivers == {}
