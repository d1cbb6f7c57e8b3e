"""``kubectl get priorityclasses`` columns, as kube-apiserver's printer fills them:
NAME, VALUE, GLOBAL-DEFAULT, AGE, PREEMPTIONPOLICY (empty when the class has none)."""

from __future__ import annotations

from kubelet_sim.apiserver.http.service_tables import AGE, NAME, Column

COLUMNS: dict[str, list[Column]] = {
    "PriorityClass": [
        NAME,
        ("Value", "integer", 0, lambda o: int(o.body.get("value", 0))),
        ("Global-Default", "boolean", 0, lambda o: o.body.get("globalDefault") is True),
        AGE,
        ("PreemptionPolicy", "string", 0, lambda o: str(o.body.get("preemptionPolicy") or "")),
    ],
}
