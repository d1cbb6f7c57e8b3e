"""``kubectl get quota`` and ``kubectl get limits`` columns, as kube-apiserver's printers
fill them: a ResourceQuota's NAME AGE REQUEST LIMIT (``<resource>: <used>/<hard>`` for
each resource of ``status.hard`` in name order, the ``limits.*`` ones under LIMIT), a
LimitRange's NAME CREATED AT."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.http.service_tables import AGE, CREATED_AT, NAME, Column
from kubelet_sim.apiserver.quota.resource_lists import ZERO, parse_list


def _usage_cells(quota: Resource) -> tuple[str, str]:
    hard = parse_list(quota.status.get("hard"))
    used = parse_list(quota.status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        cell = f"{name}: {used.get(name, ZERO)}/{hard[name]}"
        pieces = name.split(".")
        (limits if len(pieces) > 1 and pieces[0] == "limits" else requests).append(cell)
    return ", ".join(requests), ", ".join(limits)


COLUMNS: dict[str, list[Column]] = {
    "ResourceQuota": [NAME, AGE,
                      ("Request", "string", 0, lambda o: _usage_cells(o)[0]),
                      ("Limit", "string", 0, lambda o: _usage_cells(o)[1])],
    "LimitRange": [NAME, CREATED_AT],
}
