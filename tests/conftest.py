"""Session-wide setup: every test runs in a private mount namespace when root, and every
kubectl the tests start keeps its discovery cache in this session's own directory.

Entered when this file is imported: pytest imports it before any other conftest
and before any test module, so every skip condition and every process sees it.

kubectl caches discovery per server address (``~/.kube/cache/discovery/<host>_<port>``)
for hours; the tests start many API servers on random ports, so a port an older build
served once would hand kubectl that build's discovery (the kinds, their order) — a test
of this build must never read it."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.fixtures.apiserver_process import ApiServerProcess, running_apiserver
from tests.mount_namespace import enter_private

enter_private()
os.environ["KUBECACHEDIR"] = tempfile.mkdtemp(prefix="kubectl-cache-")
atexit.register(shutil.rmtree, os.environ["KUBECACHEDIR"], ignore_errors=True)


@pytest.fixture(scope="module", name="server")
def module_apiserver() -> Iterator[ApiServerProcess]:
    """``server``: a ``kubelet-sim apiserver`` process of the test module's own (a fresh
    state dir), for the tests of components and clients that reach it over HTTPS."""
    with running_apiserver() as running:
        yield running
