"""A `python -m kubelet_sim up` process for the tests that drive it with the real kubectl:
started with its own state dir under /tmp (socket paths stay short), stopped with
SIGTERM (the orderly teardown)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .conftest import KUBECTL, PROJECT_ROOT


@dataclass
class Up:
    kubeconfig: str
    said: list[str]  # what `up` printed up to the export line

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 30) -> str:
        done = subprocess.run([str(KUBECTL), "--kubeconfig", self.kubeconfig, *args],
                              input=stdin, capture_output=True, text=True, timeout=timeout,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def events(self, selector: str) -> list[dict[str, Any]]:
        out = self.kubectl("get", "events", "--field-selector", selector, "-o", "json")
        items: list[dict[str, Any]] = json.loads(out)["items"]
        return items


@contextmanager
def running_up(*args: str) -> Iterator[Up]:
    state = Path(tempfile.mkdtemp(prefix="ksim-ev-", dir="/tmp"))
    proc = subprocess.Popen([sys.executable, "-m", "kubelet_sim", "up", "--state-dir",
                             str(state), *args], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        said: list[str] = []
        while not said or not said[-1].startswith("export KUBECONFIG="):
            line = proc.stdout.readline()
            assert line, "up ended before printing the kubeconfig"
            said.append(line.strip())
        yield Up(said[-1].split("=", 1)[1], said)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(state, ignore_errors=True)


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")
