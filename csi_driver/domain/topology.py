"""Where a new volume may live: accessibility requirements against registered nodes."""

from __future__ import annotations

from collections.abc import Sequence

from csi_driver.errors import ResourceExhausted
from csi_driver.state.records import Node, Topology


def matches(wanted: Topology, offered: Topology) -> bool:
    """True when every segment of ``wanted`` is present with the same value in ``offered``."""
    return all(offered.get(key) == value for key, value in wanted.items())


def accessible_from(volume_topology: Sequence[Topology], node: Node) -> bool:
    """An empty accessible_topology means every node may reach the volume."""
    if not volume_topology:
        return True
    return any(matches(t, node.topology) for t in volume_topology)


def choose_topology(
    requisite: Sequence[Topology],
    preferred: Sequence[Topology],
    nodes: Sequence[Node],
) -> list[Topology]:
    """The accessible_topology of a new volume.

    No requirement: the shared store is reachable from every node, so the
    volume is unrestricted (empty list).  Otherwise the volume is placed on a
    registered node that satisfies a requisite topology, trying the preferred
    ones first in order; it reports that node's segments.  Requirements no
    registered node satisfies cannot be provisioned: RESOURCE_EXHAUSTED.
    """
    if not requisite and not preferred:
        return []
    def allowed(node: Node) -> bool:
        return not requisite or any(matches(r, node.topology) for r in requisite)

    candidates = [n for n in nodes if n.topology and allowed(n)]
    for want in preferred:
        for node in candidates:
            if matches(want, node.topology):
                return [dict(node.topology)]
    if requisite and candidates:
        # Spec: without a usable preference, pick from requisite in order.
        for want in requisite:
            for node in candidates:
                if matches(want, node.topology):
                    return [dict(node.topology)]
    if not requisite and candidates:
        return [dict(candidates[0].topology)]
    raise ResourceExhausted(
        "no registered node satisfies the volume's accessibility requirements"
    )
