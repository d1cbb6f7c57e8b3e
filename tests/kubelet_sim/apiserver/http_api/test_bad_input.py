"""Bad input the way kube-apiserver refuses it: a 400 or 422 Status naming what is wrong,
and nothing changed — DeleteOptions of the wrong types, query integers Go cannot read,
fields of the wrong JSON type anywhere in a built-in kind."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kubelet_sim.apiserver.http_api.conftest import Served
from tests.kubelet_sim.apiserver.http_api.test_request_forms import PODS, call_json, pod


@pytest.mark.parametrize(("options", "said"), [
    ({"dryRun": "All"}, "DeleteOptions.dryRun of type []string"),
    ("x", "into Go value of type v1.DeleteOptions"),
    ({"gracePeriodSeconds": 1.5}, "number 1.5 into Go struct field "
                                  "DeleteOptions.gracePeriodSeconds of type int64"),
    ({"gracePeriodSeconds": "abc"}, "DeleteOptions.gracePeriodSeconds of type int64"),
    ({"preconditions": "x"}, "DeleteOptions.preconditions of type v1.Preconditions"),
])
def test_delete_options_of_the_wrong_type_are_400_and_delete_nothing(
        served: Served, options: Any, said: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    code, status = call_json(served, "DELETE", f"{PODS}/keep", options)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert said in status["message"]
    assert call_json(served, "GET", f"{PODS}/keep")[0] == 200


@pytest.mark.parametrize("query", [
    "gracePeriodSeconds=99999999999999999999999",
    "gracePeriodSeconds=abc",
])
def test_a_query_integer_go_cannot_read_is_400(served: Served, query: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    code, status = call_json(served, "DELETE", f"{PODS}/keep?{query}")
    assert (code, status["reason"]) == (400, "BadRequest")
    assert call_json(served, "GET", f"{PODS}/keep")[0] == 200


def test_a_watch_timeout_of_400_digits_is_400(served: Served) -> None:
    code, status = call_json(served, "GET", f"{PODS}?watch=1&timeoutSeconds={'9' * 400}")
    assert (code, status["kind"]) == (400, "Status")


@pytest.mark.parametrize(("path", "patch"), [
    ("/api/v1/nodes/node-1", {"spec": {"taints": "x"}}),
    (f"{PODS}/p", {"spec": {"affinity": "x"}}),
    (f"{PODS}/p", {"spec": {"nodeSelector": ["a"]}}),
    (f"{PODS}/p", {"spec": {"tolerations": "x"}}),
    (f"{PODS}/p", {"spec": {"terminationGracePeriodSeconds": "abc"}}),
    (f"{PODS}/p", {"metadata": "x"}),
])
def test_a_field_of_the_wrong_type_is_refused_naming_it(
        served: Served, path: str, patch: dict[str, Any]) -> None:
    assert call_json(served, "POST", PODS, pod("p"))[0] == 201
    before = call_json(served, "GET", path)[1]
    code, status = call_json(served, "PATCH", path, patch,
                             content_type="application/merge-patch+json")
    assert code in (400, 422) and status["kind"] == "Status", status
    assert "cannot unmarshal" in status["message"]
    after = call_json(served, "GET", path)[1]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
