"""An API server core served over HTTPS for the client tests, and the real kubectl."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubelet_sim.api import builders
from kubelet_sim.apiserver.http import ApiServerHandle, start_api_server
from kubelet_sim.apiserver.server import APIServer
from tests.fixtures.up_process import KUBECTL

needs_kubectl = pytest.mark.skipif(not KUBECTL.exists(),
                                   reason="kubectl not installed: run `make kubectl`")


@dataclass
class Served:
    api: APIServer
    handle: ApiServerHandle

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 30) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.handle.kubeconfig),
                               *args], input=stdin, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    api = APIServer(history_limit=50)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=True))
    handle = start_api_server(api, tmp_path / "state")
    try:
        yield Served(api, handle)
    finally:
        handle.stop()


POD = """apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: busybox
    ports:
    - containerPort: 80
"""
