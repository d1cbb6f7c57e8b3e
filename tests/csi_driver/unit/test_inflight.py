"""A second operation on a volume already in flight is ABORTED."""

from __future__ import annotations

import pytest

from csi_driver.domain.inflight import InFlight
from csi_driver.errors import Aborted


def test_second_operation_on_the_same_volume_is_aborted():
    guard = InFlight()
    with guard.hold("volume:v1"), pytest.raises(Aborted), guard.hold("volume:v1"):
        pass


def test_operation_after_the_first_finished_proceeds():
    guard = InFlight()
    with guard.hold("volume:v1"):
        pass
    with guard.hold("volume:v1", "name:n"):
        pass


def test_operations_on_different_volumes_run_together():
    guard = InFlight()
    with guard.hold("volume:v1"), guard.hold("volume:v2"):
        pass


def test_keys_without_an_id_guard_nothing():
    guard = InFlight()
    with guard.hold("volume:"), guard.hold("volume:"):
        pass
