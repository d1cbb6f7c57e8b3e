"""How the kubelet's volume operations are retried: each operation (keyed by what it
does to which volume) backs off exponentially on the node's clock (500 ms doubling,
capped at 2 min 2 s), gives up after ``max_attempts`` with the last error, and reports
every failed attempt in the kubelet's wording (``MountVolume.SetUp failed for volume
"pvc-…" : <error>``), which becomes a FailedMount event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from kubelet_sim.csi.client import CsiError, DriverNotRegistered
from kubelet_sim.csi.driver_policy import VolumeOperationError
from kubelet_sim.csi.volume_spec import CsiVolume
from kubelet_sim.utils.clock import Clock, ExponentialBackoff

T = TypeVar("T")
FailureReport = Callable[[str], None]  # hears "MountVolume.X failed for volume ... : error"


class OperationRetry:
    def __init__(self, clock: Clock, max_attempts: int) -> None:
        self.clock = clock
        self.max_attempts = max_attempts
        self.backoff = ExponentialBackoff(clock)

    async def run(self, operation: str, attempt: Callable[[], Awaitable[T]],
                  failed: Callable[[Exception], None] | None = None) -> T:
        """Run ``attempt`` until it succeeds, sleeping the backoff between failures (each
        reported to ``failed``); after ``max_attempts`` the last error is raised."""
        for tries in range(1, self.max_attempts + 1):
            try:
                result = await attempt()
            except VolumeOperationError as err:  # the kubelet's next pass retries it
                if failed is not None:
                    failed(err)
                raise
            except (CsiError, DriverNotRegistered) as err:
                if failed is not None:
                    failed(err)
                if tries == self.max_attempts:
                    raise
                await self.clock.sleep(self.backoff.failed(operation))
            else:
                self.backoff.succeeded(operation)
                return result
        raise AssertionError("unreachable")  # pragma: no cover


def failure_report(failed: FailureReport | None, operation: str,
                   volume: CsiVolume) -> Callable[[Exception], None] | None:
    """``failed`` fed with ``<operation> failed for volume "<name>" : <error>``."""
    if failed is None:
        return None
    return lambda err: failed(f'{operation} failed for volume "{volume.spec_name}" : {err}')
