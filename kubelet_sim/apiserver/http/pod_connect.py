"""The Pod subresources that reach into running containers: ``log``, ``exec``, ``attach``
and ``portforward``. kubelet-sim runs no container processes, so there is nothing to read
or to connect to: an existing pod answers each with a 400 BadRequest Status saying so (a
missing pod is the usual 404), instead of the 404 a path the server did not know would get.
"""

from __future__ import annotations

from kubelet_sim.api.errors import BadRequest
from kubelet_sim.apiserver.http.paths import Target
from kubelet_sim.apiserver.server import APIServer

_WHAT = {
    "log": "pod logs are not available",
    "exec": "exec into a container is not available",
    "attach": "attach to a container is not available",
    "portforward": "port forwarding to a pod is not available",
}


def refuse(api: APIServer, target: Target) -> BadRequest:
    """The error for a log/exec/attach/portforward request on ``target`` (NotFound is
    raised when the pod does not exist)."""
    api.get("Pod", target.name, target.namespace)
    return BadRequest(f"{_WHAT[target.subresource]} for pod {target.namespace}/{target.name}: "
                      "kubelet-sim runs no containers (their state is simulated)")
