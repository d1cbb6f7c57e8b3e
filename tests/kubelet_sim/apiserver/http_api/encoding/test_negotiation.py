"""Which wire a request is answered in: Accept ranges by q-value, then specificity, then
order, as kube-apiserver negotiates; protobuf only for kinds that have a protobuf form."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from kubelet_sim.apiserver.http.encoding import negotiation
from kubelet_sim.apiserver.http.resources import lookup

PODS = lookup("", "v1", "pods")
SNAPSHOTS = lookup("snapshot.storage.k8s.io", "v1", "volumesnapshots")
PROTOBUF = negotiation.PROTOBUF


def _answered_in_protobuf(accept: str, resource: object = PODS) -> bool:
    request = make_mocked_request("GET", "/api/v1/pods", headers={"Accept": accept})
    assert negotiation.negotiate(request, resource) is None  # type: ignore[arg-type]
    return negotiation.output(request).media == PROTOBUF


@pytest.mark.parametrize(("accept", "protobuf"), [
    (f"{PROTOBUF}, */*", True),  # client-go
    (f"{PROTOBUF},application/json", True),  # kubectl create
    (f"application/json, {PROTOBUF}", False),  # a tie: the header's order
    (f"*/*, {PROTOBUF}", True),  # a tie on q: the more specific range
    (f"{PROTOBUF};q=0.5, application/json", False),
    (f"application/json;q=0.1, {PROTOBUF};q=0.9", True),
    (f"{PROTOBUF};q=0, */*", False),
    (f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", True),
    (f"{PROTOBUF};as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/json", False),
    (f"{PROTOBUF};as=Table;g=meta.k8s.io;v=v1,application/json", False),  # no protobuf Table
    ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", False),
    ("", False),
])
def test_the_preferred_acceptable_range_decides(accept: str, protobuf: bool) -> None:
    assert _answered_in_protobuf(accept) is protobuf


def test_a_kind_without_a_protobuf_form_is_answered_in_json() -> None:
    assert _answered_in_protobuf(f"{PROTOBUF}, */*", SNAPSHOTS) is False


def test_protobuf_alone_for_a_kind_without_a_protobuf_form_is_406() -> None:
    request = make_mocked_request("GET", "/x", headers={"Accept": PROTOBUF})
    refused = negotiation.negotiate(request, SNAPSHOTS)
    assert isinstance(refused, web.Response) and refused.status == 406
    assert refused.body is not None and b"NotAcceptable" in bytes(refused.body)  # type: ignore[arg-type]
