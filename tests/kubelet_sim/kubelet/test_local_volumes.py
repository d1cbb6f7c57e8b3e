"""The volumes the kubelet makes itself, as files under ``pods/<uid>/volumes``: emptyDir,
configMap, secret, downwardAPI, projected (with a ServiceAccount token) and hostPath,
their modes and the kubelet's failure messages, and how a running pod's files follow
the objects they come from (fake clock throughout)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.api.quantity import Quantity
from kubelet_sim.apiserver.http.token_signer import TokenSigner
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.atomic_writer import DATA_DIR_NAME
from kubelet_sim.kubelet.local_volumes import LocalVolumes, remove_orphaned_pod_dirs
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.service_account_tokens import TokenManager
from kubelet_sim.testing.fake_clock import FakeClock


@dataclass
class Node:
    api: APIServer
    clock: FakeClock
    signer: TokenSigner
    volumes: LocalVolumes
    root: Path

    def pod(self, *volumes: JSON, **spec: Any) -> Resource:
        pod = builders.pod("web", node_name="node-1")
        pod.spec["volumes"] = list(volumes)
        pod.spec.update(spec)
        return self.api.create(pod)

    def dir(self, pod: Resource, source: str, name: str) -> Path:
        return self.volumes.volume_dir(pod.metadata.uid, source, name)


@pytest.fixture(scope="module")
def signer() -> TokenSigner:
    return TokenSigner()  # (an RSA key: made once)


@pytest.fixture
def node(tmp_path: Path, signer: TokenSigner) -> Node:
    clock = FakeClock()
    api = APIServer(clock=clock)
    api.token_signer = signer
    api.create(builders.node("node-1", "10.244.1.0/24", "10.0.0.11"))
    api.create(new("ServiceAccount", "default", "default"))
    client = as_client(api)
    volumes = LocalVolumes(client, KubeletPaths(tmp_path / "kubelet"), "node-1",
                           tmp_path / "rootfs", clock, TokenManager(client, clock))
    return Node(api, clock, signer, volumes, tmp_path / "rootfs")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def config_map(name: str = "app-config", **data: str) -> Resource:
    return new("ConfigMap", name, "default", data=data)


# -- emptyDir ----------------------------------------------------------------------------


async def test_an_empty_dir_is_an_empty_world_writable_directory_under_the_plugin_dir(
        node: Node) -> None:
    pod = node.pod({"name": "scratch", "emptyDir": {}},
                   {"name": "fast", "emptyDir": {"medium": "Memory"}})

    assert await node.volumes.set_up(pod) == []

    for name in ("scratch", "fast"):
        directory = node.dir(pod, "emptyDir", name)
        assert directory.parent.name == "kubernetes.io~empty-dir"
        assert directory.is_dir() and not any(directory.iterdir())
        assert mode(directory) == 0o777


async def test_an_empty_dir_over_its_size_limit_is_reported_with_the_eviction_message(
        node: Node) -> None:
    pod = node.pod({"name": "scratch", "emptyDir": {"sizeLimit": "1Ki"}})
    await node.volumes.set_up(pod)
    assert node.volumes.empty_dir_over_limit(pod) == []

    (node.dir(pod, "emptyDir", "scratch") / "big").write_bytes(b"x" * 2048)

    assert node.volumes.empty_dir_over_limit(pod) == [
        'Usage of EmptyDir volume "scratch" exceeds the limit "1Ki". ']


# -- configMap ---------------------------------------------------------------------------


async def test_a_config_map_volume_has_a_file_per_key_through_the_atomic_writer_links(
        node: Node) -> None:
    node.api.create(config_map(**{"app.conf": "debug=true\n", "level": "info"}))
    pod = node.pod({"name": "config", "configMap": {"name": "app-config"}})

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "configMap", "config")
    assert directory.parent.name == "kubernetes.io~configmap"
    assert (directory / "app.conf").read_text() == "debug=true\n"
    assert os.readlink(directory / "app.conf") == "..data/app.conf"
    data_target = os.readlink(directory / DATA_DIR_NAME)
    assert data_target.startswith("..2025_01_01_00_00_00.")
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["..data", data_target, "app.conf", "level"])
    assert mode(directory / data_target / "level") == 0o644


async def test_config_map_items_choose_keys_paths_and_modes(node: Node) -> None:
    node.api.create(config_map(a="1", b="2"))
    pod = node.pod({"name": "config", "configMap": {
        "name": "app-config", "defaultMode": 0o400,
        "items": [{"key": "a", "path": "dir/first"}, {"key": "b", "path": "second",
                                                       "mode": 0o600}]}})

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "configMap", "config")
    assert sorted(p.name for p in directory.iterdir() if not p.name.startswith("..")) == \
        ["dir", "second"]
    assert (directory / "dir" / "first").read_text() == "1"
    assert mode(directory / "dir" / "first") == 0o400
    assert mode(directory / "second") == 0o600


async def test_a_missing_config_map_fails_the_mount_with_the_kubelets_message(node: Node) -> None:
    pod = node.pod({"name": "config", "configMap": {"name": "absent"}})

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "config" : configmap "absent" not found']
    assert not node.dir(pod, "configMap", "config").exists()


async def test_an_optional_missing_config_map_gives_an_empty_directory(node: Node) -> None:
    pod = node.pod({"name": "config", "configMap": {"name": "absent", "optional": True,
                                                    "items": [{"key": "a", "path": "a"}]}})

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "configMap", "config")
    assert [p.name for p in directory.iterdir() if not p.name.startswith("..")] == []


async def test_an_item_naming_a_key_the_config_map_lacks_fails_unless_optional(node: Node) -> None:
    node.api.create(config_map(a="1"))
    pod = node.pod({"name": "config", "configMap": {"name": "app-config",
                                                    "items": [{"key": "nope", "path": "x"}]}})

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "config" : '
        "configmap references non-existent config key: nope"]


async def test_a_changed_config_map_makes_the_pod_stale_and_its_file_follows(node: Node) -> None:
    node.api.create(config_map(level="info"))
    pod = node.pod({"name": "config", "configMap": {"name": "app-config"}})
    await node.volumes.set_up(pod)
    directory = node.dir(pod, "configMap", "config")
    first = os.readlink(directory / DATA_DIR_NAME)
    assert not node.volumes.stale(pod)

    current = node.api.get("ConfigMap", "app-config", "default")
    current.body["data"] = {"level": "debug", "extra": "yes"}
    node.api.update(current)
    node.clock.advance(5)

    assert node.volumes.stale(pod)
    await node.volumes.set_up(pod)
    assert (directory / "level").read_text() == "debug"
    assert (directory / "extra").read_text() == "yes"
    assert os.readlink(directory / DATA_DIR_NAME) != first
    assert not (directory / first).exists()  # the old timestamped directory is gone
    assert not node.volumes.stale(pod)


async def test_a_key_removed_from_the_config_map_loses_its_link(node: Node) -> None:
    node.api.create(config_map(a="1", b="2"))
    pod = node.pod({"name": "config", "configMap": {"name": "app-config"}})
    await node.volumes.set_up(pod)
    current = node.api.get("ConfigMap", "app-config", "default")
    current.body["data"] = {"a": "1"}
    node.api.update(current)

    await node.volumes.set_up(pod)

    directory = node.dir(pod, "configMap", "config")
    assert not os.path.lexists(directory / "b")
    assert (directory / "a").read_text() == "1"


async def test_an_unchanged_payload_is_not_written_again(node: Node) -> None:
    node.api.create(config_map(a="1"))
    pod = node.pod({"name": "config", "configMap": {"name": "app-config"}})
    await node.volumes.set_up(pod)
    directory = node.dir(pod, "configMap", "config")
    first = os.readlink(directory / DATA_DIR_NAME)

    node.clock.advance(60)
    await node.volumes.set_up(pod)

    assert os.readlink(directory / DATA_DIR_NAME) == first


# -- secret ------------------------------------------------------------------------------


async def test_a_secret_volume_decodes_its_data_with_default_mode_0644(node: Node) -> None:
    node.api.create(builders.secret("creds", "default", {"user": "admin", "pass": "s3cr3t"}))
    pod = node.pod({"name": "creds", "secret": {"secretName": "creds"}})

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "secret", "creds")
    assert directory.parent.name == "kubernetes.io~secret"
    assert (directory / "pass").read_text() == "s3cr3t"
    assert mode(directory / "user") == 0o644


async def test_secret_items_and_default_mode(node: Node) -> None:
    node.api.create(builders.secret("creds", "default", {"user": "admin", "pass": "s3cr3t"}))
    pod = node.pod({"name": "creds", "secret": {
        "secretName": "creds", "defaultMode": 0o400,
        "items": [{"key": "pass", "path": "db/password"}]}})

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "secret", "creds")
    assert (directory / "db" / "password").read_text() == "s3cr3t"
    assert mode(directory / "db" / "password") == 0o400
    assert not os.path.lexists(directory / "user")


async def test_a_missing_secret_fails_with_the_kubelets_message(node: Node) -> None:
    pod = node.pod({"name": "creds", "secret": {"secretName": "absent"}})

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "creds" : secret "absent" not found']


async def test_a_secret_item_naming_a_missing_key_fails(node: Node) -> None:
    node.api.create(builders.secret("creds", "default", {"user": "admin"}))
    pod = node.pod({"name": "creds", "secret": {"secretName": "creds",
                                                "items": [{"key": "pass", "path": "p"}]}})

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "creds" : references non-existent secret key: pass']


# -- downwardAPI -------------------------------------------------------------------------


def downward_pod(node: Node) -> Resource:
    pod = builders.pod("web", node_name="node-1")
    pod.metadata.labels = {"app": "web", "tier": "front"}
    pod.metadata.annotations = {"note": 'line1\n"line2"'}
    pod.spec["containers"][0]["resources"] = {"limits": {"cpu": "500m"},
                                              "requests": {"memory": "64Mi"}}
    pod.spec["volumes"] = [{"name": "info", "downwardAPI": {"items": [
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}},
        {"path": "uid", "fieldRef": {"fieldPath": "metadata.uid"}},
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}},
        {"path": "app", "fieldRef": {"fieldPath": "metadata.labels['app']"}},
        {"path": "cpu_limit", "resourceFieldRef": {
            "containerName": pod.spec["containers"][0]["name"], "resource": "limits.cpu",
            "divisor": "1m"}},
        {"path": "mem_request", "resourceFieldRef": {
            "containerName": pod.spec["containers"][0]["name"],
            "resource": "requests.memory", "divisor": "1Mi"}},
        {"path": "mem_limit", "resourceFieldRef": {
            "containerName": pod.spec["containers"][0]["name"], "resource": "limits.memory"}},
    ]}}]
    return node.api.create(pod)


async def test_downward_api_files_hold_the_pods_fields_and_resources(node: Node) -> None:
    current = node.api.get("Node", "node-1")
    current.status["allocatable"] = {"cpu": "4", "memory": "8Gi"}
    node.api.update_status(current)
    pod = downward_pod(node)

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "downwardAPI", "info")
    assert directory.parent.name == "kubernetes.io~downward-api"
    read = {p.name: p.read_text() for p in directory.iterdir() if not p.name.startswith("..")}
    assert read == {
        "name": "web", "ns": "default", "uid": pod.metadata.uid,
        "labels": 'app="web"\ntier="front"',
        "annotations": 'note="line1\\n\\"line2\\""',
        "app": "web",
        "cpu_limit": "500",
        "mem_request": "64",
        # no memory limit: the node's allocatable
        "mem_limit": str(Quantity.parse("8Gi").value()),
    }


async def test_changed_labels_make_a_downward_api_pod_stale(node: Node) -> None:
    pod = downward_pod(node)
    await node.volumes.set_up(pod)
    assert not node.volumes.stale(pod)

    pod = node.api.get("Pod", "web", "default")
    pod.metadata.labels["app"] = "web-2"
    pod = node.api.update(pod)

    assert node.volumes.stale(pod)
    await node.volumes.set_up(pod)
    assert (node.dir(pod, "downwardAPI", "info") / "app").read_text() == "web-2"


async def test_an_unsupported_field_path_fails_the_mount(node: Node) -> None:
    pod = node.pod({"name": "info", "downwardAPI": {"items": [
        {"path": "node", "fieldRef": {"fieldPath": "spec.nodeName"}}]}})

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "info" : unsupported fieldPath: spec.nodeName']


# -- projected ---------------------------------------------------------------------------


def projected(**extra: Any) -> JSON:
    return {"name": "all-in-one", "projected": {"sources": [
        {"configMap": {"name": "app-config", "items": [{"key": "level", "path": "cfg/level"}]}},
        {"secret": {"name": "creds"}},
        {"downwardAPI": {"items": [{"path": "podname",
                                    "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 3600,
                                 "path": "token"}},
        {"clusterTrustBundle": {"name": "bundle", "path": "ca.crt"}},
    ], **extra}}


def claims(node: Node, token: str, audience: str) -> dict[str, Any]:
    public = jwt.PyJWK(node.signer.jwks()["keys"][0])
    found: dict[str, Any] = jwt.decode(
        token, public, algorithms=["RS256"], audience=audience,
        options={"verify_exp": False, "verify_iat": False, "verify_nbf": False})
    return found


async def test_a_projected_volume_merges_its_sources_with_a_token_bound_to_the_pod(
        node: Node) -> None:
    node.api.create(config_map(level="info"))
    node.api.create(builders.secret("creds", "default", {"user": "admin"}))
    pod = node.pod(projected(defaultMode=0o440))

    assert await node.volumes.set_up(pod) == []

    directory = node.dir(pod, "projected", "all-in-one")
    assert directory.parent.name == "kubernetes.io~projected"
    assert (directory / "cfg" / "level").read_text() == "info"
    assert (directory / "user").read_text() == "admin"
    assert (directory / "podname").read_text() == "web"
    assert not os.path.lexists(directory / "ca.crt")  # clusterTrustBundle: skipped
    token = (directory / "token").read_text()
    found = claims(node, token, "vault")
    assert found["sub"] == "system:serviceaccount:default:default"
    assert found["kubernetes.io"]["pod"] == {"name": "web", "uid": pod.metadata.uid}
    assert found["exp"] - found["iat"] == 3600
    assert mode(directory / "token") == 0o440


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's group needs root")


@needs_root
async def test_a_projected_token_is_0600_then_group_readable_when_the_pod_has_an_fs_group(
        node: Node) -> None:
    node.api.create(config_map(level="info"))
    node.api.create(builders.secret("creds", "default", {"user": "admin"}))
    pod = node.pod(projected(), securityContext={"fsGroup": 2000})

    assert await node.volumes.set_up(pod) == []

    token = node.dir(pod, "projected", "all-in-one") / "token"
    assert mode(token) == 0o640  # 0600, then SetVolumeOwnership's group read
    assert token.stat().st_gid == 2000


@needs_root
async def test_an_fs_group_owns_the_volumes_read_only_except_an_empty_dir(node: Node) -> None:
    node.api.create(builders.secret("creds", "default", {"pass": "s3cr3t"}))
    pod = node.pod({"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
                   {"name": "scratch", "emptyDir": {}},
                   securityContext={"fsGroup": 3000})

    assert await node.volumes.set_up(pod) == []

    secret_dir = node.dir(pod, "secret", "creds")
    password = secret_dir / "pass"
    assert (mode(password), password.stat().st_gid) == (0o440, 3000)
    assert mode(secret_dir) & stat.S_ISGID
    scratch = node.dir(pod, "emptyDir", "scratch")
    assert (scratch.stat().st_gid, mode(scratch)) == (3000, 0o777 | stat.S_ISGID)


async def test_a_projected_token_is_refreshed_past_80_percent_of_its_life(node: Node) -> None:
    node.api.create(config_map(level="info"))
    node.api.create(builders.secret("creds", "default", {"user": "admin"}))
    pod = node.pod(projected())
    await node.volumes.set_up(pod)
    token_file = node.dir(pod, "projected", "all-in-one") / "token"
    first = token_file.read_text()

    node.clock.advance(timedelta(seconds=2880).total_seconds())  # 80%: not past it
    assert not node.volumes.stale(pod)
    node.clock.advance(1)
    assert node.volumes.stale(pod)

    await node.volumes.set_up(pod)
    second = token_file.read_text()
    assert second != first
    assert claims(node, second, "vault")["iat"] == claims(node, first, "vault")["iat"] + 2881
    assert not node.volumes.stale(pod)


async def test_every_failing_projected_source_is_reported_in_one_aggregate(node: Node) -> None:
    pod = node.pod(projected())

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "all-in-one" : '
        '[configmap "app-config" not found, secret "creds" not found]']


# -- hostPath ----------------------------------------------------------------------------


async def test_host_path_directory_or_create_makes_it_in_the_nodes_root(node: Node) -> None:
    pod = node.pod({"name": "logs", "hostPath": {"path": "/var/log/app",
                                                 "type": "DirectoryOrCreate"}})

    assert await node.volumes.set_up(pod) == []

    made = node.root / "var" / "log" / "app"
    assert made.is_dir() and mode(made) == 0o755
    assert not (node.volumes.paths.pods_dir / pod.metadata.uid / "volumes").exists()


async def test_host_path_file_or_create_makes_an_empty_file(node: Node) -> None:
    (node.root / "etc").mkdir(parents=True)
    pod = node.pod({"name": "f", "hostPath": {"path": "/etc/app.lock", "type": "FileOrCreate"}})

    assert await node.volumes.set_up(pod) == []

    assert (node.root / "etc" / "app.lock").read_bytes() == b""
    assert mode(node.root / "etc" / "app.lock") == 0o644


@pytest.mark.parametrize(("kind", "what"), [
    ("Directory", "is not a directory"), ("File", "is not a file"),
    ("Socket", "is not a socket file"), ("CharDevice", "is not a character device"),
    ("BlockDevice", "is not a block device"),
])
async def test_host_path_type_checks_fail_with_the_kubelets_message(node: Node, kind: str,
                                                             what: str) -> None:
    (node.root / "srv").mkdir(parents=True)
    (node.root / "srv" / "plain").write_text("x")
    path = "/srv" if kind == "File" else "/srv/plain"
    pod = node.pod({"name": "h", "hostPath": {"path": path, "type": kind}})

    assert await node.volumes.set_up(pod) == [
        f'MountVolume.SetUp failed for volume "h" : hostPath type check failed: {path} {what}']


async def test_host_path_without_a_type_checks_nothing(node: Node) -> None:
    pod = node.pod({"name": "h", "hostPath": {"path": "/not/there"}})

    assert await node.volumes.set_up(pod) == []
    assert not (node.root / "not").exists()


async def test_a_host_path_leading_out_of_the_nodes_root_fails_without_touching_it(
        node: Node, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    node.root.mkdir(parents=True)
    (node.root / "escape").symlink_to(outside)
    pod = node.pod({"name": "h", "hostPath": {"path": "/escape/new", "type": "DirectoryOrCreate"}})

    [failure] = await node.volumes.set_up(pod)

    assert failure.startswith('MountVolume.SetUp failed for volume "h" : hostPath /escape/new '
                              "resolves to")
    assert "outside the node's root directory" in failure
    assert not (outside / "new").exists()


# -- several volumes ---------------------------------------------------------------------


async def test_a_failing_volume_does_not_keep_the_others_from_being_set_up(node: Node) -> None:
    pod = node.pod({"name": "scratch", "emptyDir": {}},
                   {"name": "config", "configMap": {"name": "absent"}})

    assert len(await node.volumes.set_up(pod)) == 1
    assert node.dir(pod, "emptyDir", "scratch").is_dir()

    node.api.create(config_map("absent", a="1"))
    assert node.volumes.stale(pod)
    assert await node.volumes.set_up(pod) == []
    assert (node.dir(pod, "configMap", "config") / "a").read_text() == "1"


async def test_a_pod_not_set_up_since_the_kubelet_started_is_stale(node: Node) -> None:
    pod = node.pod({"name": "scratch", "emptyDir": {}})
    assert node.volumes.stale(pod)
    await node.volumes.set_up(pod)
    assert not node.volumes.stale(pod)
    node.volumes.forget(pod.metadata.uid)
    assert node.volumes.stale(pod)


async def test_an_item_path_climbing_out_of_the_volume_fails_and_writes_nothing(node: Node) -> None:
    node.api.create(config_map(a="1"))
    pod = node.pod({"name": "config", "configMap": {"name": "app-config",
                                                    "items": [{"key": "a", "path": "x"}]}})
    # the API refuses such a path (test_bad_input); the kubelet guards on its own too,
    # e.g. against a pod stored by an API server that let it through
    pod.spec["volumes"][0]["configMap"]["items"][0]["path"] = "../x"

    [failure] = await node.volumes.set_up(pod)

    assert failure.startswith('MountVolume.SetUp failed for volume "config" : invalid path')
    volumes_dir = node.dir(pod, "configMap", "config").parent
    assert not (volumes_dir / "x").exists()


async def test_orphaned_pod_dirs_go_at_start_unless_they_hold_a_csi_volume(node: Node) -> None:
    paths = node.volumes.paths
    for uid in ("running", "gone", "gone-with-csi"):
        (paths.pods_dir / uid / "volumes" / "kubernetes.io~empty-dir" / "v").mkdir(parents=True)
    (paths.pods_dir / "gone-with-csi" / "volumes" / "kubernetes.io~csi" / "pv" / "mount").mkdir(
        parents=True)

    assert remove_orphaned_pod_dirs(paths, {"running"}) == ["gone"]

    assert sorted(p.name for p in paths.pods_dir.iterdir()) == ["gone-with-csi", "running"]


async def test_a_token_for_a_missing_service_account_fails_the_mount(node: Node) -> None:
    pod = node.pod({"name": "tok", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token"}}]}}, serviceAccountName="ghost")

    assert await node.volumes.set_up(pod) == [
        'MountVolume.SetUp failed for volume "tok" : failed to fetch token: '
        'serviceaccounts "ghost" not found']
