"""The bytes behind volumes: the id rule, background removal, layouts read off the disk."""

from __future__ import annotations

import os

import pytest

from csi_driver.errors import InvalidArgument
from csi_driver.state.volume_data import VolumeData, data_name


@pytest.mark.parametrize("ident", ["..", ".", "", "a/b", "/abs", "../x", "a\0b", ".hidden",
                                   "x" * 129, "a b", "ü"])
def test_an_id_that_could_leave_its_directory_never_becomes_a_file_name(ident: str) -> None:
    with pytest.raises(InvalidArgument):
        data_name(ident)


@pytest.mark.parametrize("ident", ["0b4f5c1e-2d4f-4a8b-9c1e-2d4f4a8b9c1e", "csi-" + "ab" * 32,
                                   "x.img", "a_b-c.d"])
def test_uuids_and_kubernetes_inline_handles_are_file_names(ident: str) -> None:
    assert data_name(ident) == ident


def test_an_id_used_again_right_after_its_delete_gets_fresh_data(tmp_path) -> None:
    """Removal runs in the background; the doomed data is renamed away first, so a new
    volume of the same id (an inline ephemeral volume published anew) neither sees the
    old files nor loses its own when the removal runs."""
    data = VolumeData(str(tmp_path), background_removal=True)
    data.create_volume("csi-inline", "mount", 1 << 20)
    path = data.volume_path("csi-inline", "mount")
    with open(os.path.join(path, "old"), "w") as f:
        f.write("old pod data")
    data.delete_volume("csi-inline", "mount")
    data.create_volume("csi-inline", "mount", 1 << 20)
    assert os.listdir(path) == []
    with open(os.path.join(path, "new"), "w") as f:
        f.write("new pod data")
    data.close()  # waits for the background removal
    assert os.listdir(path) == ["new"]
    assert sorted(os.listdir(tmp_path / "volumes")) == ["csi-inline"]


def test_a_directory_volume_whose_id_ends_like_a_suffix_is_not_swept(tmp_path) -> None:
    data = VolumeData(str(tmp_path))
    data.create_volume("csi-x.img", "mount", 1 << 20)
    assert data.sweep(lambda v: v == "csi-x.img", lambda s: False, min_age=0) == 0
    assert os.path.isdir(data.volume_path("csi-x.img", "mount"))
