"""The cluster IP and node port allocators as a dry run (``dryRun=All``) sees them: they
answer what a write would be given and take nothing.

As kube-apiserver's dry-run allocators: a cluster IP the Service asks for is checked
against the range only (not against the taken ones); one it leaves to the server is
answered as the range's network address (finding a free one would be racy and is not
worth it). A node port asked for is refused when it is taken; one left to the server
is answered as one past the highest this write was answered with (32769 for the
first), whatever the range. Giving back is a no-op.
"""

from __future__ import annotations

from kubelet_sim.apiserver.services.ranges import AlreadyAllocated, ClusterIPRange, NodePortRange

# the dry-run port operation's starting guess: the first port it answers is one past it
DRY_RUN_PORT_BASE = 32768


class DryRunClusterIPs(ClusterIPRange):
    """The cluster IPs of ``real``'s range, seen without taking any."""

    def __init__(self, real: ClusterIPRange) -> None:
        self.network = real.network
        self._offsets = real._offsets  # read only: nothing here adds or removes

    def allocate(self, ip: str) -> None:
        self._offset(ip)  # NotInRange; a taken IP is not looked for

    def allocate_next(self) -> str:
        return str(self.network.network_address)

    def release(self, ip: str) -> None:
        """Nothing was taken."""


class DryRunNodePorts(NodePortRange):
    """The node ports of ``real``'s range, seen without taking any; what one write was
    answered with is remembered, so two ports of one Service never get the same value."""

    def __init__(self, real: NodePortRange) -> None:
        self.low, self.high = real.low, real.high
        self._offsets = real._offsets  # read only: nothing here adds or removes
        self.answered: list[int] = []

    def allocate(self, port: int) -> None:
        if self.is_allocated(port) or port in self.answered:
            raise AlreadyAllocated("provided port is already allocated")
        self.answered.append(port)

    def allocate_next(self) -> int:
        port = max(self.answered, default=DRY_RUN_PORT_BASE) + 1
        self.answered.append(port)
        return port

    def release(self, port: int) -> None:
        """Nothing was taken."""
