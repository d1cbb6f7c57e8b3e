"""JSON patch with the rules of evanphx/json-patch v4, which kube-apiserver applies, and
the codes kube-apiserver answers when a patch is malformed or does not apply."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import BadRequest, RequestEntityTooLarge, Unprocessable
from kubelet_sim.apiserver.patch.json_patch import (
    MAX_OPERATIONS,
    NOT_APPLIED,
    apply_json_patch,
    decode_operations,
    explain_failure,
)

DOC: dict[str, Any] = {"metadata": {"name": "s", "labels": {"a": "1"}},
                      "spec": {"items": [10, 20, 30]}}


def patch(doc: Any, *ops: dict[str, Any]) -> Any:
    return apply_json_patch(doc, decode_operations(list(ops), strict_decoding=True))


def failure(doc: Any, *ops: dict[str, Any]) -> str:
    with pytest.raises(Unprocessable) as caught:
        patch(doc, *ops)
    assert caught.value.code == 422 and caught.value.reason == "Invalid"
    assert caught.value.message == NOT_APPLIED
    why = explain_failure(doc, list(ops))
    assert why is not None
    return why


def test_json_patch_replace_of_a_missing_member_adds_it() -> None:
    out = patch({"metadata": {"name": "s"}},
                {"op": "replace", "path": "/metadata/annotations", "value": {"k": "v"}},
                {"op": "replace", "path": "/status", "value": {"readyToUse": True}})
    assert out == {"metadata": {"name": "s", "annotations": {"k": "v"}},
                   "status": {"readyToUse": True}}


def test_json_patch_replace_under_a_missing_parent_fails() -> None:
    assert "missing path" in failure(DOC, {"op": "replace", "path": "/status/x", "value": 1})


def test_json_patch_replace_of_a_missing_array_index_fails() -> None:
    assert "invalid index" in failure(DOC, {"op": "replace", "path": "/spec/items/3",
                                            "value": 1})


def test_json_patch_does_not_change_the_document_it_was_given() -> None:
    patch(DOC, {"op": "remove", "path": "/metadata/labels/a"})
    assert DOC["metadata"]["labels"] == {"a": "1"}


def test_json_patch_add_appends_with_a_dash_and_inserts_at_an_index() -> None:
    out = patch(DOC, {"op": "add", "path": "/spec/items/-", "value": 40},
                {"op": "add", "path": "/spec/items/0", "value": 5},
                {"op": "add", "path": "/spec/items/5", "value": 50})
    assert out["spec"]["items"] == [5, 10, 20, 30, 40, 50]


def test_json_patch_add_past_the_end_of_an_array_fails() -> None:
    assert "invalid index" in failure(DOC, {"op": "add", "path": "/spec/items/4", "value": 1})


def test_json_patch_indexes_are_read_as_go_atoi_reads_them() -> None:
    # leading zeros and a sign are accepted; negative indexes count from the end
    assert patch(DOC, {"op": "replace", "path": "/spec/items/01", "value": 2})["spec"] == \
        {"items": [10, 2, 30]}
    assert patch(DOC, {"op": "remove", "path": "/spec/items/-1"})["spec"] == {"items": [10, 20]}
    assert patch(DOC, {"op": "add", "path": "/spec/items/+0", "value": 1})["spec"] == \
        {"items": [1, 10, 20, 30]}
    assert "invalid syntax" in failure(DOC, {"op": "remove", "path": "/spec/items/x"})
    assert "invalid syntax" in failure(DOC, {"op": "remove", "path": "/spec/items/-"})
    assert "invalid index" in failure(DOC, {"op": "remove", "path": "/spec/items/-4"})


def test_json_patch_remove_of_a_missing_member_fails() -> None:
    assert "nonexistent key" in failure(DOC, {"op": "remove", "path": "/metadata/nope"})


def test_json_patch_test_compares_values_and_a_failed_test_is_422() -> None:
    assert patch(DOC, {"op": "test", "path": "/metadata/labels", "value": {"a": "1"}},
                 {"op": "test", "path": "/metadata/missing", "value": None}) == DOC
    assert "test failed" in failure(DOC, {"op": "test", "path": "/metadata/name",
                                          "value": "other"})
    # numbers compare by their JSON text, as the library compares them
    assert "test failed" in failure({"n": 1}, {"op": "test", "path": "/n", "value": True})


def test_json_patch_move_and_copy() -> None:
    out = patch(DOC, {"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
                {"op": "move", "from": "/spec/items/0", "path": "/spec/first"})
    assert out["metadata"]["annotations"] == {"a": "1"}
    assert out["spec"] == {"items": [20, 30], "first": 10}
    # copy from a missing member carries null; move from one fails
    assert patch(DOC, {"op": "copy", "from": "/nope", "path": "/x"})["x"] is None
    assert "nonexistent key" in failure(DOC, {"op": "move", "from": "/nope", "path": "/x"})


def test_json_patch_replace_of_the_whole_document_needs_an_object_or_array() -> None:
    assert patch(DOC, {"op": "replace", "path": "", "value": {"a": 1}}) == {"a": 1}
    assert "object or array" in failure(DOC, {"op": "replace", "path": "", "value": 3})


def test_json_patch_escapes_slash_and_tilde_in_a_path() -> None:
    out = patch({"metadata": {"labels": {}}},
                {"op": "add", "path": "/metadata/labels/example.com~1a~0b", "value": "x"})
    assert out["metadata"]["labels"] == {"example.com/a~b": "x"}


def test_json_patch_unknown_operation_fails() -> None:
    assert "Unexpected kind: bogus" in failure(DOC, {"op": "bogus", "path": "/x"})


def test_json_patch_body_that_is_not_a_list_is_a_bad_request() -> None:
    with pytest.raises(BadRequest) as caught:
        decode_operations({"op": "add"}, strict_decoding=True)
    assert caught.value.message == ("error decoding patch: json: cannot unmarshal object "
                                    "into Go value of type []handlers.jsonPatchOp")
    with pytest.raises(BadRequest) as caught:
        decode_operations({"op": "add"}, strict_decoding=False)
    assert caught.value.message == ("json: cannot unmarshal object into Go value of type "
                                    "jsonpatch.Patch")
    with pytest.raises(BadRequest):
        decode_operations(["add"], strict_decoding=True)


def test_json_patch_numeric_path_is_a_bad_request_when_decoded_strictly() -> None:
    with pytest.raises(BadRequest) as caught:
        decode_operations([{"op": "add", "path": 5, "value": 1}], strict_decoding=True)
    assert caught.value.message == ("error decoding patch: json: cannot unmarshal number "
                                    "into Go struct field jsonPatchOp.path of type string")
    # fieldValidation=Ignore: the operation decodes, then fails to apply (422)
    ops = decode_operations([{"op": "add", "path": 5, "value": 1}], strict_decoding=False)
    with pytest.raises(Unprocessable):
        apply_json_patch(DOC, ops)


def test_json_patch_with_more_than_ten_thousand_operations_is_too_large() -> None:
    ops = [{"op": "test", "path": "/metadata/name", "value": "s"}] * (MAX_OPERATIONS + 1)
    with pytest.raises(RequestEntityTooLarge) as caught:
        decode_operations(ops, strict_decoding=True)
    assert caught.value.code == 413
    assert caught.value.message == ("Request entity too large: The allowed maximum operations "
                                    "in a JSON patch is 10000, got 10001")
