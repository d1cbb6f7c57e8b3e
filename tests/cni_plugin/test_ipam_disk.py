"""The disk store: the reference's file layout and bytes, O_EXCL reservation, cleanup."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from cni_plugin.ipam.disk import DiskStore, StoreError


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DiskStore]:
    s = DiskStore("net1", str(tmp_path))
    s.lock()
    yield s
    s.unlock()
    s.close()


def test_lease_file_holds_container_id_crlf_ifname(store: DiskStore, tmp_path: Path) -> None:
    assert store.reserve(" c1 ", "eth0", "10.1.2.2", "0")
    assert (tmp_path / "net1" / "10.1.2.2").read_bytes() == b"c1\r\neth0"
    assert (tmp_path / "net1" / "last_reserved_ip.0").read_bytes() == b"10.1.2.2"


def test_ipv6_lease_file_is_named_by_the_compressed_address(store: DiskStore,
                                                            tmp_path: Path) -> None:
    assert store.reserve("c1", "eth0", "fd00::2", "1")
    assert (tmp_path / "net1" / "fd00::2").read_bytes() == b"c1\r\neth0"
    assert (tmp_path / "net1" / "last_reserved_ip.1").read_bytes() == b"fd00::2"


def test_files_have_the_reference_modes(store: DiskStore, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store.reserve("c1", "eth0", "10.1.2.2", "0")
    finally:
        os.umask(old)
    mode = stat.S_IMODE
    assert mode((tmp_path / "net1" / "10.1.2.2").stat().st_mode) == 0o644
    assert mode((tmp_path / "net1").stat().st_mode) == 0o755
    assert (tmp_path / "net1" / "lock").stat().st_size == 0


def test_reserving_a_leased_address_fails_and_keeps_the_holder(store: DiskStore,
                                                               tmp_path: Path) -> None:
    assert store.reserve("c1", "eth0", "10.1.2.2", "0")
    assert not store.reserve("c2", "eth0", "10.1.2.2", "0")
    assert (tmp_path / "net1" / "10.1.2.2").read_bytes() == b"c1\r\neth0"


def test_leases_read_both_the_current_and_the_legacy_format(store: DiskStore,
                                                             tmp_path: Path) -> None:
    (tmp_path / "net1" / "10.1.2.7").write_bytes(b"old-container\n")
    store.reserve("c1", "eth0", "10.1.2.2", "0")
    assert [(x.ip, x.container_id, x.ifname) for x in store.leases()] == [
        ("10.1.2.2", "c1", "eth0"), ("10.1.2.7", "old-container", None)]


def test_release_by_id_removes_only_that_attachments_leases(store: DiskStore,
                                                             tmp_path: Path) -> None:
    store.reserve("c1", "eth0", "10.1.2.2", "0")
    store.reserve("c1", "eth0", "fd00::2", "1")
    store.reserve("c1", "net1", "10.1.2.3", "0")
    assert sorted(store.release_by_id("c1", "eth0")) == ["10.1.2.2", "fd00::2"]
    assert sorted(os.listdir(tmp_path / "net1")) == [
        "10.1.2.3", "last_reserved_ip.0", "last_reserved_ip.1", "lock"]


def test_temporary_files_left_by_a_killed_plugin_are_removed_under_the_lock(
        tmp_path: Path) -> None:
    s = DiskStore("net1", str(tmp_path))
    leftover = tmp_path / "net1" / ".emu-tmp.12345.lease"
    leftover.write_bytes(b"c1\r\neth0")
    s.lock()
    try:
        assert not leftover.exists()
        assert s.leases() == []
    finally:
        s.unlock()
        s.close()


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "../../etc"])
def test_network_names_that_leave_the_data_dir_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(StoreError):
        DiskStore(name, str(tmp_path / "data"))
    assert not (tmp_path / "etc").exists()


def test_unwritable_data_dir_is_reported_like_go(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match=r"^mkdir .*/file/net1: not a directory$"):
        DiskStore("net1", str(blocker))
