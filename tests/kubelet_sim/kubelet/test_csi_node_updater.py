"""nodeAllocatableUpdatePeriodSeconds: the kubelet refreshes the CSINode allocatable count
from NodeGetInfo every period, and at once on a ResourceExhausted attach error (fake clock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.csi.naming import attachment_name
from kubelet_sim.kubelet.csi_node_updater import CsiNodeUpdater
from kubelet_sim.kubelet.node_registration import record_registration
from kubelet_sim.kubelet.plugin_watcher import CsiNodeRegistration, RegisteredDriver
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.testing.fake_csi import FakeCsiClient, FakeCsiDriver
from kubelet_sim.utils.trace import Trace

DRIVER = "fake.csi.example.com"
NODE = "node-1"


class Setup:
    def __init__(self) -> None:
        self.api = APIServer()
        self.api.create(builders.node(NODE))
        self.clock = FakeClock()
        self.driver = FakeCsiDriver(name=DRIVER, node_id=NODE, max_volumes_per_node=10)
        registration = CsiNodeRegistration(driver=DRIVER, endpoint="/tmp/x.sock",
                                           versions=("1.0.0",), node_id=NODE, topology={},
                                           max_volumes_per_node=10)
        self.registration = registration
        self.registered = {DRIVER: RegisteredDriver(
            registration, (1, 0, 0), FakeCsiClient(self.driver, trace=Trace(), node=NODE),
            Path("/tmp/x-reg.sock"))}
        self.updater = CsiNodeUpdater(client=as_client(self.api), node_name=NODE,
                                      clock=self.clock,
                                      drivers=lambda: self.registered)

    def csidriver(self, period: int | None) -> None:
        obj = builders.csi_driver(DRIVER)
        if period is not None:
            obj.spec["nodeAllocatableUpdatePeriodSeconds"] = period
        self.api.create(obj)

    def count(self) -> int | None:
        [entry] = self.api.get("CSINode", NODE).spec["drivers"]
        return (entry.get("allocatable") or {}).get("count")

    def node_get_info_calls(self) -> int:
        return self.driver.calls.count("NodeGetInfo")


@pytest.fixture
async def setup() -> Setup:
    made = Setup()
    await record_registration(as_client(made.api), NODE, made.registration)
    return made


async def test_the_count_is_refreshed_once_every_period_and_not_before(setup: Setup) -> None:
    setup.csidriver(30)
    await setup.updater.sync()  # the timer starts
    setup.driver.max_volumes_per_node = 4

    setup.clock.advance(29)
    assert await setup.updater.sync() is False
    assert setup.count() == 10 and setup.node_get_info_calls() == 0

    setup.clock.advance(1)
    assert await setup.updater.sync() is True
    assert setup.count() == 4 and setup.node_get_info_calls() == 1

    setup.clock.advance(29)
    await setup.updater.sync()
    assert setup.node_get_info_calls() == 1
    setup.clock.advance(1)
    assert await setup.updater.sync() is False  # asked again, nothing changed
    assert setup.node_get_info_calls() == 2


async def test_without_the_field_nothing_is_ever_asked(setup: Setup) -> None:
    setup.csidriver(None)
    setup.driver.max_volumes_per_node = 4
    for _ in range(3):
        await setup.updater.sync()
        setup.clock.advance(3600)

    assert setup.node_get_info_calls() == 0 and setup.count() == 10


async def test_a_changed_period_restarts_the_timer(setup: Setup) -> None:
    setup.csidriver(60)
    await setup.updater.sync()
    setup.clock.advance(50)
    driver = setup.api.get("CSIDriver", DRIVER)
    driver.spec["nodeAllocatableUpdatePeriodSeconds"] = 10
    setup.api.update(driver)

    await setup.updater.sync()  # restarted at t=50
    setup.clock.advance(9)
    await setup.updater.sync()
    assert setup.node_get_info_calls() == 0
    setup.clock.advance(1)
    await setup.updater.sync()
    assert setup.node_get_info_calls() == 1


async def test_a_resource_exhausted_attach_error_refreshes_at_once(setup: Setup) -> None:
    setup.csidriver(600)
    setup.api.create(new("Namespace", "team-a"))
    pv = builders.csi_persistent_volume("pvc-1", driver=DRIVER, volume_handle="vol-1",
                                       storage="1Gi")
    setup.api.create(pv)
    claim = builders.persistent_volume_claim("data", "team-a", storage="1Gi")
    claim.spec["volumeName"] = "pvc-1"
    setup.api.create(claim)
    va = setup.api.create(builders.volume_attachment(
        attachment_name("vol-1", DRIVER, NODE), DRIVER, NODE, "pvc-1"))
    pod = builders.pod("app", "team-a", volumes=[builders.pvc_volume("data", "data")])
    setup.driver.max_volumes_per_node = 3

    va.status["attachError"] = {"message": "no more", "errorCode": 9}  # not ResourceExhausted
    va = setup.api.update_status(va)
    assert await setup.updater.verify_exhausted(pod) is False
    va.status["attachError"] = {"message": "attach limit reached", "errorCode": 8}
    setup.api.update_status(va)

    assert await setup.updater.verify_exhausted(pod) is True
    assert setup.count() == 3
