"""The kubelet's cleanup of a terminated pod's directory: everything on the same file
system goes, links are removed and never followed, and nothing is removed while a mount
point remains under it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubelet_sim.kubelet.paths import remove_pod_dir


def pod_tree(tmp_path: Path) -> tuple[Path, Path]:
    pod = tmp_path / "pods" / "uid-1"
    (pod / "volumes" / "kubernetes.io~csi" / "pv-1" / "mount").mkdir(parents=True)
    (pod / "etc-hosts").write_text("127.0.0.1 localhost\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep").write_text("data")
    (pod / "volumes" / "link").symlink_to(outside)
    return pod, outside


def test_a_pod_directory_is_removed_whole_without_following_links(tmp_path: Path) -> None:
    pod, outside = pod_tree(tmp_path)
    assert remove_pod_dir(pod)
    assert not pod.exists()
    assert (outside / "keep").read_text() == "data"


def test_nothing_is_removed_while_a_mount_point_remains(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pod, _ = pod_tree(tmp_path)
    still_mounted = pod / "volumes" / "kubernetes.io~csi" / "pv-1" / "mount"
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == still_mounted or real(p))
    assert not remove_pod_dir(pod)
    assert (pod / "etc-hosts").exists() and still_mounted.is_dir()


def test_a_pod_directory_already_gone_is_fine(tmp_path: Path) -> None:
    assert remove_pod_dir(tmp_path / "pods" / "never")
