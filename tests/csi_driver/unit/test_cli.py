"""Flags → Config: the new flags' parsing, normalisation and validation, in-process."""

from __future__ import annotations

import pytest

from csi_driver.cli import parse_config
from csi_driver.config import Config
from csi_driver.errors import InvalidArgument

BASE = ["--endpoint", "/tmp/unused.sock", "--state-dir", "/tmp/unused-state"]


def test_new_settings_default_to_todays_behaviour() -> None:
    cfg = parse_config(BASE)
    assert cfg.snapshots_block_delete is False
    assert cfg.allowed_target_roots == ()
    assert cfg.fs_backend == "auto"
    assert cfg.orphan_sweep_interval > 0 and cfg.orphan_min_age > 0


def test_allowed_target_roots_repeat_and_are_normalised() -> None:
    cfg = parse_config([*BASE, "--allowed-target-root", "/var/lib/kubelet/../kubelet/pods/",
                        "--allowed-target-root", "/mnt//targets"])
    assert cfg.allowed_target_roots == ("/var/lib/kubelet/pods", "/mnt/targets")


def test_a_relative_allowed_target_root_is_a_usage_error(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_config([*BASE, "--allowed-target-root", "pods"])
    assert exited.value.code == 2
    assert "--allowed-target-root" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["auto", "loop", "dir"])
def test_fs_backend_takes_its_three_choices(backend: str) -> None:
    assert parse_config([*BASE, "--fs-backend", backend]).fs_backend == backend


def test_sweep_timing_and_snapshot_flags_reach_the_config() -> None:
    cfg = parse_config([*BASE, "--snapshots-block-delete", "--orphan-sweep-interval", "0.5",
                        "--orphan-min-age", "0"])
    assert (cfg.snapshots_block_delete, cfg.orphan_sweep_interval, cfg.orphan_min_age) == (
        True, 0.5, 0.0)


@pytest.mark.parametrize("setting", [
    {"allowed_target_roots": ("relative",)},
    {"allowed_target_roots": ("/a/../b",)},
    {"fs_backend": "zfs"},
    {"orphan_sweep_interval": 0.0},
    {"orphan_min_age": -1.0},
])
def test_config_validation_refuses_what_the_flags_cannot_give(setting: dict[str, object]) -> None:
    cfg = Config(endpoint="/tmp/x.sock", node_id="n", state_dir="/tmp/s", **setting)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        cfg.validate()
