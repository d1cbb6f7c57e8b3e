"""``/debug/kubelet-sim/faults``: the API server's fault injection at run time, behind the
same bearer token as the API (``kubectl create --raw /debug/kubelet-sim/faults -f
faults.json``; ``kubectl get --raw`` shows what is set). The body, every key optional::

    {"writeDelaySeconds": 0.5,                         # each write waits this long
     "conflicts": [{"kind": "Pod", "count": 3,          # the next writes of a kind fail
                    "verbs": ["update", "patch"]}],     #   409 Conflict
     "dropWatches": true}                               # end every watch; 410 on return
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubelet_sim.api.errors import ApiError
from kubelet_sim.apiserver.http.status import status_body, status_response
from kubelet_sim.apiserver.server import APIServer

PATH = "/debug/kubelet-sim/faults"
VERBS = ("update", "update_status", "patch", "patch_status")


def apply_faults(api: APIServer, body: Any) -> dict[str, Any]:
    """Apply a fault request; ValueError names what is wrong with it."""
    if not isinstance(body, dict) or set(body) - {"writeDelaySeconds", "conflicts",
                                                  "dropWatches"}:
        raise ValueError("expected an object with writeDelaySeconds, conflicts, dropWatches")
    answer: dict[str, Any] = {}
    if "writeDelaySeconds" in body:
        delay = float(body["writeDelaySeconds"])
        if not 0 <= delay <= 60:
            raise ValueError("writeDelaySeconds must be within 0..60")
        api.write_delay = delay
    for conflict in body.get("conflicts") or []:
        verbs = tuple(conflict.get("verbs") or ("update", "update_status"))
        if not set(verbs) <= set(VERBS):
            raise ValueError(f"conflict verbs are among {', '.join(VERBS)}")
        api.inject_conflicts(str(conflict["kind"]), int(conflict["count"]), verbs)
    if body.get("dropWatches"):
        answer["droppedWatches"] = api.close_watches(expire=True)
    answer["writeDelaySeconds"] = api.write_delay
    return answer


async def handle(api: APIServer, request: web.Request) -> web.Response:
    if request.method == "GET":
        return web.json_response({"writeDelaySeconds": api.write_delay})
    try:
        return web.json_response(apply_faults(api, await request.json()))
    except (ValueError, KeyError, TypeError, ApiError) as err:
        return status_response(status_body(400, "BadRequest", f"fault request: {err}"))
