"""Defaults kube-apiserver fills in that a real cluster's objects show
(kubelet_sim.apiserver.create_defaults)."""

from __future__ import annotations

import pytest

from kubelet_sim.apiserver.create_defaults import default_container, image_tag


@pytest.mark.parametrize(("image", "tag"), [
    ("busybox", "latest"),
    ("busybox:1.36", "1.36"),
    ("registry.local:5000/team/app", "latest"),
    ("registry.local:5000/team/app:v2", "v2"),
    ("busybox@sha256:" + "a" * 64, ""),
    ("busybox:1.36@sha256:" + "a" * 64, "1.36"),
])
def test_the_tag_of_an_image_reference(image: str, tag: str) -> None:
    assert image_tag(image) == tag


@pytest.mark.parametrize(("image", "policy"), [
    ("busybox", "Always"), ("busybox:latest", "Always"), ("busybox:1.36", "IfNotPresent"),
    ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
])
def test_the_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    container = {"name": "c", "image": image}
    default_container(container)
    assert container["imagePullPolicy"] == policy


def test_a_pull_policy_sent_is_kept() -> None:
    container = {"name": "c", "image": "busybox", "imagePullPolicy": "Never",
                 "terminationMessagePolicy": "FallbackToLogsOnError"}
    default_container(container)
    assert container == {"name": "c", "image": "busybox", "imagePullPolicy": "Never",
                         "terminationMessagePolicy": "FallbackToLogsOnError",
                         "terminationMessagePath": "/dev/termination-log"}
