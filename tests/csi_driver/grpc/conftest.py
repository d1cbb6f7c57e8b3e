"""Fixtures for the CSI contract tests.

- `driver`: one driver for the whole session, all features on (csi-sanity's setup);
  `CSI_SANITY_DRIVER_ARGS` adds flags to it; `CSI_SANITY_ENDPOINT` (and optionally
  `CSI_SANITY_CONTROLLER_ENDPOINT`) points the port at a driver started elsewhere.
- `spawn_driver`: a factory for fresh drivers with their own flags / state dirs;
  every one is stopped and its mounts removed at the end of the test, even on failure.
- `sanity` / `make_sanity`: csi-sanity's per-test context (mount dir, staging dir,
  resources wrapper) for the session driver or for a fresh one; `sanity` runs each
  test twice, on the all-mode driver and on `split_drivers` (controller + node).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

try:
    from csi_protos import csi_pb2  # noqa: F401
except ImportError:  # pragma: no cover - before `make protos` ran
    pytest.skip("csi_protos not generated yet", allow_module_level=True)

from csi_driver.state import loop_fs
from tests.csi_driver.grpc.sanity_support import SanityContext
from tests.fixtures.driver_process import DriverProcess, Stubs, short_tmpdir, unmount_under
from tests.mount_namespace import is_private

_skip_unless_root = pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
# Mounting tests run only inside the session's private mount namespace
# (tests/mount_namespace.py), so a regression can never reach the host's mounts.
_skip_unless_private = pytest.mark.skipif(
    os.geteuid() == 0 and not is_private(), reason="no private mount namespace for this session"
)


def needs_root(test: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a test `root` (see pyproject markers) and skip it cleanly when not root."""
    return pytest.mark.root(_skip_unless_root(_skip_unless_private(test)))


SpawnDriver = Callable[..., DriverProcess]
MakeSanity = Callable[..., SanityContext]

# Point the csi-sanity port at any CSI driver already serving (as csi-sanity's
# --csi.endpoint / --csi.controllerendpoint): only the `sanity` / `driver` tests run,
# everything that starts drivers of its own with chosen flags is skipped.
EXTERNAL_ENDPOINT = os.environ.get("CSI_SANITY_ENDPOINT", "")
EXTERNAL_CONTROLLER_ENDPOINT = os.environ.get("CSI_SANITY_CONTROLLER_ENDPOINT", "")


class ExternalDriver:
    """A driver someone else started: stubs over its endpoint(s), nothing to manage."""

    def __init__(self, endpoint: str, controller_endpoint: str = "") -> None:
        self.endpoint = endpoint if "://" in endpoint else f"unix://{endpoint}"
        controller = None
        if controller_endpoint:
            target = (controller_endpoint if "://" in controller_endpoint
                      else f"unix://{controller_endpoint}")
            controller = grpc.insecure_channel(target)
        self.stubs = Stubs(grpc.insecure_channel(self.endpoint), controller)

    def close(self) -> None:
        self.stubs.channel.close()
        if self.stubs.controller_channel is not None:
            self.stubs.controller_channel.close()


@pytest.fixture(scope="session")
def driver() -> Iterator[DriverProcess]:
    if EXTERNAL_ENDPOINT:
        external = ExternalDriver(EXTERNAL_ENDPOINT, EXTERNAL_CONTROLLER_ENDPOINT)
        yield external  # type: ignore[misc]  # duck-typed: .stubs and .endpoint
        external.close()
        return
    # CSI_SANITY_DRIVER_ARGS adds flags (e.g. "--no-snapshots") to run the csi-sanity port
    # against a reduced driver, the way csi-sanity is pointed at any configuration.
    extra = shlex.split(os.environ.get("CSI_SANITY_DRIVER_ARGS", ""))
    proc = DriverProcess(node_id="sanity-node", args=extra)
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def spawn_driver(shared_state_dir: Path) -> Iterator[SpawnDriver]:
    # shared_state_dir is a dependency so it outlives every driver that may use it
    if EXTERNAL_ENDPOINT:
        pytest.skip("starts drivers of its own; CSI_SANITY_ENDPOINT names an external one")
    started: list[DriverProcess] = []

    def spawn(
        *args: str,
        node_id: str = "test-node",
        state_dir: Path | None = None,
        start: bool = True,
    ) -> DriverProcess:
        proc = DriverProcess(node_id=node_id, args=args, state_dir=state_dir)
        started.append(proc)
        return proc.start() if start else proc

    try:
        yield spawn
    finally:
        for proc in reversed(started):
            proc.cleanup()


@pytest.fixture
def shared_state_dir() -> Iterator[Path]:
    """A state directory several drivers share (the "storage array")."""
    path = short_tmpdir("csiw")
    try:
        yield path
    finally:
        unmount_under(path)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_sanity(request: pytest.FixtureRequest) -> Iterator[MakeSanity]:
    if not EXTERNAL_ENDPOINT:
        # set up spawn_driver first, so contexts are cleaned up while its drivers still run
        request.getfixturevalue("spawn_driver")
    contexts: list[SanityContext] = []

    def make(proc: DriverProcess, controller: DriverProcess | None = None) -> SanityContext:
        """A context on ``proc``; with ``controller``, controller-side RPCs go there."""
        stubs = proc.stubs if controller is None else Stubs(
            proc.stubs.channel, controller.stubs.channel)
        ctx = SanityContext(short_tmpdir("csit"), stubs)
        contexts.append(ctx)
        return ctx

    yield make
    errors: list[str] = []
    for ctx in reversed(contexts):
        errors += ctx.teardown()
    assert not errors, "resource cleanup failed: " + "; ".join(errors)


@pytest.fixture(scope="session")
def split_drivers() -> Iterator[tuple[DriverProcess, DriverProcess]]:
    """csi-sanity's ``--csi.controllerendpoint`` setup: a ``--mode controller`` process and
    a ``--mode node`` process on one state dir (the "storage array")."""
    extra = shlex.split(os.environ.get("CSI_SANITY_DRIVER_ARGS", ""))
    state = short_tmpdir("csia")
    controller = DriverProcess(node_id="sanity-controller", state_dir=state,
                               args=["--mode", "controller", *extra])
    node = DriverProcess(node_id="sanity-node", state_dir=state, args=["--mode", "node", *extra])
    try:
        controller.start()
        node.start()
        yield controller, node
    finally:
        node.cleanup()
        controller.cleanup()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def loop_driver() -> Iterator[DriverProcess]:
    """An all-mode driver whose filesystem volumes are ext4 images (``--fs-backend loop``)."""
    reason = loop_fs.unavailable_reason()
    if reason:
        pytest.skip(f"no loop backend here: {reason}")
    extra = shlex.split(os.environ.get("CSI_SANITY_DRIVER_ARGS", ""))
    proc = DriverProcess(node_id="sanity-node", args=["--fs-backend", "loop", *extra])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(params=["all", "split", "loop"])
def sanity(request: pytest.FixtureRequest, make_sanity: MakeSanity) -> SanityContext:
    """Each ported csi-sanity spec runs three times: against one ``--mode all`` process;
    with identity/node on a node process and controller RPCs on a controller process;
    and against an all-mode process whose filesystem volumes are loop-mounted images."""
    if request.param == "all":
        return make_sanity(request.getfixturevalue("driver"))
    if EXTERNAL_ENDPOINT:
        pytest.skip("an external driver is tested in the setup its endpoints give")
    if request.param == "loop":
        return make_sanity(request.getfixturevalue("loop_driver"))
    controller, node = request.getfixturevalue("split_drivers")
    return make_sanity(node, controller)


@pytest.fixture
def two_nodes(
    spawn_driver: SpawnDriver, shared_state_dir: Path
) -> tuple[DriverProcess, DriverProcess]:
    """An all-mode driver on node-a plus a node-mode driver on node-b, one storage array."""
    node_a = spawn_driver(node_id="node-a", state_dir=shared_state_dir)
    node_b = spawn_driver("--mode", "node", node_id="node-b", state_dir=shared_state_dir)
    return node_a, node_b


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Against an external driver only the csi-sanity port applies: the other tests check
    csi-mini's own flags, logs, files and rules."""
    if not EXTERNAL_ENDPOINT:
        return
    ours = pytest.mark.skip(reason="tests csi-mini itself; CSI_SANITY_ENDPOINT is external")
    for item in items:
        if item.path.parent.name == "csi" and not item.path.name.startswith("test_sanity_"):
            item.add_marker(ours)
