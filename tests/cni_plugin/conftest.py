"""Fixtures shared by the CNI plugin tests: an installed bin dir, sandboxes, a recording IPAM."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.install import install
from tests.fixtures.netns import delete_link, fresh_netns, unique_name


@pytest.fixture(scope="session")
def cni_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A CNI bin dir holding our executables (emu-*), laid out by cni_plugin.install."""
    directory = tmp_path_factory.mktemp("cnibin")
    install(str(directory))
    return str(directory)


@pytest.fixture
def sandbox(tmp_path: Path) -> str:
    """An emulated netns: any existing path will do."""
    path = tmp_path / f"netns-{uuid.uuid4().hex[:8]}"
    path.touch()
    return str(path)


class RecordingIPAM:
    """emu-noop as the IPAM plugin: answers a fixed result and records every call."""

    def __init__(self, debug_file: Path) -> None:
        self.debug_file = debug_file
        self.set_result({"cniVersion": "1.0.0",
                         "ips": [{"address": "10.22.0.5/24", "gateway": "10.22.0.1"}],
                         "routes": [{"dst": "0.0.0.0/0"}]})

    def set_plan(self, **plan: Any) -> None:
        debug = json.loads(self.debug_file.read_text()) if self.debug_file.exists() else {}
        debug.update(plan)
        self.debug_file.write_text(json.dumps(debug))

    def set_result(self, result: dict[str, Any]) -> None:
        self.set_plan(reportResult=result)

    def commands(self) -> list[str]:
        if not self.debug_file.exists():
            return []
        return [c["command"] for c in json.loads(self.debug_file.read_text()).get("calls", [])]

    def ipam_conf(self) -> dict[str, Any]:
        return {"type": "emu-noop", "debugFile": str(self.debug_file)}


@pytest.fixture
def recording_ipam(tmp_path: Path) -> RecordingIPAM:
    return RecordingIPAM(tmp_path / "ipam-debug.json")


@pytest.fixture
def dataplane_dir(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "dataplane"
    yield str(path)


@pytest.fixture
def netns() -> Iterator[str]:
    """A fresh real network namespace (root only): its path, as CNI_NETNS carries it."""
    with fresh_netns() as path:
        yield path


@pytest.fixture
def bridge_name() -> Iterator[str]:
    """A unique host bridge name; the bridge is deleted afterwards."""
    name = unique_name()
    yield name
    delete_link(name)


def is_root() -> bool:
    return os.geteuid() == 0
