"""JSON merge patch (RFC 7386) as kube-apiserver applies it."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import BadRequest
from kubelet_sim.apiserver.patch.merge import apply_merge_patch

DOC: dict[str, Any] = {"metadata": {"name": "s", "labels": {"a": "1", "b": "2"}},
                      "spec": {"list": [1, 2]}}


def test_merge_patch_merges_objects_and_null_deletes() -> None:
    out = apply_merge_patch(DOC, {"metadata": {"labels": {"a": None, "c": "3"}}})
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert DOC["metadata"]["labels"] == {"a": "1", "b": "2"}


def test_merge_patch_replaces_lists_whole() -> None:
    assert apply_merge_patch(DOC, {"spec": {"list": [3]}})["spec"] == {"list": [3]}


def test_merge_patch_drops_the_nulls_inside_a_new_object() -> None:
    out = apply_merge_patch(DOC, {"status": {"phase": "Ready", "reason": None}})
    assert out["status"] == {"phase": "Ready"}


def test_merge_patch_null_of_a_missing_key_is_nothing() -> None:
    assert apply_merge_patch(DOC, {"nope": None}) == DOC


def test_merge_patch_that_is_null_or_a_scalar_is_a_bad_request() -> None:
    for patch in (None, 5, "x", True):
        with pytest.raises(BadRequest) as caught:
            apply_merge_patch(DOC, patch)
        assert caught.value.message == "Invalid JSON Patch"


def test_merge_patch_that_is_a_list_becomes_the_document() -> None:
    assert apply_merge_patch(DOC, [{"a": None, "b": 1}]) == [{"b": 1}]
