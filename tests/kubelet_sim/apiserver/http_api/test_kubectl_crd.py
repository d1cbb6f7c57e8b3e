"""CustomResourceDefinitions with the real kubectl: a definition applied makes its kind
appear in discovery and served with its schema, printer columns and subresources;
deleting it removes the kind. external-snapshotter's CRD folder (from the mirror, when
present) applies without --validate=false and the snapshot kinds then print its
columns, while the simulator's own snapshot roles keep working."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT, running_up, wait_for

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl

CRD_FILE = PROJECT_ROOT / "tests" / "fixtures" / "widgets_crd.yaml"
SNAPSHOTTER = Path("/work/.mirror/kubernetes-csi+external-snapshotter/repo")
SNAPSHOTTER_TAG = "v8.6.0"
WIDGETS = "/apis/stable.example.com/v1/namespaces/default/widgets"

WIDGET = """apiVersion: stable.example.com/v1
kind: Widget
metadata:
  name: {name}
  labels: {{tier: {tier}}}
spec:
  size: 1Gi
  color: {color}
"""


def widget(name: str, color: str = "red", tier: str = "front") -> str:
    return WIDGET.format(name=name, color=color, tier=tier)


def call(served: Served, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    """A raw HTTPS request: (status, JSON body, response headers)."""
    context = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        served.handle.url + path, data=data, method=method,
        headers={"Authorization": f"Bearer {served.handle.credentials.token}",
                 "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, context=context) as answer:
            return answer.status, json.loads(answer.read() or b"null"), answer.headers
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read() or b"null"), failed.headers


@pytest.fixture
def widgets(served: Served) -> Served:
    served.kubectl("apply", "-f", str(CRD_FILE))
    return served


def test_an_applied_definition_is_established_and_listed_by_api_resources(
        widgets: Served) -> None:
    crd = widgets.kubectl_json("get", "crd", "widgets.stable.example.com")
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]} == {
        "NamesAccepted": "True", "Established": "True"}
    assert widgets.kubectl("get", "crd").stdout.split("\n")[0].split() == [
        "NAME", "CREATED", "AT"]
    listed = widgets.kubectl("api-resources", "--api-group=stable.example.com").stdout
    assert listed.splitlines()[1].split() == ["widgets", "wd", "stable.example.com/v1", "true",
                                              "Widget"]
    assert "widgets" in widgets.kubectl("api-resources", "--categories=examples").stdout
    # a second apply of the same file changes nothing
    assert "unchanged" in widgets.kubectl("apply", "-f", str(CRD_FILE)).stdout
    typo = CRD_FILE.read_text().replace("  scope: Namespaced", "  scope: Namespaced\n  scopes: x")
    done = widgets.kubectl("apply", "-f", "-", stdin=typo, check=False)
    assert 'strict decoding error: unknown field "spec.scopes"' in done.stderr


def test_legacy_discovery_lists_every_served_version_the_storage_one_preferred(
        widgets: Served) -> None:
    _, group, _ = call(widgets, "GET", "/apis/stable.example.com")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1"
    _, resources, _ = call(widgets, "GET", "/apis/stable.example.com/v1")
    assert {r["name"] for r in resources["resources"]} == {
        "widgets", "widgets/status", "widgets/scale"}
    scale = next(r for r in resources["resources"] if r["name"] == "widgets/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")


def test_kubectl_get_prints_the_printer_columns(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    lines = widgets.kubectl("get", "widgets").stdout.splitlines()
    assert lines[0].split() == ["NAME", "COLOR", "REPLICAS", "READY", "AGE"]
    assert lines[1].split()[:3] == ["w1", "red", "1"]  # replicas defaulted to 1
    assert widgets.kubectl("get", "wd", "-o", "name").stdout.strip() == \
        "widget.stable.example.com/w1"


def test_a_custom_resource_with_a_wrong_type_is_422_with_the_field_path(
        widgets: Served) -> None:
    bad = widget("w1").replace("color: red", "color: red\n  replicas: three")
    done = widgets.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert done.returncode != 0
    assert ('spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
            'integer: "string"') in done.stderr
    code, status, _ = call(widgets, "POST", WIDGETS, {
        "apiVersion": "stable.example.com/v1", "kind": "Widget", "metadata": {"name": "w2"},
        "spec": {"size": "1Gi", "replicas": "three"}})
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.replicas",
        "message": 'Invalid value: "string": spec.replicas in body must be of type integer: '
                   '"string"'}]
    assert (status["details"]["kind"], status["details"]["group"]) == (
        "Widget", "stable.example.com")


def test_unknown_fields_are_strict_errors_warnings_or_pruned(widgets: Served) -> None:
    unknown = widget("w1").replace("color: red", "color: red\n  bogus: 1")
    done = widgets.kubectl("apply", "-f", "-", stdin=unknown, check=False)
    assert 'strict decoding error: unknown field "spec.bogus"' in done.stderr
    done = widgets.kubectl("apply", "--validate=warn", "-f", "-", stdin=unknown)
    assert 'Warning: unknown field "spec.bogus"' in done.stderr
    assert "bogus" not in widgets.kubectl_json("get", "widget", "w1")["spec"]


def test_the_status_subresource_is_apart_from_the_object(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    widgets.kubectl("patch", "widget", "w1", "--type=merge", "-p",
                    '{"status": {"ready": true}}')
    assert "status" not in widgets.kubectl_json("get", "widget", "w1")
    widgets.kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p",
                    '{"status": {"ready": true, "replicas": 1}}')
    assert widgets.kubectl_json("get", "widget", "w1")["status"] == {"ready": True,
                                                                     "replicas": 1}
    assert widgets.kubectl("get", "widgets").stdout.splitlines()[1].split()[3] == "true"


def test_kubectl_scale_writes_the_spec_replicas_path(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    widgets.kubectl("scale", "widget", "w1", "--replicas=4")
    assert widgets.kubectl_json("get", "widget", "w1")["spec"]["replicas"] == 4
    widgets.kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p",
                    '{"status": {"replicas": 3, "selector": "tier=front"}}')
    code, scale, _ = call(widgets, "GET", f"{WIDGETS}/w1/scale")
    assert code == 200
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["spec"] == {"replicas": 4}
    assert scale["status"] == {"replicas": 3, "selector": "tier=front"}
    code, status, _ = call(widgets, "PUT", f"{WIDGETS}/w1/scale",
                           {**scale, "spec": {"replicas": -1}})
    assert (code, status["details"]["causes"][0]["field"]) == (422, "spec.replicas")


def test_every_served_version_serves_the_stored_objects(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    done = widgets.kubectl("get", "widgets.v1beta1.stable.example.com", "w1", "-o", "json")
    old = json.loads(done.stdout)
    assert old["apiVersion"] == "stable.example.com/v1beta1"
    assert old["spec"]["color"] == "red"
    # a deprecated version answers with its warning, which kubectl prints
    assert "Warning: stable.example.com/v1beta1 Widget is old; use stable.example.com/v1" \
        in done.stderr


def test_label_and_field_selectors_filter_custom_resources(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1", tier="front"))
    widgets.kubectl("apply", "-f", "-", stdin=widget("w2", tier="back"))
    assert widgets.kubectl("get", "wd", "-l", "tier=back", "-o", "name").stdout.split() == [
        "widget.stable.example.com/w2"]
    assert widgets.kubectl("get", "wd", "--field-selector", "metadata.name=w1", "-o",
                           "name").stdout.split() == ["widget.stable.example.com/w1"]


def test_custom_resources_are_json_only(widgets: Served) -> None:
    code, status, _ = call(widgets, "POST", WIDGETS, b"k8s\x00\x0a\x00",
                           {"Content-Type": "application/vnd.kubernetes.protobuf"})
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    code, status, _ = call(widgets, "GET", WIDGETS,
                           headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert (code, status["reason"]) == (406, "NotAcceptable")
    code, status, _ = call(widgets, "PATCH", f"{WIDGETS}/w1", {"spec": {}},
                           {"Content-Type": "application/strategic-merge-patch+json"})
    assert (code, status["message"]) == (415, (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml"))
    code, _, headers = call(widgets, "GET", WIDGETS, headers={
        "Accept": "application/vnd.kubernetes.protobuf, application/json"})
    assert code == 200 and headers["Content-Type"].startswith("application/json")


def test_openapi_v3_publishes_the_definitions_schema(widgets: Served) -> None:
    _, index, _ = call(widgets, "GET", "/openapi/v3")
    assert "apis/stable.example.com/v1" in index["paths"]
    _, document, _ = call(widgets, "GET", "/openapi/v3/apis/stable.example.com/v1")
    schema = document["components"]["schemas"]["com.example.stable.v1.Widget"]
    assert schema["properties"]["spec"]["properties"]["replicas"]["minimum"] == 0
    assert "application/strategic-merge-patch+json" not in json.dumps(document["paths"])


def test_openapi_documents_carry_the_kinds_definitions_paths_and_subresources(
        widgets: Served) -> None:
    _, document, _ = call(widgets, "GET", "/openapi/v3/apis/stable.example.com/v1")
    schemas, paths = document["components"]["schemas"], document["paths"]
    widget_schema = schemas["com.example.stable.v1.Widget"]
    assert widget_schema["properties"]["metadata"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    assert widget_schema["x-kubernetes-group-version-kind"] == [
        {"group": "stable.example.com", "version": "v1", "kind": "Widget"}]
    assert schemas["com.example.stable.v1.WidgetList"]["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/com.example.stable.v1.Widget"}
    one = f"{WIDGETS.replace('/default/', '/{namespace}/')}/{{name}}"
    assert set(paths[f"{one}/status"]) == {"get", "put", "patch", "parameters"}
    scale = paths[f"{one}/scale"]
    assert scale["get"]["operationId"] == "readStableExampleComV1NamespacedWidgetScale"
    assert scale["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas
    _, old, _ = call(widgets, "GET", "/openapi/v3/apis/stable.example.com/v1beta1")
    assert old["components"]["schemas"]["com.example.stable.v1beta1.Widget"][
        "x-kubernetes-preserve-unknown-fields"] is True
    # v2: the same kind as Swagger 2.0 can say it (no anyOf for an int-or-string)
    _, v2, _ = call(widgets, "GET", "/openapi/v2")
    spec = v2["definitions"]["com.example.stable.v1.Widget"]["properties"]["spec"]
    assert spec["properties"]["replicas"]["minimum"] == 0
    assert spec["properties"]["port"] == {"x-kubernetes-int-or-string": True}
    explained = widgets.kubectl("explain", "widgets.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in explained
    # and in v2's protobuf form, with the schema's validation keywords on the wire
    explained = widgets.kubectl("explain", "widgets.spec.color",
                                "--output=plaintext-openapiv2").stdout
    assert "color" in explained and "<string>" in explained


def test_openapi_follows_a_definition_created_changed_and_deleted(served: Served) -> None:
    _, before, _ = call(served, "GET", "/openapi/v3")
    assert "apis/stable.example.com/v1" not in before["paths"]
    served.kubectl("apply", "-f", str(CRD_FILE))
    _, created, _ = call(served, "GET", "/openapi/v3")
    url = created["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"]
    served.kubectl("apply", "-f", "-", stdin=CRD_FILE.read_text().replace(
        "              extra:\n", "              shape:\n                type: string\n"
        "              extra:\n"))
    _, changed, _ = call(served, "GET", "/openapi/v3")
    new_url = changed["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"]
    assert new_url != url
    _, document, _ = call(served, "GET", new_url)
    spec = document["components"]["schemas"]["com.example.stable.v1.Widget"]["properties"][
        "spec"]
    assert spec["properties"]["shape"] == {"type": "string"}
    served.kubectl("delete", "crd", "widgets.stable.example.com")
    _, after, _ = call(served, "GET", "/openapi/v3")
    assert "apis/stable.example.com/v1" not in after["paths"]
    code, _, _ = call(served, "GET", "/openapi/v3/apis/stable.example.com/v1")
    assert code == 404


def test_deleting_the_definition_removes_its_objects_and_its_kind(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    watching = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(widgets.handle.kubeconfig), "get", "widgets", "-w",
         "--output-watch-events", "--request-timeout=60s"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert watching.stdout is not None and "ADDED" in watching.stdout.readline() + \
        watching.stdout.readline()
    widgets.kubectl("delete", "crd", "widgets.stable.example.com")
    # the watch of the kind ends after its objects' DELETED events
    out, _ = watching.communicate(timeout=30)
    assert "DELETED" in out and "w1" in out
    assert "widgets" not in widgets.kubectl("api-resources").stdout
    assert widgets.kubectl("get", "widgets", check=False).returncode != 0
    assert widgets.api.custom.kinds() == []
    code, _, _ = call(widgets, "GET", WIDGETS)
    assert code == 404


def test_a_definition_in_up_serves_its_kind_to_kubectl() -> None:
    with running_up("--nodes", "1") as up:
        up.kubectl("apply", "-f", str(CRD_FILE))
        assert "widgets" in up.kubectl("api-resources", "--api-group=stable.example.com")
        up.kubectl("apply", "-f", "-", stdin=widget("w1"))
        up.kubectl("scale", "widget", "w1", "--replicas=2")
        lines = up.kubectl("get", "widgets").splitlines()
        assert lines[0].split() == ["NAME", "COLOR", "REPLICAS", "READY", "AGE"]
        assert lines[1].split()[:3] == ["w1", "red", "2"]
        up.kubectl("delete", "crd", "widgets.stable.example.com")
        assert "widgets" not in up.kubectl("api-resources")


# -- external-snapshotter's CRDs ---------------------------------------------------------------

def snapshot_crds(directory: Path) -> Path:
    """external-snapshotter's CRD files at the pinned tag, from the mirror."""
    if not (SNAPSHOTTER.exists() and shutil.which("git")):
        pytest.skip("no external-snapshotter mirror")
    names = subprocess.run(["git", "-C", str(SNAPSHOTTER), "ls-tree", "--name-only",
                            SNAPSHOTTER_TAG, "client/config/crd/"], capture_output=True,
                           text=True, check=True).stdout.split()
    directory.mkdir()
    for name in names:
        if name.endswith(".yaml") and "storage.k8s.io_" in name:
            text = subprocess.run(["git", "-C", str(SNAPSHOTTER), "show",
                                   f"{SNAPSHOTTER_TAG}:{name}"], capture_output=True,
                                  text=True, check=True).stdout
            (directory / Path(name).name).write_text(text)
    return directory


SNAPSHOT_COLUMNS = ["NAME", "READYTOUSE", "SOURCEPVC", "SOURCESNAPSHOTCONTENT", "RESTORESIZE",
                    "SNAPSHOTCLASS", "SNAPSHOTCONTENT", "CREATIONTIME", "AGE"]


def test_the_snapshot_crds_apply_and_their_kinds_follow_the_schema(
        served: Served, tmp_path: Path) -> None:
    folder = snapshot_crds(tmp_path / "crd")
    done = served.kubectl("apply", "-f", str(folder))
    assert done.stdout.count("created") == 6
    names = served.kubectl("get", "crd", "-o", "name").stdout.split()
    assert len(names) == 6
    groups = served.kubectl("api-resources", "--api-group=groupsnapshot.storage.k8s.io")
    assert "volumegroupsnapshots" in groups.stdout
    served.kubectl("apply", "-f", "-", stdin=(
        "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\n"
        "metadata: {name: snap}\nspec: {source: {persistentVolumeClaimName: data}}\n"))
    header = served.kubectl("get", "volumesnapshot").stdout.splitlines()[0].split()
    assert header == SNAPSHOT_COLUMNS
    bad = ("apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\n"
           "metadata: {name: bad}\nspec: {source: {persistentVolumeClaimName: 3}}\n")
    done = served.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert "spec.source.persistentVolumeClaimName in body must be of type string" in done.stderr
    assert "unchanged" in served.kubectl("apply", "-f", str(folder)).stdout
    # the OpenAPI now shows the definition's schema for the kind
    crd = served.kubectl_json("get", "crd", "volumesnapshots.snapshot.storage.k8s.io")
    given = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    _, document, _ = call(served, "GET", "/openapi/v3/apis/snapshot.storage.k8s.io/v1")
    published = document["components"]["schemas"]["io.k8s.storage.snapshot.v1.VolumeSnapshot"]
    assert published["description"] == given["description"]
    assert published["properties"]["status"] == given["properties"]["status"]


def test_the_simulators_snapshot_roles_work_under_the_snapshot_crds(tmp_path: Path) -> None:
    folder = snapshot_crds(tmp_path / "crd")
    with running_up() as up:
        up.kubectl("apply", "-f", str(folder))
        up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))
        up.kubectl("apply", "-f", "-", stdin=(
            "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\n"
            "metadata: {name: snaps}\ndriver: csi-mini.example.com\ndeletionPolicy: Delete\n"
            "---\napiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\n"
            "metadata: {name: snap, namespace: default}\n"
            "spec: {volumeSnapshotClassName: snaps, "
            "source: {persistentVolumeClaimName: db-data}}\n"))

        def ready() -> bool:
            snap = json.loads(up.kubectl("get", "volumesnapshot", "snap", "-o", "json"))
            return bool((snap.get("status") or {}).get("readyToUse"))

        wait_for(ready, what="the snapshot ready to use")
        lines = up.kubectl("get", "volumesnapshot").splitlines()
        assert lines[0].split() == SNAPSHOT_COLUMNS
        assert lines[1].split()[:3] == ["snap", "true", "db-data"]
        up.kubectl("delete", "volumesnapshot", "snap")
        wait_for(lambda: not up.kubectl("get", "volumesnapshotcontents", "-o", "name").strip(),
                 what="the snapshot's content deleted")


def test_aggregated_discovery_lists_the_kind_with_its_subresources(widgets: Served) -> None:
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    _, groups, _ = call(widgets, "GET", "/apis", headers={"Accept": aggregated})
    group = next(g for g in groups["items"] if g["metadata"]["name"] == "stable.example.com")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    (resource,) = group["versions"][0]["resources"]
    assert (resource["resource"], resource["scope"], resource["shortNames"],
            resource["categories"]) == ("widgets", "Namespaced", ["wd"], ["examples"])
    assert {s["subresource"]: s["responseKind"]["kind"] for s in resource["subresources"]} == {
        "status": "Widget", "scale": "Scale"}


def test_defaults_added_to_the_schema_later_show_on_read(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    text = CRD_FILE.read_text().replace(
        "              extra:\n",
        "              shape:\n                type: string\n                default: round\n"
        "              extra:\n")
    widgets.kubectl("apply", "-f", "-", stdin=text)
    assert widgets.kubectl_json("get", "widget", "w1")["spec"]["shape"] == "round"


def test_json_patch_and_watch_of_custom_resources(widgets: Served) -> None:
    widgets.kubectl("apply", "-f", "-", stdin=widget("w1"))
    widgets.kubectl("patch", "widget", "w1", "--type=json", "-p",
                    '[{"op": "replace", "path": "/spec/color", "value": "green"}]')
    version = widgets.kubectl_json("get", "widget", "w1")["metadata"]["resourceVersion"]
    widgets.kubectl("label", "widget", "w1", "tier=back", "--overwrite")
    context = ssl.create_default_context(cafile=str(widgets.handle.credentials.ca_cert))
    request = urllib.request.Request(
        f"{widgets.handle.url}{WIDGETS}?watch=1&resourceVersion={version}&timeoutSeconds=1",
        headers={"Authorization": f"Bearer {widgets.handle.credentials.token}"})
    with urllib.request.urlopen(request, context=context) as answer:
        events = [json.loads(line) for line in answer.read().splitlines()]
    assert [(e["type"], e["object"]["metadata"]["labels"]["tier"]) for e in events] == [
        ("MODIFIED", "back")]
    assert events[0]["object"]["spec"]["color"] == "green"
