"""What a simulated container answers its probes: nothing runs inside the simulated
containers, so the outcome of each liveness, readiness and startup probe is told by pod
annotations, measured from the container's (re)start, and is success by default:

* ``sim.cni-csi-mini.io/<type>-fails-after[.<container>]``: a Go duration (``20s``); from
  that long after the container started, every probe of that type fails;
* ``sim.cni-csi-mini.io/<type>-passes-after[.<container>]``: a Go duration, or ``never``;
  until then every probe of that type fails (a slow start, a warm-up).

``<type>`` is ``liveness``, ``readiness`` or ``startup``; a key naming a container applies to
that container only and wins over the key without one, which applies to every container
with that probe. Both together give a window: failing, then passing, then failing.

A failed probe is reported with the output its handler would give against a container
that answers that way: ``HTTP probe failed with statuscode: 500`` (httpGet), ``dial tcp
<pod IP>:<port>: connect: connection refused`` (tcpSocket), a gRPC health service's
``NOT_SERVING``, and an exec command's (empty) output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.kubelet.go_duration import parse_duration

PREFIX = "sim.cni-csi-mini.io/"
FAILS_AFTER = "fails-after"
PASSES_AFTER = "passes-after"


@dataclass(frozen=True)
class Segment:
    """Probes of a container run between ``start`` and ``end`` seconds after it started
    all pass (``passing``) or all fail."""

    passing: bool
    start: float
    end: float


@dataclass(frozen=True)
class Outcomes:
    """When a container's probes of one type pass: from ``passes_after`` until
    ``fails_after`` seconds after it started (``math.inf``: never)."""

    passes_after: float = 0.0
    fails_after: float = math.inf

    def segments(self) -> list[Segment]:
        """The container's life cut where the outcome changes, in order."""
        if self.passes_after >= self.fails_after:
            return [Segment(False, 0.0, math.inf)]
        out = []
        if self.passes_after > 0:
            out.append(Segment(False, 0.0, self.passes_after))
        out.append(Segment(True, self.passes_after, self.fails_after))
        if self.fails_after < math.inf:
            out.append(Segment(False, self.fails_after, math.inf))
        return out


def _annotation(pod: Resource, probe_type: str, what: str, container: str) -> str | None:
    annotations = pod.metadata.annotations
    key = f"{PREFIX}{probe_type}-{what}"
    return annotations.get(f"{key}.{container}", annotations.get(key))


def outcomes(pod: Resource, probe_type: str, container: str) -> Outcomes:
    """The outcomes the pod's annotations give ``container``'s ``probe_type`` probes
    (a value that is no duration is ignored, except ``never`` to pass)."""
    passes, fails = 0.0, math.inf
    text = _annotation(pod, probe_type, PASSES_AFTER, container)
    if text is not None:
        seconds = parse_duration(text)
        passes = math.inf if seconds is None and text.strip() == "never" else seconds or 0.0
    text = _annotation(pod, probe_type, FAILS_AFTER, container)
    if text is not None:
        seconds = parse_duration(text)
        fails = math.inf if seconds is None else seconds
    return Outcomes(passes, fails)


def _port(port: object, container: JSON) -> str:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, str) and not port.isdigit():
        for item in container.get("ports") or []:
            if item.get("name") == port:
                return str(item.get("containerPort", port))
    return str(port)


def failure_output(probe: JSON, container: JSON, pod_ip: str) -> str:
    """What the prober reports of one failed probe of ``probe`` (its handler's words)."""
    if "httpGet" in probe:
        return "HTTP probe failed with statuscode: 500"
    if "tcpSocket" in probe:
        tcp = probe["tcpSocket"] or {}
        host = tcp.get("host") or pod_ip
        host = f"[{host}]" if ":" in host else host
        return f"dial tcp {host}:{_port(tcp.get('port'), container)}: connect: connection refused"
    if "grpc" in probe:
        return 'service unhealthy (responded with "NOT_SERVING")'
    return ""  # an exec command that failed without printing anything
