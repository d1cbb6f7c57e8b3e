"""tools/build_sidecars.py picks the Go a kubernetes-csi checkout is built with."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.build_sidecars import go_version, version_of

GO_MOD = "module github.com/kubernetes-csi/external-x\n\ngo 1.26.0\n"


def checkout(root: Path, go_mod: str, prow: str | None = None) -> Path:
    (root / "go.mod").write_text(go_mod)
    if prow is not None:
        (root / "release-tools").mkdir()
        (root / "release-tools" / "prow.sh").write_text(prow)
    return root


def test_the_go_of_a_checkout_is_the_build_version_its_release_tools_name(
        tmp_path: Path) -> None:
    prow = ('configvar CSI_PROW_GO_VERSION_E2E "" "override"\n'
            'configvar CSI_PROW_GO_VERSION_BUILD "1.26.3" "Go version for building"\n')
    assert go_version(checkout(tmp_path, GO_MOD, prow)) == "1.26.3"


def test_without_release_tools_the_go_mod_toolchain_line_wins_over_its_go_line(
        tmp_path: Path) -> None:
    assert go_version(checkout(tmp_path, GO_MOD + "\ntoolchain go1.26.2\n")) == "1.26.2"


def test_without_a_toolchain_line_the_go_mod_go_line_names_it(tmp_path: Path) -> None:
    assert go_version(checkout(tmp_path, GO_MOD)) == "1.26.0"


def test_a_checkout_without_a_go_version_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no Go version"):
        go_version(checkout(tmp_path, "module x\n"))


def test_an_archive_without_git_is_versioned_by_its_release_tag(tmp_path: Path) -> None:
    assert version_of(tmp_path, "v6.3.0") == "v6.3.0"
