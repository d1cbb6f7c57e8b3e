"""What kube-apiserver refuses in a container's probes (``validateProbe``, on the
defaulted probe): exactly one handler (exec, httpGet, tcpSocket, grpc), no negative
timing field, and a ``successThreshold`` of 1 for liveness and startup probes (only
readiness can ask for more than one success)."""

from __future__ import annotations

import json

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import JSON

HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
TIMING = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
          "failureThreshold")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def validate_probes(container: JSON, path: str) -> None:
    """Raise Invalid for the first fault in the probes of ``container`` (at ``path``)."""
    for field in PROBES:
        probe = container.get(field)
        if probe is None:
            continue
        where = f"{path}.{field}"
        if not isinstance(probe, dict):
            raise Invalid(where, "must be an object")
        handlers = [h for h in HANDLERS if probe.get(h) is not None]
        if not handlers:
            raise Invalid(where, "Required value: must specify a handler type")
        if len(handlers) > 1:
            raise Invalid(f"{where}.{handlers[1]}",
                          "Forbidden: may not specify more than 1 handler type")
        for name in TIMING:
            value = probe.get(name, 0)
            if not isinstance(value, int) or value < 0:
                raise Invalid(f"{where}.{name}", f"Invalid value: {json.dumps(value)}: "
                              "must be greater than or equal to 0")
        success = probe.get("successThreshold", 1)
        if field != "readinessProbe" and success != 1:
            raise Invalid(f"{where}.successThreshold",
                          f"Invalid value: {json.dumps(success)}: must be 1")
