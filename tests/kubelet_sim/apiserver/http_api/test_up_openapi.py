"""OpenAPI over a real `up`: the examples apply with kubectl's strict validation, and a
second apply (a strategic merge patch over objects the cluster's controllers and kubelets
have written status into) passes the same type checks the documents describe."""

from __future__ import annotations

import json

from tests.fixtures.up_process import PROJECT_ROOT, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl


def test_examples_apply_strictly_and_reapply_over_live_status() -> None:
    with running_up() as up:
        manifest = PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"
        up.kubectl("apply", "-f", str(manifest))

        def running() -> bool:
            items = json.loads(up.kubectl("get", "pods", "-o", "json"))["items"]
            return bool(items) and all(p["status"].get("phase") == "Running" for p in items)

        wait_for(running, what="pods Running")
        changed = manifest.read_text().replace(
            "    app: web\n", "    app: web\n    tier: front\n", 1)
        out = up.kubectl("apply", "-f", "-", stdin=changed)
        assert "pod/web configured" in out and "persistentvolumeclaim/db-data unchanged" in out
        up.kubectl("label", "pvc", "db-data", "checked=yes")
        assert "tolerations <[]Toleration>" in up.kubectl("explain", "pod.spec.tolerations")
        index = json.loads(up.kubectl("get", "--raw", "/openapi/v3"))
        for entry in index["paths"].values():
            doc = json.loads(up.kubectl("get", "--raw", entry["serverRelativeURL"]))
            assert doc["openapi"] == "3.0.0" and doc["components"]["schemas"]
        assert json.loads(up.kubectl("get", "--raw", "/openapi/v2"))["swagger"] == "2.0"
