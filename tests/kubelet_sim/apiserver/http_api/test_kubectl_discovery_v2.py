"""Aggregated discovery (apidiscovery.k8s.io/v2): kubectl 1.35 asks for it on /api and
/apis and, when served, needs no request per group version."""

from __future__ import annotations

import json
import re
import ssl
import urllib.request
from pathlib import Path
from typing import Any

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def requests_of(served: Served, cache: Path, *args: str) -> tuple[str, list[str]]:
    """kubectl's output and the paths it requested (from its -v=6 log), fresh cache."""
    done = served.kubectl("--cache-dir", str(cache), "-v=6", *args)
    paths = re.findall(r'url="https://[^/"]+([^"?]*)', done.stderr)
    return done.stdout, paths


def test_api_resources_takes_one_request_per_root(served: Served, tmp_path: Path) -> None:
    out, paths = requests_of(served, tmp_path / "cache", "api-resources")
    assert sorted(paths) == ["/api", "/apis"]
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert rows["volumesnapshots"][1:] == ["vs", "snapshot.storage.k8s.io/v1", "true",
                                           "VolumeSnapshot"]
    assert rows["leases"] == ["leases", "coordination.k8s.io/v1", "true", "Lease"]
    assert rows["storageclasses"][-2:] == ["false", "StorageClass"]


def test_get_after_aggregated_discovery_needs_no_group_version_lists(
        served: Served, tmp_path: Path) -> None:
    out, paths = requests_of(served, tmp_path / "cache", "get", "nodes")
    assert "node-1" in out
    assert not [p for p in paths if re.fullmatch(r"/apis/[^/]+/[^/]+|/api/v1", p)], paths


def test_plain_json_still_gets_the_legacy_lists(served: Served) -> None:
    # kubectl get --raw asks for plain JSON
    assert json.loads(served.kubectl("get", "--raw", "/apis").stdout)["kind"] == "APIGroupList"
    assert json.loads(served.kubectl("get", "--raw", "/api").stdout)["kind"] == "APIVersions"
    listed = fetch(served, "/apis", "application/json, " + AGGREGATED)
    assert listed["kind"] == "APIGroupList"


def fetch(served: Served, path: str, accept: str, content_type: str = "") -> Any:
    """GET ``path`` with ``accept`` (kubectl get --raw cannot set the header)."""
    context = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    request = urllib.request.Request(served.handle.url + path, headers={
        "Accept": accept, "Authorization": f"Bearer {served.handle.credentials.token}"})
    with urllib.request.urlopen(request, context=context) as answer:
        if content_type:
            assert answer.headers["Content-Type"] == content_type
        return json.loads(answer.read())


def test_the_v2_list_for_the_core_group(served: Served) -> None:
    listed = fetch(served, "/api", AGGREGATED + ",application/json", AGGREGATED)
    assert (listed["kind"], listed["apiVersion"]) == ("APIGroupDiscoveryList",
                                                      "apidiscovery.k8s.io/v2")
    (item,) = listed["items"]
    assert item["metadata"] == {}
    (v1,) = item["versions"]
    assert (v1["version"], v1["freshness"]) == ("v1", "Current")
    pods = next(r for r in v1["resources"] if r["resource"] == "pods")
    assert pods["scope"] == "Namespaced" and pods["singularResource"] == "pod"
    assert pods["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    subs = {s["subresource"]: s["verbs"] for s in pods["subresources"]}
    assert subs == {"status": ["get", "patch", "update"], "log": ["get"],
                    "binding": ["create"], "eviction": ["create"],
                    "exec": ["create", "get"], "attach": ["create", "get"],
                    "portforward": ["create", "get"]}
    nodes = next(r for r in v1["resources"] if r["resource"] == "nodes")
    assert nodes["scope"] == "Cluster" and nodes["shortNames"] == ["no"]


def test_the_v2_list_for_the_named_groups(served: Served) -> None:
    listed = fetch(served, "/apis", AGGREGATED, AGGREGATED)
    groups = {i["metadata"]["name"]: i for i in listed["items"]}
    assert {"storage.k8s.io", "snapshot.storage.k8s.io", "networking.k8s.io",
            "coordination.k8s.io"} <= set(groups)
    (v1,) = groups["storage.k8s.io"]["versions"]
    kinds = {r["resource"]: r["responseKind"]["kind"] for r in v1["resources"]}
    assert kinds["storageclasses"] == "StorageClass"
    assert kinds["volumeattachments"] == "VolumeAttachment"
