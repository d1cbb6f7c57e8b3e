"""ConfigMaps and the RBAC kinds through the in-process API server: kube-apiserver's
validation and its words, the immutable ConfigMap, a binding's fixed roleRef."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock

RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def config_map(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def test_a_config_map_keeps_data_and_binary_data(api: APIServer) -> None:
    made = api.create(config_map("settings", data={"a.conf": "x=1"}, binaryData={"b": "aGk="}))
    assert made.to_dict()["data"] == {"a.conf": "x=1"}
    assert made.to_dict()["binaryData"] == {"b": "aGk="}


def test_config_map_keys_must_be_config_keys(api: APIServer) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.create(config_map("bad", data={"a b": "1", "..x": "2"}))
    assert [str(e) for e in refused.value.errors] == [
        "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric "
        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
        "regex used for validation is '[-._a-zA-Z0-9]+')",
        "data[..x]: Invalid value: \"..x\": must not start with '..'"]


def test_a_key_may_not_be_in_data_and_binary_data(api: APIServer) -> None:
    with pytest.raises(InvalidObject, match=r'data\[k\]: Invalid value: "k": duplicate of key '
                                            "present in binaryData"):
        api.create(config_map("dup", data={"k": "1"}, binaryData={"k": "aGk="}))


def test_a_config_map_over_one_mebibyte_is_refused(api: APIServer) -> None:
    with pytest.raises(InvalidObject, match="Too long: may not be more than 1048576 bytes"):
        api.create(config_map("big", data={"a": "x" * (1024 * 1024), "b": "y"}))


def test_an_immutable_config_map_keeps_its_data(api: APIServer) -> None:
    api.create(config_map("fixed", data={"a": "1"}, immutable=True))
    with pytest.raises(InvalidObject) as refused:
        api.patch("ConfigMap", "fixed", {"data": {"a": "2"}, "immutable": False}, "default")
    assert [str(e) for e in refused.value.errors] == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set"]
    labelled = api.patch("ConfigMap", "fixed", {"metadata": {"labels": {"x": "y"}}}, "default")
    assert labelled.labels == {"x": "y"}


def test_bindings_are_defaulted_and_their_role_ref_is_fixed(api: APIServer) -> None:
    binding = api.create({"apiVersion": RBAC, "kind": "RoleBinding",
                          "metadata": {"name": "read"},
                          "roleRef": {"kind": "Role", "name": "reader"},
                          "subjects": [{"kind": "ServiceAccount", "name": "default"},
                                       {"kind": "User", "name": "jane"}]})
    assert binding.body["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert [s["apiGroup"] for s in binding.body["subjects"]] == ["", "rbac.authorization.k8s.io"]
    with pytest.raises(InvalidObject, match=r"roleRef: Invalid value: .*cannot change roleRef"):
        api.patch("RoleBinding", "read", {"roleRef": {"name": "writer"}}, "default")


def test_rbac_validation_speaks_as_kube_apiserver(api: APIServer) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.create({"apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "x"},
                    "roleRef": {"kind": "Role", "name": "r"}})
    assert refused.value.message == (
        'ClusterRoleBinding.rbac.authorization.k8s.io "x" is invalid: roleRef.kind: '
        'Unsupported value: "Role": supported values: "ClusterRole"')
    with pytest.raises(InvalidObject, match=r"rules\[0\].verbs: Required value"):
        api.create({"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "r"},
                    "rules": [{"apiGroups": [""], "resources": ["pods"]}]})
