"""The ServiceAccount admission plugin as kube-apiserver runs it on a Pod create: the
``default`` account, the refusal of a missing one, the ``kube-api-access-*`` projected
volume mounted in every init and regular container, automount opt-outs, pull secrets,
mountable-secret enforcement and the mirror-pod rules."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.service_account_admission import (
    MOUNT_PATH,
    VOLUME_PREFIX,
    wait_for_service_account,
)
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    server = APIServer(clock=FakeClock(), admission_plugins=["ServiceAccount"])
    server.create(new("ServiceAccount", "default", "default"))
    return server


def pod(name: str = "web", annotations: dict[str, str] | None = None, **spec: Any) -> Resource:
    return new("Pod", name, "default", annotations=annotations,
               spec={"containers": [{"name": "c", "image": "nginx"}], **spec})


def token_volumes(obj: Resource) -> list[JSON]:
    return [v for v in obj.spec.get("volumes") or [] if v["name"].startswith(VOLUME_PREFIX)]


def mounts_at_token_path(container: JSON) -> list[JSON]:
    return [m for m in container.get("volumeMounts") or [] if m["mountPath"] == MOUNT_PATH]


def test_a_pod_without_a_service_account_gets_default_and_the_api_access_volume(
        api: APIServer) -> None:
    made = api.create(pod(initContainers=[{"name": "init", "image": "busybox"}],
                          ephemeralContainers=[]))
    assert made.spec["serviceAccountName"] == "default"
    [volume] = token_volumes(made)
    assert len(volume["name"]) == len(VOLUME_PREFIX) + 5
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}
    for container in (*made.spec["initContainers"], *made.spec["containers"]):
        assert mounts_at_token_path(container) == [
            {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}]


def test_the_deprecated_service_account_field_names_the_account_and_mirrors_it(
        api: APIServer) -> None:
    api.create(new("ServiceAccount", "robot", "default"))
    made = api.create(pod(serviceAccount="robot"))
    assert (made.spec["serviceAccountName"], made.spec["serviceAccount"]) == ("robot", "robot")
    assert api.create(pod("plain")).spec["serviceAccount"] == "default"


def test_a_pod_naming_a_missing_service_account_is_forbidden(api: APIServer) -> None:
    with pytest.raises(ObjectForbidden) as refused:
        api.create(pod(serviceAccountName="robot"))
    assert refused.value.code == 403
    assert str(refused.value) == ('pods "web" is forbidden: error looking up service account '
                                  'default/robot: serviceaccount "robot" not found')


def test_a_generated_name_is_refused_under_its_prefix(api: APIServer) -> None:
    sent = pod(serviceAccountName="robot")
    sent.metadata.name, sent.metadata.generate_name = "", "web-"
    with pytest.raises(ObjectForbidden, match=r'^pods "web-" is forbidden'):
        api.create(sent)


@pytest.mark.parametrize(("on_pod", "on_account", "mounted"), [
    (False, None, False), (None, False, False), (True, False, True), (False, True, False),
    (None, None, True)])
def test_automount_follows_the_pod_then_the_service_account(
        api: APIServer, on_pod: bool | None, on_account: bool | None, mounted: bool) -> None:
    account = new("ServiceAccount", "robot", "default")
    if on_account is not None:
        account.body["automountServiceAccountToken"] = on_account
    api.create(account)
    spec: dict[str, Any] = {"serviceAccountName": "robot"}
    if on_pod is not None:
        spec["automountServiceAccountToken"] = on_pod
    made = api.create(pod(**spec))
    assert bool(token_volumes(made)) is mounted
    assert bool(mounts_at_token_path(made.spec["containers"][0])) is mounted


def test_a_container_with_its_own_mount_at_the_token_path_keeps_it(api: APIServer) -> None:
    own = {"name": "mine", "mountPath": MOUNT_PATH}
    made = api.create(pod(containers=[{"name": "c", "image": "nginx", "volumeMounts": [own]},
                                      {"name": "d", "image": "nginx"}],
                          volumes=[{"name": "mine", "emptyDir": {}}]))
    assert mounts_at_token_path(made.spec["containers"][0]) == [own]
    [volume] = token_volumes(made)
    assert mounts_at_token_path(made.spec["containers"][1])[0]["name"] == volume["name"]


def test_no_container_needing_the_token_adds_no_volume(api: APIServer) -> None:
    made = api.create(pod(containers=[{"name": "c", "image": "nginx", "volumeMounts": [
        {"name": "mine", "mountPath": MOUNT_PATH}]}], volumes=[{"name": "mine", "emptyDir": {}}]))
    assert token_volumes(made) == []


def test_an_existing_kube_api_access_volume_is_mounted_not_added_again(api: APIServer) -> None:
    mine = {"name": "kube-api-access-mine", "emptyDir": {}}
    made = api.create(pod(volumes=[mine]))
    assert [v["name"] for v in made.spec["volumes"]] == ["kube-api-access-mine"]
    assert mounts_at_token_path(made.spec["containers"][0])[0]["name"] == "kube-api-access-mine"


def test_the_service_accounts_pull_secrets_go_to_a_pod_without_any(api: APIServer) -> None:
    account = new("ServiceAccount", "robot", "default")
    account.body["imagePullSecrets"] = [{"name": "registry"}]
    api.create(account)
    assert api.create(pod(serviceAccountName="robot")).spec["imagePullSecrets"] == [
        {"name": "registry"}]
    kept = api.create(pod("own", serviceAccountName="robot", imagePullSecrets=[{"name": "x"}]))
    assert kept.spec["imagePullSecrets"] == [{"name": "x"}]


def test_an_update_is_not_mutated(api: APIServer) -> None:
    made = api.create(pod())
    changed = made.copy()
    changed.spec["containers"][0]["volumeMounts"] = []
    with pytest.raises(Exception) as refused:  # pod spec updates are refused by validation,
        api.update(changed)                  # never re-admitted with a token mount
    assert "Forbidden: pod updates may not change" in str(refused.value)


def test_enforced_mountable_secrets_limit_what_the_pod_uses(api: APIServer) -> None:
    account = new("ServiceAccount", "strict", "default",
                  annotations={"kubernetes.io/enforce-mountable-secrets": "true"})
    account.body["secrets"] = [{"name": "allowed"}]
    api.create(account)
    api.create(pod("ok", serviceAccountName="strict",
                   volumes=[{"name": "s", "secret": {"secretName": "allowed"}}]))
    with pytest.raises(ObjectForbidden) as refused:
        api.create(pod("no", serviceAccountName="strict",
                       volumes=[{"name": "s", "secret": {"secretName": "other"}}]))
    assert refused.value.why == ('volume with secret.secretName="other" is not allowed because '
                                 "service account strict does not reference that secret")
    with pytest.raises(ObjectForbidden) as refused:
        api.create(pod("env", serviceAccountName="strict", containers=[
            {"name": "c", "image": "nginx", "envFrom": [{"secretRef": {"name": "other"}}]}]))
    assert refused.value.why == ('container c with envFrom referencing secret.secretName="other" '
                                 "is not allowed because service account strict does not "
                                 "reference that secret")


MIRROR = {"kubernetes.io/config.mirror": "hash"}


def test_a_mirror_pod_is_left_alone() -> None:
    api = APIServer(clock=FakeClock(), admission_plugins=["ServiceAccount"])  # no account at all
    made = api.create(pod(annotations=MIRROR))
    assert "serviceAccountName" not in made.spec and token_volumes(made) == []


@pytest.mark.parametrize(("spec", "why"), [
    ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
    ({"volumes": [{"name": "s", "secret": {"secretName": "x"}}]},
     "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "t", "projected": {"sources": [
        {"serviceAccountToken": {"path": "t"}}]}}]},
     "a mirror pod may not use ServiceAccountToken volume projections"),
])
def test_a_mirror_pod_may_not_use_accounts_secrets_or_tokens(
        api: APIServer, spec: JSON, why: str) -> None:
    with pytest.raises(ObjectForbidden) as refused:
        api.create(pod(annotations=MIRROR, **spec))
    assert refused.value.why == why


def test_the_plugin_is_off_unless_asked() -> None:
    made = APIServer(clock=FakeClock()).create(pod())
    assert "serviceAccountName" not in made.spec and "volumes" not in made.spec


def test_a_missing_default_account_is_looked_up_again_ten_times() -> None:
    slept: list[float] = []
    wait_for_service_account(lambda ns, name: None, pod(), slept.append)
    assert len(slept) == 9 and all(0.1 <= s <= 0.2 for s in slept)
    appears: list[Resource | None] = [None, None, new("ServiceAccount", "default", "default")]
    slept.clear()
    wait_for_service_account(lambda ns, name: appears.pop(0), pod(), slept.append)
    assert len(slept) == 2


def test_another_missing_account_is_not_waited_for() -> None:
    slept: list[float] = []
    wait_for_service_account(lambda ns, name: None, pod(serviceAccountName="robot"),
                             slept.append)
    assert slept == []
