"""Patch and server-side apply through the real kubectl (v1.35) and raw HTTPS: JSON patch
with kube-apiserver's library rules, managedFields on every write, apply with two
managers, the conflict and ``--force-conflicts``, and a 4xx Status for every malformed
patch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.up_process import running_up

from .conftest import POD, Served, needs_kubectl
from .test_python_client import raw

pytestmark = needs_kubectl
LEASE = """apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock}
spec: {holderIdentity: a}
"""
POD_PATH = "/api/v1/namespaces/default/pods/web"


def managers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def test_json_patch_replace_of_missing_annotations_adds_them(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=LEASE)
    served.kubectl("patch", "lease", "lock", "--type=json", "-p",
                   '[{"op":"replace","path":"/metadata/annotations","value":{"a":"b"}}]')
    lease = served.kubectl_json("get", "lease", "lock")
    assert lease["metadata"]["annotations"] == {"a": "b"}


def test_a_failed_json_patch_test_is_invalid(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=LEASE)
    done = served.kubectl("patch", "lease", "lock", "--type=json", "-p",
                          '[{"op":"test","path":"/spec/holderIdentity","value":"b"}]',
                          check=False)
    assert done.returncode == 1
    assert ("The request is invalid: the server rejected our request due to an error in "
            "our request") in done.stderr


def test_every_write_records_its_manager_in_managed_fields(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=POD)
    served.kubectl("label", "pod", "web", "tier=front")
    served.kubectl("patch", "pod", "web", "--type=merge", "-p",
                   '{"metadata":{"annotations":{"note":"x"}}}')
    pod = json.loads(served.kubectl("get", "pod", "web", "-o", "json",
                                    "--show-managed-fields").stdout)
    found = managers(pod)
    assert {m: e["operation"] for m, e in found.items()} == {
        "kubectl-create": "Update", "kubectl-label": "Update", "kubectl-patch": "Update"}
    assert found["kubectl-label"]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:tier": {}}}}
    assert found["kubectl-patch"]["fieldsV1"] == {
        "f:metadata": {"f:annotations": {".": {}, "f:note": {}}}}
    created = found["kubectl-create"]["fieldsV1"]
    assert created["f:spec"]["f:containers"]['k:{"name":"c"}']["f:image"] == {}
    assert "f:restartPolicy" in created["f:spec"]  # defaulted at create: the creator's
    assert "f:status" not in created
    # kubectl hides them unless asked
    assert "managedFields" not in served.kubectl_json("get", "pod", "web")["metadata"]


def test_apply_server_side_with_two_managers_conflicts_then_force_takes_over(
        served: Served) -> None:
    first = served.kubectl("apply", "--server-side", "-f", "-", stdin=POD)
    assert first.stdout.strip() == "pod/web serverside-applied"
    again = served.kubectl("apply", "--server-side", "-f", "-", stdin=POD)
    assert again.stdout.strip() == "pod/web serverside-applied"
    other = POD.replace("image: busybox", "image: busybox:2")
    refused = served.kubectl("apply", "--server-side", "--field-manager", "other", "-f", "-",
                             stdin=other, check=False)
    assert refused.returncode == 1
    assert ('Apply failed with 1 conflict: conflict with "kubectl": '
            '.spec.containers[name="c"].image') in refused.stderr
    served.kubectl("apply", "--server-side", "--field-manager", "other", "--force-conflicts",
                   "-f", "-", stdin=other)
    pod = json.loads(served.kubectl("get", "pod", "web", "-o", "json",
                                    "--show-managed-fields").stdout)
    assert pod["spec"]["containers"][0]["image"] == "busybox:2"
    found = managers(pod)
    assert found["kubectl"]["operation"] == found["other"]["operation"] == "Apply"
    mine = found["other"]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert "f:image" in mine
    theirs = found["kubectl"]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert "f:image" not in theirs


def test_apply_conflict_is_a_409_status_listing_fields_and_managers(served: Served) -> None:
    served.kubectl("apply", "--server-side", "-f", "-", stdin=POD)
    config = POD.replace("labels: {app: web}", "labels: {app: api}").encode()
    code, body = raw(served, POD_PATH + "?fieldManager=other", token=_token(served),
                     method="PATCH", body=config, content_type="application/apply-patch+yaml")
    assert code == 409 and body["reason"] == "Conflict"
    assert body["message"] == ('Apply failed with 1 conflict: conflict with "kubectl": '
                               '.metadata.labels.app')
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                          "message": 'conflict with "kubectl"',
                                          "field": ".metadata.labels.app"}]


def test_apply_creates_an_absent_object(served: Served) -> None:
    code, body = raw(served, POD_PATH + "?fieldManager=tool", token=_token(served),
                     method="PATCH", body=POD.encode(),
                     content_type="application/apply-patch+yaml")
    assert code == 201 and body["metadata"]["name"] == "web"
    assert managers(body)["tool"]["operation"] == "Apply"


def _token(served: Served) -> str:
    return served.handle.credentials.token


@pytest.mark.parametrize(("content_type", "body", "query", "code"), [
    ("application/json-patch+json", '[{"op":"add","path":5,"value":1}]', "", 400),
    ("application/json-patch+json", '[{"op":"add","path":5,"value":1}]',
     "?fieldValidation=Ignore", 422),
    ("application/json-patch+json", '{"op":"add","path":"/x"}', "", 400),
    ("application/json-patch+json", '["add"]', "", 400),
    ("application/json-patch+json", '[{"op":"remove","path":"/metadata/nope"}]', "", 422),
    ("application/json-patch+json", '[{"op":"replace","path":"/spec","value":"x"}]', "", 422),
    ("application/merge-patch+json", "null", "", 400),
    ("application/merge-patch+json", "[1]", "", 422),
    ("application/strategic-merge-patch+json", '{"spec":{"$patch":"bogus"}}', "", 400),
    ("application/strategic-merge-patch+json",
     '{"spec":{"containers":[{"name":"c","$patch":"bogus"}]}}', "", 400),
    ("application/strategic-merge-patch+json",
     '{"spec":{"$setElementOrder/containers":"c"}}', "", 400),
    ("application/strategic-merge-patch+json",
     '{"spec":{"containers":[{"image":"no-name"}]}}', "", 400),
    ("application/strategic-merge-patch+json", '{"metadata":{"labels":{"a":"b"}}}',
     "?force=true", 422),
    ("application/strategic-merge-patch+json", "[]", "", 400),
    ("application/apply-patch+yaml", "kind: [unclosed", "?fieldManager=m", 400),
    ("application/apply-patch+yaml", "- a\n- b\n", "?fieldManager=m", 400),
    ("application/apply-patch+yaml", POD, "", 422),
    ("application/apply-patch+yaml", POD.replace("apiVersion: v1", "apiVersion: v2"),
     "?fieldManager=m", 400),
    ("application/apply-patch+yaml", POD, "?fieldManager=m&force=maybe", 400),
    ("text/plain", "{}", "", 415),
])
def test_every_malformed_patch_is_a_4xx_status(served: Served, content_type: str, body: str,
                                               query: str, code: int) -> None:
    served.kubectl("create", "-f", "-", stdin=POD)
    answer, status = raw(served, POD_PATH + query, token=_token(served), method="PATCH",
                         body=body.encode(), content_type=content_type)
    assert (answer, status["kind"], status["code"]) == (code, "Status", code), status


def test_apply_without_field_manager_is_invalid_patch_options(served: Served) -> None:
    code, body = raw(served, POD_PATH, token=_token(served), method="PATCH",
                     body=POD.encode(), content_type="application/apply-patch+yaml")
    assert code == 422 and body["reason"] == "Invalid"
    assert body["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                               'Required value: is required for apply patch')
    assert body["details"]["kind"] == "PatchOptions"


def test_custom_resources_take_no_strategic_merge_patch(served: Served) -> None:
    code, body = raw(served, "/apis/snapshot.storage.k8s.io/v1/namespaces/default/"
                     "volumesnapshots/snap", token=_token(served), method="PATCH",
                     body=b"{}", content_type="application/strategic-merge-patch+json")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml")


def test_kubectl_patch_and_server_side_apply_against_up() -> None:
    with running_up() as up:
        up.kubectl("create", "-f", "-", stdin=LEASE)
        up.kubectl("patch", "lease", "lock", "--type=json", "-p",
                   '[{"op":"replace","path":"/metadata/annotations","value":{"a":"b"}}]')
        assert json.loads(up.kubectl("get", "lease", "lock", "-o", "json"))["metadata"][
            "annotations"] == {"a": "b"}
        assert up.kubectl("apply", "--server-side", "-f", "-", stdin=POD).strip() == \
            "pod/web serverside-applied"
        other = POD.replace("labels: {app: web}", "labels: {app: web, tier: back}")
        with pytest.raises(AssertionError, match="conflict with \"kubectl\""):
            up.kubectl("apply", "--server-side", "--field-manager", "other", "-f", "-",
                       stdin=other.replace("image: busybox", "image: busybox:2"))
        up.kubectl("apply", "--server-side", "--field-manager", "other", "--force-conflicts",
                   "-f", "-", stdin=other.replace("image: busybox", "image: busybox:2"))
        pod = json.loads(up.kubectl("get", "pod", "web", "-o", "json",
                                    "--show-managed-fields"))
        assert pod["metadata"]["labels"] == {"app": "web", "tier": "back"}
        assert {"kubectl", "other"} <= set(managers(pod))


def test_a_patch_carrying_a_stale_resource_version_is_a_conflict(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=POD)
    served.kubectl("label", "pod", "web", "tier=front")
    code, body = raw(served, POD_PATH, token=_token(served), method="PATCH",
                     body=b'{"metadata":{"resourceVersion":"1","labels":{"x":"y"}}}',
                     content_type="application/merge-patch+json")
    assert code == 409 and body["reason"] == "Conflict"


def test_server_side_apply_after_client_side_apply_moves_on_without_conflict(
        served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    served.kubectl("apply", "--server-side", "-f", "-",
                   stdin=POD.replace("labels: {app: web}", "labels: {app: api}"))
    pod = json.loads(served.kubectl("get", "pod", "web", "-o", "json",
                                    "--show-managed-fields").stdout)
    assert pod["metadata"]["labels"] == {"app": "api"}
    assert managers(pod)["kubectl"]["operation"] == "Apply"
    assert "kubectl-client-side-apply" not in managers(pod)


def test_a_body_over_three_mebibytes_is_413(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=POD)
    big = json.dumps({"metadata": {"annotations": {"a": "x" * (3 * 1024 * 1024)}}})
    code, body = raw(served, POD_PATH, token=_token(served), method="PATCH",
                     body=big.encode(), content_type="application/merge-patch+json")
    assert code == 413 and body["reason"] == "RequestEntityTooLarge"
    assert body["message"] == "Request entity too large: limit is 3145728"


CONTENT = """apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata: {name: snapcontent-1}
spec:
  deletionPolicy: Delete
  driver: csi-mini.example.com
  source: {volumeHandle: vol-1}
  volumeSnapshotRef: {name: snap, namespace: default}
"""


def test_csi_snapshotter_json_patches_apply_to_a_content_without_annotations_or_status(
        served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=CONTENT)
    served.kubectl("patch", "volumesnapshotcontent", "snapcontent-1", "--type=json", "-p",
                   '[{"op":"replace","path":"/metadata/annotations","value":{"a":"b"}}]')
    served.kubectl("patch", "volumesnapshotcontent", "snapcontent-1", "--subresource=status",
                   "--type=json", "-p", '[{"op":"replace","path":"/status","value":'
                   '{"readyToUse":true,"snapshotHandle":"h"}}]')
    content = json.loads(served.kubectl("get", "volumesnapshotcontent", "snapcontent-1", "-o",
                                        "json", "--show-managed-fields").stdout)
    assert content["metadata"]["annotations"] == {"a": "b"}
    assert content["status"] == {"readyToUse": True, "snapshotHandle": "h"}
    [status_writer] = [e for e in content["metadata"]["managedFields"]
                       if e.get("subresource") == "status"]
    assert status_writer["fieldsV1"] == {
        "f:status": {".": {}, "f:readyToUse": {}, "f:snapshotHandle": {}}}


def test_a_resource_version_in_an_apply_configuration_is_a_precondition(
        served: Served) -> None:
    served.kubectl("apply", "--server-side", "-f", "-", stdin=POD)
    stale = POD.replace("  name: web\n", '  name: web\n  resourceVersion: "1"\n')
    code, body = raw(served, POD_PATH + "?fieldManager=kubectl", token=_token(served),
                     method="PATCH", body=stale.encode(),
                     content_type="application/apply-patch+yaml")
    assert code == 409 and body["reason"] == "Conflict"
    served.kubectl("delete", "pod", "web")  # unscheduled: gone at once
    code, body = raw(served, POD_PATH + "?fieldManager=kubectl", token=_token(served),
                     method="PATCH", body=stale.encode(),
                     content_type="application/apply-patch+yaml")
    assert code == 404 and body["reason"] == "NotFound"  # no create with a resourceVersion
