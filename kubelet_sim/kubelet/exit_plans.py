"""When a simulated container exits, and with which code: the pod's annotations.

Nothing runs in a simulated container, so the pod says how long each one runs:

* ``sim.cni-csi-mini.io/exit-after`` (a Go duration: ``5s``, ``1m30s``, ``500ms``) and
  ``sim.cni-csi-mini.io/exit-code`` (default 0): every app container (``spec.containers``)
  exits that long after each (re)start, with that code; without them it runs until the
  pod is deleted;
* ``sim.cni-csi-mini.io/exit-after.<container>`` and ``.../exit-code.<container>``: the same
  for the one container named (an app container, an init container or a sidecar),
  overriding the pod-wide pair for an app container (a container name of up to 52
  characters fits an annotation key).

The pod-wide pair never applies to init containers. A regular init container exits at
once with code 0 unless its own annotations say otherwise (nothing runs in it: one that
ran until deleted would hold the pod in ``Init`` for ever); a sidecar (an init container
with ``restartPolicy: Always``) runs until the pod ends unless its own ``exit-after``
says. An annotation whose value does not parse is ignored (a code that is no integer
counts as 1).
"""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.kubelet.go_duration import parse_duration
from kubelet_sim.kubelet.init_status import is_sidecar

EXIT_AFTER = "sim.cni-csi-mini.io/exit-after"
EXIT_CODE = "sim.cni-csi-mini.io/exit-code"

Plan = tuple[float, int]  # (seconds after each start, exit code)

__all__ = ["EXIT_AFTER", "EXIT_CODE", "Plan", "container_plan", "has_exit_plans",
           "init_container_plan"]


def _code(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return 1


def has_exit_plans(pod: Resource) -> bool:
    """Whether any container of the pod is told to exit (a cheap check for every pass)."""
    return any(k == EXIT_AFTER or k.startswith(EXIT_AFTER + ".")
               for k in pod.metadata.annotations)


def container_plan(pod: Resource, name: str) -> Plan | None:
    """(seconds after start, exit code) for the app container ``name``; None: runs on."""
    notes = pod.metadata.annotations
    own = parse_duration(notes.get(f"{EXIT_AFTER}.{name}", ""))
    after = own if own is not None else parse_duration(notes.get(EXIT_AFTER, ""))
    if after is None:
        return None
    code = _code(notes.get(f"{EXIT_CODE}.{name}"))
    return after, code if code is not None else (_code(notes.get(EXIT_CODE)) or 0)


def init_container_plan(pod: Resource, name: str) -> Plan | None:
    """The plan of the init container ``name``: a regular one exits at once with code 0
    by default, a sidecar runs on (None) unless told."""
    container = next((c for c in pod.spec.get("initContainers") or []
                      if c.get("name") == name), None)
    notes = pod.metadata.annotations
    after = parse_duration(notes.get(f"{EXIT_AFTER}.{name}", ""))
    if after is None:
        if is_sidecar(container):
            return None
        after = 0.0
    return after, _code(notes.get(f"{EXIT_CODE}.{name}")) or 0
