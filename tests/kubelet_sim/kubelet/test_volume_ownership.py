"""SetVolumeOwnership: the fsGroup walk and its OnRootMismatch shortcut."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kubelet_sim.kubelet.volume_ownership import set_volume_ownership

GROUP = 2345
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")


def tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file").write_text("x")
    (root / "link").symlink_to("/etc/hostname")
    return root


def test_always_gives_every_file_and_directory_the_group_and_its_bits(tmp_path: Path) -> None:
    root = tree(tmp_path / "vol")
    os.chmod(root / "sub" / "file", 0o600)

    change = set_volume_ownership(root, GROUP)

    assert change.changed == 4 and not change.skipped
    for path in (root, root / "sub", root / "sub" / "file"):
        assert path.stat().st_gid == GROUP
    assert stat.S_IMODE((root / "sub").stat().st_mode) & 0o2070 == 0o2070
    assert stat.S_IMODE((root / "sub" / "file").stat().st_mode) == 0o660
    assert os.lstat(root / "link").st_gid == GROUP
    assert Path("/etc/hostname").stat().st_gid != GROUP  # never through the symlink


def test_a_read_only_volume_gets_read_bits_only(tmp_path: Path) -> None:
    root = tree(tmp_path / "vol")
    os.chmod(root / "sub" / "file", 0o600)

    set_volume_ownership(root, GROUP, read_only=True)

    assert stat.S_IMODE((root / "sub" / "file").stat().st_mode) == 0o640


def test_on_root_mismatch_skips_the_walk_when_the_root_already_matches(tmp_path: Path) -> None:
    root = tree(tmp_path / "vol")
    set_volume_ownership(root, GROUP)
    os.lchown(root / "sub" / "file", -1, 0)  # changed behind the kubelet's back

    skipped = set_volume_ownership(root, GROUP, change_policy="OnRootMismatch")
    walked = set_volume_ownership(root, GROUP, change_policy="Always")

    assert skipped.skipped and skipped.changed == 0
    assert not walked.skipped
    assert (root / "sub" / "file").stat().st_gid == GROUP


def test_on_root_mismatch_walks_when_the_root_lacks_setgid(tmp_path: Path) -> None:
    root = tree(tmp_path / "vol")
    os.lchown(root, -1, GROUP)
    os.chmod(root, 0o770)

    change = set_volume_ownership(root, GROUP, change_policy="OnRootMismatch")

    assert not change.skipped and (root / "sub").stat().st_gid == GROUP
